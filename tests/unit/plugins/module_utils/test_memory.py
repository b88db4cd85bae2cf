# -*- coding: utf-8 -*-
"""Decisions of plugins/module_utils/_memory.py, over facts parsed from captured outputs."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._gpu import (
    gpu_summary,
    parse_meminfo,
    parse_nvidia_smi_xml,
)
from ansible_collections.sparkops.inference.plugins.module_utils._memory import (
    boot_hold,
    hold_argv,
    release_argv,
    RecordError,
    add_to_record,
    free_mib,
    admission_refusal,
    engine_admission,
    gpu_mib_by_container,
    holders_diff,
    load_record,
    new_record,
    parse_systemctl_show,
    plan_holders,
    required_mib,
    restore_order,
    still_holding,
    unit_gpu_mib,
)

CID = "23a4e26e724e789c47d511b61022f73d9905a42ef38c1a7505b35bca3928ef37"


@pytest.fixture
def gb10_busy(fixture_text):
    """GB10 facts: pid 6330 (sglang::scheduler, 96073 MiB) in container CID, named old-sglang."""
    report = parse_nvidia_smi_xml(fixture_text("gb10", "nvidia-smi-q-busy.xml"))
    return gpu_summary(report, parse_meminfo(fixture_text("lab", "meminfo.txt")),
                       containers={CID: "old-sglang"},
                       pid_cgroups={6330: fixture_text("lab", "cgroup-v1-docker.txt")})


@pytest.fixture
def h200_busy(fixture_text):
    report = parse_nvidia_smi_xml(fixture_text("h200x2", "busy-b.xml"))
    return gpu_summary(report, parse_meminfo(fixture_text("lab", "meminfo.txt")))


def test_gpu_memory_by_container(gb10_busy):
    assert gpu_mib_by_container(gb10_busy) == {CID: 96073}


def test_plan_listed_container_and_gpu_owner_once(gb10_busy):
    containers = [{"name": "old-sglang", "id": CID, "exists": True, "running": True},
                  {"name": "gone", "id": None, "exists": False, "running": False}]
    holders, notes = plan_holders(containers, {}, [], gb10_busy, True, [])
    assert holders == [{"kind": "container", "name": "old-sglang", "id": CID, "reason": "listed",
                        "gpu_mib": 96073}]
    assert notes == ["container gone does not exist"]


def test_plan_gpu_owner_found_without_listing(gb10_busy):
    holders, notes = plan_holders([], {}, [], gb10_busy, True, [])
    assert [(h["name"], h["gpu_mib"]) for h in holders] == [("old-sglang", 96073)]
    assert holders[0]["reason"] == "holds GPU memory (pid 6330)"
    assert plan_holders([], {}, [], gb10_busy, False, [])[0] == []  # opt-in only


def test_plan_never_stops_excluded(gb10_busy):
    holders, dummy = plan_holders([], {}, [], gb10_busy, True, ["old-sglang"])
    assert holders == []


def test_plan_compose_projects_and_units(gb10_busy):
    compose = {"embeddings": [{"name": "embeddings-embed-1", "id": "e" * 64, "running": True},
                              {"name": "embeddings-db-1", "id": "d" * 64, "running": False}],
               "reranker": []}
    units = [parse_systemctl_show("Id=ollama.service\nLoadState=loaded\nActiveState=active\n"
                                  "ControlGroup=/system.slice/ollama.service\n"),
             parse_systemctl_show("Id=nope.service\nLoadState=not-found\nActiveState=inactive\n"),
             parse_systemctl_show("Id=idle.service\nLoadState=loaded\nActiveState=inactive\n")]
    holders, notes = plan_holders([], compose, units, gb10_busy, False, [], {"ollama.service": 512})
    assert [(h["kind"], h["name"]) for h in holders] == [
        ("container", "embeddings-embed-1"), ("systemd_unit", "ollama.service")]
    assert holders[1]["gpu_mib"] == 512
    assert notes == ["compose project reranker has no containers",
                     "systemd unit nope.service does not exist",
                     "systemd unit idle.service is not active"]


def test_systemctl_show_of_an_active_unit():
    info = parse_systemctl_show("Id=vllm.service\nLoadState=loaded\nActiveState=active\n"
                                "ControlGroup=/system.slice/vllm.service\nUnitFileState=enabled\n")
    assert info == {"name": "vllm.service", "exists": True, "active": True,
                    "cgroup": "/system.slice/vllm.service", "enabled": True}


def test_unit_gpu_memory_by_cgroup(gb10_busy):
    cgroups = {6330: "0::/system.slice/sglang.service\n"}
    assert unit_gpu_mib(gb10_busy, cgroups, "/system.slice/sglang.service") == 96073
    assert unit_gpu_mib(gb10_busy, cgroups, "/system.slice/other.service") == 0
    assert unit_gpu_mib(gb10_busy, cgroups, None) == 0


def test_record_keeps_the_first_entries_and_restores_in_reverse():
    record = new_record("2026-11-30T10:00:00")
    add_to_record(record, [{"kind": "container", "name": "a", "id": "1"},
                           {"kind": "systemd_unit", "name": "b.service", "id": "b.service"}])
    add_to_record(record, [{"kind": "container", "name": "a", "id": "2"},  # second run: kept as first
                           {"kind": "container", "name": "c", "id": "3"}])
    assert [(e["name"], e["id"]) for e in record["stopped"]] == [("a", "1"), ("b.service", "b.service"), ("c", "3")]
    assert [e["name"] for e in restore_order(record)] == ["c", "b.service", "a"]
    again = load_record(json.dumps(record), "/var/lib/sparkops/x.json")
    assert again == record


@pytest.mark.parametrize("text,message", [
    ("{not json", "is corrupt"),
    ('{"version": 9, "stopped": []}', "is not a sparkops record"),
    ('{"version": 1, "stopped": [{"kind": "volume", "name": "data"}]}', "not a stopped container or unit"),
    ("[]", "is not a sparkops record"),
])
def test_bad_record_names_the_file_and_restores_nothing(text, message):
    with pytest.raises(RecordError, match=message) as err:
        load_record(text, "/var/lib/sparkops/gpu_memory_stopped.json")
    assert "/var/lib/sparkops/gpu_memory_stopped.json" in str(err.value)


def test_required_memory():
    assert required_mib(124546, free_gib=100) == 102400
    assert required_mib(124546, free_fraction=0.85) == int(124546 * 0.85)
    assert required_mib(124546) is None
    with pytest.raises(ValueError, match="the memory in all is 121.6 GiB"):
        required_mib(124546, free_gib=200)
    with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
        required_mib(124546, free_fraction=1.5)


def test_free_memory_unified_reads_meminfo(gb10_busy, fixture_text):
    mem = parse_meminfo(fixture_text("lab", "meminfo.txt"))
    assert free_mib(gb10_busy, "free") == (mem["free_mib"], mem["total_mib"])
    assert free_mib(gb10_busy, "available") == (mem["available_mib"], mem["total_mib"])


def test_free_memory_discrete_is_the_least_free_gpu(h200_busy):
    assert free_mib(h200_busy, "free") == (121126, 143771)


def test_still_holding_names_pid_and_container(gb10_busy, h200_busy):
    assert still_holding(gb10_busy) == ["pid 6330 sglang::scheduler (96073 MiB, in old-sglang)"]
    assert still_holding(h200_busy)[0] == "pid 562 python3 (3590 MiB, in the host)"


def test_live_h200_capture_holder_decisions(fixture_text):
    """Captured by tests/device/validate_gpu.py on a real H200 host (docs/validation.md):
    a torch process held 3 GiB on the one GPU, then was stopped."""
    busy = gpu_summary(parse_nvidia_smi_xml(fixture_text("h200x1", "busy-q.xml")),
                       parse_meminfo(fixture_text("h200x1", "busy-meminfo.txt")),
                       pid_cgroups={421: fixture_text("h200x1", "busy-cgroup-421.txt")})
    apps = fixture_text("h200x1", "busy-apps.csv").splitlines()[1].split(", ")
    (proc,) = busy["processes"]
    assert (proc["gpu_uuid"], proc["pid"], proc["name"]) == (apps[0], int(apps[1]), apps[2])
    assert proc["used_mib"] == int(apps[3].split()[0]) == 3590
    assert proc["container"] is None  # its cgroup (0::/process_api/<32 hex>) is no container runtime's
    assert plan_holders([], {}, [], busy, True, []) == ([], [])
    assert still_holding(busy) == ["pid 421 /opt/torch/.venv/bin/python3 (3590 MiB, in the host)"]
    after = gpu_summary(parse_nvidia_smi_xml(fixture_text("h200x1", "after-q.xml")),
                        parse_meminfo(fixture_text("h200x1", "busy-meminfo.txt")))
    assert after["processes"] == [] and still_holding(after) == []
    assert free_mib(busy, "free") == (139558, 143771)
    assert free_mib(after, "free")[0] - free_mib(busy, "free")[0] == 143156 - 139558


def test_what_our_own_containers_hold_counts_as_free(gb10_busy):
    """A re-deploy finds its own engine holding the memory (here the captured GB10 SGLang
    scheduler, 96073 MiB): ours is stopped before its replacement starts (or kept when nothing
    changes), so it does not block the wait."""
    from ansible_collections.sparkops.inference.plugins.module_utils._memory import own_gpu_mib
    assert own_gpu_mib(gb10_busy, ["old-sglang"]) == 96073
    assert own_gpu_mib(gb10_busy, ["sparkops-ray-head", "sparkops-model-server"]) == 0


def test_boot_hold_keeps_what_brings_a_holder_back_at_boot():
    c = boot_hold({"kind": "container", "name": "old", "id": "abc"}, restart_policy="on-failure:3")
    assert hold_argv(c, "docker", "systemctl") == ["docker", "update", "--restart", "no", "abc"]
    assert release_argv(c, "docker", "systemctl") == ["docker", "update", "--restart", "on-failure:3", "abc"]
    plain = boot_hold({"kind": "container", "name": "x", "id": "x1"}, restart_policy="no")
    assert "restart_policy" not in plain and hold_argv(plain, "docker", "systemctl") is None
    u = boot_hold({"kind": "systemd_unit", "name": "ollama.service", "id": "ollama.service"}, unit_enabled=True)
    assert hold_argv(u, "docker", "systemctl") == ["systemctl", "disable", "ollama.service"]
    assert release_argv(u, "docker", "systemctl") == ["systemctl", "enable", "ollama.service"]
    assert parse_systemctl_show("Id=a.service\nLoadState=loaded\nUnitFileState=enabled\n")["enabled"] is True
    assert parse_systemctl_show("Id=a.service\nLoadState=loaded\nUnitFileState=disabled\n")["enabled"] is False


def test_the_diff_of_a_stop_and_of_a_restore_names_each_holder():
    entries = [{"kind": "container", "name": "old-vllm"}, {"kind": "systemd_unit", "name": "embed.service"}]
    diff = holders_diff(entries, "spark1", "/var/lib/sparkops/gpu_memory_stopped.json")
    assert diff["before"] == "container old-vllm: running\nsystemd unit embed.service: running\n"
    assert diff["after"] == ("container old-vllm: stopped (recorded in /var/lib/sparkops/gpu_memory_stopped.json)\n"
                             "systemd unit embed.service: stopped (recorded in "
                             "/var/lib/sparkops/gpu_memory_stopped.json)\n")
    assert diff["before_header"].startswith("spark1: ")
    back = holders_diff(entries[:1], "spark1", "/r.json", stopping=False)
    assert (back["before"], back["after"]) == ("container old-vllm: stopped (recorded in /r.json)\n",
                                               "container old-vllm: running\n")
    assert holders_diff([], "spark1", "/r.json") is None


ADMISSION = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "h200-admission")


def captured(state):
    """gpu_facts' GPU shape from the captured nvidia-smi CSV, and what torch saw (MiB)."""
    with open(os.path.join(ADMISSION, state, "query-gpu.csv")) as f:
        gpus = [dict(zip(("index", "memory_total_mib", "memory_used_mib", "memory_free_mib"),
                         [int(x) for x in line.split(",")])) for line in f if line.strip()]
    with open(os.path.join(ADMISSION, state, "torch-mem-get-info.json")) as f:
        seen = [dict((k, v / 1048576.0) for k, v in g.items()) for g in json.load(f)]
    return {"gpus": gpus, "unified_memory": False}, seen


