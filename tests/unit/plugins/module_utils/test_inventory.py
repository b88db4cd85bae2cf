# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._inventory import (
    bad_waits,
    check_inventory,
    outside_cluster,
    format_problems,
    shared_facts,
)

GOOD_VARS = {"spark1": {"fabric_address": "192.168.100.10"},
             "spark2": {"fabric_address": "192.168.100.11"}}
CANDIDATES = ["nvcr.io/nvidia/vllm:26.01-py3", "lmsysorg/sglang:spark"]


def check(groups, hostvars=None, **kw):
    kw.setdefault("model_path", "/models/Qwen3.5-122B-A10B-FP8")
    kw.setdefault("candidates", CANDIDATES)
    heads = groups.get("llm_head") or []
    kw.setdefault("head_host", heads[0] if heads else "")
    return check_inventory(groups, GOOD_VARS if hostvars is None else hostvars, **kw)


def test_two_spark_inventory_is_fine():
    problems, plan = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]})
    assert problems == []
    assert plan["head"] == "spark1" and plan["workers"] == ["spark2"] and plan["size"] == 2
    assert plan["hosts"]["spark2"]["fabric_address"] == "192.168.100.11"


def test_no_head_group():
    problems, dummy = check({"llm_workers": ["spark2"]})
    assert len(problems) == 1
    assert "'llm_head' is missing or empty" in problems[0]


def test_two_heads():
    problems, dummy = check({"llm_head": ["spark1", "spark2"], "llm_workers": []})
    assert any("has 2 hosts (spark1, spark2)" in p and "exactly one head" in p for p in problems)


def test_head_also_worker():
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark1", "spark2"]})
    assert any("both the head and a worker" in p for p in problems)


def test_unknown_head_host():
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]}, head_host="spark9")
    assert any("'spark9', which is not a host" in p for p in problems)


def test_fabric_problems_are_all_reported():
    hostvars = {"spark1": {"fabric_address": "not-an-ip"},
                "spark2": {},
                "spark3": {"fabric_address": "10.0.0.5", "fabric_subnet": "192.168.100.0/24"},
                "spark4": {"fabric_subnet": "192.168.100.0/99"}}
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2", "spark3", "spark4"]},
                            hostvars)
    text = format_problems(problems)
    assert "4 problems" in text
    assert "fabric_address 'not-an-ip' is not an IP address" in text
    assert "spark2 has neither fabric_address nor fabric_subnet" in text
    assert "10.0.0.5 is outside fabric_subnet 192.168.100.0/24" in text
    assert "fabric_subnet '192.168.100.0/99' is not a network" in text


def test_shared_subnet_covers_hosts_without_address():
    problems, plan = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]},
                           {"spark1": {}, "spark2": {}}, fabric_subnet="192.168.200.0/24")
    assert problems == []
    assert plan["hosts"]["spark1"]["fabric_subnet"] == "192.168.200.0/24"


def test_duplicate_fabric_address():
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]},
                            {"spark1": {"fabric_address": "192.168.100.10"},
                             "spark2": {"fabric_address": "192.168.100.10"}})
    assert any("same fabric_address 192.168.100.10" in p for p in problems)


@pytest.mark.parametrize("model_path,message", [
    ("", "sparkops_model_path is not set"),
    (None, "sparkops_model_path is not set"),
    ("models/qwen", "not an absolute path"),
])
def test_model_path(model_path, message):
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]}, model_path=model_path)
    assert len(problems) == 1 and message in problems[0]


@pytest.mark.parametrize("candidates,message", [
    ([], "sparkops_engine_candidates is empty"),
    ("nvcr.io/nvidia/vllm:26.01-py3", "sparkops_engine_candidates is empty"),
    (["ok/image:1", ""], "expected image references"),
])
def test_candidates(candidates, message):
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]}, candidates=candidates)
    assert len(problems) == 1 and message in problems[0]


def test_status_needs_neither_model_nor_candidates():
    problems, dummy = check({"llm_head": ["spark1"], "llm_workers": ["spark2"]}, model_path="",
                            candidates=[], require_model=False, require_candidates=False)
    assert problems == []


def test_a_play_host_outside_the_head_and_worker_groups_is_named():
    problems = outside_cluster(["spark1", "spark2", "printer"], ["spark1", "spark2"], "inference_head",
                               "inference_workers")
    assert problems == ["the play runs on printer, which is neither the head (sparkops_head_group: "
                        "inference_head) nor a worker (sparkops_worker_group: inference_workers): run the "
                        "deploy on the cluster's hosts only (its playbooks do: sparkops_cluster_group), or "
                        "put it into one of those groups"]
    assert "which are" in outside_cluster(["a", "b", "c"], ["a"], "h", "w")[0]
    assert outside_cluster(["spark1"], ["spark1", "spark2"], "h", "w") == []  # --limit: fewer is fine


def test_a_wait_that_is_not_whole_seconds_0_or_more_is_named():
    problems = bad_waits({"model_server_restore_timeout": -5, "model_server_ready_timeout": "30",
                          "ray_cluster_ready_timeout": 0, "fabric_peer_timeout": 2.5,
                          "gpu_memory_wait_timeout": "soon", "engine_image_pull_timeout": None,
                          "gpu_memory_stop_timeout": 30.0, "fabric_preflight_timeout": True,
                          "engine_image_gpu_check_timeout": "-1"})
    assert problems == [
        "engine_image_gpu_check_timeout is -1: expected whole seconds, 0 or more (0 looks once and does not wait) - "
        "set it to how long to wait, or drop it for its default",
        "fabric_peer_timeout is 2.5: expected whole seconds, 0 or more (0 looks once and does not wait) - "
        "set it to how long to wait, or drop it for its default",
        "fabric_preflight_timeout is True: expected whole seconds, 0 or more (0 looks once and does not wait) - "
        "set it to how long to wait, or drop it for its default",
        "gpu_memory_wait_timeout is 'soon': expected whole seconds, 0 or more (0 looks once and does not wait) - "
        "set it to how long to wait, or drop it for its default",
        "model_server_restore_timeout is -5: expected whole seconds, 0 or more (0 looks once and does not wait) - "
        "set it to how long to wait, or drop it for its default"]


def test_hosts_that_share_one_set_of_facts_are_named_with_what_to_do():
    """Each host set its own name in its facts and its variables: reading another's there means
    the play's hosts share one dict of facts (ansible-core 2.21 after an early run_once task)."""
    assert shared_facts({"spark1": {"facts": "spark1", "variables": "spark1"},
                         "spark2": {"facts": "spark2", "variables": "spark2"}}) == []
    assert shared_facts({"spark1": {"facts": None, "variables": None}}) == []  # not set: not checked
    problems = shared_facts({"spark1": {"facts": "spark2", "variables": "spark1"},
                             "spark2": {"facts": "spark2", "variables": "spark2"}})
    assert len(problems) == 1
    assert problems[0].startswith("the hosts of this play share one set of facts: spark1 reads spark2's "
                                  "(sparkops_fact_owner in its facts). ansible-core 2.21 does this")
    assert "ansible.builtin.set_fact with cacheable: true, not run_once" in problems[0]
