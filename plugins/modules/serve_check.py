#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: serve_check
short_description: Is the engine's port free before start; is the engine serving after
version_added: 0.1.0
description:
  - O(phase=status) - one look, never failing - the container's state and image, whether
    C(/health) answers, what C(/v1/models) lists and the engine's own load from its C(/metrics)
    (requests running and waiting, KV cache use, generation tokens per second between two looks
    O(metrics_interval) apart) - what C(status.yml) shows.
  - O(phase=precheck) - when O(container) is not running, fails if something already listens
    on O(port) (the engine would die on start with "address already in use"). With O(model_path),
    also returns the model directory's manifest (as M(sparkops.inference.model_info) does), so the
    deploy looks at the engine and the model in one round trip per host.
  - O(phase=ready) - waits until C(/health) answers 200 and C(/v1/models) lists
    O(served_model_name), then sends one short completion. Watches the container meanwhile - an
    engine that exits during start fails at once with its last log lines, not at the timeout.
    Ready is not "Up" - a container can run for minutes before it serves.
  - Redirects are never followed (whatever answers the engine's port with one is not the engine);
    answer bodies in messages are cut and quoted.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
options:
  phase:
    description: What to check.
    type: str
    choices: [status, precheck, ready]
    default: ready
  container:
    description: The engine's container.
    type: str
    required: true
  address:
    description:
      - Address the checks connect to - the one the engine binds (V(0.0.0.0) is reached at V(127.0.0.1)).
      - Unset - the C(--host) the running container was started with, else V(127.0.0.1).
      - With O(phase=precheck) and O(check_port), the deploy fails when it is not an address of the host.
    type: str
  api_key_file:
    description:
      - A file on the host that holds the engine's API key (root-only); each request carries it
        in its C(Authorization) header, as a bearer token. The key is never returned, and is cut
        out of every message (engine log lines included).
      - Empty, or a file that is not there - no key is sent.
    type: path
    default: ""
    version_added: 0.3.0
  port:
    description:
      - The engine's HTTP port.
      - Unset - the C(--port) the running container was started with, else V(8000) (the deploy's
        rollback waits so for the engine that served before, whatever port this run asked for).
    type: int
  served_model_name:
    description: The name C(/v1/models) must list.
    type: str
  timeout:
    description: Seconds to wait for the engine to serve, V(0) or more (V(0) looks once).
    type: int
    default: 1800
  prompt:
    description: Prompt of the smoke-test completion; empty skips it.
    type: str
    default: "The capital of France is"
  check_port:
    description: With O(phase=precheck), check that O(port) is free (the host that serves HTTP).
    type: bool
    default: true
  model_path:
    description:
      - With O(phase=precheck), the model directory to describe in RV(model) - whether it is there,
        the number and size of its files and a manifest digest over their names and sizes.
    type: path
    version_added: 0.3.0
  model_checksum:
    description: With O(model_path), include each file's SHA-256 in the manifest (reads every byte, 8 files at a time).
    type: bool
    default: false
    version_added: 0.3.0
  secret_dirs:
    description:
      - With O(phase=precheck), directories whose files to name in RV(secret_files) (names only, never
        read) - the engine's secrets and the states of them kept for a rollback. A host that holds none
        and runs no engine rank has none to write or remove.
    type: list
    elements: path
    default: []
    version_added: 0.4.0
  admit:
    description:
      - With O(phase=precheck), the fraction of the memory the engine will ask for (the utilization
        M(sparkops.inference.memory_admission) takes). Also judges, after the model directory was read,
        whether the engine's start-up memory check would pass now, evicting nothing, in RV(admission).
      - Memory freed later in the run (an engine kept aside) only makes it pass more easily, so the deploy
        calls M(sparkops.inference.memory_admission) only where this says no - that module evicts page
        caches, waits and names what holds the memory.
    type: float
    version_added: 0.4.0
  metrics_interval:
    description:
      - Seconds between the two looks at C(/metrics) that give the generation tokens per second
        (O(phase=status)); V(0) looks once (SGLang's own throughput gauge is still shown).
    type: float
    default: 2
    version_added: 0.3.0
  log_lines:
    description: Container log lines shown when the engine fails.
    type: int
    default: 30
  progress_interval:
    description:
      - With O(phase=ready), a line at the default verbosity every this many seconds while the
        engine does not serve yet - how long it has waited, what the engine answered and its last log
        line (a real model loads for many minutes; a silent task looks like a hang). V(0) waits
        silently, in one call.
      - The collection's action plugin of the same name prints the lines; each call of the module
        waits at most this long and returns RV(waiting) rather than failing while O(timeout) has not
        passed.
    type: int
    default: 0
    version_added: 0.4.0
  waited:
    description:
      - Seconds earlier calls of the same wait have already spent (set by the action plugin between
        its calls); the wait ends O(timeout) seconds after the first call began.
    type: float
    default: 0
    version_added: 0.4.0
  restart_count:
    description:
      - The container's restart count when the wait began (set by the action plugin between its
        calls, so that a restart by Docker between two calls is still an exit). Unset - this call's first look.
    type: int
    version_added: 0.4.0
attributes:
  check_mode:
    support: full
    details: Checks only; in check mode O(phase=ready) reports without waiting.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Wait until the model is served
  sparkops.inference.serve_check:
    container: sparkops-model-server
    port: 8000
    served_model_name: qwen3.5-122b
    timeout: 1800
"""

RETURN = r"""
container:
  description: The container's name, running, status, image, spec (its C(sparkops.spec) label), started_at, exit_code, restart_policy; null when absent.
  returned: when O(phase=status) or O(phase=precheck)
  type: dict
metrics:
  description:
    - The engine's load from its C(/metrics) (phase status, when it runs) - C(engine) (vllm, sglang or
      null when neither's series are there), C(running), C(waiting), C(kv_cache_usage) (0-1),
      C(tokens_per_second) (generation), C(error) (why there are no figures, else null).
  returned: when O(phase=status)
  type: dict
  version_added: 0.3.0
  sample: {engine: vllm, running: 3.0, waiting: 5.0, kv_cache_usage: 0.62, tokens_per_second: 210.0, error: null}
model:
  description:
    - The model directory (O(phase=precheck) with O(model_path)) - C(path), C(exists), C(files),
      C(size_bytes), C(manifest) (SHA-256 over the sorted names and sizes, and checksums with
      O(model_checksum); null when the directory is missing).
  returned: when O(phase=precheck) and O(model_path) is set
  type: dict
  version_added: 0.3.0
  sample: {path: /models/qwen, exists: true, files: 42, size_bytes: 127000000000, manifest: 3f1c...}
secret_files:
  description: The files in each of O(secret_dirs) (their names; a directory that is not there has none).
  returned: when O(phase=precheck)
  type: dict
  version_added: 0.4.0
  sample: {/etc/sparkops/secrets: [engine-api-key], /etc/sparkops/secrets.previous: []}
admission:
  description:
    - Whether an engine started with O(admit) would pass its start-up memory check now (O(phase=precheck)
      with O(admit)) - C(ok), C(unified_memory), C(wanted_mib), C(free_mib), C(total_mib), C(reachable)
      (the highest fraction that passes now), as M(sparkops.inference.memory_admission) computes them
      before it evicts anything; C(ok) false with C(error) when the memory could not be read.
  returned: when O(phase=precheck) and O(admit) is set
  type: dict
  version_added: 0.4.0
  sample: {ok: true, unified_memory: true, wanted_mib: 103380, free_mib: 118200, total_mib: 121630, reachable: 0.97}
health:
  description: HTTP status of C(/health), null when it did not answer (phase status).
  returned: when O(phase=status)
  type: int
seconds_to_ready:
  description: Seconds from the container's start until it served (phase ready).
  returned: when ready
  type: float
models:
  description: Model ids C(/v1/models) listed.
  returned: when ready
  type: list
  elements: str
models_answer:
  description:
    - Why C(/v1/models) listed no model (phase status) - its HTTP status and the start of its answer, or
      why nothing answered; for a 401 or 403, that the engine refuses the API key of O(api_key_file)
      (it was started with another one). Null when it listed a model or the engine does not run.
  returned: when O(phase=status)
  type: str
  version_added: 0.3.0
  sample: "HTTP 401 - the engine refuses the API key in /etc/sparkops/secrets/engine-api-key ..."
completion:
  description: Text of the smoke-test completion.
  returned: when ready and O(prompt) is set
  type: str
endpoint:
  description: Base URL of the OpenAI-compatible API.
  returned: always
  type: str
waiting:
  description:
    - True when O(progress_interval) passed and the engine does not serve yet, with O(timeout) not
      reached - the action plugin prints RV(last) and RV(log) and calls again with RV(waited) and RV(restart_count).
  returned: when O(phase=ready) and O(progress_interval) is set
  type: bool
  version_added: 0.4.0
last:
  description: What the engine answered at the last look, in words (with RV(waiting)).
  returned: when RV(waiting) is true
  type: str
  version_added: 0.4.0
  sample: "/health answered 503: \"loading\""
log:
  description: The engine container's last log line, without its API key (with RV(waiting)).
  returned: when RV(waiting) is true
  type: str
  version_added: 0.4.0
  sample: "Loading safetensors checkpoint shards:  45% Completed | 18/40"
waited:
  description: Seconds this wait has taken so far, over every call (with RV(waiting)).
  returned: when RV(waiting) is true
  type: float
  version_added: 0.4.0
restart_count:
  description: The container's restart count when the wait began (with RV(waiting)).
  returned: when RV(waiting) is true
  type: int
  version_added: 0.4.0
"""

import datetime
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils import _http as engine_http
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._gpu import GpuParseError
from ansible_collections.sparkops.inference.plugins.module_utils._host import read_gpu_facts
from ansible_collections.sparkops.inference.plugins.module_utils._http import connect_address
from ansible_collections.sparkops.inference.plugins.module_utils._serving import model_ids
from ansible_collections.sparkops.inference.plugins.module_utils._memory import engine_admission
from ansible_collections.sparkops.inference.plugins.module_utils._record import model_summary
from ansible_collections.sparkops.inference.plugins.module_utils._metrics import (
    MetricsParseError,
    engine_load,
    tokens_per_second,
)
from ansible_collections.sparkops.inference.plugins.module_utils._secrets import scrub


def describe(doc):
    """The container as the role needs it: running, status, image, its spec label; None if absent."""
    if not doc:
        return None
    state = doc.get("State") or {}
    config = doc.get("Config") or {}
    return {"name": doc.get("Name", "").lstrip("/"), "running": bool(state.get("Running")),
            "status": state.get("Status"), "image": config.get("Image") or None,
            "spec": (config.get("Labels") or {}).get("sparkops.spec") or None,
            "started_at": state.get("StartedAt"), "exit_code": state.get("ExitCode"),
            "restart_policy": ((doc.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name")}


# the API key when one is set (load_api_key): sent with each request, cut out of whatever a message quotes
SECRETS = []
HEADERS = {"Content-Type": "application/json"}


def quoted(text, limit=200):
    return engine_http.quoted(text, SECRETS, limit)


def http(method, url, body=None, timeout=5):
    """(status, body) of one request (module_utils/_http.py: no proxy, no redirect followed)."""
    return engine_http.request(method, url, body, timeout=timeout, headers=HEADERS, secrets=SECRETS)


def started_at(state):
    text = (state or {}).get("StartedAt") or ""
    try:
        base = text.split(".")[0].rstrip("Z")
        return (datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S")
                - datetime.datetime(1970, 1, 1)).total_seconds()
    except ValueError:
        return None


def look_at_metrics(base, interval):
    """The engine's load (metrics of RETURN) from one or two looks at /metrics."""
    out = {"engine": None, "running": None, "waiting": None, "kv_cache_usage": None,
           "tokens_per_second": None, "error": None}
    loads = []
    for n in range(2 if interval > 0 else 1):
        if n:
            time.sleep(interval)
        t = time.time()
        code, text = http("GET", base + "/metrics", timeout=3)
        if code != 200:
            out["error"] = "GET /metrics: %s" % (("HTTP %d" % code) if code else text)
            return out
        try:
            loads.append((t, engine_load(text)))
        except MetricsParseError as exc:
            out["error"] = "GET /metrics: %s" % exc
            return out
    last = loads[-1][1]
    out.update((k, last[k]) for k in ("engine", "running", "waiting", "kv_cache_usage"))
    if len(loads) == 2:
        out["tokens_per_second"] = tokens_per_second(loads[0][1], last, loads[1][0] - loads[0][0])
    else:
        out["tokens_per_second"] = tokens_per_second(last, None, 0)
    if last["engine"] is None:
        out["error"] = "GET /metrics answered without vLLM's or SGLang's series"
    return out


def models_answer(code, text, models, api_key_file):
    """Why /v1/models listed no model, as status.yml says it (None when it listed one).
    `models` is model_ids(code, text): the answer is parsed once."""
    if code is None:
        return "no answer (%s)" % text
    if code in (401, 403):
        if "Authorization" not in HEADERS:
            why = "wants an API key and %s: it was started with one" % (
                ("%s holds none" % api_key_file) if api_key_file else "none was sent")
        else:
            why = "refuses the API key in %s: it was started with another one" % api_key_file
        return ("HTTP %d - the engine %s (its secret files changed after it started - a deploy that did not "
                "finish, or by hand); deploy.yml starts it again as sparkops_engine_api_key says" % (code, why))
    if models:
        return None
    return "HTTP %d %s" % (code, quoted(text, 120))


def phase_status(module, base, doc):
    """What runs and answers, changing nothing (status.yml)."""
    res = {"changed": False, "endpoint": base + "/v1", "container": describe(doc), "health": None,
           "models": [], "models_answer": None, "metrics": None}
    if doc and doc["State"].get("Running"):
        res["health"] = http("GET", base + "/health", timeout=3)[0]
        code, text = http("GET", base + "/v1/models", timeout=3)
        res["models"] = model_ids(code, text)
        res["models_answer"] = models_answer(code, text, res["models"], module.params["api_key_file"])
        res["metrics"] = look_at_metrics(base, module.params["metrics_interval"])
    module.exit_json(**res)


def phase_precheck(module, base, doc):
    """The engine container as it is, and whether its port is free when it does not run."""
    p = module.params
    current = describe(doc)
    seen = {"container": current}
    if p["model_path"]:
        seen["model"] = model_summary(p["model_path"], p["model_checksum"])
    seen["secret_files"] = dict((d, sorted(os.listdir(d)) if os.path.isdir(d) else []) for d in p["secret_dirs"])
    if p["admit"] is not None:  # after the model was read: a checksum pass fills the page cache
        seen["admission"] = admission_now(module, p["admit"], p["docker_cli"])
    problem = bind_problem(p["address"]) if p["check_port"] else None
    if problem:  # a running engine too: a changed model_server_host would not start
        module.fail_json(msg="model_server_host is %s, which %s on %s: the engine could not listen there. Set "
                             "model_server_host to one of this host's addresses (ip -brief addr), or 0.0.0.0 for "
                             "all of them" % (p["address"], problem, socket.gethostname()), endpoint=base)
    if (doc and doc["State"].get("Running")) or not p["check_port"]:
        module.exit_json(changed=False, endpoint=base, **seen)
    try:
        socket.create_connection((p["address"], p["port"]), timeout=1).close()
    except (socket.error, IOError):
        module.exit_json(changed=False, endpoint=base, **seen)
    module.fail_json(msg="port %d on %s is in use by something other than %s: the engine could "
                         "not bind it. Stop what listens there (ss -ltnp 'sport = :%d') or set "
                         "model_server_port" % (p["port"], socket.gethostname(), p["container"], p["port"]),
                     endpoint=base)


def admission_now(module, utilization, docker_cli):
    """memory_admission's first look - what the engine's start-up check would read now - evicting
    nothing; ok false with the error when the memory cannot be read or judged (that module then
    runs and says so)."""
    try:
        facts, dummy, dummy = read_gpu_facts(module, None, docker_cli)
        return engine_admission(facts, utilization)
    except (GpuParseError, ValueError) as exc:
        return {"ok": False, "error": str(exc)}


def bind_problem(address):
    """Why the engine could not listen on `address` here (None: it could)."""
    try:
        infos = socket.getaddrinfo(address, 0, 0, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return "does not resolve (%s)" % exc
    errors = []
    for family, kind, proto, dummy, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.bind(sockaddr)
            return None
        except (socket.error, OSError) as exc:
            errors.append(exc.strerror or str(exc))
        finally:
            sock.close()
    return "is not an address of this host (%s)" % "; ".join(sorted(set(errors)))


def started_with(doc, flag):
    """The value the container's command line gives `flag` (--host, --port), None if it has none."""
    args = list(((doc or {}).get("Config") or {}).get("Cmd") or [])
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def engine_base(p, doc):
    """Where the checks reach the engine: O(address) and O(port), else what its container was
    started with (--host, --port), else 127.0.0.1:8000; p's address and port are set to it."""
    if not p["address"]:
        p["address"] = started_with(doc, "--host") or "127.0.0.1"
    if not p["port"]:
        port = started_with(doc, "--port")
        p["port"] = int(port) if port and port.isdigit() else 8000
    return "http://%s:%d" % (connect_address(p["address"]), p["port"])


def exit_code(docker, name, state, wait=5.0):
    """The engine's exit code. Once Docker has restarted it (a restart policy) the running
    container shows none: watch it a few seconds for its next exit - an engine that cannot start
    exits again, and Docker's back-off (doubling from 0.1 s) makes the "restarting" window long."""
    deadline = time.time() + wait
    while state.get("Running") and not state.get("Restarting"):
        if time.time() > deadline:
            return "unknown"
        time.sleep(0.1)
        state = ((docker.container(name) or {}).get("State")) or {}
    return state.get("ExitCode")


def logs(docker, p):
    """The engine's last log lines, without its API key (SGLang logs its server_args, key included)."""
    return scrub("\n".join(docker.logs(p["container"], p["log_lines"])), SECRETS)


def last_log_line(docker, p):
    """The engine's last log line that says something, without its API key ('' when it has printed none)."""
    lines = [line for line in logs(docker, dict(p, log_lines=5)).splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def wait_served(module, docker, base):
    """Poll until /health is 200 and /v1/models lists the served name; the container document
    when it is ready. Fails when the engine exits or the timeout passes, with its last logs."""
    p = module.params
    host = socket.gethostname()
    began = time.time()
    deadline = began + max(0, p["timeout"] - p["waited"])
    # with progress_interval this call hands back at the interval's end (the action plugin prints a line)
    hand_back = began + p["progress_interval"] if p["progress_interval"] > 0 else None
    restarts = p["restart_count"]
    while True:
        doc = docker.container(p["container"])
        state = (doc or {}).get("State") or {}
        count = (doc or {}).get("RestartCount") or 0
        restarts = count if restarts is None else restarts
        # with a restart policy Docker starts an engine that exited again: "restarting" (its exit
        # code still there) or a higher restart count is an exit too
        if not state.get("Running") or state.get("Restarting") or count > restarts:
            exited = exit_code(docker, p["container"], state)
            module.fail_json(msg="the engine exited during start (container %s, exit code %s) on %s%s. "
                                 "Its last log lines:\n%s" % (
                                     p["container"], exited, host,
                                     "; Docker restarted it %d time(s)" % count if count > restarts else "",
                                     logs(docker, p)),
                             endpoint=base)
        dummy, step, models, last = engine_http.look(base, p["served_model_name"], headers=HEADERS, secrets=SECRETS)
        if step == "name":  # it answers with another model: waiting longer would not mend that
            module.fail_json(msg=last + " (served model name mismatch): set model_server_served_name to what "
                                        "the engine is started with", endpoint=base, models=models)
        if last is None:
            return state, models
        if time.time() > deadline:
            module.fail_json(msg="the engine did not serve within %d s on %s (%s). Its last log lines:\n%s"
                             % (p["timeout"], host, last, logs(docker, p)),
                             endpoint=base)
        if hand_back is not None and time.time() > hand_back:
            module.exit_json(changed=False, waiting=True, endpoint=base, last=last, log=last_log_line(docker, p),
                             waited=round(p["waited"] + time.time() - began, 1), restart_count=restarts)
        time.sleep(0.5)


def smoke_test(module, base, models, res):
    """One short completion; fails with the engine's answer when it cannot give one."""
    p = module.params
    said, why = engine_http.completion(base, p["served_model_name"] or (models[0] if models else None),
                                       p["prompt"], headers=HEADERS, secrets=SECRETS)
    if why:
        module.fail_json(msg="the engine is up but " + why, **res)
    return said


def phase_ready(module, docker, base):
    """Wait until the model is served, then send one completion (nothing in check mode)."""
    if module.check_mode:
        module.exit_json(changed=False, endpoint=base, skipped_wait=True)
    state, models = wait_served(module, docker, base)
    t0 = started_at(state)
    res = {"changed": False, "endpoint": base + "/v1", "models": models,
           "seconds_to_ready": round(time.time() - t0, 1) if t0 else None}
    if module.params["prompt"]:
        res["completion"] = smoke_test(module, base, models, res)
    module.exit_json(**res)


def load_api_key(module, path):
    """The API key from its root-only file into each request's headers, and into SECRETS (cut
    out of every message); the module never returns it."""
    key = engine_http.read_key(path)
    if key:
        module.no_log_values.add(key)
        SECRETS.append(key)
        HEADERS["Authorization"] = "Bearer " + key


def main():
    module = AnsibleModule(
        argument_spec=dict(
            phase=dict(type="str", choices=["status", "precheck", "ready"], default="ready"),
            container=dict(type="str", required=True),
            address=dict(type="str"),
            api_key_file=dict(type="path", default=""),
            port=dict(type="int"),
            served_model_name=dict(type="str"),
            timeout=dict(type="int", default=1800),
            prompt=dict(type="str", default="The capital of France is"),
            log_lines=dict(type="int", default=30),
            metrics_interval=dict(type="float", default=2),
            check_port=dict(type="bool", default=True),
            model_path=dict(type="path"),
            model_checksum=dict(type="bool", default=False),
            admit=dict(type="float"),
            secret_dirs=dict(type="list", elements="path", default=[], no_log=False),  # names of directories, not secrets
            docker_cli=dict(type="str", default="docker"),
            progress_interval=dict(type="int", default=0),
            waited=dict(type="float", default=0),
            restart_count=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 0:
        module.fail_json(msg="timeout is %d: it is the seconds to wait for the engine to serve, 0 or more "
                             "(0 looks once)" % p["timeout"])
    load_api_key(module, p["api_key_file"])
    docker = Docker(module, p["docker_cli"])
    # the container's document: what status and precheck look at, and where an engine listens
    # that the caller does not know (status.yml; the rollback's engine from before this run)
    doc = None if p["phase"] == "ready" and p["address"] and p["port"] else docker.container(p["container"])
    if doc is not None:
        doc.setdefault("State", {})
    base = engine_base(p, doc)
    if p["phase"] == "ready":
        phase_ready(module, docker, base)
    if p["phase"] == "status":
        phase_status(module, base, doc)
    phase_precheck(module, base, doc)


if __name__ == "__main__":
    main()
