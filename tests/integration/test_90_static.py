"""Lint, sanity, the controller matrix, docs: the checks a collection must pass. The slow ones
ran in the background beside the lab tests (conftest.static_check). The unit tests run once per
ansible-core version: tests/unit in this run (requirements.txt's ansible-core), and again on the
oldest and newest of tests/controller-matrix.txt - not a third time inside `ansible-test units`."""
import os
import re
import shutil

import pytest

from conftest import BIN, ROOT, run, static_check

MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                 if f.endswith(".py") and not f.startswith("_"))


# what names a failure in a check's output: pytest's and ansible-test's words
FAILURE_LINE = re.compile(r"^(ERROR\b|FAILED\b|E {3}|=+ (FAILURES|ERRORS) =+|Traceback )|\bfailed\b", re.M)


def why(out, tail=3000):
    """A check's failure as CI prints it: every line that names one, two lines of context each side
    (the first 6,000 characters of them: the first failure is the one to read), then the output's
    end - a tail alone showed only a matrix's last pip installs."""
    lines = out.splitlines()
    keep = sorted(set(j for i, line in enumerate(lines) if FAILURE_LINE.search(line)
                      for j in range(max(0, i - 2), min(len(lines), i + 3))))
    named = "\n".join(lines[j] for j in keep)
    return "lines naming a failure:\n%s\n... the output's end:\n%s" % (named[:6000] or "(none)", out[-tail:])


def test_ansible_lint_production_profile():  # name holds 'lint' (conftest.STATIC_CHECKS)
    res = static_check("lint")
    assert res.returncode == 0, why(res.out)
    assert "Profile 'production' was required, and it passed" in res.out


def test_ansible_test_sanity():
    res = static_check("sanity")
    assert res.returncode == 0, why(res.out)


def test_units_and_sanity_on_the_controller_matrix():
    res = static_check("matrix")
    # a machine that lacks a Python of the matrix fails the run (the README calls each version tested)
    missing = re.findall(r"^MISSING: (.*)$", res.out, re.M)
    assert not missing, "controller matrix incomplete: " + "; ".join(missing)
    assert res.returncode == 0, why(res.out)
    with open(os.path.join(ROOT, "tests", "controller-matrix.txt")) as f:
        matrix = [line.split() for line in f if line.strip() and not line.startswith("#")]
    assert len(matrix) >= 2
    for name, core, python in matrix:
        assert "== %s: ansible-core %s on Python %s" % (name, core, python) in res.out
    # each run's unit tests passed (pytest's summary once per matrix line)
    assert len(re.findall(r"^\d+ passed in ", res.out, re.M)) == len(matrix), res.out[-3000:]
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as f:
        oldest = re.search(r'requires_ansible: ">=([0-9.]+)', f.read()).group(1)
    assert matrix[0][1].startswith(oldest.rsplit(".", 1)[0] + "."), "the oldest tested is what meta/runtime.yml requires"
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for dummy, core, python in matrix:
        assert core in readme and python in readme, "the README states the tested range"


def rendered(kind, names, head):
    """ansible-doc's text for every name, in one process (one start of ansible-core, not one per
    plugin): {name: its section}. A name ansible-doc could not render has no section."""
    res = run([os.path.join(BIN, "ansible-doc"), "-t", kind] + ["sparkops.inference." + n for n in names])
    sections = re.split(r"^> %s\W+sparkops\.inference\.(\w+)\W" % head, res.out, flags=re.M)
    return res, dict(zip(sections[1::2], sections[2::2]))


@pytest.fixture(scope="module")
def module_docs():
    return rendered("module", MODULES, "MODULE")


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders(module, module_docs):  # pylint: disable=redefined-outer-name
    res, docs = module_docs
    assert res.returncode == 0, res.out[-3000:]
    assert module in docs, "ansible-doc rendered no page for %s:\n%s" % (module, res.out[-3000:])
    assert "EXAMPLES" in docs[module] and "RETURN VALUES" in docs[module], docs[module][:500]


def test_role_argument_specs_render():
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    res, docs = rendered("role", roles, "ROLE:")
    assert res.returncode == 0, res.out[-3000:]
    for role in roles:
        assert role in docs, "ansible-doc rendered no page for role %s:\n%s" % (role, res.out[-3000:])
        assert re.search(r"ENTRY POINT: \W*main\W", docs[role]), docs[role][:500]


