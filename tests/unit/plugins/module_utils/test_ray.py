# -*- coding: utf-8 -*-
"""Ray report parsers over outputs captured from a real Ray 2.60 cluster on the lab."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._ray import (
    RayParseError,
    cluster_summary,
    parse_nodes_json,
    parse_ray_status,
)

EXPECTED = {"192.168.77.11": 1, "192.168.77.12": 1}

# the format shared/REAL-WORLD.md quotes from older Ray ("Usage:" instead of "Total Usage:")
OLD_FORMAT = """======== Autoscaler status: 2024-05-01 10:00:00.000000 ========
Node status
---------------------------------------------------------------
Healthy:
 1 node_aaaa
Active:
 1 node_4f6c
 1 node_9a1b
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0B/200.00GiB memory

Demands:
 (no resource demands)
"""


def test_status_two_nodes(fixture_text):
    status = parse_ray_status(fixture_text("lab", "ray-status-2nodes.txt"))
    assert len(status["active"]) == 2
    assert all(k.startswith("node_") for k in status["active"])
    assert status["usage"]["GPU"] == {"used": 0.0, "total": 2.0, "used_text": "0.0", "total_text": "2.0"}
    assert status["usage"]["CPU"]["total"] == 4.0
    assert status["usage"]["memory"]["total_text"] == "32.82GiB"
    assert status["pending"] == [] and status["failures"] == []


def test_status_duplicate_worker_counts_three(fixture_text):
    status = parse_ray_status(fixture_text("lab", "ray-status-duplicate-worker.txt"))
    assert len(status["active"]) == 3
    assert status["usage"]["GPU"]["total"] == 3.0


def test_status_older_usage_heading():
    status = parse_ray_status(OLD_FORMAT)
    assert set(status["active"]) == {"node_4f6c", "node_9a1b"}
    assert status["usage"]["GPU"]["total"] == 2.0


def test_status_garbage():
    with pytest.raises(RayParseError, match="expected Ray's status report"):
        parse_ray_status("ConnectionError: Could not find any running Ray instance.")


def test_nodes_two_hosts_ready(fixture_text):
    nodes = parse_nodes_json(fixture_text("lab", "ray-nodes-2nodes.txt"))
    assert sorted(n["address"] for n in nodes) == ["192.168.77.11", "192.168.77.12"]
    assert sorted(n["hostname"] for n in nodes) == ["spark1", "spark2"]
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["ready"] is True
    assert summary["alive_nodes"] == 2 and summary["gpus_total"] == 2.0
    assert summary["missing"] == [] and summary["duplicates"] == {}
    assert summary["head_address"] == "192.168.77.11"


def test_nodes_duplicate_worker_is_reported_not_counted_as_ready(fixture_text):
    nodes = parse_nodes_json(fixture_text("lab", "ray-nodes-duplicate-worker.txt"))
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["ready"] is False
    assert list(summary["duplicates"]) == ["192.168.77.12"]
    assert len(summary["duplicates"]["192.168.77.12"]) == 2
    assert summary["gpus_total"] == 3.0


def test_nodes_missing_worker(fixture_text):
    nodes = parse_nodes_json(fixture_text("lab", "ray-nodes-2nodes.txt"))
    summary = cluster_summary([n for n in nodes if n["address"] == "192.168.77.11"], EXPECTED)
    assert summary["ready"] is False
    assert summary["missing"] == ["192.168.77.12"]


def test_nodes_wrong_gpu_count(fixture_text):
    nodes = parse_nodes_json(fixture_text("lab", "ray-nodes-2nodes.txt"))
    summary = cluster_summary(nodes, {"192.168.77.11": 2, "192.168.77.12": 2})
    assert summary["ready"] is False and summary["expected_gpus"] == 4.0


def test_dead_nodes_do_not_count(fixture_text):
    nodes = parse_nodes_json(fixture_text("lab", "ray-nodes-2nodes.txt"))
    nodes[0]["alive"] = False
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["alive_nodes"] == 1 and summary["ready"] is False


def test_nodes_output_without_marker():
    with pytest.raises(RayParseError, match="no SPARKOPS_NODES line"):
        parse_nodes_json("Traceback (most recent call last):\n  ...\nConnectionError: no cluster")


from ansible_collections.sparkops.inference.plugins.module_utils._ray import (  # noqa: E402
    classify_containers,
    image_ray_problem,
    parse_docker_ps_json,
    parse_poll_output,
    version_tuple,
)


def test_poll_output_with_duplicate_worker(fixture_text):
    nodes, error, version = parse_poll_output(fixture_text("lab", "ray-poll-duplicate-worker.txt"))
    assert error is None and version == "2.60.0"
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["ready"] is False
    assert list(summary["duplicates"]) == ["192.168.77.12"]
    assert summary["head_address"] == "192.168.77.11"


def test_poll_output_with_error():
    out = 'SPARKOPS_NODES=[]\nSPARKOPS_ERROR="AuthenticationError: token is missing"\nSPARKOPS_RAY="2.60.0"\n'
    nodes, error, version = parse_poll_output(out)
    assert nodes == [] and "AuthenticationError" in error


def test_docker_ps_finds_ours_and_the_stale_hand_run_worker(fixture_text):
    containers = parse_docker_ps_json(fixture_text("lab", "docker-ps-stale.jsonl"))
    assert len(containers) == 3
    mine, stale, displaced = classify_containers(containers, "sparkops-ray-worker",
                                                 ["sparkops-ray-head", "sparkops-ray-worker"])
    assert mine["running"] is True and mine["spec"] and len(mine["spec"]) == 16
    assert stale == ["hand-worker"]  # the exited container runs no ray start
    assert displaced == []


def test_a_host_that_became_the_head_finds_its_old_worker_container_displaced(fixture_text):
    containers = parse_docker_ps_json(fixture_text("lab", "docker-ps-stale.jsonl"))
    mine, stale, displaced = classify_containers(containers, "sparkops-ray-head",
                                                 ["sparkops-ray-head", "sparkops-ray-worker"])
    assert mine is None and displaced == ["sparkops-ray-worker"] and stale == ["hand-worker"]


def test_docker_ps_garbage():
    with pytest.raises(RayParseError, match="not JSON"):
        parse_docker_ps_json("Cannot connect to the Docker daemon")


@pytest.mark.parametrize("text,expected", [("2.60.0", (2, 60, 0)), ("2.52.0rc1", (2, 52, 0)),
                                           ("2.9.3\n", (2, 9, 3)), ("", ())])
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected


def test_image_without_ray():
    msg = image_ray_problem("nvcr.io/nvidia/vllm:26.01-py3", 1, "",
                            "importlib.metadata.PackageNotFoundError: No package metadata was found for ray",
                            True, "2.52.0")
    assert "has no usable Ray" in msg and "PackageNotFoundError" in msg


def test_image_with_old_ray_and_auth():
    msg = image_ray_problem("old:1", 0, "2.49.2\n", "", True, "2.52.0")
    assert "Ray 2.49.2, older than the 2.52.0" in msg and "ray_cluster_auth: false" in msg
    assert image_ray_problem("old:1", 0, "2.49.2\n", "", False, "") is None


def test_image_with_new_ray():
    assert image_ray_problem("lab:1", 0, "2.60.0\n", "", True, "2.52.0") is None


def test_node_the_gcs_calls_alive_but_whose_raylet_is_gone_does_not_count(fixture_text):
    text = fixture_text("lab", "ray-poll-duplicate-worker.txt")
    nodes, dummy, dummy2 = parse_poll_output(text)
    worker_nodes = [n for n in nodes if n["address"] == "192.168.77.12"]
    worker_nodes[0]["reachable"] = False  # the removed hand-run worker
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["ready"] is True
    assert summary["unreachable"] == ["192.168.77.12"]
    worker_nodes[1]["reachable"] = False  # and the role's worker cannot join either
    summary = cluster_summary(nodes, EXPECTED)
    assert summary["ready"] is False and summary["missing"] == ["192.168.77.12"]


def test_real_two_gpu_host_two_nodes_one_address(fixture_text):
    """Captured on a real 2x H200 host by tests/device/validate_ray.py: two Ray nodes (one GPU
    each) started on the one host, read by the same poll snippet the role uses."""
    nodes, error, version = parse_poll_output(fixture_text("h200x2-ray", "ray-poll.txt"))
    assert error is None and version == "2.60.0"
    assert [(n["gpus"], n["alive"], n["reachable"]) for n in nodes] == [(1.0, True, True)] * 2
    assert len(set(n["address"] for n in nodes)) == 1
    summary = cluster_summary(nodes, {nodes[0]["address"]: 2})
    # one address, two nodes: exactly what the per-host count calls a duplicate registration
    assert summary["gpus_total"] == 2.0 and summary["ready"] is False
    assert len(summary["duplicates"][nodes[0]["address"]]) == 2
    status = parse_ray_status(fixture_text("h200x2-ray", "ray-status.txt"))
    assert len(status["active"]) == 2 and status["usage"]["GPU"]["total"] == 2.0


def test_real_host_refuses_a_wrong_token(fixture_text):
    text = fixture_text("h200x2-ray", "ray-status-wrong-token.txt")
    assert "InvalidAuthToken: Authentication token is missing or incorrect" in text
