# -*- coding: utf-8 -*-
"""cluster_lock run in-process on a lock file in a temp directory: one run at a time."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import cluster_lock


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            cluster_lock.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def lock(tmp_path):
    path = str(tmp_path / "sparkops" / "deploy.lock")

    def call(capsys, run_id, **kw):
        args = dict(path=path, run_id=run_id, user="ops", controller="awx-7", playbook="Deploy")
        args.update(kw)
        return run_module(capsys, args)
    call.path = path
    return call


def test_one_run_at_a_time(lock, capsys):
    first = lock(capsys, "run-a")
    assert first["changed"] is True and first["lock"]["run_id"] == "run-a"
    assert lock(capsys, "run-a")["changed"] is False  # the same run again: keeps it
    second = lock(capsys, "run-b", user="maria", controller="laptop")
    assert second["failed"] is True
    assert second["msg"].startswith("another deploy holds this cluster: ops@awx-7 (Deploy, run run-a) since ")
    assert "s ago. Wait until it ends." in second["msg"]
    assert "-e sparkops_lock_take_over=true" in second["msg"] and "14400 s" in second["msg"]
    with open(lock.path) as f:
        assert json.load(f)["run_id"] == "run-a"  # untouched


def test_release_only_by_the_holder(lock, capsys):
    lock(capsys, "run-a")
    other = lock(capsys, "run-b", state="released")
    assert other["changed"] is False and "held by ops@awx-7" in json.dumps(other["warnings"])
    mine = lock(capsys, "run-a", state="released")
    assert mine["changed"] is True and mine["lock"] is None
    assert lock(capsys, "run-a", state="released")["changed"] is False  # nothing left to release
    assert lock(capsys, "x", state="read")["lock"] is None


def test_take_over_on_request_and_from_a_dead_run(lock, capsys):
    lock(capsys, "run-a")
    res = lock(capsys, "run-b", take_over=True)
    assert res["changed"] is True and res["lock"]["run_id"] == "run-b"
    assert res["taken_over"].startswith("taken over on request (sparkops_lock_take_over) from ops@awx-7 (Deploy, run run-a)")
    with open(lock.path) as f:
        doc = json.load(f)
    doc["since"] = time.time() - 20000  # a run that died hours ago
    with open(lock.path, "w") as f:
        json.dump(doc, f)
    res = lock(capsys, "run-c")
    assert res["changed"] is True and res["lock"]["run_id"] == "run-c"
    assert "older than sparkops_lock_stale_after (14400 s)" in res["taken_over"]
    assert "5.6 h ago" in res["taken_over"]


def test_check_mode_writes_nothing_and_still_refuses(lock, capsys):
    res = lock(capsys, "run-a", _ansible_check_mode=True)
    assert res["changed"] is True
    assert lock(capsys, "x", state="read")["lock"] is None
    lock(capsys, "run-a")
    assert lock(capsys, "run-b", _ansible_check_mode=True)["failed"] is True


def test_an_unreadable_lock_is_named(lock, capsys):
    import os
    os.makedirs(os.path.dirname(lock.path))
    with open(lock.path, "w") as f:
        f.write("{half")
    res = lock(capsys, "run-a")
    assert res["failed"] is True and "is not a readable deploy lock" in res["msg"] and lock.path in res["msg"]
    assert lock(capsys, "run-a", take_over=True)["changed"] is True
