"""Lint, sanity, units in ansible-test, docs: the checks a collection must pass."""
import os
import re

import pytest

from conftest import BIN, ROOT, run

MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                 if f.endswith(".py") and not f.startswith("_"))


def test_ansible_lint_production_profile():
    res = run([os.path.join(BIN, "ansible-lint"), "--nocolor"])
    assert res.returncode == 0, res.out[-4000:]
    assert "Profile 'production' was required, and it passed" in res.out


def test_ansible_test_sanity():
    res = run([os.path.join(ROOT, "tests", "ansible-test.sh"), "sanity"], timeout=1800)
    assert res.returncode == 0, res.out[-6000:]


def test_ansible_test_units():
    res = run([os.path.join(ROOT, "tests", "ansible-test.sh"), "units", "--venv", "--requirements"],
              timeout=1200)
    assert res.returncode == 0, res.out[-6000:]
    assert " passed" in res.out


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders(module):
    res = run([os.path.join(BIN, "ansible-doc"), "sparkops.inference." + module])
    assert res.returncode == 0, res.out
    assert "EXAMPLES" in res.out and "RETURN VALUES" in res.out


def test_role_argument_specs_render():
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        res = run([os.path.join(BIN, "ansible-doc"), "-t", "role", "sparkops.inference." + role])
        assert res.returncode == 0, res.out
        assert re.search(r"ENTRY POINT: \W*main\W", res.out), res.out[:500]


def test_changelog_fragments_lint():
    res = run([os.path.join(BIN, "antsibull-changelog"), "lint"])
    assert res.returncode == 0 and res.out.strip() == "", res.out
