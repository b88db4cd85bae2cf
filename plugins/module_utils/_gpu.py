# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for GPU and host-memory state (no AnsibleModule import).

Inputs are the raw texts that real hosts print: ``nvidia-smi -q -x``,
``/proc/meminfo`` and ``/proc/<pid>/cgroup``. Unit-tested over outputs
captured on real H200 hosts and over DGX Spark (GB10) formats from public
sources (tests/unit/fixtures/).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET

# What nvidia-smi prints where a value does not exist (GB10 unified memory
# prints these in its memory fields).
NOT_AVAILABLE = frozenset(["n/a", "[n/a]", "not supported", "[not supported]", "none", ""])

_MIB_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|B)?\s*$", re.IGNORECASE)
_UNIT_FACTOR = {None: 1.0, "b": 1.0 / (1024 * 1024), "kib": 1.0 / 1024, "mib": 1.0,
                "gib": 1024.0}

# a container id (64 hex) in one line of /proc/<pid>/cgroup, for the runtimes met in practice
_CGROUP_PATTERNS = [
    ("docker", re.compile(r"/docker[/-]([0-9a-f]{64})(?:\.scope)?(?:/|$)")),
    ("containerd", re.compile(r"/cri-containerd[/-]([0-9a-f]{64})(?:\.scope)?(?:/|$)")),
    ("podman", re.compile(r"/libpod[/-]([0-9a-f]{64})(?:\.scope)?(?:/|$)")),
    ("kubernetes", re.compile(r"/kubepods[^:]*/(?:pod[^/]+/)?([0-9a-f]{64})(?:/|$)")),
]


class GpuParseError(ValueError):
    """The tool printed something that is not the report it should print."""


def not_available(text):
    """True when ``text`` is one of nvidia-smi's 'no value here' spellings."""
    return text is None or text.strip().lower() in NOT_AVAILABLE


def parse_mib(text):
    """'143771 MiB' -> 143771; N/A, [N/A], Not Supported -> None."""
    if not_available(text):
        return None
    m = _MIB_RE.match(text)
    if not m:
        raise GpuParseError("expected a memory size such as '143771 MiB', found %r" % text)
    value = float(m.group(1)) * _UNIT_FACTOR[(m.group(2) or "").lower() or None]
    return int(round(value))


def _text(node, path):
    found = node.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def _value(node, path):
    text = _text(node, path)
    return None if not_available(text) else text


def parse_nvidia_smi_xml(text):
    """Parse ``nvidia-smi -q -x``.

    Returns ``{driver_version, cuda_version, gpus: [...], processes: [...]}``.
    Each GPU: index (order in the report = nvidia-smi's index), name, uuid,
    bus_id, architecture, memory_total_mib/used/free (None where the driver
    says N/A or Not Supported), unified_memory (True when the framebuffer
    total is not reported, as on GB10). Each process: gpu_index, gpu_uuid,
    pid, name, type, used_mib.
    """
    if text is None or not text.strip():
        raise GpuParseError("nvidia-smi -q -x printed nothing")
    start = text.find("<nvidia_smi_log")
    if start < 0:
        raise GpuParseError("expected nvidia-smi's XML report (<nvidia_smi_log>), found: %r"
                            % text.strip()[:200])
    try:
        root = ET.fromstring(text[start:])
    except ET.ParseError as exc:
        raise GpuParseError("nvidia-smi -q -x printed malformed XML (%s): %r"
                            % (exc, text.strip()[:200]))
    result = {
        "driver_version": _value(root, "driver_version"),
        "cuda_version": _value(root, "cuda_version"),
        "gpus": [],
        "processes": [],
    }
    for index, gpu in enumerate(root.findall("gpu")):
        total = parse_mib(_text(gpu, "fb_memory_usage/total"))
        entry = {
            "index": index,
            "name": _value(gpu, "product_name"),
            "uuid": _value(gpu, "uuid"),
            "bus_id": gpu.get("id"),
            "architecture": _value(gpu, "product_architecture"),
            "memory_total_mib": total,
            "memory_used_mib": parse_mib(_text(gpu, "fb_memory_usage/used")),
            "memory_free_mib": parse_mib(_text(gpu, "fb_memory_usage/free")),
            "unified_memory": total is None,
        }
        if not entry["uuid"]:
            raise GpuParseError("GPU %d (%s) in nvidia-smi's report has no <uuid>"
                                % (index, entry["bus_id"]))
        result["gpus"].append(entry)
        for proc in gpu.findall("processes/process_info"):
            pid = _value(proc, "pid")
            if pid is None or not pid.isdigit():
                raise GpuParseError("a process of GPU %d has no numeric <pid>: %r" % (index, pid))
            result["processes"].append({
                "gpu_index": index,
                "gpu_uuid": entry["uuid"],
                "pid": int(pid),
                "name": _value(proc, "process_name"),
                "type": _value(proc, "type"),
                "used_mib": parse_mib(_text(proc, "used_memory")),
            })
    return result


def parse_meminfo(text):
    """/proc/meminfo -> {total_mib, available_mib, free_mib, cached_mib} (None when absent)."""
    values = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if parts and parts[0].isdigit():
            kib = int(parts[0])
            values[key.strip()] = kib // 1024 if (len(parts) > 1 and parts[1] == "kB") else kib
    if "MemTotal" not in values:
        raise GpuParseError("/proc/meminfo has no MemTotal line: %r" % text.strip()[:200])
    return {
        "total_mib": values.get("MemTotal"),
        "available_mib": values.get("MemAvailable"),
        "free_mib": values.get("MemFree"),
        "cached_mib": values.get("Cached"),
    }


def container_of_cgroup(text):
    """The container a process runs in, from its /proc/<pid>/cgroup text.

    Returns ``{"runtime": ..., "id": <64 hex>}`` or None for a process that
    runs on the host.
    """
    for line in (text or "").splitlines():
        path = line.split(":", 2)[-1]
        for runtime, pattern in _CGROUP_PATTERNS:
            m = pattern.search(path)
            if m:
                return {"runtime": runtime, "id": m.group(1)}
    return None


def parse_docker_ps(text):
    """``docker ps --no-trunc --format '{{.ID}} {{.Names}}'`` -> {id: name}."""
    names = {}
    for line in (text or "").splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and re.match(r"^[0-9a-f]{64}$", parts[0]):
            names[parts[0]] = parts[1].strip()
    return names


def gpu_summary(report, meminfo, containers=None, pid_cgroups=None):
    """Combine the parsed pieces into the ``sparkops_gpu`` facts.

    ``pid_cgroups`` maps pid -> /proc/<pid>/cgroup text (missing = unknown);
    ``containers`` maps container id -> name.
    """
    containers = containers or {}
    pid_cgroups = pid_cgroups or {}
    processes = []
    for proc in report["processes"]:
        entry = dict(proc)
        found = container_of_cgroup(pid_cgroups.get(proc["pid"]))
        if found:
            found["name"] = containers.get(found["id"])
        entry["container"] = found
        processes.append(entry)
    gpus = report["gpus"]
    return {
        "driver_version": report.get("driver_version"),
        "cuda_version": report.get("cuda_version"),
        "gpu_count": len(gpus),
        "gpus": gpus,
        "unified_memory": any(g["unified_memory"] for g in gpus),
        "processes": processes,
        "gpu_memory_used_by_processes_mib": sum(p["used_mib"] or 0 for p in processes),
        "host_memory": meminfo,
    }
