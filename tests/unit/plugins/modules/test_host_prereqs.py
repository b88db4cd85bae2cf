# -*- coding: utf-8 -*-
"""host_prereqs run in-process with a fake docker CLI (prints a Docker 29 `docker info`) and a fake
nvidia-smi that prints the GB10 report captured on a real DGX Spark: the prerequisites and the
GPU facts in one call, and the failures in the order the two calls had."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import host_prereqs

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures")
INFO = {"ServerVersion": "29.1.3", "DockerRootDir": "/var/lib/docker", "Runtimes": {"nvidia": {}, "runc": {}},
        "DefaultRuntime": "runc", "Architecture": "aarch64", "ServerErrors": None}


BUSY = os.path.join(FIXTURES, "gb10", "nvidia-smi-q-busy.xml")


def sh(body):
    return "#!/bin/sh\n" + body + "\n"


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_prereqs.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def docker(tmp_path, monkeypatch, executable):
    # the Python running the tests is not the host's: ansible-test's and the matrix's venvs have no
    # requests, which the prerequisite check rightly names - these tests are about the GPU facts
    monkeypatch.setattr(host_prereqs, "has_requests", lambda: True)
    info = tmp_path / "info.json"
    info.write_text(json.dumps(INFO))
    return executable(tmp_path / "docker", sh('cat "%s"' % info))


def test_prerequisites_and_gpu_facts_in_one_call(tmp_path, capsys, docker, executable):
    smi = executable(tmp_path / "nvidia-smi", sh('cat "%s"' % BUSY))
    result = run_module(capsys, {"docker_cli": docker, "gpu_facts": True, "nvidia_smi_path": smi,
                                 "require_gpu_runtime": True})
    assert result.get("failed") is not True, result
    facts = result["ansible_facts"]
    assert facts["sparkops_host"]["docker"]["server_version"] == "29.1.3"
    assert facts["sparkops_gpu"]["gpus"][0]["name"] == "NVIDIA GB10"
    assert facts["sparkops_gpu"]["unified_memory"] is True
    assert facts["sparkops_gpu"]["source"] == smi + " -q -x"


def test_without_gpu_facts_no_gpu_is_read(tmp_path, capsys, docker, executable):
    smi = executable(tmp_path / "nvidia-smi", sh("exit 9"))
    result = run_module(capsys, {"docker_cli": docker, "nvidia_smi_path": smi})
    assert result.get("failed") is not True, result
    assert "sparkops_gpu" not in result["ansible_facts"]


def test_a_gpu_that_cannot_be_read_fails_with_the_gpu_message_and_keeps_the_host_facts(tmp_path, capsys, docker,
                                                                                       executable):
    smi = executable(tmp_path / "nvidia-smi", sh("echo \"NVIDIA-SMI has failed because it couldn't communicate with "
                                                 "the NVIDIA driver.\"; exit 9"))
    result = run_module(capsys, {"docker_cli": docker, "gpu_facts": True, "nvidia_smi_path": smi})
    assert result["failed"] is True
    assert "exit 9" in result["msg"] and "couldn't communicate" in result["msg"]
    assert result["ansible_facts"]["sparkops_host"]["docker"]["server_version"] == "29.1.3"
    tolerated = run_module(capsys, {"docker_cli": docker, "gpu_facts": True, "nvidia_smi_path": smi,
                                    "require_gpu": False})
    assert tolerated.get("failed") is not True
    assert tolerated["ansible_facts"]["sparkops_gpu"]["gpus"] == []
    assert "couldn't communicate" in tolerated["ansible_facts"]["sparkops_gpu"]["error"]


def test_missing_prerequisites_fail_first(tmp_path, capsys, executable):
    smi = executable(tmp_path / "nvidia-smi", sh('cat "%s"' % BUSY))
    result = run_module(capsys, {"docker_cli": str(tmp_path / "no-docker"), "gpu_facts": True,
                                 "nvidia_smi_path": smi})
    assert result["failed"] is True
    assert "missing prerequisite(s)" in result["msg"] and "docker CLI was not found" in result["msg"]
    assert "sparkops_gpu" not in result["ansible_facts"]
