# -*- coding: utf-8 -*-
# Container specs as data: every input changes the spec hash (one at a time), the hash is over
# the very dict handed to docker_container, and the command lines are the public recipes'.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._containers import (
    SPEC_LABEL,
    SpecError,
    engine_command,
    engine_container,
    preflight_run_args,
    ray_container,
    spec_hash,
)

FIXED = {"node_manager": 6380, "object_manager": 6381, "dashboard_agent_grpc": 6382,
         "dashboard_agent_listen": 6383, "metrics_export": 6384, "runtime_env_agent": 6385,
         "min_worker": 10002, "max_worker": 10999}

RAY = {"name": "sparkops-ray-head", "image": "reg/vllm:0.17.0", "head": True, "address": "192.168.100.10",
       "gcs_address": "192.168.100.10:6379", "gcs_port": 6379, "num_gpus": 1, "auth": True,
       "token_file": "/etc/sparkops/ray-token", "tmp_dir": "/var/lib/sparkops/ray",
       "env_file": "/etc/sparkops/fabric.env", "env_file_sha256": "ab" * 32, "env": {}, "extra_args": [],
       "shm_size": "10.24g", "gpus": True, "privileged": False, "devices": ["/dev/infiniband"],
       "capabilities": ["IPC_LOCK"], "ulimits": ["memlock:-1:-1", "stack:67108864:67108864"],
       "fixed_ports": {}, "dashboard": False, "dashboard_host": "192.168.100.10", "dashboard_port": 8265,
       "restart_policy": "unless-stopped"}

# one changed value per input (the inputs that a head reads)
RAY_CHANGES = {"name": "other", "image": "reg/vllm:0.18.0", "head": False, "address": "192.168.100.12",
               "gcs_address": "192.168.100.11:6379", "gcs_port": 6400, "num_gpus": 2, "auth": False,
               "token_file": "/root/t", "tmp_dir": "/srv/ray", "env_file": "/etc/other.env",
               "env_file_sha256": "cd" * 32, "env": {"NCCL_DEBUG": "INFO"}, "extra_args": ["--num-cpus", "8"],
               "shm_size": "16g", "gpus": False, "privileged": True, "devices": [], "capabilities": [],
               "ulimits": ["memlock:-1:-1"], "fixed_ports": FIXED, "dashboard": True,
               "dashboard_host": "127.0.0.1", "dashboard_port": 8266, "restart_policy": "no"}

ENGINE = {"name": "sparkops-model-server", "image": "reg/vllm:0.17.0", "engine": "vllm",
          "entrypoint": ["vllm", "serve"], "args": ["/opt/models/m", "--port", "8000"],
          "model_path": "/opt/models/m", "ray_address": "192.168.100.10:6379", "node_address": "192.168.100.10",
          "auth": True, "token_file": "/etc/sparkops/ray-token", "tmp_dir": "/var/lib/sparkops/ray",
          "env_file": "/etc/sparkops/fabric.env", "env_file_sha256": "ab" * 32, "env": {},
          "shm_size": "10.24g", "gpus": True, "ray_head_container": "sparkops-ray-head",
          "restart_policy": "unless-stopped", "secrets_dir": "/etc/sparkops/secrets", "secrets": ["api_key"],
          "launcher": "ray"}

ENGINE_CHANGES = {"name": "other", "image": "reg/vllm:0.18.0", "engine": "sglang",
                  "entrypoint": ["python3", "-m", "x"], "args": ["/opt/models/m", "--port", "8001"],
                  "model_path": "/opt/models/n", "ray_address": "192.168.100.10:6400",
                  "node_address": "192.168.100.11", "auth": False, "token_file": "/root/t", "tmp_dir": "/srv/ray",
                  "env_file": "", "env_file_sha256": "cd" * 32, "env": {"HF_HUB_OFFLINE": "1"},
                  "shm_size": "32g", "gpus": False, "ray_head_container": "other-head", "restart_policy": "no",
                  "secrets_dir": "/srv/secrets", "secrets": ["api_key", "hf_token"], "launcher": "native"}