def test_changelog_fragments_lint():
    res = run([os.path.join(BIN, "antsibull-changelog"), "lint"])
    assert res.returncode == 0 and res.out.strip() == "", res.out


def test_the_release_in_galaxy_yml_has_its_changelog():
    """galaxy.yml's version is the newest release of changelogs/changelog.yaml, and CHANGELOG.rst
    is what antsibull-changelog generates from it (generated again here, into a copy)."""
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        version = yaml.safe_load(f)["version"]
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml")) as f:
        releases = yaml.safe_load(f)["releases"]
    newest = max(releases, key=lambda v: [int(p) for p in v.split(".")])
    assert newest == version, "galaxy.yml says %s, the newest release in the changelog is %s" % (version, newest)
    assert releases[version]["changes"].get("release_summary")
    with open(os.path.join(ROOT, "CHANGELOG.rst")) as f:
        committed = f.read()
    assert "\nv%s\n%s\n" % (version, "=" * (len(version) + 1)) in committed
    copy = os.path.join(ROOT, "build", "changelog-check")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "changelogs"), os.path.join(copy, "changelogs"),
                    ignore=shutil.ignore_patterns(".plugin-cache.yaml"))
    shutil.copy(os.path.join(ROOT, "galaxy.yml"), copy)
    res = run([os.path.join(BIN, "antsibull-changelog"), "generate"], cwd=copy)
    assert res.returncode == 0, res.out
    with open(os.path.join(copy, "CHANGELOG.rst")) as f:
        assert f.read() == committed, "CHANGELOG.rst differs from what antsibull-changelog generate writes"
    shutil.rmtree(copy)


def test_the_readme_front_matter_lists_what_the_collection_holds():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    heads = [l for l in readme.splitlines() if l.startswith("## ")]
    for wanted in ("## The two commands", "## Tested versions", "## Requirements", "## Included content",
                   "## Using the collection", "## Release notes and licensing"):
        assert wanted in heads, wanted
    assert heads[0] == "## The two commands" and "make lab" in readme.split("## Tested versions")[0]
    content = readme.split("## Included content")[1].split("\n## ")[0]
    listed = set(re.findall(r"`([a-z_.]+)`", content))
    roles = os.listdir(os.path.join(ROOT, "roles"))
    plays = [f[:-4] for f in os.listdir(os.path.join(ROOT, "playbooks")) if f.endswith(".yml") and f != "targets.yml"]
    actions = [f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "action")) if f.endswith(".py")]
    missing = [m for m in MODULES + roles + actions if m not in listed]
    missing += ["sparkops.inference." + p for p in plays if "sparkops.inference." + p not in listed]
    assert not missing, "README's Included content lacks %s" % missing


def _slug(heading):
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lstrip("#").strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_a_front_door_and_every_doc_link_resolves():
    """The README stays a front door (at most 15 KB; the detail lives in docs/), and every relative
    link of the README and docs/*.md names a file that exists, and a heading there where it has an
    anchor."""
    with open(os.path.join(ROOT, "README.md"), "rb") as f:
        size = len(f.read())
    assert size <= 15000, "README.md is %d bytes: move detail into docs/ (docs/reference.md)" % size
    broken = []
    for doc in ["README.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]:
        with open(os.path.join(ROOT, doc)) as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+://", target):
                continue
            path, dummy, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), path)) if path else os.path.join(ROOT, doc)
            if not os.path.exists(full):
                broken.append("%s: %s (no such file)" % (doc, target))
            elif anchor and full.endswith(".md"):
                with open(full) as f:
                    slugs = [_slug(l) for l in f.read().splitlines() if l.startswith("#")]
                if anchor not in slugs:
                    broken.append("%s: %s (no such heading)" % (doc, target))
    assert not broken, broken


