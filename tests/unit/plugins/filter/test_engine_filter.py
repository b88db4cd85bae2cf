# -*- coding: utf-8 -*-
# The engine_select / engine_probe_map filters over registered results shaped as Ansible
# returns them (engine_probe with images: one answer per image, or {image, error}).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.engine import engine_probe_map, engine_select

QWEN35 = "Qwen3_5MoeForConditionalGeneration"


def probe(image, verdict, ray="2.60.0", platform="linux/arm64", image_id="sha256:aa"):
    return {"item": image, "changed": False, "failed": False, "invocation": {}, "ansible_loop_var": "item",
            "ansible_facts": {}, "image": image, "engine": "vllm", "id": image_id, "digest": None,
            "platform": platform, "versions": {"engine": "0.17.0", "ray": ray},
            "architectures": {QWEN35: verdict}, "errors": []}


def test_probe_map_keeps_results_and_pull_failures():
    pull = {"failed_images": {"img:gone": "the registry does not know img:gone"}}
    reg = {"changed": False, "invocation": {}, "probes": [probe("img:a", "native"), {"image": "img:b", "error": "boom"}],
           "ansible_facts": {}}
    out = engine_probe_map(reg, pull)
    assert out["img:gone"] == {"error": "the registry does not know img:gone"}
    assert out["img:b"] == {"error": "boom"}
    assert "img:c" not in out
    assert out["img:a"]["architectures"] == {QWEN35: "native"}
    assert "invocation" not in out["img:a"] and "item" not in out["img:a"]


def test_select_reads_host_architecture_from_facts():
    per_host = {"img:a": dict(probe("img:a", "native"), item=None)}
    hostvars = {
        "s1": {"ansible_facts": {"sparkops_host": {"architecture": "aarch64"}}, "sparkops_engine_probes": per_host},
        "s2": {"ansible_facts": {"sparkops_host": {"architecture": "x86_64"}}, "sparkops_engine_probes": per_host},
    }
    res = engine_select(["img:a"], ["s1", "s2"], hostvars)
    assert res["selected"] is None
    assert res["rows"][0]["reasons"] == ["built for linux/arm64, s2 is linux/amd64"]
    hostvars["s2"]["ansible_facts"]["sparkops_host"]["architecture"] = "aarch64"
    assert engine_select(["img:a"], ["s1", "s2"], hostvars)["selected"] == "img:a"
    with pytest.raises(AnsibleFilterError, match="candidate list is empty"):
        engine_select([], ["s1"], hostvars)


def test_no_candidate_message_names_archs_hosts_table_and_fix():
    from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
        no_candidate_message,
        pending,
    )
    per_host = {"img:a": dict(probe("img:a", "fallback"), item=None)}
    hostvars = {"s1": {"sparkops_host": {"architecture": "aarch64"}, "sparkops_engine_probes": per_host}}
    res = engine_select(["img:a"], ["s1"], hostvars)
    text = no_candidate_message([QWEN35], ["s1"], res["rows"], "ray")
    assert text.splitlines()[0] == "No candidate image can serve %s on s1 (nothing was stopped):" % QWEN35
    assert "    - vllm 0.17.0 lacks %s (only its generic Transformers backend: fallback)" % QWEN35 in text
    assert text.endswith("natively and Ray to engine_image_candidates (sparkops_launcher: ray).")
    assert no_candidate_message([QWEN35], ["s1"], res["rows"]).endswith(
        "natively and either Ray or its engine's own multi-node launch to engine_image_candidates"
        " (sparkops_launcher: auto).")
    assert pending(res["rows"]) is False
    hostvars["s1"]["sparkops_engine_probes"] = {"img:a": {"pending": True}}
    assert pending(engine_select(["img:a"], ["s1"], hostvars)["rows"]) is True


def test_one_image_in_two_stores_is_one_image_a_moved_tag_is_not():
    a = dict(probe("img:a", "native", image_id="sha256:979bfb"), content_id="sha256:c1", item=None)
    b = dict(probe("img:a", "native", image_id="sha256:bbd704"), content_id="sha256:c1", item=None)
    hostvars = {"s1": {"sparkops_host": {"architecture": "aarch64"}, "sparkops_engine_probes": {"img:a": a}},
                "s2": {"sparkops_host": {"architecture": "aarch64"}, "sparkops_engine_probes": {"img:a": b}}}
    assert engine_select(["img:a"], ["s1", "s2"], hostvars)["selected"] == "img:a"  # classic + containerd
    hostvars["s2"]["sparkops_engine_probes"]["img:a"] = dict(b, content_id="sha256:c2")
    res = engine_select(["img:a"], ["s1", "s2"], hostvars)
    assert res["selected"] is None
    assert "the hosts hold different images under this name" in res["rows"][0]["reasons"][0]
