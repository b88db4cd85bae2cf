# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions for freeing GPU / unified memory (pure Python).

What holds memory, what to stop, what was stopped (the record kept on the host so it can be
brought back), whether enough is free. The module gpu_memory does the I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

RECORD_VERSION = 1
KINDS = ("container", "systemd_unit")


class RecordError(ValueError):
    """The record of what was stopped is missing, unreadable or not ours."""


def gpu_mib_by_container(gpu_facts):
    """{container id: GPU MiB its processes hold} from the sparkops_gpu facts."""
    held = {}
    for p in gpu_facts.get("processes", []):
        c = p.get("container")
        if c and c.get("id"):
            held[c["id"]] = held.get(c["id"], 0) + (p.get("used_mib") or 0)
    return held


def own_gpu_mib(gpu_facts, own_names):
    """GPU MiB held by processes in this collection's own containers (by name): a re-deploy
    keeps them when nothing changes, and stops them before their replacement starts, so what
    they hold counts as free for the new engine."""
    return sum((p.get("used_mib") or 0) for p in gpu_facts.get("processes", [])
               if (p.get("container") or {}).get("name") in own_names)


def parse_systemctl_show(text):
    """``systemctl show -p Id,LoadState,ActiveState,ControlGroup,UnitFileState UNIT`` -> dict."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return {
        "name": values.get("Id"),
        "exists": values.get("LoadState") not in (None, "", "not-found"),
        "active": values.get("ActiveState") in ("active", "activating", "reloading"),
        "cgroup": values.get("ControlGroup") or None,
        "enabled": values.get("UnitFileState") in ("enabled", "enabled-runtime"),
    }


# Restart policies that bring a stopped container back when dockerd starts (a reboot): "always"
# does even after `docker stop`; the others are held too, so nothing we stopped comes back by itself
NO_RESTART = ("", "no")


def boot_hold(holder, restart_policy=None, unit_enabled=False):
    """Note on the holder what brings it back at boot, so it is held while it is stopped and put
    back on restore: a container's restart policy other than "no" (restart_policy, with its
    retry count as "on-failure:3"), a unit that is enabled. Returns the holder."""
    if holder["kind"] == "container" and (restart_policy or "") not in NO_RESTART:
        holder["restart_policy"] = restart_policy
    elif holder["kind"] == "systemd_unit" and unit_enabled:
        holder["unit_enabled"] = True
    return holder


def hold_argv(holder, docker, systemctl):
    """The command that keeps a stopped holder down across a reboot, or None."""
    if holder.get("restart_policy"):
        return [docker, "update", "--restart", "no", holder["id"]]
    if holder.get("unit_enabled"):
        return [systemctl, "disable", holder["name"]]
    return None


def release_argv(entry, docker, systemctl):
    """The command that gives a restored entry back what brought it up at boot, or None."""
    if entry.get("restart_policy"):
        return [docker, "update", "--restart", entry["restart_policy"], entry.get("id") or entry["name"]]
    if entry.get("unit_enabled"):
        return [systemctl, "enable", entry["name"]]
    return None


def unit_gpu_mib(gpu_facts, pid_cgroups, cgroup):
    """GPU MiB held by processes whose cgroup path lies under the unit's control group."""
    if not cgroup:
        return 0
    total = 0
    for p in gpu_facts.get("processes", []):
        text = pid_cgroups.get(p["pid"]) or ""
        if any(line.split(":", 2)[-1].startswith(cgroup) for line in text.splitlines()):
            total += p.get("used_mib") or 0
    return total