def test_the_roles_name_the_secret_files_the_containers_mount():
    """The engine reads its secrets at the paths plugins/module_utils/_secrets.py names; the roles
    write and remove them by name: every name there is one of those, and teardown removes all."""
    with open(os.path.join(ROOT, "plugins", "module_utils", "_secrets.py")) as f:
        constants = dict(re.findall(r'^(\w+_FILE) = "([^"]+)"', f.read(), re.M))
    known = {constants["API_KEY_FILE"], constants["SGLANG_CONFIG_FILE"], constants["HF_TOKEN_FILE"]}
    used = {}
    for where in ("roles", "playbooks"):
        for dirpath, dummy, files in os.walk(os.path.join(ROOT, where)):
            for name in files:
                if name.endswith(".yml"):
                    with open(os.path.join(dirpath, name)) as f:
                        for found in re.findall(r"sparkops_secrets_dir \}\}/([\w.-]+)|sparkops_secrets_dir ~ '/([\w.-]+)'",
                                                f.read()):
                            used.setdefault("".join(found), set()).add(os.path.relpath(os.path.join(dirpath, name), ROOT))
    assert set(used) - known == set(), used
    assert {n for n, files in used.items() if "roles/model_server/tasks/teardown.yml" in files} == known
    assert {n for n, files in used.items() if "roles/model_server/tasks/main.yml" in files} == known


def test_fault_catalogue_is_generated_from_the_tests():
    """docs/faults.md is what tests/fault_catalogue.py writes from the fault markers, and holds
    every one of the 48 lab fault cases it listed before the suite was made cheaper (issue 32: none
    dropped - each moved to the cheapest level that proves it, the "Proven by" column)."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import fault_catalogue  # pylint: disable=import-outside-toplevel
    entries = fault_catalogue.cases()
    with open(os.path.join(ROOT, "docs", "faults.md")) as f:
        assert f.read() == fault_catalogue.render(entries), "docs/faults.md is out of date: make faults-doc"
    assert sum(e["params"] for e in entries) >= 48, [e["test"] for e in entries]


def test_the_execution_environment_renders_a_build_context(tmp_path):
    """ansible-builder renders execution-environment.yml into a build context whose collections
    are the ones galaxy.yml depends on, in the same ranges, with ansible-core in the tested range."""
    import yaml  # pylint: disable=import-outside-toplevel
    ctx = tmp_path / "context"
    res = run([os.path.join(BIN, "ansible-builder"), "create", "-f", os.path.join(ROOT, "execution-environment.yml"),
               "-c", str(ctx)])
    assert res.returncode == 0, res.out
    build = (ctx / "Dockerfile").read_text()
    assert 'ARG PYCMD="/usr/bin/python3.11"' in build and "ansible-core>=2.18,<2.20" in build
    wanted = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())["collections"]
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        depends = yaml.safe_load(f)["dependencies"]
    assert dict((c["name"], c["version"]) for c in wanted) == depends
    assert "openssh-clients" in (ctx / "_build" / "bindep.txt").read_text()


def test_the_firewall_covers_the_ports_the_other_roles_open():
    """The firewall's chain lives in ray_cluster and names the other roles' ports with fallbacks
    (a role's defaults are its own): each fallback is that role's default."""
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(ROOT, "roles", "ray_cluster", "tasks", "firewall_vars.yml")) as f:
        text = f.read()
    for role, var in (("model_server", "model_server_port"), ("engine_image", "engine_image_transfer_port"),
                      ("fabric", "fabric_preflight_port"), ("watchdog", "watchdog_port")):
        with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as f:
            default = yaml.safe_load(f)[var]
        assert "%s | default(%d)" % (var, default) in text, var
    # and the port where the engine's ranks meet, from the launch plan (module_utils/_plan.py)
    assert "sparkops_launch.meet_port" in text


PROMTOOL = os.path.join(os.environ.get("SPARKOPS_LAB_CACHE", "/var/cache/sparkops-lab"),
                        "promtool", "root", "usr", "bin", "promtool")


def test_the_alert_rules_pass_promtool_and_fire_on_their_series():
    """promtool (Debian's prometheus package, unpacked by `lab/sparklab.py deps`) checks the rules
    the deploy writes, and runs tests/prometheus/: each alert fires on the series that should
    fire it, at the time it should, and not before."""
    assert os.path.exists(PROMTOOL), "no promtool at %s: run `python3 lab/sparklab.py deps`" % PROMTOOL
    rules = os.path.join(ROOT, "roles", "report", "files", "sparkops-alerts.yml")
    res = run([PROMTOOL, "check", "rules", rules])
    assert res.returncode == 0 and "SUCCESS: 3 rules found" in res.out, res.out
    res = run([PROMTOOL, "test", "rules", "sparkops-alerts.test.yml"], cwd=os.path.join(ROOT, "tests", "prometheus"))
    assert res.returncode == 0 and "SUCCESS" in res.out, res.out
