"""Verify the lab deploy with testinfra over the ansible backend."""
import json


def test_host_is_who_the_inventory_says(host):
    name = host.ansible.get_variables()["inventory_hostname"]
    assert host.check_output("hostname") == name


def test_fabric_interface_has_the_fabric_address(host):
    variables = host.ansible.get_variables()
    iface = host.interface("enp1s0f1np1")
    assert iface.exists
    assert variables["fabric_address"] in iface.addresses
    assert host.file("/sys/class/net/enp1s0f1np1/mtu").content_string.strip() == "9000"


def test_docker_can_give_containers_a_gpu(host):
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert info["ServerVersion"]
    assert "nvidia" in info["Runtimes"]


def test_gpu_is_the_labelled_standin_with_gb10_formats(host):
    assert host.file("/etc/sparkops-lab-standin").exists
    out = host.check_output("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader")
    name, total, dummy = [v.strip() for v in out.split(",")]
    assert name == "NVIDIA GB10"
    assert total == "[N/A]"


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
