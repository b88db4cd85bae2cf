"""molecule test: destroy, create (lab up --fresh), prepare, converge (deploy.yml),
idempotence (changed=0), verify (testinfra over the ansible backend), destroy."""
import os

from conftest import BIN, run


def test_molecule_default_scenario():
    res = run([os.path.join(BIN, "molecule"), "test", "-s", "default"], timeout=1800)
    assert res.returncode == 0, res.out[-6000:]
    for step in ("create", "prepare", "converge", "idempotence", "verify", "destroy"):
        assert "%s: Executed: Successful" % step in res.out or "➜ %s: Executed: Successful" % step in res.out, step
    recap = [l for l in res.out.splitlines() if l.startswith("default ") and "actions=" in l]
    assert recap and "failed=0" in recap[-1], recap
    assert " passed" in res.out  # testinfra's own summary inside molecule's verify


def test_molecule_restore_scenario():
    """deploy, then teardown with restore: the old model runs again exactly as it was."""
    res = run([os.path.join(BIN, "molecule"), "test", "-s", "restore"], timeout=1800)
    assert res.returncode == 0, res.out[-6000:]
    for step in ("converge", "idempotence", "side_effect", "verify", "destroy"):
        assert "%s: Executed: Successful" % step in res.out, step


def test_molecule_rollback_scenario():
    """The serve phase fails after the old model was stopped: the old model runs again."""
    res = run([os.path.join(BIN, "molecule"), "test", "-s", "rollback"], timeout=1800)
    assert res.returncode == 0, res.out[-6000:]
    assert " passed" in res.out
