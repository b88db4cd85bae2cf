# -*- coding: utf-8 -*-
"""gpu_memory run in-process against a fake docker CLI (a shell script that keeps container
state in files) and nvidia-smi printing a captured GB10 report: the record is on disk before
each `docker stop` runs, a failed stop is taken out of it again, and state=recorded reports what
a restore would start."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import gpu_memory

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures")

# state/<name> holds "running" or "exited", state/<name>.policy its restart policy (none: "no");
# `stop` copies the record into stops.log first, then fails for names listed in state/refuse;
# `update --restart P` writes the policy and logs the call in stops.log
DOCKER = r'''#!/bin/sh
d=%(dir)s
case "$1" in
  container) name=${3#id-}
    [ -f "$d/state/$name" ] || { echo "Error: No such container: $name" >&2; exit 1; }
    st=$(cat "$d/state/$name")
    r=false; [ "$st" = running ] && r=true
    p=$(cat "$d/state/$name.policy" 2>/dev/null || echo no)
    printf '[{"Id": "id-%%s", "Name": "/%%s", "State": {"Running": %%s}, ' "$name" "$name" "$r"
    printf '"HostConfig": {"RestartPolicy": {"Name": "%%s", "MaximumRetryCount": 0}}}]\n' "$p" ;;
  update) name=${4#id-}; echo "$3" > "$d/state/$name.policy"; echo "update $name --restart $3" >> "$d/stops.log" ;;
  stop) name=${4#id-}
    { echo "stop $name:"; cat "$d/record.json" 2>/dev/null || echo none; echo; } >> "$d/stops.log"
    if grep -qx "$name" "$d/state/refuse" 2>/dev/null; then echo "Error: cannot stop $name" >&2; exit 1; fi
    echo exited > "$d/state/$name" ;;
  start) name=${2#id-}; echo running > "$d/state/$name" ;;
  ps) exit 0 ;;
  *) exit 0 ;;
esac
'''


@pytest.fixture
def host(tmp_path, executable):
    (tmp_path / "state").mkdir()
    for name in ("old-vllm", "embed"):
        (tmp_path / "state" / name).write_text("running\n")
    docker = executable(tmp_path / "docker", DOCKER % {"dir": tmp_path})
    smi = executable(tmp_path / "nvidia-smi", '#!/bin/sh\ncat "%s"\n' % os.path.join(FIXTURES, "gb10", "nvidia-smi-q-busy.xml"))
    return tmp_path, {"docker_cli": docker, "nvidia_smi_path": smi,
                      "state_file": str(tmp_path / "record.json"), "stop_timeout": 1}


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_memory.main()
    return json.loads(capsys.readouterr().out)


def test_each_holder_is_in_the_record_before_it_is_stopped(host, capsys):
    d, args = host
    res = run_module(capsys, dict(args, containers=["old-vllm", "embed"]))
    assert res["changed"] is True, res
    log = (d / "stops.log").read_text()
    first, second = log.split("stop embed:")
    assert '"name": "old-vllm"' in first.split("stop old-vllm:")[1]  # on disk while it was stopped
    assert '"name": "embed"' in second
    assert [e["name"] for e in json.loads((d / "record.json").read_text())["stopped"]] == ["old-vllm", "embed"]


def test_a_stop_that_fails_is_taken_out_of_the_record(host, capsys):
    d, args = host
    (d / "state" / "refuse").write_text("embed\n")
    res = run_module(capsys, dict(args, containers=["old-vllm", "embed"]))
    assert res["failed"] is True and "could not stop container embed: Error: cannot stop embed" in res["msg"]
    assert str(d / "record.json") in res["msg"]
    assert [e["name"] for e in json.loads((d / "record.json").read_text())["stopped"]] == ["old-vllm"]
    assert (d / "state" / "embed").read_text().strip() == "running"


def test_recorded_lists_what_a_restore_would_start(host, capsys):
    d, args = host
    res = run_module(capsys, dict(args, state="recorded"))
    assert (res["exists"], res["record"], res["down"], res["changed"]) == (False, [], [], False)
    run_module(capsys, dict(args, containers=["old-vllm", "embed"]))
    (d / "state" / "embed").write_text("running\n")  # started again by hand
    res = run_module(capsys, dict(args, state="recorded"))
    assert res["exists"] is True and [e["name"] for e in res["record"]] == ["old-vllm", "embed"]
    assert [e["name"] for e in res["down"]] == ["old-vllm"]
    assert "ansible_facts" not in res  # the facts of the freed run stay as they were


def test_a_restart_policy_is_held_while_stopped_and_given_back_on_restore(host, capsys):
    """"always" brings a container back at boot even after `docker stop`: set to "no" before the
    stop (the record keeps "always"), put back when it is started again."""
    d, args = host
    (d / "state" / "old-vllm.policy").write_text("always\n")
    run_module(capsys, dict(args, containers=["old-vllm", "embed"]))
    log = (d / "stops.log").read_text()
    assert log.index("update old-vllm --restart no") < log.index("stop old-vllm:")
    assert "update embed" not in log  # its policy is "no": nothing to hold
    assert (d / "state" / "old-vllm.policy").read_text().strip() == "no"
    entries = json.loads((d / "record.json").read_text())["stopped"]
    assert [e.get("restart_policy") for e in entries] == ["always", None]
    res = run_module(capsys, dict(args, state="restored"))
    assert res["changed"] is True, res
    assert (d / "state" / "old-vllm.policy").read_text().strip() == "always"
    assert (d / "state" / "old-vllm").read_text().strip() == "running"


def test_a_recorded_container_removed_since_is_named_not_started_and_not_a_failure(host, capsys):
    """A host whose image store changed (or an operator who removed the old container): the
    record lists a container that no longer exists. recorded() keeps it out of `down`; restore
    warns, starts the rest and puts the record aside."""
    d, args = host
    run_module(capsys, dict(args, containers=["old-vllm", "embed"]))
    (d / "state" / "embed").unlink()  # removed since it was stopped
    res = run_module(capsys, dict(args, state="recorded"))
    assert [e["name"] for e in res["down"]] == ["old-vllm"] and [e["name"] for e in res["gone"]] == ["embed"]
    res = run_module(capsys, dict(args, state="restored"))
    assert res.get("failed") is not True, res
    assert res["ansible_facts"]["sparkops_gpu_memory"]["notes"] == [
        "container embed was removed since it was stopped: nothing to start"]
    assert "nothing to start" in json.dumps(res["warnings"])
    assert (d / "state" / "old-vllm").read_text().strip() == "running"
    assert not (d / "record.json").exists() and (d / "record.json.restored").exists()
