# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Ray's own reports (pure Python).

``ray status`` is parsed as Ray prints it (``Total Usage:`` since Ray 2.x,
``Usage:`` before); the node table comes from ``ray.nodes()`` printed as JSON
by a one-line Python snippet run inside the head container.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.sparkops.inference.plugins.module_utils._docker import (  # noqa: F401 (version_tuple: for callers)
    DockerError,
    parse_ps_json,
    version_tuple,
)

_RESOURCE_RE = re.compile(r"^\s*([0-9.]+[A-Za-z]*)/([0-9.]+[A-Za-z]*)\s+(\S+)")
_NODE_RE = re.compile(r"^\s*(\d+)\s+(\S+)")

# Run inside the head container (python3 -c POLL_SNIPPET '<json args>'): reads the node table
# from the GCS -- through Ray's GCS client when it has one (no driver is registered, ~10 ms a
# read), else through ray.nodes() -- every 0.1 s until the cluster has exactly the expected
# number of alive nodes and GPUs, or the timeout passes; then prints what it saw last.
# A node the GCS still calls alive may be gone (its container removed a moment ago: the GCS
# notices only after its health checks fail); so each alive node's raylet port is also tried,
# and a node whose raylet does not answer does not count.
POLL_SNIPPET = r"""
import json, socket, sys, time
args = json.loads(sys.argv[1])
deadline = time.time() + args["timeout"]
state = {}
def read():
    try:
        from ray._raylet import GcsClient
    except ImportError:
        GcsClient = None
    if GcsClient is not None:
        if "client" not in state:
            state["client"] = GcsClient(address=args["address"])
        return [{"NodeID": i.node_id.hex(), "Alive": i.state == 0,
                 "NodeManagerAddress": i.node_manager_address,
                 "NodeManagerHostname": i.node_manager_hostname,
                 "NodeManagerPort": i.node_manager_port,
                 "Resources": dict(i.resources_total)}
                for i in state["client"].get_all_node_info(timeout=5).values()]
    import ray
    if not ray.is_initialized():
        ray.init(address=args["address"], logging_level="ERROR", log_to_driver=False)
    return ray.nodes()
def answers(node):
    try:
        socket.create_connection((node["NodeManagerAddress"], node["NodeManagerPort"]), 0.5).close()
        return True
    except (OSError, KeyError, TypeError):
        return False
nodes, error = [], None
while True:
    try:
        nodes, error = read(), None
    except Exception as exc:
        error = "%s: %s" % (type(exc).__name__, exc)
    for n in nodes:
        n["Reachable"] = bool(n.get("Alive")) and answers(n)
    alive = [n for n in nodes if n["Reachable"]]
    gpus = sum((n.get("Resources") or {}).get("GPU", 0) for n in alive)
    if error is None and len(alive) == args["nodes"] and gpus == args["gpus"]:
        break
    if time.time() >= deadline:
        break
    time.sleep(0.1)
try:
    import importlib.metadata as m
    version = m.version("ray")
except Exception:
    version = None
print("SPARKOPS_NODES=" + json.dumps(nodes))
print("SPARKOPS_ERROR=" + json.dumps(error))
print("SPARKOPS_RAY=" + json.dumps(version))
"""


class RayParseError(ValueError):
    """Ray printed something that is not the report expected."""


def _number(text):
    m = re.match(r"^([0-9.]+)", text)
    return float(m.group(1)) if m else None


def parse_ray_status(text):
    """``ray status`` -> {active: {node: count}, pending: [...], failures: [...], usage: {...}}.

    usage maps a resource name to {used, total} (floats; memory values are
    left as Ray prints them in ``used_text``/``total_text``).
    """
    if not text or "Node status" not in text:
        raise RayParseError("expected Ray's status report ('Node status' ...), found: %r"
                            % (text or "").strip()[:300])
    section = None
    result = {"active": {}, "pending": [], "failures": [], "usage": {}}
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("---") or stripped.startswith("==="):
            continue
        if stripped in ("Active:", "Idle:"):
            section = "active"
            continue
        if stripped == "Pending:":
            section = "pending"
            continue
        if stripped == "Recent failures:":
            section = "failures"
            continue
        if stripped in ("Usage:", "Total Usage:"):
            section = "usage"
            continue
        if stripped.endswith(":") or stripped in ("Node status", "Resources"):
            section = None
            continue
        if stripped.startswith("("):  # (no pending nodes), (no failures), ...
            continue
        if section == "active":
            m = _NODE_RE.match(line)
            if m:
                result["active"][m.group(2)] = result["active"].get(m.group(2), 0) + int(m.group(1))
        elif section == "pending":
            result["pending"].append(stripped)
        elif section == "failures":
            result["failures"].append(stripped)
        elif section == "usage":
            m = _RESOURCE_RE.match(line)
            if m:
                result["usage"][m.group(3)] = {
                    "used": _number(m.group(1)), "total": _number(m.group(2)),
                    "used_text": m.group(1), "total_text": m.group(2)}
    return result


