# -*- coding: utf-8 -*-
# The deploy's report document (module_utils/_report, through the filter report_document), over
# the shapes the phases leave on the lab's hosts.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.report import report_document
from ansible_collections.sparkops.inference.plugins.module_utils import _report

IMAGE = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"
PROBE = {"engine": "vllm", "versions": {"engine": "0.17.0", "ray": "2.60.0"}, "digest": "sha256:aa"}
FABRIC = {"interface": {"name": "enp1s0f1np1", "mtu": 9000}, "fabric_address": "192.168.77.11", "rdma": False,
          "hcas": [], "gid_index": None}


def head(**more):
    return dict({"sparkops_engine_probes": {IMAGE: PROBE}, "engine_image_selected": IMAGE,
                 "engine_image_selection": {"rows": [{"image": IMAGE, "status": "selected"}]},
                 "engine_image_model": {"architectures": ["Qwen3ForCausalLM"]},
                 "ansible_facts": {"sparkops_fabric": FABRIC,
                                   "sparkops_ray": {"alive_nodes": 2, "gpus_total": 2, "head_address": "h", "ready": True},
                                   "sparkops_gpu_memory": {"holders": [{"name": "old-vllm"}], "record": [{"name": "old-vllm"}],
                                                           "after": {"free_mib": 40960}}},
                 "sparkops_model_server": {"endpoint": "http://10.77.0.11:8000/v1"},
                 "sparkops_repaired": []}, **more)


def doc(spark1, spark2=None, **kw):
    hostvars = {"spark1": spark1, "spark2": spark2 or {}}
    return report_document(["spark1", "spark2"], hostvars, "spark1", **dict(dict(workers=["spark2"]), **kw))


def test_a_deploy_that_served():
    r = doc(head(), {"sparkops_repaired": ["sparkops-ray-worker"]}, model_path="/m",
            marks={"preflight": 10.0, "engine_image": 12.04, "gpu_memory": 20.0, "model_server": 30.0, "end": 31.26})
    assert r["outcome"] == "served" and r["error"] is None and r["rolled_back"] is False
    assert r["rolled_back_serves"] is None and r["unchanged"] is False and r["unchanged_since"] is None
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", r["finished"])
    assert r["hosts"] == {"head": "spark1", "workers": ["spark2"]}
    assert r["model"] == {"path": "/m", "architectures": ["Qwen3ForCausalLM"]}
    assert r["image"] == {"selected": IMAGE, "engine": "vllm", "versions": PROBE["versions"], "digest": "sha256:aa",
                          "moved": [], "candidates": [{"image": IMAGE, "status": "selected"}]}
    assert r["gpu_memory"] == {
        "spark1": {"stopped": ["old-vllm"], "record": ["old-vllm"], "restored": [], "free_gib_after": 40.0},
        "spark2": {"stopped": [], "record": [], "restored": [], "free_gib_after": None}}
    assert r["repaired"] == {"spark2": ["sparkops-ray-worker"]}
    assert r["fabric"] == {"interface": "enp1s0f1np1", "address": "192.168.77.11", "mtu": 9000, "rdma": False,
                           "hcas": [], "gid_index": None, "transport": "NET/Socket (no RDMA)"}
    assert r["ray"] == {"nodes": 2, "gpus": 2, "head": "h", "ready": True}
    # each phase up to the next mark; a phase that did not run (fabric, ray_cluster, watchdog) has none
    assert r["seconds"] == {"preflight": 2.0, "engine_image": 8.0, "gpu_memory": 10.0, "model_server": 1.3}


def test_a_failed_deploy_rolled_back_says_whether_the_engine_of_before_serves_again():
    r = doc(head(model_server_restored={"seconds_to_ready": 4}), failure="X on spark1: y", rolled_back="True")
    got = (r["outcome"], r["error"], r["rolled_back"], r["rolled_back_serves"])
    assert got == ("failed", "X on spark1: y", True, True)
    assert doc(head(model_server_restored={"msg": "did not serve"}), failure="f")["rolled_back_serves"] is False


def test_a_re_run_that_skipped_the_phases_reports_what_the_last_deploy_recorded():
    recorded = {"recorded_at": "2026-12-06T10:00:00+0000",
                "deployed": {"architectures": ["A"], "fabric": dict(FABRIC, rdma=True, hcas=["rocep1s0f1"]),
                             "transport": "NET/IB : Using [0]rocep1s0f1:1/RoCE",
                             "ray": {"alive_nodes": 2, "gpus_total": 2, "head_address": "h", "ready": True}}}
    r = doc({"sparkops_deploy_unchanged": "true", "deploy_check_record": recorded}, marks={"preflight": 1, "end": 2})
    assert r["unchanged"] is True and r["unchanged_since"] == "2026-12-06T10:00:00+0000"
    assert r["model"]["architectures"] == ["A"] and r["image"]["selected"] is None and r["image"]["versions"] == {}
    assert r["fabric"]["transport"] == "NET/IB : Using [0]rocep1s0f1:1/RoCE" and r["fabric"]["hcas"] == ["rocep1s0f1"]
    assert r["ray"]["nodes"] == 2 and r["seconds"] == {"preflight": 1.0}
    # a run that did not skip them ignores the record
    r = doc({"sparkops_deploy_unchanged": False, "deploy_check_record": recorded})
    assert r["model"]["architectures"] == [] and r["fabric"]["transport"] is None and r["ray"]["nodes"] is None


def test_the_transport_measured_wins_then_rdma_says_what_is_assumed():
    measured = doc(head(fabric_preflight_result={"transport": "NET/Socket : Using [0]eth0"}))
    assert measured["fabric"]["transport"] == "NET/Socket : Using [0]eth0"
    rdma = head()
    rdma["ansible_facts"] = dict(rdma["ansible_facts"], sparkops_fabric=dict(FABRIC, rdma=True))
    assert doc(rdma)["fabric"]["transport"] == "NET/IB (RDMA, not measured)"


def test_a_tag_that_moved_at_the_registry_is_listed_with_both_digests():
    present = {"images": [{"image": IMAGE, "moved": True, "digest": "10.77.0.5:5000/sparkops/lab-vllm@sha256:old",
                           "registry_digest": "sha256:new"}, {"image": "other", "moved": False}]}
    assert doc(head(engine_image_present=present))["image"]["moved"] == [
        {"image": IMAGE, "held": "sha256:old", "registry": "sha256:new"}]


def test_the_phase_order_is_the_deploys():
    with open(__file__.split("/tests/", maxsplit=1)[0] + "/roles/deploy/tasks/main.yml") as f:
        # the phase roles as the deploy imports them whole (not an entry point such as tasks_from: validate)
        roles = re.findall(r"name: sparkops\.inference\.(\w+)\n(?!\s+tasks_from)", f.read())
    assert [r for r in roles if r in _report.PHASES] == list(_report.PHASES)
    assert set(_report.PHASES) <= set(roles)


def test_a_head_that_is_not_a_host_of_the_play_is_named():
    with pytest.raises(AnsibleFilterError, match="the head 'spark9' is not one of the play's hosts"):
        report_document(["spark1"], {"spark1": {}}, "spark9")