def test_every_ray_input_is_covered_by_a_change():
    assert sorted(RAY_CHANGES) == sorted(RAY)


def test_every_engine_input_is_covered_by_a_change():
    assert sorted(ENGINE_CHANGES) == sorted(ENGINE)


@pytest.mark.parametrize("key", sorted(RAY_CHANGES))
def test_each_ray_input_changes_the_spec_hash(key):
    inputs = copy.deepcopy(RAY)
    if key.startswith("dashboard_"):  # they matter when the dashboard is on
        inputs["dashboard"] = True
    base = ray_container(copy.deepcopy(inputs))
    changed = ray_container(dict(copy.deepcopy(inputs), **{key: RAY_CHANGES[key]}))
    assert changed != base
    assert changed["labels"][SPEC_LABEL] != base["labels"][SPEC_LABEL]


@pytest.mark.parametrize("key", sorted(ENGINE_CHANGES))
def test_each_engine_input_changes_the_spec_hash(key):
    base = engine_container(copy.deepcopy(ENGINE))
    changed = engine_container(dict(copy.deepcopy(ENGINE), **{key: ENGINE_CHANGES[key]}))
    assert changed["labels"][SPEC_LABEL] != base["labels"][SPEC_LABEL]


@pytest.mark.parametrize("build,inputs", [(ray_container, RAY), (engine_container, ENGINE)])
def test_the_hash_is_over_the_very_dict_handed_to_docker_container(build, inputs):
    spec = build(copy.deepcopy(inputs))
    assert spec["labels"][SPEC_LABEL] == spec_hash(spec)
    for key in spec:  # any option of the handed dict, edited by anyone, shows in the hash
        if key == "labels":
            continue
        edited = copy.deepcopy(spec)
        edited[key] = "edited"
        assert spec_hash(edited) != spec["labels"][SPEC_LABEL], key
    assert build(copy.deepcopy(inputs)) == spec  # the same inputs, the same spec


