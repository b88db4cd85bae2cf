# -*- coding: utf-8 -*-
# The launch plan: what each engine and launcher mean for the phases, and that it agrees with the
# command line the engine is started with (module_utils/_containers builds that separately).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._containers import engine_command
from ansible_collections.sparkops.inference.plugins.module_utils._plan import (
    ENGINES,
    LAUNCHERS,
    PlanError,
    launch_plan,
)
from ansible_collections.sparkops.inference.plugins.module_utils._secrets import IN_CONTAINER

HOSTS = ["spark1", "spark2", "spark3"]


def test_vllm_over_ray_runs_the_engine_on_the_head_alone():
    plan = launch_plan("vllm", "ray", HOSTS)
    assert plan["ray"] and not plan["ranks_everywhere"]
    assert plan["rank_hosts"] == ["spark1"] and plan["meet_port"] is None
    assert plan["memory_flag"] == "--gpu-memory-utilization" and plan["key_config"] == ""
    assert plan["serving"] == "over Ray"


def test_native_runs_a_rank_on_every_host_and_no_ray():
    plan = launch_plan("vllm", "native", HOSTS)
    assert not plan["ray"] and plan["ranks_everywhere"] and plan["rank_hosts"] == HOSTS
    assert plan["meet_port"] == 29501 and plan["serving"] == "no Ray"
    plan = launch_plan("sglang", "native", HOSTS)
    assert not plan["ray"] and plan["rank_hosts"] == HOSTS and plan["meet_port"] == 20000


def test_sglang_runs_its_ranks_on_every_host_also_beside_ray():
    plan = launch_plan("sglang", "ray", HOSTS)
    assert plan["ray"] and plan["ranks_everywhere"] and plan["rank_hosts"] == HOSTS
    assert plan["memory_flag"] == "--mem-fraction-static"
    assert plan["key_config"] == "sglang-api-key.yaml" and plan["serving"] == "beside Ray"


def test_before_a_selection_auto_and_empty_mean_vllm_over_ray():
    assert launch_plan() == launch_plan("vllm", "ray")
    assert launch_plan("", "auto", HOSTS) == launch_plan("vllm", "ray", HOSTS)
    assert launch_plan(None, None)["launcher"] == "ray"


@pytest.mark.parametrize("engine, launcher, said", [
    ("trtllm", "ray", "engine is 'trtllm': expected one of vllm, sglang"),
    ("vllm", "slurm", "launcher is 'slurm': expected auto, ray or native"),
])
def test_a_name_without_a_plan_is_refused_naming_what_there_is(engine, launcher, said):
    with pytest.raises(PlanError) as err:
        launch_plan(engine, launcher, HOSTS)
    assert str(err.value) == said


@pytest.mark.parametrize("engine, launcher", list(itertools.product(ENGINES, LAUNCHERS)))
def test_the_plan_says_what_the_engines_command_line_does(engine, launcher):
    """Each plan against the argv engine_command() builds for it, rank 0 and rank 1 of 2 hosts: the
    memory flag it names is there, the ranks meet at its port, its key file is what --config reads."""
    plan = launch_plan(engine, launcher, HOSTS[:2])
    for rank in (0, 1):
        dummy, args = engine_command({
            "engine": engine, "launcher": launcher, "model_path": "/m", "served_name": "m",
            "gpus_total": 2, "gpus_per_node": 1, "nodes": 2, "gpu_memory_utilization": 0.8,
            "node_rank": rank, "head_address": "192.168.77.11", "api_key": True})
        assert plan["memory_flag"] in args
        port = plan["meet_port"]
        meets = [a for a in args if a.startswith("192.168.77.11:")] + [
            args[i + 1] for i, a in enumerate(args) if a == "--master-port"]
        assert meets == ([] if port is None else [str(port) if "--master-port" in args else "192.168.77.11:%d" % port])
        config = [args[i + 1] for i, a in enumerate(args) if a == "--config"]
        assert config == (["%s/%s" % (IN_CONTAINER, plan["key_config"])] if plan["key_config"] else [])
        # a rank on a host the plan does not give one would be a second engine
        assert ("--node-rank" in args) == plan["ranks_everywhere"]
