# -*- coding: utf-8 -*-
"""Parsers of plugins/module_utils/_gpu.py over outputs captured on real hosts."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._gpu import (
    GpuParseError,
    container_of_cgroup,
    gpu_summary,
    parse_docker_ps,
    parse_meminfo,
    parse_mib,
    parse_nvidia_smi_xml,
)


def test_h200_idle_report(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("h200x2", "nvidia-smi-q.xml"))
    assert report["driver_version"] == "580.159.04"
    assert report["cuda_version"] == "13.0"
    assert [g["name"] for g in report["gpus"]] == ["NVIDIA H200", "NVIDIA H200"]
    gpu0 = report["gpus"][0]
    assert gpu0["index"] == 0
    assert gpu0["uuid"].startswith("GPU-")
    assert gpu0["memory_total_mib"] == 143771
    assert gpu0["unified_memory"] is False
    assert gpu0["architecture"] == "Hopper"
    assert report["processes"] == []


def test_h200_busy_report_matches_csv_capture(fixture_text):
    """The XML and the CSV queries were captured together: they must agree."""
    report = parse_nvidia_smi_xml(fixture_text("h200x2", "busy-b.xml"))
    csv_rows = [line.split(", ") for line in fixture_text("h200x2", "busy-b-gpu.csv").splitlines()[1:]]
    for gpu, row in zip(report["gpus"], csv_rows):
        assert gpu["index"] == int(row[0])
        assert gpu["memory_total_mib"] == parse_mib(row[2])
        assert gpu["memory_used_mib"] == parse_mib(row[3])
        assert gpu["memory_free_mib"] == parse_mib(row[4])
    apps = [line.split(", ") for line in fixture_text("h200x2", "busy-b-apps.csv").splitlines()[1:]]
    assert [(p["gpu_uuid"], p["pid"], p["name"], p["used_mib"]) for p in report["processes"]] == [
        (a[0], int(a[1]), a[2], parse_mib(a[3])) for a in apps]
    assert [p["gpu_index"] for p in report["processes"]] == [0, 1]


def test_h200_uuids_match_nvidia_smi_list(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("h200x2", "busy-b.xml"))
    listed = [line.split("UUID: ")[1].rstrip(")") for line in fixture_text("h200x2", "list.txt").splitlines()]
    assert [g["uuid"] for g in report["gpus"]] == listed


def test_gb10_unified_memory_is_null_not_zero(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("gb10", "nvidia-smi-q-busy.xml"))
    (gpu,) = report["gpus"]
    assert gpu["name"] == "NVIDIA GB10"
    assert gpu["memory_total_mib"] is None
    assert gpu["memory_used_mib"] is None
    assert gpu["memory_free_mib"] is None
    assert gpu["unified_memory"] is True
    (proc,) = report["processes"]
    assert (proc["pid"], proc["name"], proc["used_mib"]) == (6330, "sglang::scheduler", 96073)


def test_gb10_quoted_csv_values_are_not_available(fixture_text):
    name, total, driver = fixture_text("gb10", "query-gpu.csv").strip().split(", ")
    assert name == "NVIDIA GB10" and driver == "580.126.09"
    assert parse_mib(total) is None
    assert parse_mib("Not Supported") is None
    assert parse_mib("[Not Supported]") is None


@pytest.mark.parametrize("text,expected", [
    ("143771 MiB", 143771), ("0 MiB", 0), ("96073", 96073), ("2 GiB", 2048), ("1024 KiB", 1),
])
def test_parse_mib(text, expected):
    assert parse_mib(text) == expected


def test_parse_mib_rejects_garbage():
    with pytest.raises(GpuParseError, match="expected a memory size"):
        parse_mib("lots")


@pytest.mark.parametrize("text,message", [
    ("", "printed nothing"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
     "expected nvidia-smi's XML report"),
    ("<nvidia_smi_log><gpu id='x'><uuid>GPU-1</uuid>", "malformed XML"),
    ("<nvidia_smi_log><gpu id='x'></gpu></nvidia_smi_log>", "has no <uuid>"),
])
def test_garbage_reports_fail_clearly(text, message):
    with pytest.raises(GpuParseError, match=message):
        parse_nvidia_smi_xml(text)


def test_lab_standin_prints_what_the_parser_reads(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("lab", "standin-q-busy.xml"))
    (gpu,) = report["gpus"]
    assert gpu["unified_memory"] is True
    assert [p["used_mib"] for p in report["processes"]] == [1024]


def test_meminfo(fixture_text):
    mem = parse_meminfo(fixture_text("lab", "meminfo.txt"))
    assert mem["total_mib"] > mem["available_mib"] > 0
    assert mem["free_mib"] <= mem["total_mib"]
    lines = dict(line.split(":", 1) for line in fixture_text("lab", "meminfo.txt").splitlines())
    assert mem["total_mib"] == int(lines["MemTotal"].split()[0]) // 1024


def test_meminfo_without_total_fails():
    with pytest.raises(GpuParseError, match="no MemTotal"):
        parse_meminfo("garbage\n")


def test_container_of_cgroup_v1_docker(fixture_text):
    found = container_of_cgroup(fixture_text("lab", "cgroup-v1-docker.txt"))
    assert found["runtime"] == "docker"
    assert found["id"] == "23a4e26e724e789c47d511b61022f73d9905a42ef38c1a7505b35bca3928ef37"


def test_host_process_has_no_container(fixture_text):
    assert container_of_cgroup(fixture_text("lab", "cgroup-v1-host.txt")) is None
    assert container_of_cgroup(None) is None


@pytest.mark.parametrize("line,runtime", [
    ("0::/system.slice/docker-" + "a" * 64 + ".scope", "docker"),
    ("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-" + "c" * 64 + ".scope",
     "containerd"),
    ("0::/machine.slice/libpod-" + "d" * 64 + ".scope/container", "podman"),
    ("0::/user.slice/user-1000.slice/session-2.scope", None),
])
def test_container_of_cgroup_v2(line, runtime):
    found = container_of_cgroup(line)
    assert (found["runtime"] if found else None) == runtime


def test_summary_maps_processes_to_named_containers(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("gb10", "nvidia-smi-q-busy.xml"))
    cid = "23a4e26e724e789c47d511b61022f73d9905a42ef38c1a7505b35bca3928ef37"
    names = parse_docker_ps("%s sglang-head\n" % cid)
    facts = gpu_summary(report, {"total_mib": 124546}, containers=names,
                        pid_cgroups={6330: fixture_text("lab", "cgroup-v1-docker.txt")})
    assert facts["unified_memory"] is True
    assert facts["gpu_count"] == 1
    assert facts["processes"][0]["container"] == {"runtime": "docker", "id": cid, "name": "sglang-head"}
    assert facts["gpu_memory_used_by_processes_mib"] == 96073


def test_summary_process_without_cgroup_is_on_the_host(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("h200x2", "busy-b.xml"))
    facts = gpu_summary(report, {"total_mib": 1})
    assert [p["container"] for p in facts["processes"]] == [None, None]
    assert facts["gpu_memory_used_by_processes_mib"] == 3590 + 22022
