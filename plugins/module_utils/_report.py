# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy's report document (latest.json), from what the phases left in each host's variables -
a pure function; the filter report_document (plugins/filter/report.py) calls it with the play's
hostvars, and roles/report prints and writes what it returns.

What is read of the head: sparkops_engine_probes, engine_image_selected, engine_image_selection,
engine_image_present, engine_image_model(_architectures), ansible_facts.sparkops_ray and
.sparkops_fabric, fabric_preflight_result, sparkops_model_server, sparkops_watchdog,
model_server_restored, sparkops_deploy_unchanged and deploy_check_record (a re-run that skipped
the phases reports what the last whole deploy recorded). Of every host: ansible_facts.
sparkops_gpu_memory and sparkops_repaired.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The deploy's phases in order (deploy.yml), as the report times them: each phase's seconds run
# from its mark to the next mark (the rollback's, or the report's own: "end").
PHASES = ("preflight", "engine_image", "gpu_memory", "fabric", "ray_cluster", "model_server", "watchdog")
MARKS = PHASES + ("rollback", "end")

HEAD_KEYS = ("sparkops_engine_probes", "engine_image_selected", "engine_image_selection", "engine_image_present",
             "engine_image_model", "engine_image_model_architectures", "ansible_facts", "fabric_preflight_result",
             "sparkops_model_server", "sparkops_watchdog", "model_server_restored", "sparkops_deploy_unchanged",
             "deploy_check_record")
HOST_KEYS = ("ansible_facts", "sparkops_repaired")


def _d(value):
    return value if isinstance(value, dict) else {}


def _or(value, fallback):
    """Jinja's default(fallback, true): the fallback for anything false."""
    return value if value else fallback


def truthy(value):
    """Ansible's bool filter on a variable (a string 'true' / 'yes' / '1' counts)."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1", "y", "t")
    return bool(value)


def phase_seconds(marks):
    """{phase: seconds} from sparkops_phase_marks (phase -> start time): up to the next mark."""
    marks = _d(marks)
    seconds = {}
    for i, phase in enumerate(MARKS[:-1]):
        following = [m for m in MARKS[i + 1:] if m in marks]
        if phase in marks and following:
            seconds[phase] = round(float(marks[following[0]]) - float(marks[phase]), 1)
    return seconds


def _gpu_memory(hosts):
    out = {}
    for name, hv in hosts:
        m = _d(_d(hv.get("ansible_facts")).get("sparkops_gpu_memory"))
        after = m.get("after")
        out[name] = {
            "stopped": [h.get("name") for h in m.get("holders") or []],
            "record": [h.get("name") for h in m.get("record") or []],
            "restored": [h.get("name") for h in m.get("restored") or []],
            "free_gib_after": round(after["free_mib"] / 1024.0, 1) if isinstance(after, dict) else None,
        }
    return out


def _fabric(head, recorded):
    fab = _d(head.get("ansible_facts")).get("sparkops_fabric")
    if fab is None:
        fab = _d(recorded.get("fabric"))
    fab = _d(fab)
    interface = _d(fab.get("interface"))
    measured = _d(head.get("fabric_preflight_result")).get("transport")
    transport = _or(measured, recorded.get("transport"))
    if not transport and fab:
        transport = "NET/IB (RDMA, not measured)" if fab.get("rdma") else "NET/Socket (no RDMA)"
    return {"interface": interface.get("name"), "address": fab.get("fabric_address"), "mtu": interface.get("mtu"),
            "rdma": fab.get("rdma"), "hcas": fab.get("hcas") or [], "gid_index": fab.get("gid_index"),
            "transport": transport or None}


def document(hosts, head_name, workers, model_path, marks, failure=None, rolled_back=False, finished=""):
    """The report: hosts are [(name, vars)] in play order (the head among them); failure is
    sparkops_deploy_failure (None when the deploy served); finished, the time it ends (UTC, ISO)."""
    head = _d(dict(hosts).get(head_name))
    unchanged = truthy(head.get("sparkops_deploy_unchanged", False))
    check = _d(head.get("deploy_check_record"))
    recorded = _d(check.get("deployed")) if unchanged else {}
    probes = _d(head.get("sparkops_engine_probes"))
    selected = head.get("engine_image_selected")
    probe = _d(probes.get(selected)) if selected else {}
    facts = _d(head.get("ansible_facts"))
    ray = facts.get("sparkops_ray")
    ray = _d(recorded.get("ray") if ray is None else ray)
    model = _d(head.get("engine_image_model"))
    if "engine_image_model_architectures" in head:
        architectures = head["engine_image_model_architectures"]
    elif "architectures" in model:
        architectures = model["architectures"]
    else:
        architectures = recorded.get("architectures") or []
    restored = _d(head.get("model_server_restored"))
    if "seconds_to_ready" in restored or "msg" in restored:
        serves_again = "seconds_to_ready" in restored
    else:
        serves_again = None
    moved = [{"image": e.get("image"), "held": str(e.get("digest") or "").rsplit("@", maxsplit=1)[-1],
              "registry": e.get("registry_digest")}
             for e in _d(head.get("engine_image_present")).get("images") or [] if e.get("moved")]
    return {
        "outcome": "failed" if failure is not None else "served",
        "error": failure,
        "rolled_back": truthy(rolled_back),
        "rolled_back_serves": serves_again,
        "unchanged": unchanged,
        "unchanged_since": check.get("recorded_at") if unchanged else None,
        "finished": finished,
        "hosts": {"head": head_name, "workers": list(workers or [])},
        "model": {"path": model_path, "architectures": architectures},
        "image": {"selected": selected,
                  "engine": probe.get("engine") if selected else None,
                  "versions": probe.get("versions") or {} if selected else {},
                  "digest": probe.get("digest") if selected else None,
                  "moved": moved,
                  "candidates": _d(head.get("engine_image_selection")).get("rows") or []},
        "gpu_memory": _gpu_memory(hosts),
        "repaired": dict((name, hv["sparkops_repaired"]) for name, hv in hosts if hv.get("sparkops_repaired")),
        "fabric": _fabric(head, recorded),
        "ray": {"nodes": ray.get("alive_nodes"), "gpus": ray.get("gpus_total"), "head": ray.get("head_address"),
                "ready": ray.get("ready") or False},
        "serving": _d(head.get("sparkops_model_server")),
        "watchdog": _d(head.get("sparkops_watchdog")),
        "seconds": phase_seconds(marks),
    }
