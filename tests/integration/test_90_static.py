"""Lint, sanity, units in ansible-test, docs: the checks a collection must pass. The slow three
ran in the background beside the lab tests (conftest.static_check)."""
import os
import re

import pytest

from conftest import BIN, ROOT, run, static_check

MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                 if f.endswith(".py") and not f.startswith("_"))


def test_ansible_lint_production_profile():  # name holds 'lint' (conftest.STATIC_CHECKS)
    res = static_check("lint")
    assert res.returncode == 0, res.out[-4000:]
    assert "Profile 'production' was required, and it passed" in res.out


def test_ansible_test_sanity():
    res = static_check("sanity")
    assert res.returncode == 0, res.out[-6000:]


def test_ansible_test_units():
    res = static_check("units")
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


def test_fault_catalogue_is_generated_from_the_tests():
    """docs/faults.md is what tests/fault_catalogue.py writes from the fault markers, and holds
    at least the 25 lab fault cases of "Nothing lost"."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import fault_catalogue  # pylint: disable=import-outside-toplevel
    entries = fault_catalogue.cases()
    with open(os.path.join(ROOT, "docs", "faults.md")) as f:
        assert f.read() == fault_catalogue.render(entries), "docs/faults.md is out of date: make faults-doc"
    assert sum(e["params"] for e in entries) >= 25, [e["test"] for e in entries]