@pytest.mark.parametrize("state", ["idle", "held-40g-gpu0"])
def test_admission_on_a_discrete_gpu_judges_as_the_engine_s_own_check(state):
    """vLLM's check compares torch.cuda.mem_get_info's free with utilization x its total; from
    nvidia-smi's numbers alone the admission must decide the same, captured on an H200."""
    facts, seen = captured(state)
    view = engine_admission(facts, 0.5)
    assert abs(view["total_mib"] - seen[0]["total"]) < 64, (view, seen)
    assert abs(view["free_mib"] - seen[0]["free"]) < 64, (view, seen)
    for util in (0.5, 0.7, 0.71, 0.75, 0.9, 0.99):
        engine_starts = seen[0]["free"] >= util * seen[0]["total"]
        assert engine_admission(facts, util)["ok"] == engine_starts, (state, util)


def test_admission_names_the_reachable_utilization():
    facts, dummy = captured("held-40g-gpu0")  # another process holds 40 GiB of GPU 0
    view = engine_admission(facts, 0.9)
    assert view["ok"] is False and view["reachable"] == 0.70 and view["wanted_mib"] == 128841


def test_admission_on_unified_memory_reads_memfree_as_vllm_does():
    # the figures of the failure Spark users see (../shared/REAL-WORLD.md): free 36.75 of 121.63 GiB
    facts = {"gpus": [{"memory_total_mib": None, "memory_used_mib": None, "memory_free_mib": None}],
             "unified_memory": True, "host_memory": {"total_mib": 124548, "free_mib": 37632}}
    view = engine_admission(facts, 0.85)
    assert view["ok"] is False
    assert round(view["wanted_mib"] / 1024.0, 2) == 103.38  # vLLM's "desired ... (0.85, 103.38 GiB)"
    assert view["reachable"] == 0.30
    assert engine_admission(facts, 0.3)["ok"] is True
    with pytest.raises(ValueError):
        engine_admission(facts, 1.5)


