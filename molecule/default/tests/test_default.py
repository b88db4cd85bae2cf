"""Verify the lab deploy with testinfra over the ansible backend."""
import json


def test_the_deploy_recorded_what_it_left_here(host):
    """The record drift.yml and the next run's re-run check compare with: every container of ours
    that runs here, the env file every container reads (its digest), and the deploy's choice - one
    of the candidates, over Ray."""
    record = json.loads(host.file("/var/lib/sparkops/deployed.json").content_string)
    running = set(host.check_output("docker ps --format '{{.Names}}'").split())
    recorded = {name for name, c in record["containers"].items() if c and c["status"] == "running"}
    assert recorded == running
    env = host.file("/etc/sparkops/fabric.env")
    assert record["files"]["/etc/sparkops/fabric.env"]["sha256"] == "sha256:" + env.sha256sum
    deployed = record["deployed"]
    assert deployed["image"] in host.ansible.get_variables()["sparkops_engine_candidates"]
    assert deployed["with_ray"] is True and deployed["launcher"] == "ray"


def test_the_containers_read_the_env_file_the_deploy_wrote(host):
    """Each container of ours carries the hash of the env file it was started with: the file
    on the host now (a changed file recreates them)."""
    env = host.file("/etc/sparkops/fabric.env").sha256sum
    for name in host.check_output("docker ps --format '{{.Names}}'").split():
        labels = json.loads(host.check_output("docker inspect -f '{{json .Config.Labels}}' %s" % name))
        assert labels.get("sparkops.env-sha256") == env, name


def test_only_ours_run_and_the_old_model_is_stopped(host):
    running = sorted(host.check_output("docker ps --format '{{.Names}}'").split())
    head = host.ansible.get_variables()["inventory_hostname"] == "spark1"
    role = "sparkops-ray-head" if head else "sparkops-ray-worker"
    ours = sorted([role] + (["sparkops-model-server"] if head else []))  # vLLM: the engine on the head
    assert running == ours
    every = sorted(host.check_output("docker ps -a --format '{{.Names}}'").split())
    assert every == sorted(ours + ["old-vllm", "embeddings-embed-1"])  # stopped, never removed
    info = json.loads(host.check_output("docker inspect %s" % role))[0]
    assert info["State"]["Running"] and info["RestartCount"] == 0
    # back by itself after a reboot (sparkops_serve_after_reboot), and no restart loop since it started
    assert info["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"


def test_record_of_what_was_stopped(host):
    record = json.loads(host.file("/var/lib/sparkops/gpu_memory_stopped.json").content_string)
    assert [(e["kind"], e["name"], e["gpu_mib"]) for e in record["stopped"]] == [
        ("container", "old-vllm", 40960), ("container", "embeddings-embed-1", 2048)]


def test_ray_containers_use_token_auth(host):
    name = sorted(host.check_output("docker ps --format '{{.Names}}'").split())[0]
    assert host.check_output("docker exec %s printenv RAY_AUTH_MODE" % name) == "token"


def test_token_file_is_root_only(host):
    f = host.file("/etc/sparkops/ray-token")
    assert f.mode == 0o600 and f.user == "root"


def test_fabric_environment_file(host):
    fabric = host.ansible.get_variables()["fabric_address"]
    env = dict(line.split("=", 1) for line in host.file("/etc/sparkops/fabric.env").content_string.splitlines()
               if "=" in line and not line.startswith("#"))
    assert env["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1" and env["NCCL_IB_DISABLE"] == "1"
    assert env["VLLM_HOST_IP"] == env["RAY_NODE_IP_ADDRESS"] == fabric
