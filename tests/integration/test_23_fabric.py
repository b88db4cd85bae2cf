"""The fabric role on the lab: the sockets-only environment over enp1s0f1np1, and its faults.

What only a deploy shows (the env file reaches the Ray containers, a changed variable recreates
them) runs deploy.yml; the fabric's own checks and faults run the phase alone (`--tags fabric`:
preflight, the lock, the fabric phase and the rescue, not the image, memory, Ray and engine
phases around it), the cheapest run that shows what the operator reads."""
import pytest

from conftest import playbook, run, ssh

SPARK1, SPARK2 = "10.77.0.11", "10.77.0.12"


def deploy(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra)


def fabric_phase(*extra):
    """The fabric phase alone, as an operator runs it: deploy.yml --tags fabric."""
    return playbook("deploy.yml", "-i", "inventories/lab", "--tags", "fabric", *extra)


def in_spark2(*argv):
    return run(["ip", "netns", "exec", "spark2"] + list(argv))


def in_spark1(*argv):
    return run(["ip", "netns", "exec", "spark1"] + list(argv))


def running(ip):
    return sorted(ssh(ip, "docker ps --no-trunc --format '{{.ID}} {{.Names}}'").out.split("\n"))


def env_file(ip):
    text = ssh(ip, "cat /etc/sparkops/fabric.env").out
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def test_environment_file_on_every_host(lab):
    res = fabric_phase()  # the fabric phase itself, whatever the lab serves
    assert res.returncode == 0, res.out[-3000:]
    flat = " ".join(res.out.split())  # the callback wraps long messages
    assert "spark1: enp1s0f1np1 192.168.77.11/24 MTU 9000, no RDMA: sockets only, 1 peer(s) reached" in flat
    for ip, fabric in ((SPARK1, "192.168.77.11"), (SPARK2, "192.168.77.12")):
        env = env_file(ip)
        assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "enp1s0f1np1"
        assert env["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in env
        assert env["VLLM_HOST_IP"] == env["SGLANG_HOST_IP"] == env["RAY_NODE_IP_ADDRESS"] == fabric
        assert env["MASTER_ADDR"] == "192.168.77.11"


def test_ray_containers_carry_the_environment(lab):
    res = deploy()  # serving (a re-run with nothing to change where the lab serves already)
    assert res.returncode == 0, res.out[-3000:]
    out = ssh(SPARK2, "docker exec sparkops-ray-worker printenv NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME").out
    assert out.split() == ["enp1s0f1np1", "enp1s0f1np1"]


def test_extra_variable_changes_the_file_and_recreates_ray(lab):
    before = ssh(SPARK2, "docker inspect -f '{{.State.StartedAt}}' sparkops-ray-worker").out
    res = deploy("-e", '{"fabric_env_extra": {"NCCL_DEBUG": "INFO"}}')
    assert res.returncode == 0, res.out[-3000:]
    assert env_file(SPARK2)["NCCL_DEBUG"] == "INFO"
    assert ssh(SPARK2, "docker exec sparkops-ray-worker printenv NCCL_DEBUG").out.strip() == "INFO"
    assert ssh(SPARK2, "docker inspect -f '{{.State.StartedAt}}' sparkops-ray-worker").out != before
    # without it again, the file loses it (the phase that writes the file: the Ray containers follow the
    # file at the next deploy's Ray phase, as above - this file's next deploy, the gloo preflight's)
    res = fabric_phase()
    assert res.returncode == 0, res.out[-3000:]
    assert "NCCL_DEBUG" not in env_file(SPARK2)


def test_unreachable_peer_is_named_as_a_pair(lab):
    assert in_spark2("iptables", "-w", "-I", "INPUT", "-s", "192.168.77.11", "-j", "DROP").returncode == 0
    try:
        res = fabric_phase("-e", "fabric_peer_timeout=1")
    finally:
        in_spark2("iptables", "-w", "-D", "INPUT", "-s", "192.168.77.11", "-j", "DROP")
    assert res.returncode != 0
    assert "spark1 cannot reach spark2 over the fabric (192.168.77.12: timed out)" in " ".join(res.out.split())


@pytest.mark.fault(
    fault="the head drops the port where native engine ranks meet (a host firewall) for a worker",
    inject="iptables on spark1: -p tcp --dport 29501 -s 192.168.77.12 -j DROP; the fabric phase of a native launch",
    message="'spark2 (enp1s0f1np1, 192.168.77.12) cannot reach spark1 at 192.168.77.11:29501, where the engine's "
            "ranks meet (vllm, no Ray): timed out. Let port 29501 through on spark1 from the cluster's hosts'",
    left="every container that ran before still runs, none added (the phase alone: no image, memory, Ray or engine "
         "phase); without the rule the same phase passes and names the port it reached")
def test_a_rank_that_cannot_reach_where_the_ranks_meet_is_named(lab):
    """A launch without Ray: every rank dials the head's master port (vLLM's 29501) over the fabric; a
    DistStoreError on a real pair when it cannot. The fabric phase dials it from each worker first."""
    rule = ["-p", "tcp", "--dport", "29501", "-s", "192.168.77.12", "-j", "DROP"]
    before = dict((ip, running(ip)) for ip in (SPARK1, SPARK2))
    assert in_spark1("iptables", "-w", "-I", "INPUT", *rule).returncode == 0
    try:
        res = fabric_phase("-e", "fabric_peer_timeout=1", "-e", "sparkops_launcher=native")
    finally:
        in_spark1("iptables", "-w", "-D", "INPUT", *rule)
    out = " ".join(res.out.split())
    assert res.returncode != 0, out[-3000:]
    assert ("spark2 (enp1s0f1np1, 192.168.77.12) cannot reach spark1 at 192.168.77.11:29501, where the engine's "
            "ranks meet (vllm, no Ray): timed out. Let port 29501 through on spark1 from the cluster's hosts") in out
    assert "cannot reach spark2" not in out and "over the fabric (" not in out  # port 22 was let through
    assert dict((ip, running(ip)) for ip in (SPARK1, SPARK2)) == before
    res = fabric_phase("-e", "sparkops_launcher=native")
    out = " ".join(res.out.split())
    assert res.returncode == 0, out[-3000:]
    assert ("spark2: enp1s0f1np1 192.168.77.12/24 MTU 9000, no RDMA: sockets only, 1 peer(s) reached, and the head "
            "at 192.168.77.11:29501 where the engine ranks meet") in out


def test_fabric_link_down_is_named_with_the_pairs_it_cuts(lab):
    assert in_spark2("ip", "link", "set", "enp1s0f1np1", "down").returncode == 0
    try:
        res = fabric_phase("-e", "fabric_peer_timeout=1")
    finally:
        in_spark2("ip", "link", "set", "enp1s0f1np1", "up")
    assert res.returncode != 0
    flat = " ".join(res.out.split())
    assert "spark2: the fabric interface enp1s0f1np1 is down" in flat
    assert "spark1 cannot reach spark2 over the fabric (192.168.77.12: timed out)" in flat


def test_mtu_mismatch_is_named(lab):
    assert in_spark2("ip", "link", "set", "enp1s0f1np1", "mtu", "1500").returncode == 0
    try:
        res = fabric_phase()
    finally:
        in_spark2("ip", "link", "set", "enp1s0f1np1", "mtu", "9000")
    assert res.returncode != 0
    assert "the fabric MTUs differ: spark1 enp1s0f1np1 MTU 9000, spark2 enp1s0f1np1 MTU 1500" in " ".join(res.out.split())


def test_subnet_matching_no_interface(lab):
    res = fabric_phase("-e", '{"fabric_address": null, "sparkops_fabric_subnet": "192.168.99.0/24"}')
    assert res.returncode != 0
    assert "no interface on this host has an address in fabric_subnet 192.168.99.0/24" in " ".join(res.out.split())


def no_preflight_container_left():
    for ip in (SPARK1, SPARK2):
        assert "sparkops-fabric-preflight" not in ssh(ip, "docker ps -a --format '{{.Names}}'").out


def test_gloo_preflight_over_the_fabric(lab):
    res = fabric_phase("-e", "fabric_preflight=true")
    assert res.returncode == 0, res.out[-3000:]
    flat = " ".join(res.out.split())
    for host in ("spark1", "spark2"):
        assert "%s: gloo all-reduce over gloo/tcp (enp1s0f1np1)" % host in flat
    no_preflight_container_left()


def test_preflight_that_hangs_times_out_and_leaves_nothing(lab):
    block = ["iptables", "-w", "-I", "OUTPUT", "-d", "192.168.77.11", "-p", "tcp", "--dport", "29511", "-j", "DROP"]
    assert in_spark2(*block).returncode == 0
    try:
        res = fabric_phase("-e", "fabric_preflight=true", "-e", "fabric_preflight_timeout=10")
    finally:
        in_spark2(*(["iptables", "-w", "-D"] + block[3:]))
    assert res.returncode != 0
    flat = " ".join(res.out.split())
    assert "the gloo all-reduce (rank 1 of 2, master 192.168.77.11:29511) did not finish within 10 s" in flat
    no_preflight_container_left()
