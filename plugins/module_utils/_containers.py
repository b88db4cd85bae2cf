# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every container the collection starts, as data (pure Python, no Ansible import).

- ray_container(): the Ray head / worker (roles/ray_cluster).
- engine_command() + engine_container(): the vLLM or SGLang engine (roles/model_server).
- preflight_run_args(): the fabric preflight's `docker run` (plugins/modules/fabric_preflight).
- watchdog_container(): the watchdog's agent on every host (roles/watchdog, module_utils/_watchdog).

The first two return the very dict handed to ``community.docker.docker_container`` (through the
``sparkops.inference.ray_container`` / ``engine_container`` filters), with the label
``sparkops.spec`` set to spec_hash() of everything else in it: whatever changes in the dict
changes the hash, so no setting can be changed unnoticed (a re-run compares the label of the
running container with the new one and recreates it when they differ).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json

from ansible_collections.sparkops.inference.plugins.module_utils import _secrets
from ansible_collections.sparkops.inference.plugins.module_utils import _watchdog
from ansible_collections.sparkops.inference.plugins.module_utils._plan import PlanError, launch_plan

SPEC_LABEL = "sparkops.spec"
ENV_FILE_LABEL = "sparkops.env-sha256"
TOKEN_IN_CONTAINER = "/run/sparkops/ray-token"
GPU_REQUEST = [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
# ray_cluster_fixed_ports key -> `ray start` flag (ports pinned when the firewall is on)
PORT_FLAGS = [("node_manager", "--node-manager-port"), ("object_manager", "--object-manager-port"),
              ("dashboard_agent_grpc", "--dashboard-agent-grpc-port"),
              ("dashboard_agent_listen", "--dashboard-agent-listen-port"),
              ("metrics_export", "--metrics-export-port"), ("runtime_env_agent", "--runtime-env-agent-port"),
              ("min_worker", "--min-worker-port"), ("max_worker", "--max-worker-port")]


class SpecError(ValueError):
    pass


def spec_hash(spec):
    """16 hex digits over the whole spec but its own label (keys sorted, so order is irrelevant)."""
    body = copy.deepcopy(spec)
    (body.get("labels") or {}).pop(SPEC_LABEL, None)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def _hashed(spec):
    spec["labels"][SPEC_LABEL] = spec_hash(spec)
    return spec


def _need(o, *keys):
    missing = [k for k in keys if o.get(k) in (None, "")]
    if missing:
        raise SpecError("the container spec needs %s (found %s)" % (", ".join(missing), sorted(o)))


def _flag(value):
    """bool-ish inventory values (-e x=false is a string) -> bool."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y")
    return bool(value)


def ray_env(address, auth):
    """What Ray (and vLLM on it) read of the node: its fabric address, token authentication."""
    env = {"VLLM_HOST_IP": address, "RAY_NODE_IP_ADDRESS": address}
    if auth:
        env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN_IN_CONTAINER})
    return env


# What the raylet of each Ray container reads at its start. Ray prestarts an idle Python worker
# per core when the first driver (the engine) connects: 15 on a 16-core host, 686 MiB of memory
# (Pss; on a Spark that is the GPU's unified memory) that serve nothing - vLLM places its ranks
# as actors, which Ray starts on demand; without the prestart the engine's actor was ready as
# fast (0.9 s against 1.3 s). Measured on a lent H100 host: tests/device/validate_ray_prestart.py,
# tests/unit/fixtures/h100-ray-prestart/. ray_cluster_env sets it otherwise.
RAY_NODE_ENV = {"RAY_prestart_worker_first_driver": "0"}


def ray_mounts(tmp_dir, auth, token_file):
    """Ray's session directory on the host (/tmp/ray), and the token read-only."""
    mounts = [{"type": "bind", "source": tmp_dir, "target": "/tmp/ray"}]
    if auth:
        mounts.append({"type": "bind", "source": token_file, "target": TOKEN_IN_CONTAINER, "read_only": True})
    return mounts


# "unless-stopped": back after a reboot or a crash, in whatever order dockerd starts them (a
# worker's `ray start` and the engine retry until the head is up; the engine waits for its
# placement group), but never after `docker stop` (a kept generation stays down)
RESTART_POLICIES = ("no", "unless-stopped")


def _base(o, role):
    """What every long-running container of ours has: host network and IPC, GPUs, a restart
    policy (o['restart_policy']), the fabric environment file (its content's hash as a label, so an edit of the file changes the spec)."""
    restart = str(o.get("restart_policy") or "no")
    if restart not in RESTART_POLICIES:
        raise SpecError("restart_policy is %r: expected one of %s" % (restart, ", ".join(RESTART_POLICIES)))
    spec = {
        "name": o["name"], "image": o["image"], "pull": "missing", "state": "started",
        "restart_policy": restart, "network_mode": "host", "ipc_mode": "host",
        "shm_size": str(o.get("shm_size") or "10.24g"),
        "device_requests": copy.deepcopy(GPU_REQUEST) if _flag(o.get("gpus", True)) else [],
        "labels": {"sparkops.role": role},
    }
    if o.get("env_file"):
        spec["env_file"] = o["env_file"]
        spec["labels"][ENV_FILE_LABEL] = o.get("env_file_sha256") or ""
    return spec


def ray_command(o):
    """`ray start` for the head or a worker, as a list (never through a shell)."""
    common = ["--block", "--node-ip-address", o["address"], "--num-gpus", str(int(o.get("num_gpus") or 0)),
              "--disable-usage-stats"]
    ports = o.get("fixed_ports") or {}
    for key, flag in PORT_FLAGS:
        if ports:
            if key not in ports:
                raise SpecError("ray_cluster_fixed_ports has no %s: expected the keys %s"
                                % (key, ", ".join(k for k, dummy in PORT_FLAGS)))
            common += [flag, str(ports[key])]
    if _flag(o.get("head")):
        cmd = ["ray", "start", "--head", "--port", str(o.get("gcs_port", 6379))] + common
        if _flag(o.get("dashboard")):
            cmd += ["--include-dashboard", "true", "--dashboard-host", o.get("dashboard_host") or o["address"],
                    "--dashboard-port", str(o.get("dashboard_port", 8265))]
        else:
            cmd += ["--include-dashboard", "false"]
    else:
        cmd = ["ray", "start", "--address", o["gcs_address"]] + common
    return cmd + [str(a) for a in o.get("extra_args") or []]


def ray_container(o):
    """The docker_container arguments of a Ray head (o['head']) or worker.

    o: name, image, head, address (this node's fabric address), gcs_address (head:port),
    gcs_port, num_gpus, auth, token_file, tmp_dir, env_file (path or ''), env_file_sha256,
    env (extra), extra_args, shm_size, gpus, privileged, devices, capabilities, ulimits,
    fixed_ports (a dict when the firewall pins them, else empty), dashboard, dashboard_host,
    dashboard_port.
    """
    _need(o, "name", "image", "address", "gcs_address", "tmp_dir")
    auth = _flag(o.get("auth", True))
    spec = _base(o, "ray-head" if _flag(o.get("head")) else "ray-worker")
    cmd = ray_command(o)
    env = ray_env(o["address"], auth)
    env.update(RAY_NODE_ENV)
    env.update(dict((str(k), str(v)) for k, v in (o.get("env") or {}).items()))
    spec.update({
        "privileged": _flag(o.get("privileged", False)),
        "devices": list(o.get("devices") or []),
        "capabilities": list(o.get("capabilities") or []),
        "ulimits": list(o.get("ulimits") or []),
        "env": env,
        "mounts": ray_mounts(o["tmp_dir"], auth, o.get("token_file") or ""),
        # the program set explicitly: an image's own ENTRYPOINT (vLLM's official image has
        # ["vllm", "serve"], NGC's a banner script) would otherwise get `ray start` as arguments
        "entrypoint": cmd[:2],
        "command": cmd[2:],
    })
    spec["labels"]["sparkops.gcs"] = o["gcs_address"]
    return _hashed(spec)


def _vllm_args(o, plan, common, max_len):
    """vLLM: `vllm serve MODEL` with Ray's executor on the head (launcher ray), or its multiprocessing
    backend across hosts (native: --nnodes/--node-rank/--master-addr, the ranks other than 0
    --headless)."""
    if o.get("parallelism", "tensor") == "pipeline":
        parallel = ["--tensor-parallel-size", str(o.get("gpus_per_node")),
                    "--pipeline-parallel-size", str(o.get("nodes"))]
    else:
        parallel = ["--tensor-parallel-size", str(o.get("gpus_total"))]
    if plan["drives_ray"]:
        backend = ["ray"]
    else:
        rank = int(o.get("node_rank", 0))
        backend = ["mp", "--nnodes", str(o.get("nodes")), "--node-rank", str(rank),
                   "--master-addr", str(o.get("head_address")), "--master-port", str(plan["meet_port"])]
        backend += ["--headless"] if rank else []
    return ([o["model_path"]] + common + ["--distributed-executor-backend"] + backend
            + [plan["memory_flag"], str(o.get("gpu_memory_utilization"))]
            + parallel + (["--max-model-len", max_len] if max_len else []))


def _sglang_args(o, plan, common, max_len):
    """SGLang: its own launcher, one rank per host, meeting at the head's dist-init address."""
    return (["--model-path", o["model_path"]] + common
            + ["--tp-size", str(o.get("gpus_total")),
               plan["memory_flag"], str(o.get("gpu_memory_utilization")),
               "--nnodes", str(o.get("nodes")), "--node-rank", str(o.get("node_rank", 0)),
               "--dist-init-addr", "%s:%d" % (o.get("head_address"), plan["meet_port"])]
            + (["--context-length", max_len] if max_len else []))


# the engine's options after the common ones, per engine of the launch plans (module_utils/_plan.py)
ENGINE_ARGS = {"vllm": _vllm_args, "sglang": _sglang_args}


def _plan_of(o):
    try:
        return launch_plan(o.get("engine") or "", o.get("launcher") or "")
    except PlanError as exc:
        raise SpecError(str(exc))


def engine_command(o):
    """(entrypoint, args) of the engine, as its launch plan (module_utils/_plan.py) says: `vllm serve
    ...` on the head over Ray (launcher `ray`), or one rank per host without Ray (launcher `native`:
    vLLM's multiprocessing backend across hosts, SGLang's own launcher, which runs a rank on every
    host with Ray too); o['executable'] replaces the program (the lab's stand-in).

    o: engine, launcher, executable, model_path, host, port, served_name, gpu_memory_utilization,
    parallelism (tensor/pipeline), gpus_total, gpus_per_node, nodes, max_model_len,
    extra_args, node_rank, head_address (where the ranks meet: SGLang's dist-init address,
    vLLM's master address), api_key (whether the engine gets an API key: from its mounted
    file, see _secrets).
    """
    plan = _plan_of(o)
    if o.get("parallelism", "tensor") not in ("tensor", "pipeline"):
        raise SpecError("model_server_parallelism is %s: expected tensor or pipeline" % o.get("parallelism"))
    _need(o, "model_path", "served_name")
    max_len = str(o.get("max_model_len") if o.get("max_model_len") is not None else "")
    common = ["--host", str(o.get("host", "0.0.0.0")), "--port", str(o.get("port", 8000)),
              "--served-model-name", o["served_name"]]
    args = ENGINE_ARGS[plan["engine"]](o, plan, common, max_len)
    program = list(o.get("executable") or plan["entrypoint"])
    args = args + [str(a) for a in o.get("extra_args") or []]
    if _flag(o.get("api_key", False)):
        if plan["key_config"]:
            args += ["--config", "%s/%s" % (_secrets.IN_CONTAINER, plan["key_config"])]
        else:
            program = ["/bin/sh", "-c", _secrets.VLLM_WRAPPER, "sparkops-engine"] + program
    return program, args


def engine_container(o):
    """The docker_container arguments of the engine, as its launch plan says.

    o: name, image, engine, launcher (ray, or native: a rank on every host and no Ray), entrypoint,
    args (engine_command()), model_path, ray_address (head:port), node_address, auth, token_file,
    tmp_dir, env_file, env_file_sha256, env (extra), secrets_dir and secrets (the names of those
    set: api_key, hf_token; the directory is mounted read-only, never a secret in env or labels),
    shm_size, gpus, ray_head_container (an engine that places its ranks through Ray - vLLM over Ray -
    shares the Ray head's PID namespace: a Ray driver on the head finds the node's raylet by its
    process and talks to it through /tmp/ray); for ranks of its own on every host, which run NCCL
    themselves, privileged, devices, capabilities and ulimits as the Ray containers have them. Where
    no Ray containers run, the engine gets no Ray address, token or session directory - only its
    fabric address (the plan's host_ip_env: VLLM_HOST_IP, SGLANG_HOST_IP).
    """
    plan = _plan_of(o)
    _need(o, "name", "image", "model_path", "tmp_dir", *(("ray_address",) if plan["ray"] else ()))
    auth = _flag(o.get("auth", False)) and plan["ray"]
    spec = _base(o, "model-server")
    env = {plan["host_ip_env"]: o.get("node_address") or ""}
    if plan["ray"]:
        env["RAY_ADDRESS"] = o["ray_address"]
        env.update(ray_env(o.get("node_address") or "", auth))
    env.update(dict((str(k), str(v)) for k, v in (o.get("env") or {}).items()))
    mounts = [{"type": "bind", "source": o["model_path"], "target": o["model_path"], "read_only": True}]
    secrets = list(o.get("secrets") or [])
    if secrets:
        _need(o, "secrets_dir")
        mounts.append({"type": "bind", "source": o["secrets_dir"], "target": _secrets.IN_CONTAINER, "read_only": True})
    if "hf_token" in secrets:
        env["HF_TOKEN_PATH"] = "%s/%s" % (_secrets.IN_CONTAINER, _secrets.HF_TOKEN_FILE)
    spec.update({
        "env": env,
        "mounts": mounts + (ray_mounts(o["tmp_dir"], auth, o.get("token_file") or "") if plan["ray"] else []),
        "entrypoint": list(o.get("entrypoint") or []),
        "command": list(o.get("args") or []),
    })
    if plan["drives_ray"]:
        _need(o, "ray_head_container")
        spec["pid_mode"] = "container:" + o["ray_head_container"]
    else:
        spec.update({
            "privileged": _flag(o.get("privileged", False)),
            "devices": list(o.get("devices") or []),
            "capabilities": list(o.get("capabilities") or []),
            "ulimits": list(o.get("ulimits") or []),
        })
    return _hashed(spec)


WATCHDOG_AGENT = "/opt/sparkops/watchdog.py"
WATCHDOG_SERVING = "/opt/sparkops/_serving.py"  # beside the agent: it imports _serving from its own directory
DOCKER_SOCKET = "/var/run/docker.sock"


def watchdog_container(o):
    """The docker_container arguments of a host's watchdog agent.

    o: name, image (one the host holds: the Ray container's, whose python3 runs the agent),
    agent_path (the agent on the host), serving_path (the judge of serving the agent imports,
    _serving.py, on the host), agent_sha256 (a label: a new agent recreates the container),
    state_dir (the state file, the pause file and the cluster's lock live there), config_dir
    (the Ray token is read there), secrets_dir (where the engine's API key is, when it has one;
    mounted too unless config_dir holds it), restart_policy, and
    config: the agent's settings (_watchdog.config() checks them here, before anything starts).
    """
    _need(o, "name", "image", "agent_path", "serving_path", "state_dir", "config_dir")
    restart = str(o.get("restart_policy") or "no")
    if restart not in RESTART_POLICIES:
        raise SpecError("restart_policy is %r: expected one of %s" % (restart, ", ".join(RESTART_POLICIES)))
    try:
        cfg = _watchdog.config(o.get("config") or {})
    except _watchdog.ConfigError as exc:
        raise SpecError("the watchdog's settings: %s" % exc)
    # only what the agent was given, in a stable form: the defaults stay the agent's own
    given = dict((k, v) for k, v in (o.get("config") or {}).items() if v is not None and v != "")
    given["paused"] = cfg["paused"]
    spec = {
        "name": o["name"], "image": o["image"], "pull": "missing", "state": "started",
        "restart_policy": restart, "network_mode": "host",
        # root whatever the image's USER: the agent talks to the Docker socket and reads the token
        "user": "0:0",
        "labels": {"sparkops.role": "watchdog", "sparkops.agent-sha256": str(o.get("agent_sha256") or "")},
        "mounts": [
            {"type": "bind", "source": o["agent_path"], "target": WATCHDOG_AGENT, "read_only": True},
            {"type": "bind", "source": o["serving_path"], "target": WATCHDOG_SERVING, "read_only": True},
            {"type": "bind", "source": DOCKER_SOCKET, "target": DOCKER_SOCKET},
            {"type": "bind", "source": o["state_dir"], "target": o["state_dir"]},
            {"type": "bind", "source": o["config_dir"], "target": o["config_dir"], "read_only": True},
        ] + ([{"type": "bind", "source": o["secrets_dir"], "target": o["secrets_dir"], "read_only": True}]
             if o.get("secrets_dir") and not (o["secrets_dir"].rstrip("/") + "/").startswith(
                 o["config_dir"].rstrip("/") + "/") else []),
        # the program set explicitly, as for the Ray containers: the image's ENTRYPOINT is vLLM's
        "entrypoint": ["python3", "-u", WATCHDOG_AGENT],
        "command": [json.dumps(given, sort_keys=True)],
    }
    return _hashed(spec)


def preflight_run_args(p, backend, script):
    """`docker run` arguments (after `docker`) of the fabric preflight's all-reduce, rank p['rank']."""
    args = ["run", "--rm", "--name", p["name"], "--network", "host", "--ipc", "host",
            "--env-file", p["env_file"], "-e", "NCCL_DEBUG=INFO",
            "--entrypoint", "timeout"]  # never the image's own ENTRYPOINT
    if p["gpus"]:
        args += ["--gpus", "all"]
    return args + list(p["docker_args"]) + [
        p["image"], "-k", "5", str(p["timeout"]), "python3", "-c", script,
        str(p["rank"]), str(p["world_size"]), p["master_address"], str(p["master_port"]),
        str(p["size_mib"]), str(p["iterations"]), backend, str(p["timeout"])]
