# -*- coding: utf-8 -*-
"""deploy_record run in-process against files in a temp dir and a fake docker CLI that prints a
`docker container inspect` document of the lab's Ray worker (and exits 1 for the absent
engine, as Docker does): record, re-record (no change), check mode, compare."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import deploy_record

WORKER = {"Id": "5b1d", "Name": "/sparkops-ray-worker", "Image": "sha256:3634",
          "State": {"Status": "running", "Running": True, "StartedAt": "2026-12-02T00:38:01Z"},
          "Config": {"Image": "10.77.0.5:5000/sparkops/lab-vllm:0.17.0", "Entrypoint": ["ray", "start"],
                     "Cmd": ["--block"], "Env": ["A=1"], "Labels": {}},
          "HostConfig": {"RestartPolicy": {"Name": "unless-stopped"}}}


def run_module(capsys, args, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            deploy_record.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    docs = tmp_path / "inspect.json"
    docs.write_text(json.dumps([WORKER]))
    docker = tmp_path / "docker"
    docker.write_text('#!/bin/sh\ncat "%s"\necho "Error: No such container: sparkops-model-server" >&2\nexit 1\n' % docs)
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    env = tmp_path / "fabric.env"
    env.write_text("NCCL_SOCKET_IFNAME=enp1s0f1np1\n")
    token = tmp_path / "ray-token"
    token.write_text("t0ken")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    path = str(tmp_path / "state" / "deployed.json")
    args = {"mode": "record", "path": path, "docker_cli": str(docker),
            "containers": ["sparkops-ray-worker", "sparkops-model-server"],
            "files": [{"path": str(env)}, {"path": str(token), "secret": True}],
            "model_path": str(model), "deployed": {"image": "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"}}
    return {"args": args, "path": path, "env": env, "token": token, "docker": str(docker)}


def test_record_once_then_no_change_then_drift_named(capsys, host):
    check = run_module(capsys, host["args"], check=True)
    assert check["changed"] is True and not os.path.exists(host["path"])
    first = run_module(capsys, host["args"])
    assert first["changed"] is True
    assert oct(os.stat(host["path"]).st_mode & 0o777) == "0o600"
    assert "t0ken" not in open(host["path"]).read()
    assert first["record"]["containers"]["sparkops-model-server"] is None
    again = run_module(capsys, host["args"])
    assert again["changed"] is False
    compare = {"mode": "compare", "path": host["path"], "docker_cli": host["docker"]}
    same = run_module(capsys, compare)
    assert same["in_sync"] is True and same["lines"] == [] and same["changed"] is False
    assert same["deployed"]["image"].endswith("lab-vllm:0.17.0")
    host["env"].write_text("NCCL_SOCKET_IFNAME=eth9\n")
    host["token"].write_text("changed by hand")
    moved = run_module(capsys, compare)
    assert moved["in_sync"] is False
    assert moved["lines"] == ["file %s: env NCCL_SOCKET_IFNAME was enp1s0f1np1, now eth9" % host["env"],
                              "file %s: content changed since the deploy (sha256 %s... now %s...)" % (
                                  host["token"], moved["drift"][1]["recorded"][7:19], moved["drift"][1]["now"][7:19])]
    assert "changed by hand" not in json.dumps(moved)


def test_compare_without_a_record_says_so(capsys, host):
    res = run_module(capsys, {"mode": "compare", "path": host["path"], "docker_cli": host["docker"]})
    assert res["in_sync"] is False and res.get("failed") is not True
    assert res["lines"] == ["no deploy is recorded here (%s): nothing to compare with - deploy first" % host["path"]]


def test_inputs_digest_and_images_recorded_then_compared(capsys, host, tmp_path):
    """The re-run check's two extra questions, through the module: the digest is kept as given,
    each image's ID is asked of Docker (null where the image is not on the host)."""
    docker = tmp_path / "docker-images"
    docker.write_text('#!/bin/sh\ncase "$*" in\n'
                      '  "image inspect --format {{.Id}} reg/vllm:0.17.0") echo sha256:4261 ;;\n'
                      '  "image inspect"*) echo "Error: No such image: $5" >&2; exit 1 ;;\n'
                      '  *) exec "%s" "$@" ;;\nesac\n' % host["docker"])
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    args = dict(host["args"], docker_cli=str(docker), inputs_digest="a" * 64,
                images=["reg/vllm:0.17.0", "reg/sglang:0.5.10"])
    first = run_module(capsys, args)
    assert first["record"]["inputs_digest"] == "a" * 64
    assert first["record"]["images"] == {"reg/vllm:0.17.0": "sha256:4261", "reg/sglang:0.5.10": None}
    compare = {"mode": "compare", "path": host["path"], "docker_cli": str(docker)}
    assert run_module(capsys, dict(compare, inputs_digest="a" * 64, images=args["images"]))["in_sync"] is True
    assert run_module(capsys, compare)["in_sync"] is True  # drift.yml asks neither
    other = run_module(capsys, dict(compare, inputs_digest="b" * 64, images=["reg/vllm:0.17.0", "reg/other:1"]))
    assert other["in_sync"] is False
    assert [d["what"] for d in other["drift"]] == ["inputs", "image reg/other:1"]