def test_the_engine_shm_size_and_gpus_are_in_the_spec():  # they were left out of the hand-kept hash
    base = engine_container(copy.deepcopy(ENGINE))
    assert base["shm_size"] == "10.24g"
    assert base["device_requests"] == [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
    no_gpu = engine_container(dict(copy.deepcopy(ENGINE), gpus="false"))  # -e model_server_gpus=false
    assert no_gpu["device_requests"] == []


def test_ray_head_and_worker_commands():
    head = ray_container(copy.deepcopy(RAY))
    assert head["entrypoint"] == ["ray", "start"]  # whatever the image's own ENTRYPOINT is
    assert head["entrypoint"] + head["command"] == [
        "ray", "start", "--head", "--port", "6379", "--block", "--node-ip-address", "192.168.100.10",
        "--num-gpus", "1", "--disable-usage-stats", "--include-dashboard", "false"]
    assert head["env"] == {"VLLM_HOST_IP": "192.168.100.10", "RAY_NODE_IP_ADDRESS": "192.168.100.10",
                           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/run/sparkops/ray-token",
                           "RAY_prestart_worker_first_driver": "0"}
    assert head["network_mode"] == "host" and head["ipc_mode"] == "host"
    assert head["labels"]["sparkops.role"] == "ray-head"
    worker = ray_container(dict(copy.deepcopy(RAY), head=False, address="192.168.100.11",
                                name="sparkops-ray-worker", fixed_ports=FIXED))
    assert worker["entrypoint"] + worker["command"][:2] == ["ray", "start", "--address", "192.168.100.10:6379"]
    assert worker["command"][worker["command"].index("--node-manager-port") + 1] == "6380"
    assert worker["command"][worker["command"].index("--max-worker-port") + 1] == "10999"
    assert worker["labels"]["sparkops.role"] == "ray-worker"


def test_ray_starts_no_idle_workers_ahead_of_the_engine_unless_the_inventory_says_so(fixture_text):
    """The prestart's cost, as captured on a 16-core host: the setting our containers turn off."""
    runs = dict((r["setting"], r) for r in json.loads(fixture_text("h100-ray-prestart", "summary.json"))["runs"])
    assert runs["default"]["idle_workers"] >= 8 and runs["no-first-driver-prestart"]["idle_workers"] == 0
    for head in (True, False):
        spec = ray_container(dict(copy.deepcopy(RAY), head=head))
        assert spec["env"]["RAY_prestart_worker_first_driver"] == "0"
    # the inventory's ray_cluster_env has the last word
    spec = ray_container(dict(copy.deepcopy(RAY), env={"RAY_prestart_worker_first_driver": "1"}))
    assert spec["env"]["RAY_prestart_worker_first_driver"] == "1"
    # the engine's container is not a Ray node: its driver starts no raylet
    assert "RAY_prestart_worker_first_driver" not in engine_container(copy.deepcopy(ENGINE))["env"]


def test_no_env_file_means_none_given():
    spec = ray_container(dict(copy.deepcopy(RAY), env_file=""))
    assert "env_file" not in spec and "sparkops.env-sha256" not in spec["labels"]


def test_fixed_ports_missing_one_is_named():
    with pytest.raises(SpecError, match="ray_cluster_fixed_ports has no max_worker"):
        ray_container(dict(copy.deepcopy(RAY), fixed_ports=dict((k, v) for k, v in FIXED.items()
                                                                if k != "max_worker")))


def test_a_restart_policy_other_than_ours_is_named():
    with pytest.raises(SpecError, match="restart_policy is 'always': expected one of no, unless-stopped"):
        ray_container(dict(RAY, restart_policy="always"))  # "always" would bring a kept generation back at boot
    assert ray_container(RAY)["restart_policy"] == "unless-stopped"


def test_missing_input_is_named_with_what_was_found():
    with pytest.raises(SpecError, match="needs address, gcs_address"):
        ray_container({"name": "x", "image": "y", "tmp_dir": "/t"})


CMD = {"engine": "vllm", "executable": [], "model_path": "/opt/models/qwen", "host": "0.0.0.0", "port": 8000,
       "served_name": "qwen", "gpu_memory_utilization": 0.85, "parallelism": "tensor", "gpus_total": 2,
       "gpus_per_node": 1, "nodes": 2, "max_model_len": "", "extra_args": [], "node_rank": 0,
       "head_address": "192.168.100.10"}


def test_vllm_over_ray_is_the_two_spark_recipe():
    entrypoint, args = engine_command(dict(CMD))
    assert entrypoint == ["vllm", "serve"]
    assert args == ["/opt/models/qwen", "--host", "0.0.0.0", "--port", "8000", "--served-model-name", "qwen",
                    "--distributed-executor-backend", "ray", "--gpu-memory-utilization", "0.85",
                    "--tensor-parallel-size", "2"]
    dummy, args = engine_command(dict(CMD, parallelism="pipeline", max_model_len=32768, extra_args=["--x"]))
    assert args[-7:] == ["--tensor-parallel-size", "1", "--pipeline-parallel-size", "2",
                         "--max-model-len", "32768", "--x"]


def test_sglang_multi_node():
    entrypoint, args = engine_command(dict(CMD, engine="sglang", node_rank=1, max_model_len=8192))
    assert entrypoint == ["python3", "-m", "sglang.launch_server"]
    assert args == ["--model-path", "/opt/models/qwen", "--host", "0.0.0.0", "--port", "8000",
                    "--served-model-name", "qwen", "--tp-size", "2", "--mem-fraction-static", "0.85",
                    "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "192.168.100.10:20000",
                    "--context-length", "8192"]
    spec = engine_container(dict(copy.deepcopy(ENGINE), engine="sglang"))
    assert "pid_mode" not in spec  # SGLang is no Ray driver


SGLANG_RDMA = {"privileged": True, "devices": ["/dev/infiniband"], "capabilities": ["IPC_LOCK"],
               "ulimits": ["memlock:-1:-1"]}


def test_sglang_gets_the_rdma_settings_of_the_ray_containers():
    """SGLang drives NCCL from its own container on every host: devices, capabilities, ulimits."""
    plain = engine_container(dict(copy.deepcopy(ENGINE), engine="sglang"))
    assert (plain["privileged"], plain["devices"], plain["capabilities"], plain["ulimits"]) == (False, [], [], [])
    spec = engine_container(dict(copy.deepcopy(ENGINE), engine="sglang", **SGLANG_RDMA))
    ray = ray_container(dict(copy.deepcopy(RAY), **SGLANG_RDMA))
    for key in SGLANG_RDMA:
        assert spec[key] == ray[key] == SGLANG_RDMA[key], key
        one = engine_container(dict(copy.deepcopy(ENGINE), engine="sglang", **{key: SGLANG_RDMA[key]}))
        assert one["labels"][SPEC_LABEL] != plain["labels"][SPEC_LABEL], key


def test_vllm_engine_takes_no_rdma_settings():  # its ranks run in the Ray containers
    spec = engine_container(dict(copy.deepcopy(ENGINE), **SGLANG_RDMA))
    assert not set(SGLANG_RDMA) & set(spec)


def test_the_executable_replaces_the_program_only():
    entrypoint, args = engine_command(dict(CMD, executable=["python3", "/opt/standin.py"]))
    assert entrypoint == ["python3", "/opt/standin.py"] and args[0] == "/opt/models/qwen"


@pytest.mark.parametrize("change,words", [({"engine": "tgi"}, "engine is 'tgi': expected one of vllm, sglang"),
                                          ({"parallelism": "expert"}, "expected tensor or pipeline")])
def test_bad_engine_settings_are_named(change, words):
    with pytest.raises(SpecError, match=words):
        engine_command(dict(CMD, **change))


def test_vllm_shares_the_ray_heads_pid_namespace():
    assert engine_container(copy.deepcopy(ENGINE))["pid_mode"] == "container:sparkops-ray-head"


def test_preflight_run_args():
    p = {"name": "pf", "env_file": "/etc/sparkops/fabric.env", "gpus": True, "docker_args": ["--device=/dev/x"],
         "image": "img", "timeout": 90, "rank": 1, "world_size": 2, "master_address": "192.168.100.10",
         "master_port": 29511, "size_mib": 64, "iterations": 3}
    args = preflight_run_args(p, "nccl", "print(1)")
    assert args[:11] == ["run", "--rm", "--name", "pf", "--network", "host", "--ipc", "host", "--env-file",
                         "/etc/sparkops/fabric.env", "-e"]
    assert args[args.index("--entrypoint") + 1] == "timeout"  # never the image's own ENTRYPOINT
    assert args.index("--entrypoint") < args.index("img")
    assert args[args.index("--gpus") + 1] == "all" and "--device=/dev/x" in args
    assert args[args.index("img") + 1:args.index("img") + 7] == ["-k", "5", "90", "python3", "-c", "print(1)"]


def test_an_api_key_reaches_vllm_from_its_file_never_the_command_line():
    """vLLM reads VLLM_API_KEY; a shell inside the container sets it from the mounted file, so
    the container's config holds only the file's path."""
    entrypoint, args = engine_command(dict(CMD, api_key=True))
    assert entrypoint[:2] == ["/bin/sh", "-c"] and entrypoint[3:] == ["sparkops-engine", "vllm", "serve"]
    assert "/run/sparkops/secrets/engine-api-key" in entrypoint[2] and "--api-key" not in args
    plain_entry, plain_args = engine_command(dict(CMD))
    assert plain_args == args and plain_entry == ["vllm", "serve"]


def test_an_api_key_reaches_sglang_through_its_config_file():
    dummy, args = engine_command(dict(CMD, engine="sglang", api_key=True))
    assert args[-2:] == ["--config", "/run/sparkops/secrets/sglang-api-key.yaml"] and "--api-key" not in args


def test_the_secrets_directory_is_mounted_read_only_and_the_token_read_from_its_file():
    spec = engine_container(dict(copy.deepcopy(ENGINE), secrets=["api_key", "hf_token"]))
    mount = [m for m in spec["mounts"] if m["target"] == "/run/sparkops/secrets"]
    assert mount == [{"type": "bind", "source": "/etc/sparkops/secrets", "target": "/run/sparkops/secrets",
                      "read_only": True}]
    assert spec["env"]["HF_TOKEN_PATH"] == "/run/sparkops/secrets/hf-token"
    none = engine_container(dict(copy.deepcopy(ENGINE), secrets=[]))
    assert not [m for m in none["mounts"] if m["target"] == "/run/sparkops/secrets"]
    assert "HF_TOKEN_PATH" not in none["env"]


def test_vllm_native_ranks_meet_at_the_heads_fabric_address_and_only_rank_0_serves():
    """vLLM without Ray (its mp backend across hosts, as NVIDIA's two-Spark guide launches it): every
    rank names the world and the master; the ranks other than 0 are --headless (no API server)."""
    head = engine_command(dict(CMD, launcher="native", node_rank=0, head_address="192.168.100.10"))[1]
    other = engine_command(dict(CMD, launcher="native", node_rank=1, head_address="192.168.100.10"))[1]
    want = ["--distributed-executor-backend", "mp", "--nnodes", "2", "--node-rank", "%d",
            "--master-addr", "192.168.100.10", "--master-port", "29501"]
    at = head.index("--distributed-executor-backend")
    assert head[at:at + len(want)] == [w.replace("%d", "0") for w in want] and "--headless" not in head
    assert other[at:at + len(want) + 1] == [w.replace("%d", "1") for w in want] + ["--headless"]
    assert "ray" not in head
    with pytest.raises(SpecError, match="launcher is 'slurm': expected auto, ray or native"):
        engine_command(dict(CMD, launcher="slurm"))
    # SGLang's ranks are its own either way (over `ray`, a Ray cluster runs beside them)
    assert engine_command(dict(CMD, engine="sglang", launcher="ray")) == engine_command(
        dict(CMD, engine="sglang", launcher="native"))


def test_a_native_vllm_rank_has_no_ray_in_its_container_and_drives_nccl_itself():
    native = dict(copy.deepcopy(ENGINE), launcher="native", **SGLANG_RDMA)
    del native["ray_address"]  # no Ray cluster to name
    spec = engine_container(native)
    assert "pid_mode" not in spec
    assert spec["env"] == {"VLLM_HOST_IP": "192.168.100.10"}  # no RAY_ADDRESS, no Ray token
    assert all("/tmp/ray" != m["target"] and "ray-token" not in m["target"] for m in spec["mounts"])
    for key in SGLANG_RDMA:
        assert spec[key] == SGLANG_RDMA[key], key
    over_ray = engine_container(copy.deepcopy(ENGINE))
    assert over_ray["env"]["RAY_ADDRESS"] == "192.168.100.10:6379" and over_ray["pid_mode"]


def test_sglang_without_ray_gets_its_fabric_address_and_nothing_of_ray():
    """SGLang's own ranks with no Ray containers (its stock image has no Ray): its ZeroMQ sockets bind
    SGLANG_HOST_IP (the fabric address); no Ray address, token or session directory. Beside a Ray
    cluster (launcher ray) it keeps Ray's settings, and never shares the Ray head's PID namespace."""
    alone = dict(copy.deepcopy(ENGINE), engine="sglang", launcher="native", **SGLANG_RDMA)
    del alone["ray_address"]
    spec = engine_container(alone)
    assert spec["env"] == {"SGLANG_HOST_IP": "192.168.100.10"}
    assert all("/tmp/ray" != m["target"] and "ray-token" not in m["target"] for m in spec["mounts"])
    assert "pid_mode" not in spec and spec["privileged"] == SGLANG_RDMA["privileged"]
    beside = engine_container(dict(copy.deepcopy(ENGINE), engine="sglang", launcher="ray", **SGLANG_RDMA))
    assert beside["env"]["SGLANG_HOST_IP"] == "192.168.100.10"
    assert beside["env"]["RAY_ADDRESS"] == "192.168.100.10:6379" and "pid_mode" not in beside
