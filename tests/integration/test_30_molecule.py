"""molecule test: destroy, create (lab up --fresh), prepare, converge (deploy.yml),
idempotence (changed=0), verify (testinfra over the ansible backend), destroy.

CI runs what only molecule proves: that a scenario of ours runs through molecule's whole sequence
with our create/destroy playbooks and a testinfra verify - the default scenario, in full. The
restore and rollback scenarios stay for ops teams to run (`molecule test -s restore`); what their
verify asserts after a restore is proven in the lab tests where a deploy's teardown or rollback
runs anyway (conftest.only_the_old_model_is_left: test_35's restore, test_27_serve's port in
use), so here each of their playbooks is syntax-checked and their verify tests are collected."""
import os
import re

import pytest
import yaml

from conftest import BIN, ROOT, run


def test_molecule_default_scenario():
    res = run([os.path.join(BIN, "molecule"), "test", "-s", "default"], timeout=1800)
    assert res.returncode == 0, res.out[-6000:]
    for step in ("create", "prepare", "converge", "idempotence", "verify", "destroy"):
        assert "%s: Executed: Successful" % step in res.out or "➜ %s: Executed: Successful" % step in res.out, step
    recap = [l for l in res.out.splitlines() if l.startswith("default ") and "actions=" in l]
    assert recap and "failed=0" in recap[-1], recap
    assert " passed" in res.out  # testinfra's own summary inside molecule's verify


@pytest.mark.parametrize("scenario", ["restore", "rollback"])
def test_the_other_scenarios_parse_and_their_verify_tests_collect(scenario):
    """Every playbook the scenario names passes ansible-playbook --syntax-check against the lab
    inventory it links, in the order of its test_sequence, and testinfra's tests collect."""
    here = os.path.join(ROOT, "molecule", scenario)
    with open(os.path.join(here, "molecule.yml")) as f:
        config = yaml.safe_load(f)
    playbooks = config["provisioner"]["playbooks"]
    steps = [s for s in config["scenario"]["test_sequence"] if s in playbooks]
    assert "side_effect" in steps, config["scenario"]["test_sequence"]
    for step in steps:
        path = os.path.normpath(os.path.join(here, playbooks[step]))
        assert os.path.exists(path), (step, path)
        res = run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i",
                   os.path.join(ROOT, "inventories", "lab"), path],
                  env={"MOLECULE_PROJECT_DIRECTORY": ROOT, "MOLECULE_SCENARIO_DIRECTORY": here})
        assert res.returncode == 0, (step, res.out[-3000:])
    res = run([os.path.join(BIN, "pytest"), "-q", "--collect-only", "-p", "no:cacheprovider",
               os.path.join(here, "tests")])
    assert res.returncode == 0, res.out[-2000:]
    assert re.search(r"^\d+ tests? collected", res.out, re.M), res.out[-2000:]
