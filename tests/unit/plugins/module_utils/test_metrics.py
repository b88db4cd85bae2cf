# -*- coding: utf-8 -*-
"""The engine's load from its /metrics: the fixtures are prometheus_client's own output for the
metric definitions of the real vLLM 0.17.0 and SGLang 0.5.4 sources (fixtures/engine-metrics/make.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._metrics import (
    MetricsParseError,
    engine_load,
    parse_exposition,
    tokens_per_second,
)


def test_vllm_load_and_tokens_per_second_between_two_looks(fixture_text):
    first = engine_load(fixture_text("engine-metrics", "vllm-0.17.0-busy-1.txt"))
    second = engine_load(fixture_text("engine-metrics", "vllm-0.17.0-busy-2.txt"))
    assert first == {"engine": "vllm", "running": 3.0, "waiting": 5.0, "generation_tokens": 40112.0,
                     "prompt_tokens": 18230.0, "kv_cache_usage": 0.62, "throughput": None}
    assert (second["running"], second["waiting"]) == (4.0, 2.0)
    assert tokens_per_second(first, second, 2.0) == 210.0
    assert tokens_per_second(second, first, 2.0) is None  # the counter went back: a restart between looks


def test_idle_vllm_is_zero_not_absent(fixture_text):
    load = engine_load(fixture_text("engine-metrics", "vllm-0.17.0-idle.txt"))
    assert (load["running"], load["waiting"], load["generation_tokens"]) == (0.0, 0.0, 0.0)
    assert tokens_per_second(load, load, 2.0) == 0.0


def test_sglang_ranks_report_one_batch_and_its_own_throughput_gauge(fixture_text):
    load = engine_load(fixture_text("engine-metrics", "sglang-0.5.4-busy.txt"))
    # two tensor-parallel ranks, each reporting the same 2 running requests: 2, not 4
    assert load == {"engine": "sglang", "running": 2.0, "waiting": 1.0, "generation_tokens": 51200.0,
                    "prompt_tokens": None, "kv_cache_usage": 0.41, "throughput": 37.5}
    assert tokens_per_second(load, None, 0) == 37.5


def test_data_parallel_engines_are_summed():
    text = ('vllm:num_requests_running{engine="0",model_name="m"} 2\n'
            'vllm:num_requests_running{engine="1",model_name="m"} 3\n'
            'vllm:gpu_cache_usage_perc{model_name="m"} 0.5\n')
    load = engine_load(text)
    assert load["running"] == 5.0 and load["waiting"] is None
    assert load["kv_cache_usage"] == 0.5  # the name before vLLM 0.10


def test_exposition_details():
    samples = parse_exposition('# HELP x y\nplain 1.5 1700000000000\nq{a="x\\"y",b="1,2"} +Inf\nn{} NaN\n')
    assert samples[0] == ("plain", {}, 1.5)
    assert samples[1][1] == {"a": 'x"y', "b": "1,2"} and samples[1][2] == float("inf")
    assert engine_load("process_cpu_seconds_total 3\n")["engine"] is None
    for bad in ('x{a="1" 2', "x{a=1} 2", "x", "x abc"):
        with pytest.raises(MetricsParseError):
            parse_exposition(bad)


def test_prometheus_targets_label_the_engine_and_every_host():
    from ansible_collections.sparkops.inference.plugins.module_utils._metrics import prometheus_targets
    groups = prometheus_targets({"cluster": "spark1", "engine_endpoint": "http://10.77.0.11:8000/v1",
                                 "engine": "vllm", "model": "qwen3.5-lab", "hosts": ["spark1", "spark2"],
                                 "addresses": ["10.77.0.11", None], "node_exporter_port": "9100"})
    assert groups == [
        {"targets": ["10.77.0.11:8000"], "labels": {"sparkops_cluster": "spark1", "sparkops_role": "engine",
                                                    "sparkops_engine": "vllm", "sparkops_model": "qwen3.5-lab"}},
        {"targets": ["10.77.0.11:9100", "spark2:9100"], "labels": {"sparkops_cluster": "spark1", "sparkops_role": "node"}}]
    with pytest.raises(ValueError, match="is not a URL"):
        prometheus_targets({"cluster": "c", "engine_endpoint": "", "hosts": []})
