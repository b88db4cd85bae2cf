# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's own load, from its Prometheus /metrics (pure Python).

Names as the real releases define them: vLLM (v1, vllm/v1/metrics/loggers.py) labels each series
with model_name and engine (one per data-parallel engine: summed); SGLang
(srt/metrics/collector.py) with model_name, engine_type, tp_rank, pp_rank (and dp_rank): every
tensor/pipeline rank's scheduler reports the same batch, so ranks are not summed (the largest
is taken) and data-parallel groups are.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

# what status shows -> the series of each engine
SERIES = {
    "vllm": {
        "running": "vllm:num_requests_running",
        "waiting": "vllm:num_requests_waiting",
        "generation_tokens": "vllm:generation_tokens_total",
        "prompt_tokens": "vllm:prompt_tokens_total",
        # vllm:gpu_cache_usage_perc before vLLM 0.10 renamed it
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    },
    "sglang": {
        "running": "sglang:num_running_reqs",
        "waiting": "sglang:num_queue_reqs",
        "generation_tokens": "sglang:generation_tokens_total",
        "prompt_tokens": "sglang:prompt_tokens_total",
        "kv_cache_usage": "sglang:token_usage",
        "throughput": "sglang:gen_throughput",
    },
}
RANK_LABELS = ("tp_rank", "pp_rank")


class MetricsParseError(ValueError):
    """The text is not Prometheus' exposition format."""


def _labels(text, line):
    """'a="x",b="y\\"z"' -> {"a": "x", "b": 'y"z'}."""
    out = {}
    i = 0
    while i < len(text):
        eq = text.find("=", i)
        if eq < 0 or eq + 1 >= len(text) or text[eq + 1] != '"':
            raise MetricsParseError("a label without a quoted value: %r" % line[:200])
        key = text[i:eq].strip().lstrip(",").strip()
        j = eq + 2
        value = []
        while j < len(text) and text[j] != '"':
            if text[j] == "\\" and j + 1 < len(text):
                j += 1
                value.append({"n": "\n"}.get(text[j], text[j]))
            else:
                value.append(text[j])
            j += 1
        if j >= len(text):
            raise MetricsParseError("an unterminated label value: %r" % line[:200])
        out[key] = "".join(value)
        i = j + 1
        while i < len(text) and text[i] in ", ":
            i += 1
    return out


def parse_exposition(text):
    """Prometheus text exposition -> [(name, {label: value}, float)]; comments skipped."""
    samples = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, sep, rest = line.partition("{")
            close = rest.rfind("}")
            if close < 0:
                raise MetricsParseError("a label set without '}': %r" % line[:200])
            labels, fields = _labels(rest[:close], line), rest[close + 1:].split()
        else:
            parts = line.split()
            name, labels, fields = parts[0], {}, parts[1:]
        if not fields:
            raise MetricsParseError("a sample without a value: %r" % line[:200])
        try:
            value = float(fields[0])  # "+Inf", "-Inf", "NaN" included
        except ValueError:
            raise MetricsParseError("a value that is not a number: %r" % line[:200])
        samples.append((name.strip(), labels, value))
    return samples


def _value(samples, names):
    """One figure for the series `names` (the first that exists): summed over data-parallel
    groups, the largest across tensor/pipeline ranks; None when absent."""
    for name in (names if isinstance(names, tuple) else (names,)):
        groups = {}
        for sample_name, labels, value in samples:
            if sample_name != name or math.isnan(value):
                continue
            key = tuple(sorted((k, v) for k, v in labels.items() if k not in RANK_LABELS))
            groups[key] = max(groups.get(key, value), value)
        if groups:
            return sum(groups.values())
    return None


def engine_load(text):
    """What the engine says of its load: {engine, running, waiting, generation_tokens,
    prompt_tokens, kv_cache_usage, throughput}; engine None (and the rest None) when the text
    holds neither vLLM's nor SGLang's series."""
    samples = parse_exposition(text)
    names = set(s[0] for s in samples)
    for engine, series in SERIES.items():
        if series["running"] in names:
            load = dict((key, _value(samples, wanted)) for key, wanted in series.items())
            load.setdefault("throughput", None)
            load["engine"] = engine
            return load
    return {"engine": None, "running": None, "waiting": None, "generation_tokens": None,
            "prompt_tokens": None, "kv_cache_usage": None, "throughput": None}


def tokens_per_second(first, second, seconds):
    """Generation tokens per second between two engine_load()s `seconds` apart; None when either
    lacks the counter or no time passed; the engine's own gauge (SGLang) when only one look."""
    if second is None:
        return first.get("throughput")
    a, b = first.get("generation_tokens"), second.get("generation_tokens")
    if a is None or b is None or seconds <= 0:
        return second.get("throughput")
    if b < a:  # the engine restarted between the looks: its counter began again
        return None
    return round((b - a) / seconds, 1)


def prometheus_targets(o):
    """A Prometheus file_sd target list for a cluster: the engine's /metrics (o["engine_endpoint"],
    the served API's URL, e.g. http://10.0.0.11:8000/v1) and a node_exporter on every host
    (o["hosts"]: inventory names, o["addresses"]: their ansible_host or None, o["node_exporter_port"]),
    each labelled sparkops_cluster (o["cluster"]) and sparkops_role; the engine also with its
    engine and model."""
    endpoint = o.get("engine_endpoint") or ""
    netloc = endpoint.split("://", 1)[-1].split("/", 1)[0]
    if not netloc:
        raise ValueError("the engine's endpoint %r is not a URL (http://HOST:PORT/v1)" % endpoint)
    hosts = list(o.get("hosts") or [])
    addresses = list(o.get("addresses") or [None] * len(hosts))
    if len(addresses) != len(hosts):
        raise ValueError("%d hosts but %d addresses" % (len(hosts), len(addresses)))
    port = int(o.get("node_exporter_port") or 9100)
    nodes = ["%s:%d" % ((a or h), port) for h, a in zip(hosts, addresses)]
    labels = {"sparkops_cluster": o["cluster"]}
    engine = dict(labels, sparkops_role="engine", sparkops_engine=o.get("engine") or "",
                  sparkops_model=o.get("model") or "")
    return [{"targets": [netloc], "labels": engine},
            {"targets": nodes, "labels": dict(labels, sparkops_role="node")}]
