# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type


import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._prereqs import (
    docker_arch,
    evaluate,
    gpu_run_problem,
    parse_docker_info,
)


def test_parse_docker_info_from_lab(fixture_text):
    info = parse_docker_info(fixture_text("lab", "docker-info.json"))
    assert info["server_version"].startswith("20.10")
    assert "nvidia" in info["runtimes"] and "runc" in info["runtimes"]
    assert info["root_dir"] == "/var/lib/docker"


def test_parse_docker_info_daemon_down(fixture_text):
    info = parse_docker_info(fixture_text("lab", "docker-info-daemon-down.json"))
    # docker 28's CLI prints the error on stderr and an empty report (exit 1)
    assert info["server_version"] in (None, "")
    assert info["runtimes"] == []


def test_parse_docker_info_garbage():
    with pytest.raises(ValueError):
        parse_docker_info("[1, 2]")


@pytest.mark.parametrize("machine,arch", [("x86_64", "amd64"), ("aarch64", "arm64"),
                                          ("arm64", "arm64"), ("riscv64", "riscv64")])
def test_docker_arch(machine, arch):
    assert docker_arch(machine) == arch


def good():
    return {"docker_cli": "/usr/bin/docker", "docker": {"runtimes": ["nvidia", "runc"]},
            "gpu_runtime": True, "python_requests": True, "python": "/usr/bin/python3",
            "free_disk_gib": 500.0, "disk_path": "/var/lib/docker"}


def test_all_good():
    assert evaluate(good(), 80, True) == []


def test_every_missing_piece_has_its_fix():
    info = good()
    info.update(docker=None, docker_error="Cannot connect to the Docker daemon", gpu_runtime=False,
                python_requests=False, free_disk_gib=12.5)
    problems = evaluate(info, 80, True)
    text = "\n".join(problems)
    assert len(problems) == 3  # no runtime check without a reachable engine
    assert "systemctl start docker" in text
    assert "apt-get install python3-requests" in text
    assert "only 12.5 GiB free under /var/lib/docker" in text


def test_no_gpu_runtime():
    info = good()
    info.update(gpu_runtime=False, docker={"runtimes": ["runc"]})
    (problem,) = evaluate(info, 0, True)
    assert "NVIDIA Container Toolkit" in problem and "runc" in problem
    assert evaluate(info, 0, False) == []


def test_no_docker_cli():
    info = good()
    info.update(docker_cli=None, docker=None)
    (problem,) = evaluate(info, 0, True)
    assert "docker CLI was not found" in problem


@pytest.mark.parametrize("version,ok", [("20.10.24+dfsg1", True), ("26.1.5+dfsg1", True), ("29.0.1", True),
                                        ("19.03.15", False), ("1.13.1", False)])
def test_docker_too_old_is_named_with_its_version(version, ok):
    info = good()
    info["docker"] = dict(info["docker"], server_version=version)
    problems = evaluate(info, 0, True)
    if ok:
        assert problems == []
    else:
        (problem,) = problems
        assert "the Docker engine is %s, older than 20.10" % version in problem and "upgrade Docker" in problem


def test_no_timeout_binary():
    info = dict(good(), timeout=None, path="/usr/bin:/bin")
    (problem,) = evaluate(info, 0, True)
    assert "coreutils' timeout is not on PATH (/usr/bin:/bin)" in problem and "install coreutils" in problem
    assert evaluate(dict(good(), timeout="/usr/bin/timeout"), 0, True) == []


def test_firewall_on_without_iptables():
    (problem,) = evaluate(dict(good(), iptables=["iptables-restore"], path="/usr/bin"), 0, True)
    assert problem.startswith("the firewall is on (sparkops_firewall) but iptables-restore is not on PATH")
    assert "apt-get install iptables" in problem
    (both,) = evaluate(dict(good(), iptables=["iptables", "iptables-restore"]), 0, True)
    assert "iptables and iptables-restore are not on PATH" in both
    assert evaluate(dict(good(), iptables=[]), 0, True) == []


@pytest.mark.parametrize("fixture,words", [
    ("no-toolkit.txt", ["install nvidia-container-toolkit", "nvidia-ctk runtime configure --runtime=docker",
                        "systemctl restart docker"]),
    ("cuda-too-new.txt", ["needs a newer CUDA than this host's NVIDIA driver", "update the driver",
                          "cuda>=12.8"]),
    ("driver-not-loaded.txt", ["NVIDIA kernel driver is not loaded", "reboot the host", "nvidia-smi"]),
])
def test_gpu_run_failures_name_the_cause_and_the_fix(fixture_text, fixture, words):
    text = fixture_text("docker-gpu-run", fixture)
    msg = gpu_run_problem(125, text, "nvcr.io/nvidia/vllm:25.11-py3", 60)
    assert msg.startswith("docker run --gpus all nvcr.io/nvidia/vllm:25.11-py3 failed: ")
    for w in words:
        assert w in msg, (w, msg)
    assert "Docker said: " in msg  # Docker's own words follow, on one line
    assert "\n" not in msg


def test_gpu_run_that_works_is_no_problem():
    assert gpu_run_problem(0, "", "img", 60) is None


def test_gpu_run_that_hangs_or_says_something_else():
    assert "did not finish within 60 s" in gpu_run_problem(124, "", "img", 60)
    other = gpu_run_problem(125, "docker: Error response from daemon: no space left on device.", "img", 60)
    assert "failed (exit 125): docker: Error response from daemon: no space left on device." in other