def test_a_refused_admission_names_host_figures_holders_and_the_fix():
    # the Spark of REAL-WORLD.md: 36.75 GiB free of 121.63, vLLM asks 0.85 (103.38 GiB)
    facts = {"gpus": [{"memory_total_mib": None}], "unified_memory": True,
             "host_memory": {"total_mib": 124548, "free_mib": 37632}}
    view = engine_admission(facts, 0.85)
    msg = admission_refusal("spark2", 0.85, view, ["pid 4242 python3 (n/a MiB, in old-vllm)"],
                            ["the model's page cache", "all page caches"])
    assert msg == ("spark2: the engine would not start - --gpu-memory-utilization 0.85 wants 103.4 GiB of "
                   "121.6 GiB, and 36.8 GiB is free (MemFree of the unified memory) after evicting the model's "
                   "page cache and all page caches; at most 0.30 is reachable now; still holding memory: pid 4242 "
                   "python3 (n/a MiB, in old-vllm). Lower model_server_gpu_memory_utilization to 0.30 or less, or "
                   "free the memory (gpu_memory_stop_containers / gpu_memory_stop_systemd_units name what the "
                   "deploy stops); nothing was started")
    bare = admission_refusal("spark1", 0.9, dict(view, reachable=0.5, unified_memory=False), [], [], "--mem-fraction-static")
    assert "--mem-fraction-static 0.9" in bare and "(free on the tightest GPU" in bare
    assert "no GPU process is listed" in bare and "after evicting" not in bare
