#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: deploy_record
short_description: Record what a deploy left on a host, or name every way the host has drifted from it
version_added: 0.3.0
description:
  - With O(mode=record) (the end of a successful deploy), writes on the host what is live there
    now - each of our containers (ID, image and image ID, state, start time, command line,
    environment, our labels, restart policy), each file the deploy wrote (SHA-256 and mode; an
    environment file's variables too), the model directory's manifest - with what the deploy
    chose (O(deployed)). Rewritten only when something differs, so a re-run reports no change.
  - With O(mode=compare) (C(drift.yml), and the deploy's re-run check), reads the record, reads
    the same things from the host as it is now and returns every difference (container and key,
    environment variable, file, model manifest; with O(inputs_digest) and O(images), the deploy's
    variables and the candidates' image IDs too), or none. Changes nothing.
  - With O(mode=compare) and O(memory), a host that has not drifted is also asked what the GPU
    memory phase would stop (a service that came back since, holding memory); with O(serve), a
    host that has not drifted and has nothing to stop asks its engine for one completion. Each
    is one more line of the answer when it finds something. The deploy's re-run check asks all
    of it in this one call per host.
  - With O(mode=refresh) (the rollback, once the engine of before serves again), the start time and
    state of each recorded container that runs now under the ID it was recorded with are brought up
    to date - the rollback started them again, as they were deployed - so the next run of the same
    deploy finds nothing to change and C(drift.yml) reports no restart. Nothing else of the record
    moves - a file, the deploy's inputs or a container the failed run changed still differs.
  - Secrets never enter the record - a secret file is recorded by its SHA-256, a container
    environment variable whose name says secret (TOKEN, KEY, PASSWORD...) likewise.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
attributes:
  check_mode:
    support: full
    details: O(mode=record) and O(mode=refresh) report what they would write and write nothing; O(mode=compare) only reads.
  diff_mode:
    support: full
    details: O(mode=record) and O(mode=refresh) show the record before and after.
  idempotent:
    support: full
options:
  mode:
    description: >-
      V(record) writes the host's state; V(compare) reports how the host differs from the record;
      V(refresh) takes the start times of the recorded containers started again by a rollback.
    type: str
    choices: [record, compare, refresh]
    required: true
  path:
    description: The record on the host (root-only, 0600).
    type: path
    default: /var/lib/sparkops/deployed.json
  containers:
    description: With O(mode=record), the containers to record (one that is absent is recorded as absent).
    type: list
    elements: str
    default: []
  files:
    description: With O(mode=record), the files the deploy wrote.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      secret:
        description: Record only its SHA-256 and mode, never its variables.
        type: bool
        default: false
  model_path:
    description: With O(mode=record), the model directory whose manifest is recorded.
    type: path
  model_checksum:
    description: With O(mode=record), include each model file's SHA-256 in the manifest (reads every byte).
    type: bool
    default: false
  deployed:
    description:
      - With O(mode=record), what the deploy chose (the image, its versions, the engine's command line),
        kept with the record and returned by O(mode=compare). Never compared.
    type: dict
    default: {}
  inputs_digest:
    description:
      - A digest of the deploy's variables (the deploy takes it over the roles' documented options).
      - With O(mode=record), kept with the record. With O(mode=compare), compared with the recorded one
        (a difference is one drift entry, C(what=inputs)); left out, not compared.
    type: str
  images:
    description:
      - Engine images (the candidates) whose local image ID matters to the deploy.
      - With O(mode=record), each one's ID on this host (null where it is not here) is kept with the
        record. With O(mode=compare), each one's ID now is compared with the recorded one; left out,
        not compared.
    type: list
    elements: str
  memory:
    description:
      - With O(mode=compare), also ask what the GPU memory phase (M(sparkops.inference.gpu_memory),
        O(sparkops.inference.gpu_memory#module:state=freed)) would stop here, with its options;
        anything it would stop is a difference. Left out, not asked.
    type: dict
    version_added: 0.3.0
    suboptions:
      containers:
        description: Containers the phase stops by name.
        type: list
        elements: str
        default: []
      compose_projects:
        description: Docker Compose projects whose containers the phase stops.
        type: list
        elements: str
        default: []
      systemd_units:
        description: systemd units the phase stops.
        type: list
        elements: str
        default: []
      stop_gpu_containers:
        description: The phase also stops every other container that owns a GPU process.
        type: bool
        default: false
      exclude_containers:
        description: Containers the phase never stops (ours).
        type: list
        elements: str
        default: []
      nvidia_smi_path:
        description: nvidia-smi to run (found on the PATH and the usual places when left out).
        type: path
  serve:
    description:
      - With O(mode=compare), on a host with no difference and nothing to stop, ask the engine
        here for one short completion (C(/health), C(/v1/models) listing O(serve.served_model_name),
        then C(/v1/completions)); no answer is a difference. One look, no waiting. Left out, not asked.
    type: dict
    version_added: 0.3.0
    suboptions:
      address:
        description: Where the engine listens (V(0.0.0.0) is asked on loopback).
        type: str
        default: 127.0.0.1
      port:
        description: The engine's port.
        type: int
        default: 8000
      served_model_name:
        description: The name the engine must list.
        type: str
      prompt:
        description: The prompt of the completion.
        type: str
        default: The capital of France is
      api_key_file:
        description: The engine's API key, in a root-only file on the host (never returned or printed).
        type: path
      timeout:
        description: Seconds each request may take.
        type: int
        default: 10
  docker_cli:
    description: Docker CLI to inspect the containers with.
    type: str
    default: docker
seealso:
  - name: Operating the cluster
    description: Drift, and what to do about it (docs/operations.md).
    link: https://github.com/sparkops/inference/blob/main/docs/operations.md
"""

EXAMPLES = r"""
- name: Record what this deploy left on the host
  sparkops.inference.deploy_record:
    mode: record
    containers: [sparkops-ray-head, sparkops-model-server]
    files:
      - path: /etc/sparkops/fabric.env
      - path: /etc/sparkops/ray-token
        secret: true
    model_path: /models/qwen3.5

- name: How the host differs from what the last deploy left
  sparkops.inference.deploy_record:
    mode: compare
  register: drift

- name: Show it
  ansible.builtin.debug:
    msg: "{{ drift.lines }}"
"""

RETURN = r"""
in_sync:
  description: With O(mode=compare), true when the host is as the last deploy left it.
  returned: with O(mode=record) or O(mode=compare)
  type: bool
drift:
  description: With O(mode=compare), every difference - what (container, file, model directory), key, recorded value, value now.
  returned: with O(mode=record) or O(mode=compare)
  type: list
  elements: dict
  sample: [{what: file /etc/sparkops/fabric.env, key: env NCCL_SOCKET_IFNAME, recorded: enp1s0f1np1, now: eth9}]
lines:
  description: The differences, one readable line each.
  returned: with O(mode=record) or O(mode=compare)
  type: list
  elements: str
  sample: ["file /etc/sparkops/fabric.env: env NCCL_SOCKET_IFNAME was enp1s0f1np1, now eth9"]
recorded_at:
  description: When the record was written (UTC), null when there is none.
  returned: always
  type: str
  sample: "2026-12-02T01:10:00Z"
deployed:
  description: What the deploy chose, as recorded (O(deployed)).
  returned: with O(mode=record) or O(mode=compare)
  type: dict
launch:
  description:
    - With O(mode=compare), how the recorded deploy launched its engine, one line (empty when the record
      names no engine).
  returned: when O(mode=compare) found a record
  type: str
  sample: "vllm 0.17.0 without Ray from 10.77.0.5:5000/sparkops/lab-vllm:0.17.0-noray: engine ranks on spark1, spark2"
  version_added: 0.3.0
record:
  description: The record as written (O(mode=record)) or as read (O(mode=compare)).
  returned: with O(mode=record) or O(mode=compare)
  type: dict
refreshed:
  description: With O(mode=refresh), the recorded containers whose start time was brought up to date.
  returned: with O(mode=refresh)
  type: list
  elements: str
  sample: [sparkops-ray-head, sparkops-model-server]
  version_added: 0.3.0
holders:
  description: With O(memory), what the GPU memory phase would stop (as its C(holders) fact).
  returned: when O(memory) was asked
  type: list
  elements: dict
  version_added: 0.3.0
endpoint:
  description: With O(serve), the engine's API as asked.
  returned: when O(serve) was asked
  type: str
  sample: http://127.0.0.1:8000/v1
  version_added: 0.3.0
completion:
  description: With O(serve), the text of the completion (null when none came back).
  returned: when O(serve) was asked
  type: str
  version_added: 0.3.0
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write, read_file
from ansible_collections.sparkops.inference.plugins.module_utils._holders import Host, survey
from ansible_collections.sparkops.inference.plugins.module_utils._http import answers, connect_address, read_key
from ansible_collections.sparkops.inference.plugins.module_utils._record import (
    RECORD_VERSION,
    container_state,
    describe,
    differences,
    file_state,
    launch_line,
    model_manifest,
    refreshed_starts,
)


def live_state(docker, containers, files, model_path, checksum):
    """The record of what is on this host now (containers, files, model), without times."""
    found = {}
    if containers:
        dummy, out, dummy = docker.run(["container", "inspect"] + list(containers))  # rc 1 when one is absent
        try:
            docs = json.loads(out or "[]")
        except ValueError:
            docs = []
        found = dict(((d.get("Name") or "").lstrip("/"), d) for d in docs)
    state = {"containers": dict((n, container_state(found.get(n))) for n in containers), "files": {}}
    for item in files:
        content = read_file(item["path"])
        st = os.stat(item["path"]) if content is not None else None
        state["files"][item["path"]] = file_state(item["path"], content, st, not item["secret"])
    state["model"] = None
    if model_path:
        if os.path.isdir(model_path):
            count, size, digest = model_manifest(model_path, checksum)
            state["model"] = {"path": model_path, "files": count, "size_bytes": size, "manifest": digest}
        else:
            state["model"] = {"path": model_path, "files": 0, "size_bytes": 0, "manifest": None}
    return state


def asked(docker, params):
    """The inputs digest and the images' IDs on this host, where the task gives them."""
    extra = {}
    if params["inputs_digest"] is not None:
        extra["inputs_digest"] = params["inputs_digest"]
    if params["images"] is not None:
        extra["images"] = dict((ref, docker.image_id(ref)) for ref in params["images"])
    return extra


def beyond_the_record(module, p, lines):
    """What O(memory) and O(serve) ask, on a host with no difference so far; each finding is
    appended to `lines`. The answers (holders, endpoint, completion) for the result."""
    found = {}
    if p["memory"] is not None and not lines:
        options = dict(p["memory"], docker_cli=p["docker_cli"])
        dummy, holders, dummy = survey(module, Host(module, p["docker_cli"]), options)
        found["holders"] = holders
        if holders:
            lines.append("the GPU memory phase would stop %s" % ", ".join(h["name"] for h in holders))
    serve = p["serve"]
    if serve is not None and not lines:
        key = read_key(serve["api_key_file"])
        if key:
            module.no_log_values.add(key)
        base = "http://%s:%d" % (connect_address(serve["address"]), serve["port"])
        why, said = answers(base, serve["served_model_name"], serve["prompt"], serve["timeout"], key)
        found.update(endpoint=base + "/v1", completion=said)
        if why:
            lines.append("the engine at %s did not answer the check: %s" % (base, why))
    return found


def load(path):
    text = read_file(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["record", "compare", "refresh"], required=True),
            path=dict(type="path", default="/var/lib/sparkops/deployed.json"),
            containers=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                secret=dict(type="bool", default=False),
            )),
            model_path=dict(type="path"),
            model_checksum=dict(type="bool", default=False),
            deployed=dict(type="dict", default={}),
            inputs_digest=dict(type="str"),
            images=dict(type="list", elements="str"),
            memory=dict(type="dict", options=dict(
                containers=dict(type="list", elements="str", default=[]),
                compose_projects=dict(type="list", elements="str", default=[]),
                systemd_units=dict(type="list", elements="str", default=[]),
                stop_gpu_containers=dict(type="bool", default=False),
                exclude_containers=dict(type="list", elements="str", default=[]),
                nvidia_smi_path=dict(type="path"),
            )),
            serve=dict(type="dict", options=dict(
                address=dict(type="str", default="127.0.0.1"),
                port=dict(type="int", default=8000),
                served_model_name=dict(type="str"),
                prompt=dict(type="str", default="The capital of France is"),
                api_key_file=dict(type="path"),
                timeout=dict(type="int", default=10),
            )),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    {"compare": compare, "record": record, "refresh": refresh}[p["mode"]](module, docker, load(p["path"]))


def compare(module, docker, old):
    """mode=compare: the hosts against their record (the re-run check and drift.yml)."""
    p = module.params
    if old is None:
        module.exit_json(changed=False, in_sync=False, recorded_at=None, deployed={}, record=None,
                         drift=[{"what": "record", "key": "present", "recorded": False, "now": False}],
                         lines=["no deploy is recorded here (%s): nothing to compare with - deploy first"
                                % p["path"]])
    secret = old.get("secret_files") or {}
    files = [{"path": path, "secret": secret.get(path, True)} for path in (old.get("files") or {})]
    model = old.get("model") or {}
    now = live_state(docker, list(old.get("containers") or {}), files, model.get("path"),
                     old.get("model_checksum", False))
    now.update(asked(docker, p))
    drift = differences(old, now)
    lines = [describe(d) for d in drift]
    found = beyond_the_record(module, p, lines)
    module.exit_json(changed=False, in_sync=not lines, drift=drift, lines=lines,
                     recorded_at=old.get("recorded_at"), deployed=old.get("deployed") or {}, record=old,
                     launch=launch_line(old.get("deployed")), **found)


def write_record(module, old, new):
    """Write `new` over the record `old` (not in check mode): the diff of the two."""
    path = module.params["path"]
    text = json.dumps(new, indent=1, sort_keys=True) + "\n"
    diff = {"before_header": path, "after_header": path, "after": text,
            "before": json.dumps(old, indent=1, sort_keys=True) + "\n" if old else ""}
    if not module.check_mode:
        try:
            atomic_write(path, text, mode=0o600)
        except OSError as exc:
            module.fail_json(msg="could not write the deploy record %s: %s" % (path, exc))
    return diff


def refresh(module, docker, old):
    """mode=refresh: the start times of the recorded containers a rollback started again."""
    if old is None:
        module.exit_json(changed=False, refreshed=[], recorded_at=None)
    now = live_state(docker, list(old.get("containers") or {}), [], None, False)
    new, names = refreshed_starts(old, now)
    if not names:
        module.exit_json(changed=False, refreshed=[], recorded_at=old.get("recorded_at"))
    diff = write_record(module, old, new)
    module.exit_json(changed=True, refreshed=names, recorded_at=old.get("recorded_at"), diff=diff)


def record(module, docker, old):
    """mode=record: what this deploy left on the host, written when it differs (changed)."""
    p = module.params
    new = live_state(docker, p["containers"], p["files"], p["model_path"], p["model_checksum"])
    new.update(asked(docker, p))
    new.update(version=RECORD_VERSION, model_checksum=p["model_checksum"], deployed=p["deployed"],
               secret_files=dict((f["path"], f["secret"]) for f in p["files"]))
    same = old is not None and dict(old, recorded_at=None) == dict(new, recorded_at=None)
    if same:
        module.exit_json(changed=False, in_sync=True, drift=[], lines=[], recorded_at=old.get("recorded_at"),
                         deployed=p["deployed"], record=old)
    new["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    diff = write_record(module, old, new)
    module.exit_json(changed=True, in_sync=True, drift=[], lines=[], recorded_at=new["recorded_at"],
                     deployed=p["deployed"], record=new, diff=diff)


if __name__ == "__main__":
    main()
