# -*- coding: utf-8 -*-
"""gpu_facts run in-process, with nvidia-smi replaced by small executables that print the
captured real outputs, garbage, or fail as the real tool does."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import gpu_facts

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "fixtures")


def fake_tool(tmp_path, body):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_facts.main()
    return json.loads(capsys.readouterr().out)


def test_reads_captured_h200_report(tmp_path, capsys):
    smi = fake_tool(tmp_path, 'cat "%s"' % os.path.join(FIXTURES, "h200x2", "busy-b.xml"))
    result = run_module(capsys, {"nvidia_smi_path": smi, "docker_cli": "no-such-docker"})
    facts = result["ansible_facts"]["sparkops_gpu"]
    assert result["changed"] is False
    assert facts["gpu_count"] == 2
    assert facts["source"] == smi + " -q -x"
    assert [p["used_mib"] for p in facts["processes"]] == [3590, 22022]
    assert facts["host_memory"]["total_mib"] > 0


def test_tool_failing_fails_with_its_message(tmp_path, capsys):
    smi = fake_tool(tmp_path, "echo \"NVIDIA-SMI has failed because it couldn't communicate with "
                              "the NVIDIA driver.\"; exit 9")
    result = run_module(capsys, {"nvidia_smi_path": smi})
    assert result["failed"] is True
    assert "exit 9" in result["msg"] and "couldn't communicate" in result["msg"]


def test_tool_printing_garbage_fails_clearly(tmp_path, capsys):
    smi = fake_tool(tmp_path, "echo 'Segmentation fault'")
    result = run_module(capsys, {"nvidia_smi_path": smi})
    assert result["failed"] is True
    assert "expected nvidia-smi's XML report" in result["msg"]
    assert "Segmentation fault" in result["msg"]


def test_missing_tool_names_what_was_looked_for(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_facts, "EXTRA_DIRS", [str(tmp_path / "nowhere")])
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_module(capsys, {})
    assert result["failed"] is True
    assert "nvidia-smi not found on PATH" in result["msg"]
    assert "require_gpu: false" in result["msg"]


def test_missing_tool_tolerated_without_require_gpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_facts, "EXTRA_DIRS", [str(tmp_path / "nowhere")])
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_module(capsys, {"require_gpu": False})
    facts = result["ansible_facts"]["sparkops_gpu"]
    assert result.get("failed") is not True
    assert facts["gpus"] == [] and facts["gpu_count"] == 0
    assert "nvidia-smi not found" in facts["error"]
    assert result["warnings"]


def test_nvidia_smi_path_not_executable(tmp_path, capsys):
    path = tmp_path / "nvidia-smi"
    path.write_text("not a program")
    result = run_module(capsys, {"nvidia_smi_path": str(path)})
    assert result["failed"] is True
    assert "is not an executable file" in result["msg"]