def plan_holders(containers, compose, units, gpu_facts, stop_gpu_containers, exclude,
                 unit_mib=None):
    """Decide what to stop, in order: listed containers, compose projects' containers,
    containers found holding GPU memory (when asked), then systemd units.

    containers: [{name, id, exists, running}] for the listed names;
    compose: {project: [{name, id, running}]}; units: [parse_systemctl_show()];
    returns (holders, notes): holders to stop (running ones only), and sentences about the
    listed ones that do not exist or do not run.
    """
    held = gpu_mib_by_container(gpu_facts)
    unit_mib = unit_mib or {}
    holders, notes, seen = [], [], set()

    def add_container(c, reason):
        if c["id"] in seen or c["name"] in exclude:
            return
        seen.add(c["id"])
        holders.append({"kind": "container", "name": c["name"], "id": c["id"], "reason": reason,
                        "gpu_mib": held.get(c["id"], 0)})

    for c in containers:
        if not c.get("exists"):
            notes.append("container %s does not exist" % c["name"])
        elif not c.get("running"):
            notes.append("container %s is not running" % c["name"])
        else:
            add_container(c, "listed")
    for project, members in sorted(compose.items()):
        running = [m for m in members if m.get("running")]
        if not members:
            notes.append("compose project %s has no containers" % project)
        elif not running:
            notes.append("compose project %s has no running container" % project)
        for m in running:
            add_container(m, "compose project %s" % project)
    if stop_gpu_containers:
        for p in gpu_facts.get("processes", []):
            c = p.get("container")
            if c and c.get("id") and c.get("name") and c.get("runtime") == "docker":
                add_container({"name": c["name"], "id": c["id"]}, "holds GPU memory (pid %d)" % p["pid"])
    for u in units:
        if not u.get("exists"):
            notes.append("systemd unit %s does not exist" % u["name"])
        elif not u.get("active"):
            notes.append("systemd unit %s is not active" % u["name"])
        else:
            holders.append({"kind": "systemd_unit", "name": u["name"], "id": u["name"],
                            "reason": "listed", "gpu_mib": unit_mib.get(u["name"], 0)})
    return holders, notes


def new_record(now):
    return {"version": RECORD_VERSION, "created": now, "stopped": []}


def load_record(text, path):
    """Parse the record kept on the host; raise RecordError naming the file when it is bad."""
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise RecordError("the record of stopped services %s is corrupt (%s): nothing was "
                          "restored; look at it, fix or remove it, and bring the services back by "
                          "hand if needed" % (path, exc))
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION \
            or not isinstance(record.get("stopped"), list):
        raise RecordError("%s is not a sparkops record of stopped services (version %d): nothing "
                          "was restored" % (path, RECORD_VERSION))
    for entry in record["stopped"]:
        if not isinstance(entry, dict) or entry.get("kind") not in KINDS or not entry.get("name"):
            raise RecordError("%s holds an entry that is not a stopped container or unit: %r; "
                              "nothing was restored" % (path, entry))
    return record


def add_to_record(record, stopped):
    """Append what was just stopped; what the record already holds stays as first recorded."""
    known = set((e["kind"], e["name"]) for e in record["stopped"])
    for h in stopped:
        if (h["kind"], h["name"]) not in known:
            record["stopped"].append(dict(h))
            known.add((h["kind"], h["name"]))
    return record


def in_record(record, holder):
    return any((e["kind"], e["name"]) == (holder["kind"], holder["name"]) for e in record["stopped"])


def drop_from_record(record, holder):
    """Take a holder out again (its stop failed: it still runs)."""
    record["stopped"] = [e for e in record["stopped"]
                         if (e["kind"], e["name"]) != (holder["kind"], holder["name"])]
    return record


def restore_order(record):
    """What to start again: the reverse of the order things were stopped in."""
    return list(reversed(record["stopped"]))


def required_mib(total_mib, free_gib=None, free_fraction=None):
    """The free memory to wait for, in MiB, from GiB or a fraction of the total.

    Raises ValueError (with the numbers) when the request cannot be met at all.
    """
    if free_gib is None and free_fraction is None:
        return None
    if free_fraction is not None:
        if not 0 < free_fraction <= 1:
            raise ValueError("gpu_memory_free_fraction must be in (0, 1]; got %s" % free_fraction)
        want = int(total_mib * free_fraction)
    else:
        want = int(free_gib * 1024)
    if want > total_mib:
        raise ValueError("waiting for %.1f GiB free, but the memory in all is %.1f GiB: lower "
                         "gpu_memory_free_gib (or use gpu_memory_free_fraction)"
                         % (want / 1024.0, total_mib / 1024.0))
    return want


def free_mib(gpu_facts, metric):
    """The free memory that counts: unified memory -> /proc/meminfo (MemAvailable or MemFree);
    discrete GPUs -> the least free framebuffer of any GPU."""
    gpus = gpu_facts.get("gpus", [])
    if not gpus or gpu_facts.get("unified_memory"):
        mem = gpu_facts["host_memory"]
        return mem["free_mib"] if metric == "free" else mem["available_mib"], mem["total_mib"]
    frees = [g["memory_free_mib"] for g in gpus if g.get("memory_free_mib") is not None]
    totals = [g["memory_total_mib"] for g in gpus if g.get("memory_total_mib") is not None]
    return (min(frees) if frees else 0), (min(totals) if totals else 0)


def still_holding(gpu_facts):
    """Sentences naming what still holds GPU memory (for a timeout message)."""
    out = []
    for p in gpu_facts.get("processes", []):
        c = p.get("container")
        where = (c.get("name") or c["id"][:12]) if c else "the host"
        out.append("pid %d %s (%s MiB, in %s)" % (p["pid"], p.get("name"), p.get("used_mib"), where))
    return out


