#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_memory
short_description: Stop what holds GPU / unified memory, record it, wait for free memory; or restore it
version_added: 0.1.0
description:
  - With O(state=freed), finds the holders - the listed containers, the running containers of
    the listed Docker Compose projects, every container that owns a GPU process (with
    O(stop_gpu_containers=true)) and the listed systemd units - reports the GPU memory each
    holds, stops them (containers with a grace period, then killed; units stopped), appends them
    to a record on the host, optionally drops the page cache, and waits until enough memory is free.
  - What would bring a stopped holder back at the next boot is held while it is stopped and
    given back on restore - a container's restart policy other than C(no) is set to C(no)
    (C(always) restarts a container at boot even after C(docker stop)), an enabled unit is
    disabled (never masked). The record keeps the policy or the enabled state.
  - Nothing is ever removed - no container, volume, image or unit file. Compose projects'
    containers are stopped, not brought down, so they are started again exactly as they were.
  - Running it again stops nothing new and keeps the first record.
  - The record is written B(before) each stop (and the entry taken out again when the stop
    fails), so a run killed half way never leaves a stopped service unrecorded. It lists what
    was stopped and not yet started again, across runs.
  - With O(state=restored), starts again exactly what the record lists, in reverse order, then
    renames the record to C(<state_file>.restored). An entry whose container or unit was removed
    since it was stopped is named in a warning and skipped (a container re-created under its
    name since is started by that name). A missing or corrupt record fails, naming
    the file, and starts nothing.
  - With O(state=recorded), only reads the record (no record is an empty list); changes nothing.
  - In check mode, reports what would be stopped and how much GPU memory that frees; stops nothing.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
  - sparkops.inference.attributes.facts