def parse_poll_output(text):
    """What POLL_SNIPPET printed -> (nodes, error, ray_version)."""
    values = {}
    for line in (text or "").splitlines():
        for key in ("SPARKOPS_ERROR", "SPARKOPS_RAY"):
            if line.startswith(key + "="):
                try:
                    values[key] = json.loads(line[len(key) + 1:])
                except ValueError:
                    values[key] = line[len(key) + 1:]
    return parse_nodes_json(text), values.get("SPARKOPS_ERROR"), values.get("SPARKOPS_RAY")


def parse_nodes_json(text):
    """The SPARKOPS_NODES= line (POLL_SNIPPET, or ray.nodes() dumped) -> list of node dicts."""
    for line in (text or "").splitlines():
        if line.startswith("SPARKOPS_NODES="):
            try:
                nodes = json.loads(line[len("SPARKOPS_NODES="):])
            except ValueError as exc:
                raise RayParseError("node list is not JSON: %s" % exc)
            return [{
                "node_id": n.get("NodeID"),
                "alive": bool(n.get("Alive")),
                # nodes read without the raylet check (older captures) count as answering
                "reachable": bool(n.get("Alive")) and n.get("Reachable", True),
                "address": n.get("NodeManagerAddress"),
                "hostname": n.get("NodeManagerHostname"),
                "is_head": "node:__internal_head__" in (n.get("Resources") or {}),
                "cpus": (n.get("Resources") or {}).get("CPU", 0.0),
                "gpus": (n.get("Resources") or {}).get("GPU", 0.0),
            } for n in nodes]
    raise RayParseError("no SPARKOPS_NODES line in the output: %r" % (text or "").strip()[-300:])


def cluster_summary(nodes, expected):
    """Compare alive nodes with ``expected`` = {address: gpus}.

    Returns {head_address, alive_nodes, gpus_total, cpus_total, per_address, missing,
    duplicates, unexpected, unreachable, expected_gpus, ready}. A node counts when the GCS
    calls it alive and its raylet answers; ``unreachable`` lists the addresses of nodes the
    GCS still calls alive but whose raylet is gone. A ready cluster has exactly one counted
    node per expected address, no other node, and the GPU total the hosts declared.
    """
    alive = [n for n in nodes if n["alive"] and n.get("reachable", True)]
    gone = sorted(n["address"] for n in nodes if n["alive"] and not n.get("reachable", True))
    per_address = {}
    for n in alive:
        per_address.setdefault(n["address"], []).append(n["node_id"])
    missing = sorted(a for a in expected if a not in per_address)
    duplicates = {a: ids for a, ids in per_address.items() if len(ids) > 1}
    unexpected = sorted(a for a in per_address if a not in expected)
    gpus_total = sum(n["gpus"] for n in alive)
    want_gpus = float(sum(expected.values()))
    heads = [n["address"] for n in alive if n.get("is_head")]
    return {
        "head_address": heads[0] if heads else None,
        "alive_nodes": len(alive),
        "gpus_total": gpus_total,
        "cpus_total": sum(n["cpus"] for n in alive),
        "per_address": per_address,
        "missing": missing,
        "duplicates": duplicates,
        "unexpected": unexpected,
        "unreachable": gone,
        "expected_gpus": want_gpus,
        "ready": not missing and not duplicates and not unexpected and gpus_total == want_gpus,
    }


SPEC_LABEL = "sparkops.spec"


def container_rows(rows):
    """_docker.parse_ps_json rows -> [{name, image, command, running, state, status, spec}]."""
    return [{"name": r["name"], "image": r["image"], "command": r["command"], "running": r["running"],
             "state": r["state"], "status": r["status"], "spec": r["labels"].get(SPEC_LABEL)} for r in rows]


def parse_docker_ps_json(text):
    """``docker ps -a --no-trunc --format '{{json .}}'`` -> container_rows()."""
    try:
        return container_rows(parse_ps_json(text))
    except DockerError as exc:
        raise RayParseError(str(exc))


def classify_containers(containers, ours, others_of_ours):
    """Split the host's containers into ours (by name), displaced and stale Ray containers.

    Displaced: the cluster's container of the other role (a worker container on a host that is
    the head now, or the other way round): it points at a head that is no longer the head.
    Stale: runs ``ray start`` and is neither ours nor the other role's container of
    this cluster (e.g. left by a hand-run recipe); it would register the host twice.
    """
    mine = None
    stale, displaced = [], []
    for c in containers:
        if c["name"] == ours:
            mine = c
        elif c["name"] in others_of_ours:
            displaced.append(c["name"])
        elif "ray start" in c["command"] and c["running"]:
            stale.append(c["name"])
    return mine, sorted(stale), sorted(displaced)


def image_ray_problem(image, rc, stdout, stderr, need_auth, min_version):
    """A sentence saying why ``image`` cannot run the cluster, or None."""
    if rc != 0 or not version_tuple(stdout):
        said = ((stderr or "").strip().splitlines() or ["exit %d" % rc])[-1]
        return ("image %s has no usable Ray (python3 in it said: %s): choose an image that "
                "carries Ray, or serve without Ray" % (image, said))
    if need_auth and version_tuple(stdout) < version_tuple(min_version):
        return ("image %s has Ray %s, older than the %s that token authentication needs: "
                "choose a newer image, or set ray_cluster_auth: false (anyone who reaches the "
                "Ray ports can then run code on the cluster)" % (image, stdout.strip(), min_version))
    return None