def holders_diff(entries, host, record_file, stopping=True):
    """Ansible's diff of a stop (or, stopping=False, a restore): each holder's line before and
    after, as `--diff` prints it for the host; None when nothing changes."""
    if not entries:
        return None
    label = {"container": "container", "systemd_unit": "systemd unit"}

    def lines(state):
        return "".join("%s %s: %s\n" % (label.get(e["kind"], e["kind"]), e["name"], state)
                       for e in entries)
    if stopping:
        before, after = lines("running"), lines("stopped (recorded in %s)" % record_file)
    else:
        before, after = lines("stopped (recorded in %s)" % record_file), lines("running")
    return {"before_header": "%s: what holds GPU memory" % host, "after_header": "%s: after this run" % host,
            "before": before, "after": after}


# What an engine's own CUDA context takes on a GPU before it measures free memory (H200, CUDA 12:
# 524-527 MiB, tests/unit/fixtures/h200-admission/).
CUDA_CONTEXT_MIB = 512


def engine_admission(gpu_facts, utilization, context_mib=CUDA_CONTEXT_MIB):
    """Whether an engine started with `utilization` (vLLM's --gpu-memory-utilization) passes its
    start-up check here, judged by what that check reads (the module memory_admission asks it
    before the engine is started).

    vLLM fails when the free memory its process sees is below utilization x total. Unified memory
    (GB10): the device's free is the host's MemFree and its total MemTotal ("Free memory on device
    cuda:0 (36.75/121.63 GiB) on startup is less than desired GPU memory utilization (0.85, 103.38
    GiB)"). Discrete GPUs, per GPU, as the captured H200 shows: the total the engine sees is
    nvidia-smi's used + free (its total less what the driver reserves) and its free is nvidia-smi's
    free less the engine's own CUDA context.

    Returns {"ok", "unified_memory", "wanted_mib", "free_mib", "total_mib", "reachable"} for the
    tightest GPU (or the host's memory), reachable being the highest utilization (two decimals) that passes now.
    """
    if not 0 < utilization <= 1:
        raise ValueError("the engine's memory utilization must be in (0, 1]; got %s" % utilization)
    gpus = gpu_facts.get("gpus") or []
    views = []
    unified = not gpus or bool(gpu_facts.get("unified_memory"))
    if unified:
        mem = gpu_facts["host_memory"]
        views.append((mem["free_mib"], mem["total_mib"]))
    else:
        for g in gpus:
            used, free = g.get("memory_used_mib"), g.get("memory_free_mib")
            if used is None or free is None:
                continue
            views.append((max(free - context_mib, 0), used + free))
    if not views:
        raise ValueError("no GPU reports its memory and no host memory is known")
    best = None
    for free, total in views:
        wanted = utilization * total
        view = {"ok": free >= wanted, "unified_memory": unified, "wanted_mib": int(round(wanted)), "free_mib": int(free),
                "total_mib": int(total), "reachable": int(100.0 * free / total) / 100.0 if total else 0.0}
        if best is None or view["reachable"] < best["reachable"]:
            best = view
    return best


def gib(mib):
    return "%.1f GiB" % (mib / 1024.0)


def admission_refusal(host, utilization, view, holders, evicted, flag="--gpu-memory-utilization"):
    """The message of a refused admission: what the engine wants, what is free, what it could
    have now, who holds the rest, what was already tried, and what to do. `view` is
    engine_admission()'s, `holders` still_holding()'s sentences, `evicted` what was tried
    ("the model's page cache", "all page caches")."""
    where = "MemFree of the unified memory" if view["unified_memory"] else "free on the tightest GPU, less the engine's CUDA context"
    tried = (" after evicting %s" % " and ".join(evicted)) if evicted else ""
    held = ("; still holding memory: %s" % ", ".join(holders)) if holders else \
        "; no GPU process is listed, so the rest is the host's own use (processes, page cache, the Ray containers)"
    return ("%s: the engine would not start - %s %s wants %s of %s, and %s is free (%s)%s; at most %.2f is "
            "reachable now%s. Lower model_server_gpu_memory_utilization to %.2f or less, or free the memory "
            "(gpu_memory_stop_containers / gpu_memory_stop_systemd_units name what the deploy stops); "
            "nothing was started" % (host, flag, utilization, gib(view["wanted_mib"]), gib(view["total_mib"]),
                                     gib(view["free_mib"]), where, tried, view["reachable"], held,
                                     view["reachable"]))