options:
  state:
    description:
      - V(freed) stops the holders; V(restored) starts what the record lists; V(recorded) reads the
        record (what a failed deploy's rollback would start).
    type: str
    choices: [freed, restored, recorded]
    default: freed
  containers:
    description: Containers to stop (names or ids).
    type: list
    elements: str
    default: []
  compose_projects:
    description: Docker Compose projects whose running containers are stopped (found by the C(com.docker.compose.project) label).
    type: list
    elements: str
    default: []
  systemd_units:
    description: systemd units to stop (not disable).
    type: list
    elements: str
    default: []
  stop_gpu_containers:
    description: Also stop every container that owns a GPU process.
    type: bool
    default: false
  exclude_containers:
    description:
      - Containers never stopped (this collection's own Ray and engine containers).
      - The GPU memory their processes hold counts as free in the wait - a re-deploy keeps them when
        nothing changes, and stops them before their replacement starts
        (M(sparkops.inference.container_generation)); C(after.own_containers_mib) says how much.
    type: list
    elements: str
    default: []
  strict:
    description: Fail when a listed container, project or unit does not exist or does not run, instead of warning.
    type: bool
    default: false
  stop_timeout:
    description: Seconds a container gets between SIGTERM and SIGKILL.
    type: int
    default: 30
  drop_caches:
    description:
      - After stopping, C(sync) and drop the page cache (C(echo 3 > /proc/sys/vm/drop_caches)).
      - Only when this run stopped something, or the free memory is below what is waited for.
    type: bool
    default: false
  free_gib:
    description: Wait until this much memory is free (GiB). Mutually exclusive with O(free_fraction).
    type: float
  free_fraction:
    description: Wait until this fraction of the memory is free (0 < x <= 1).
    type: float
  free_metric:
    description:
      - On unified memory (GB10) and hosts without a GPU, which /proc/meminfo figure counts as free.
      - V(free) (MemFree) is what vLLM's start-up check effectively needs; V(available) (MemAvailable) counts reclaimable page cache.
      - Discrete GPUs always use the least free framebuffer of any GPU.
    type: str
    choices: [available, free]
    default: free
  wait_timeout:
    description: Seconds to wait for the free memory.
    type: int
    default: 120
  state_file:
    description: The record of what was stopped, on the host.
    type: path
    default: /var/lib/sparkops/gpu_memory_stopped.json
  nvidia_smi_path:
    description: Path of nvidia-smi; searched for when not set.
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: What would be stopped (C(state=freed)) or started again (C(state=restored)), one line per
      container or systemd unit, before and after.
  facts:
    support: full
  idempotent:
    support: full
    details: A second O(state=freed) stops nothing (the holders are stopped) and keeps the first record.
notes:
  - Without a GPU tool, the holders' GPU memory is reported as 0 and host memory still counts.
"""

EXAMPLES = r"""
- name: Stop the old model and its helpers, wait for 100 GiB free
  sparkops.inference.gpu_memory:
    containers: [vllm-old, vllm-proxy]
    compose_projects: [embeddings, reranker]
    systemd_units: [ollama.service]
    drop_caches: true
    free_gib: 100

- name: Bring back what was stopped
  sparkops.inference.gpu_memory:
    state: restored

- name: Read what a restore would start (changes nothing)
  sparkops.inference.gpu_memory:
    state: recorded
  register: stopped_record
"""

RETURN = r"""
record:
  description: What the record on the host lists as stopped and not started again (O(state=recorded)).
  returned: when O(state=recorded)
  type: list
  elements: dict
  sample: [{kind: container, name: vllm-old, id: 3f2a..., reason: listed, gpu_mib: 96073}]
  version_added: 0.2.0
down:
  description:
    - The entries of RV(record) that do not run now (O(state=recorded)) - what a restore would start;
      an entry someone started again by hand is not in it.
  returned: when O(state=recorded)
  type: list
  elements: dict
  version_added: 0.2.0
gone:
  description:
    - The entries of RV(record) whose container or unit no longer exists (removed since it was
      stopped) - nothing a restore can start; a restore warns about them and starts the rest.
  returned: when O(state=recorded)
  type: list
  elements: dict
  version_added: 0.2.0
exists:
  description: Whether there is a record at all (O(state=recorded)).
  returned: when O(state=recorded)
  type: bool
  version_added: 0.2.0
record_file:
  description: The record's path (O(state=recorded)).
  returned: when O(state=recorded)
  type: str
  version_added: 0.2.0
ansible_facts:
  description: Facts added to the host (not with O(state=recorded)).
  returned: when O(state) is not V(recorded)
  type: dict
  contains:
    sparkops_gpu_memory:
      description: What was found, stopped (or started again) and how much memory that freed.
      type: dict
      contains:
        holders:
          description: What holds memory and was (or would be) stopped now, with the GPU MiB each holds.
          type: list
          elements: dict
          sample: [{kind: container, name: vllm-old, id: 3f2a..., reason: listed, gpu_mib: 96073}]
        notes:
          description: Listed holders that do not exist or do not run.
          type: list
          elements: str
        record:
          description: Everything the record on the host lists as stopped (across runs).
          type: list
          elements: dict
        restored:
          description: What was started again (O(state=restored)).
          type: list
          elements: dict
        before:
          description: Free and total memory (MiB) and GPU MiB held by processes, before.
          type: dict
        after:
          description: The same after stopping and waiting.
          type: dict
        required_mib:
          description: The free memory waited for, or null.
          type: int
        seconds:
          description: Time spent.
          type: float
"""

import json
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write
from ansible_collections.sparkops.inference.plugins.module_utils._holders import Host, memory_facts, survey
from ansible_collections.sparkops.inference.plugins.module_utils._memory import (
    RecordError,
    add_to_record,
    drop_from_record,
    in_record,
    free_mib,
    holders_diff,
    load_record,
    own_gpu_mib,
    new_record,
    required_mib,
    restore_order,
    still_holding,
)


def memory_view(facts, metric):
    free, total = free_mib(facts, metric)
    return {"free_mib": free, "total_mib": total,
            "gpu_process_mib": facts.get("gpu_memory_used_by_processes_mib", 0),
            "host": facts.get("host_memory")}


def read_record(module, path, must_exist):
    try:
        with open(path) as f:
            text = f.read()
    except (IOError, OSError):
        if must_exist:
            done = path + ".restored"
            hint = (" (it was restored already: see %s)" % done) if os.path.exists(done) else ""
            module.fail_json(msg="no record of stopped services at %s%s: nothing was restored"
                             % (path, hint))
        return None
    try:
        return load_record(text, path)
    except RecordError as exc:
        module.fail_json(msg=str(exc))


def write_record(module, path, record):
    try:
        atomic_write(path, json.dumps(record, indent=2, sort_keys=True))
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write the record of stopped services to %s: %s (nothing more is "
                             "stopped until it can be written)" % (path, exc))


def diff_of(module, entries, record_file, stopping):
    """{"diff": ...} for exit_json when --diff was asked and something changes, else {}."""
    diff = holders_diff(entries, socket.gethostname(), record_file, stopping) if module._diff else None
    return {"diff": diff} if diff else {}


def freed(module, host):
    p = module.params
    t0 = time.time()
    facts, holders, notes = survey(module, host, p)
    try:
        want = required_mib(memory_view(facts, p["free_metric"])["total_mib"], p["free_gib"],
                            p["free_fraction"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if notes and p["strict"]:
        module.fail_json(msg="gpu_memory_strict is on and: %s" % "; ".join(notes), notes=notes)
    for n in notes:
        module.warn(n + " (skipped)")
    before = memory_view(facts, p["free_metric"])
    result = {"holders": holders, "notes": notes, "before": before, "required_mib": want}
    record = read_record(module, p["state_file"], False)
    if module.check_mode:
        result["would_free_gpu_mib"] = sum(h["gpu_mib"] for h in holders)
        result["record"] = (record or {}).get("stopped", [])
        result["after"] = before
        result["seconds"] = round(time.time() - t0, 1)
        module.exit_json(changed=bool(holders), ansible_facts={"sparkops_gpu_memory": result},
                         **diff_of(module, holders, p["state_file"], True))

    record = record or new_record(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    stopped, errors = [], []
    for h in holders:
        # recorded before it is stopped: a run killed during the stop must not forget it
        known = in_record(record, h)
        host.note_boot(h)
        write_record(module, p["state_file"], add_to_record(record, [h]))
        err = host.stop(h, p["stop_timeout"])
        if err:
            errors.append(err)
            if not known:  # it still runs: nothing to start again for it
                write_record(module, p["state_file"], drop_from_record(record, h))
            continue
        stopped.append(h)
    if not os.path.exists(p["state_file"]):
        # an empty record too: restore then knows that this host had nothing to bring back
        write_record(module, p["state_file"], record)
    if errors:
        module.fail_json(msg="; ".join(errors) + " (what was stopped is in %s)" % p["state_file"],
                         ansible_facts={"sparkops_gpu_memory": dict(result, record=record["stopped"])})
    # drop the page cache when this run freed something or memory is still short; a re-run with
    # nothing to stop and enough free memory leaves the host alone
    if p["drop_caches"] and (stopped or (want is not None and before["free_mib"] < want)):
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    after = memory_view(facts, p["free_metric"])
    deadline = time.time() + p["wait_timeout"]
    while True:
        facts, dummy = memory_facts(module, p["nvidia_smi_path"], p["docker_cli"])
        after = memory_view(facts, p["free_metric"])
        # what our own Ray and engine containers hold is theirs to keep or to give up before
        # their replacement starts (container_generation): it counts as free
        own = own_gpu_mib(facts, p["exclude_containers"])
        if want is None or after["free_mib"] + own >= want or time.time() >= deadline:
            break
        time.sleep(0.5)
    after["own_containers_mib"] = own
    result.update(after=after, record=record["stopped"], seconds=round(time.time() - t0, 1))
    if want is not None and after["free_mib"] + own < want:
        holding = still_holding(facts)
        module.fail_json(
            msg="only %.1f GiB free after %d s, waiting for %.1f GiB (%s): %s"
                % (after["free_mib"] / 1024.0, p["wait_timeout"], want / 1024.0, p["free_metric"],
                   ("still holding GPU memory: " + "; ".join(holding)) if holding else
                   "no GPU process is left: the memory is held elsewhere (page cache: drop_caches; "
                   "other services: list them)"),
            ansible_facts={"sparkops_gpu_memory": result})
    module.exit_json(changed=bool(stopped), ansible_facts={"sparkops_gpu_memory": result},
                     **diff_of(module, stopped, p["state_file"], True))


def restored(module, host):
    p = module.params
    t0 = time.time()
    record = read_record(module, p["state_file"], True)
    todo = restore_order(record)
    # removed since they were stopped (by an operator, or with the image store of a host that
    # changed its Docker): nothing to start, said so, not a failure
    gone = [e for e in todo if host.gone(e)]
    todo = [e for e in todo if e not in gone]
    notes = ["%s %s was removed since it was stopped: nothing to start" % (e["kind"], e["name"]) for e in gone]
    for n in notes:
        module.warn(n)
    result = {"restored": todo, "record": record["stopped"], "holders": [], "notes": notes,
              "gone": gone}
    if module.check_mode:
        module.exit_json(changed=bool(todo), ansible_facts={"sparkops_gpu_memory": result},
                         **diff_of(module, todo, p["state_file"], False))
    errors = []
    for entry in todo:
        err = host.start(entry)
        if err:
            errors.append("%s %s: %s" % (entry["kind"], entry["name"], err))
    if errors:
        module.fail_json(msg="could not start again: %s (the record %s is kept)"
                         % ("; ".join(errors), p["state_file"]),
                         ansible_facts={"sparkops_gpu_memory": result})
    os.rename(p["state_file"], p["state_file"] + ".restored")
    result["seconds"] = round(time.time() - t0, 1)
    module.exit_json(changed=bool(todo), ansible_facts={"sparkops_gpu_memory": result},
                     **diff_of(module, todo, p["state_file"], False))


def recorded(module, host):
    """Read the record; `down`: its entries that do not run now (what a restore would start)."""
    record = read_record(module, module.params["state_file"], False)
    entries = (record or {}).get("stopped", [])
    down, gone = [], []
    for e in entries:
        if host.gone(e):
            gone.append(e)  # nothing a restore could start
            continue
        if e["kind"] == "container":
            now = host.container(e.get("id") or e["name"]) if host.docker else {"running": False}
            if not now["exists"]:
                now = host.container(e["name"])
            running = now["running"]
        else:
            running = host.unit(e["name"])["active"] if host.systemctl else False
        if not running:
            down.append(e)
    module.exit_json(changed=False, record=entries, down=down, gone=gone,
                     record_file=module.params["state_file"], exists=record is not None)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="freed", choices=["freed", "restored", "recorded"]),
            containers=dict(type="list", elements="str", default=[]),
            compose_projects=dict(type="list", elements="str", default=[]),
            systemd_units=dict(type="list", elements="str", default=[]),
            stop_gpu_containers=dict(type="bool", default=False),
            exclude_containers=dict(type="list", elements="str", default=[]),
            strict=dict(type="bool", default=False),
            stop_timeout=dict(type="int", default=30),
            drop_caches=dict(type="bool", default=False),
            free_gib=dict(type="float"),
            free_fraction=dict(type="float"),
            free_metric=dict(type="str", default="free", choices=["available", "free"]),
            wait_timeout=dict(type="int", default=120),
            state_file=dict(type="path", default="/var/lib/sparkops/gpu_memory_stopped.json"),
            nvidia_smi_path=dict(type="path"),
            docker_cli=dict(type="str", default="docker"),
        ),
        mutually_exclusive=[("free_gib", "free_fraction")],
        supports_check_mode=True,
    )
    host = Host(module, module.params["docker_cli"])
    if module.params["state"] == "recorded":
        recorded(module, host)
    if module.params["state"] == "restored":
        restored(module, host)
    freed(module, host)


if __name__ == "__main__":
    main()
