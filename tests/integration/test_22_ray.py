"""The ray_cluster role on the lab: a real Ray 2.60 cluster across the simulated Sparks."""
import json
import pathlib
import shutil
import tempfile
import time

import pytest

from conftest import playbook, run, ssh, task_sections

SPARK1, SPARK2 = "10.77.0.11", "10.77.0.12"
IMAGE = "10.77.0.5:5000/sparkops/lab-engine:ray-2.60.0"


SELECTED = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"  # what the lab's deploy selects


def deploy(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra)


def ray(*extra):
    """The Ray step alone (playbooks/ray.yml) with the image the deploy selected: the same
    container spec as the deploy's, in a third of its time."""
    return playbook("playbooks/ray.yml", "-i", "inventories/lab", "-e", "ray_cluster_image=" + SELECTED, *extra)


def started_at(host_ip, name):
    return ssh(host_ip, "docker inspect -f '{{.State.StartedAt}}' %s" % name).out.strip()


def ray_status(settle=True):
    """`ray status` on the head. Its autoscaler report lags the GCS node table the role waits
    on by a few seconds after a change ('No cluster status', a removed node still counted):
    with settle, ask again (up to 20 s) until it shows one node per host and their 2 GPUs."""
    deadline = time.time() + 20
    while True:
        res = ssh(SPARK1, "docker exec sparkops-ray-head ray status")
        settled = res.out.count(" node_") == 2 and "/2.0 GPU" in res.out
        if not settle or settled or time.time() > deadline:
            break
        time.sleep(0.5)
    assert res.returncode == 0, res.out
    return res.out


@pytest.fixture(scope="module")
def cluster(lab):
    res = deploy("-v")  # at -v: test_token_never_printed reads it
    assert res.returncode == 0, res.out[-3000:]
    return res


def ran(out, task):
    """Whether the task whose banner holds `task` ran on some host (ok or changed under its banner; the first
    such banner only)."""
    sections = task_sections(out, task)
    return bool(sections) and any(line.startswith(("ok: [", "changed: [")) for line in sections[0][1].splitlines())


def test_cluster_spans_both_hosts_with_their_gpus(cluster):
    out = ray_status()
    assert out.count(" node_") == 2
    assert "/2.0 GPU" in out
    # the engine's driver connected (its rank is a Ray actor) and Ray started no idle workers ahead
    # of it (RAY_prestart_worker_first_driver=0: one per core otherwise - a Spark's memory)
    procs = [l.split(None, 1)[-1] for l in ssh(SPARK1, "docker top sparkops-ray-head -eo pid,args").out.splitlines()]
    actors = [p for p in procs if p.startswith("ray::") and p.split()[0] not in
              ("ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent")]
    assert actors and not [p for p in procs if p.startswith("ray::IDLE")], procs


def test_nodes_advertise_their_fabric_addresses(cluster):
    res = ssh(SPARK1, "docker exec sparkops-ray-head python3 -c \"import ray; ray.init(address='auto', "
                      "logging_level='ERROR'); print(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']))\"")
    assert "['192.168.77.11', '192.168.77.12']" in res.out, res.out


def test_token_file_is_root_only(cluster):
    for host in (SPARK1, SPARK2):
        assert ssh(host, "stat -c '%a %U' /etc/sparkops/ray-token").out.strip() == "600 root"


def lab_token():
    with open("/var/lib/sparkops-lab/ray-token") as f:
        token = f.read().strip()
    assert len(token) == 48
    return token


def test_token_never_printed(cluster):
    """Nor at -v: a deploy's every phase (the token read back from the head and written on each host),
    here; the Ray containers recreated with it, in test_ray_runs_whatever_the_images_entrypoint."""
    token = lab_token()
    res = cluster
    # the file's first deploy, when it went through the Ray phase (it does after the file before it in
    # this lane, which leaves no cluster); else (this file alone on a lab left serving) a full pass
    if not (ran(res.out, "sparkops.inference.ray_cluster : Read the cluster's Ray token back from the head") and
            ran(res.out, "sparkops.inference.ray_cluster : Keep the token root-only on each host")):
        res = deploy("-v", "-e", "deploy_fast_rerun=false")
        assert res.returncode == 0, res.out[-3000:]
    assert ran(res.out, "sparkops.inference.ray_cluster : Read the cluster's Ray token back from the head")
    assert token not in res.out


def test_client_without_token_is_refused(cluster):
    res = ssh(SPARK2, "docker run --rm --network host %s ray status --address 192.168.77.11:6379" % IMAGE)
    assert res.returncode != 0
    assert "Authentication token is missing or incorrect" in res.out


def test_client_with_wrong_token_is_refused(cluster):
    res = ssh(SPARK2, "docker run --rm --network host -e RAY_AUTH_MODE=token -e RAY_AUTH_TOKEN=not-the-token "
                      "%s ray status --address 192.168.77.11:6379" % IMAGE)
    assert res.returncode != 0
    assert "InvalidAuthToken" in res.out


def test_rerun_changes_and_restarts_nothing(cluster):
    before = (started_at(SPARK1, "sparkops-ray-head"), started_at(SPARK2, "sparkops-ray-worker"))
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    recap = [l for l in res.out.splitlines() if l.startswith("spark")]
    assert len(recap) == 2 and all("changed=0" in l for l in recap), recap
    assert (started_at(SPARK1, "sparkops-ray-head"), started_at(SPARK2, "sparkops-ray-worker")) == before
    assert ray_status().count(" node_") == 2


def test_a_controller_with_a_fresh_home_changes_nothing(cluster):
    """An execution environment (AWX, ansible-navigator) throws the controller's home away after
    each job: the token is read back from the head, so the next job changes nothing and
    recreates no container, and writes no token file of its own. (A short home, as an EE's
    /home/runner: ssh's ControlPath under it must fit a Unix socket's 108 bytes.)"""
    before = (started_at(SPARK1, "sparkops-ray-head"), started_at(SPARK2, "sparkops-ray-worker"),
              started_at(SPARK1, "sparkops-model-server"))
    home = pathlib.Path(tempfile.mkdtemp(prefix="eehome-", dir="/tmp"))
    try:
        controller_file = home / ".sparkops" / "ray-token"
        res = playbook("deploy.yml", "-i", "inventories/lab", "-e",
                       "ray_cluster_token_controller_file=%s" % controller_file,
                       env={"HOME": str(home), "SPARKOPS_REPORT_DIR": str(home / "reports")})
        assert res.returncode == 0, res.out[-3000:]
        recap = [l for l in res.out.splitlines() if l.startswith("spark")]
        assert len(recap) == 2 and all("changed=0" in l for l in recap), recap
        assert (started_at(SPARK1, "sparkops-ray-head"), started_at(SPARK2, "sparkops-ray-worker"),
                started_at(SPARK1, "sparkops-model-server")) == before
        assert not controller_file.exists()
    finally:
        shutil.rmtree(str(home), ignore_errors=True)


def test_ray_runs_whatever_the_images_entrypoint(cluster):
    """The selected image has vLLM's official ENTRYPOINT ["vllm", "serve"] (as on real hosts):
    the Ray containers set their own, so `ray start` is not handed to `vllm serve` as arguments;
    the ray.yml run with an NGC-style image (a banner script that execs its arguments) too. (After
    the re-runs that change nothing: it recreates the Ray cluster under the engine.)"""
    def entrypoint(fmt, name):
        return json.loads(ssh(SPARK1, "docker %s inspect -f '{{json .Config.Entrypoint}}' %s" % (fmt, name)).out)
    assert entrypoint("image", SELECTED) == ["vllm", "serve"]
    assert entrypoint("container", "sparkops-ray-head") == ["ray", "start"]
    ngc = "10.77.0.5:5000/sparkops/lab-vllm:0.14.0"
    res = playbook("playbooks/ray.yml", "-i", "inventories/lab", "-v", "-e", "ray_cluster_image=" + ngc)
    try:
        assert res.returncode == 0, res.out[-3000:]
        assert lab_token() not in res.out  # the Ray containers recreated with the token, at -v
        assert entrypoint("image", ngc) == ["/opt/nvidia/nvidia_entrypoint.sh"]
        assert entrypoint("container", "sparkops-ray-head") == ["ray", "start"]
        assert ray_status().count(" node_") == 2
    finally:
        assert ray().returncode == 0  # back to the selected image for the tests after this one


def test_removed_worker_rejoins_once(cluster):
    head_before = started_at(SPARK1, "sparkops-ray-head")
    assert ssh(SPARK2, "docker rm -f sparkops-ray-worker").returncode == 0
    res = ray()
    assert res.returncode == 0, res.out[-3000:]
    assert started_at(SPARK1, "sparkops-ray-head") == head_before  # the head was not restarted
    out = ray_status()
    assert out.count(" node_") == 2 and "/2.0 GPU" in out


def test_stopped_containers_after_a_reboot_come_back(cluster):
    for host, name in ((SPARK1, "sparkops-ray-head"), (SPARK2, "sparkops-ray-worker")):
        assert ssh(host, "docker stop -t 1 %s" % name).returncode == 0
    res = ray()
    assert res.returncode == 0, res.out[-3000:]
    out = ray_status()
    assert out.count(" node_") == 2 and "/2.0 GPU" in out


def test_changed_setting_recreates_head_and_workers(cluster):
    res = ray("-e", json.dumps({"ray_cluster_env": {"SPARKOPS_TEST_SETTING": "1"}}))
    assert res.returncode == 0, res.out[-3000:]
    env = ssh(SPARK2, "docker inspect -f '{{json .Config.Env}}' sparkops-ray-worker").out
    assert "SPARKOPS_TEST_SETTING=1" in env
    assert ray_status().count(" node_") == 2
    res = ray()  # back to the inventory's settings
    assert res.returncode == 0, res.out[-3000:]
    assert "SPARKOPS_TEST_SETTING" not in ssh(SPARK2, "docker inspect -f '{{json .Config.Env}}' sparkops-ray-worker").out


@pytest.fixture
def hand_run_worker(cluster):
    """A second worker started by hand on spark2, as the hand-run recipe does."""
    res = ssh(SPARK2, "docker run -d --name hand-worker --network host -e RAY_AUTH_MODE=token "
                      "-e RAY_AUTH_TOKEN_PATH=/t -v /etc/sparkops/ray-token:/t:ro %s ray start --block "
                      "--address 192.168.77.11:6379 --node-ip-address 192.168.77.12 --num-gpus 1" % IMAGE)
    assert res.returncode == 0, res.out
    yield "hand-worker"
    ssh(SPARK2, "docker rm -f hand-worker")


def test_stale_ray_container_stops_the_deploy_when_asked(hand_run_worker):
    res = ray("-e", "ray_cluster_stale_containers=fail")
    assert res.returncode != 0
    assert "spark2 runs Ray containers this role did not start: hand-worker" in res.out


def test_stale_ray_container_is_removed_when_asked(hand_run_worker):
    res = ray("-e", "ray_cluster_stale_containers=remove")
    assert res.returncode == 0, res.out[-3000:]
    assert "hand-worker" not in ssh(SPARK2, "docker ps -a --format '{{.Names}}'").out
    # its node is gone from the cluster once the GCS sees it dead: one node per host again
    out = ray_status()
    assert out.count(" node_") == 2 and "/2.0 GPU" in out


@pytest.mark.fault(
    fault='the Ray image has no Ray',
    inject='ray.yml with ray_cluster_image a plain Debian image',
    message="'image ... has no usable Ray'",
    left='the running Ray head untouched (same start time)')
def test_image_without_ray_fails_before_touching_the_cluster(cluster):
    head_before = started_at(SPARK1, "sparkops-ray-head")
    res = ray("-e", "ray_cluster_image=10.77.0.5:5000/sparkops/lab-base:bookworm")
    assert res.returncode != 0
    assert "image 10.77.0.5:5000/sparkops/lab-base:bookworm has no usable Ray" in res.out
    assert started_at(SPARK1, "sparkops-ray-head") == head_before


def test_gcs_port_in_use_is_named(cluster):
    assert playbook("playbooks/teardown.yml", "-i", "inventories/lab").returncode == 0
    listener = ssh(SPARK1, "nohup python3 -m http.server 6379 --bind 192.168.77.11 >/dev/null 2>&1 & echo $!")
    pid = listener.out.strip()
    try:
        res = ray()
        assert res.returncode != 0
        assert "port 6379 on 192.168.77.11 is already in use by another process" in res.out
    finally:
        ssh(SPARK1, "kill %s" % pid)
    res = ray()
    assert res.returncode == 0, res.out[-3000:]


def test_worker_that_cannot_reach_the_head_is_named(cluster):
    # the fabric itself works (the fabric role checks that first); only the GCS port is cut
    block = ["iptables", "-w", "-I", "OUTPUT", "-d", "192.168.77.11", "-p", "tcp", "--dport", "6379", "-j", "DROP"]
    assert ssh(SPARK2, "docker rm -f sparkops-ray-worker").returncode == 0
    assert run(["ip", "netns", "exec", "spark2"] + block).returncode == 0
    try:
        res = ray("-e", "ray_cluster_ready_timeout=8")
    finally:
        run(["ip", "netns", "exec", "spark2", "iptables", "-w", "-D"] + block[3:])
    assert res.returncode != 0
    assert "the Ray cluster was not ready within 8 s" in res.out
    assert "Not joined: spark2 (192.168.77.12)" in res.out
    assert "Last log lines of spark2" in res.out and "Failed to connect to GCS" in res.out
    res = ray()  # with the port open again, a re-run brings the worker in
    assert res.returncode == 0, res.out[-3000:]
    assert ray_status().count(" node_") == 2


def listen_on_head(ports, seconds=120):
    """A process on spark1 that listens on each port (every address) for `seconds`: its PID."""
    return ssh(SPARK1, "nohup python3 -c 'import socket, time\nsocks = []\nfor p in %s:\n"
                       "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                       "    s.bind((\"0.0.0.0\", p)); s.listen(8); socks.append(s)\ntime.sleep(%d)' "
                       ">/dev/null 2>&1 & echo $!" % (tuple(ports), seconds)).out.strip()


def test_opt_in_firewall_admits_ray_ports_only_from_cluster_hosts(cluster):
    """Every port the collection opens (Ray's, the engine's, the transfer's, the preflight's; vLLM
    over Ray has no ranks' meeting port: test_31 shows a native launch's), IPv4 and IPv6, admitted only from loopback and the cluster hosts (fabric and
    management addresses); the engine's also from the listed clients; the jump kept first in
    INPUT; all of it removed by teardown."""
    import socket

    # the lab's hosts are namespaces on this machine: a handshake that is let through completes in
    # the kernel within milliseconds, however busy the machine; a dropped one waits out the timeout
    def reachable(address, port=6379):
        try:
            socket.create_connection((address, port), timeout=1).close()
            return True
        except OSError:
            return False

    def dropped(address, port):
        """Nothing answers at all (the chain drops it), where a closed port would refuse."""
        try:
            socket.create_connection((address, port), timeout=1).close()
            return False
        except socket.timeout:
            return True
        except OSError:
            return False

    def rules(cmd="iptables", chain="SPARKOPS-RAY"):
        return run(["ip", "netns", "exec", "spark1", cmd, "-w", "-S"] + ([chain] if chain else [])).out

    try:
        res = deploy("-e", "ray_cluster_firewall=true")
        assert res.returncode == 0, res.out[-3000:]
        v4 = rules()
        assert "-A SPARKOPS-RAY -s 192.168.77.12/32 -j RETURN" in v4 and "-A SPARKOPS-RAY -s 10.77.0.12/32 -j RETURN" in v4
        assert "-A SPARKOPS-RAY -i lo -j RETURN" in v4
        assert "--dports 6379:6385,8265,10001:10999,8000,29876,29511,29880 -j DROP" in v4
        v6 = rules("ip6tables")
        assert "-A SPARKOPS-RAY -i lo -j RETURN" in v6 and "--dports 6379:6385,8265,10001:10999,8000,29876,29511,29880 -j DROP" in v6
        assert [l for l in rules("ip6tables", None).splitlines() if l.startswith("-A INPUT")][0] == "-A INPUT -j SPARKOPS-RAY"
        # the controller (10.77.0.1) is no cluster host: dropped, on both of the head's addresses, Ray and engine
        assert not reachable("10.77.0.11") and not reachable("192.168.77.11") and not reachable("10.77.0.11", 8000)
        # a cluster host gets through over the fabric
        assert ssh(SPARK2, "timeout 3 bash -c '</dev/tcp/192.168.77.11/6379'").returncode == 0
        assert ray_status().count(" node_") == 2
        # the ports where nothing of ours listens between deploys: a listener on each on the head
        # shows the chain drops the controller (a timeout, not a refusal) and admits spark2
        ports = (8265, 10990, 29876, 29511, 29880)
        listener = listen_on_head(ports)
        try:
            time.sleep(1)
            for port in ports:
                assert dropped("10.77.0.11", port), port
                assert ssh(SPARK2, "timeout 3 bash -c '</dev/tcp/192.168.77.11/%d'" % port).returncode == 0, port
        finally:
            ssh(SPARK1, "kill %s" % listener)
        res = deploy("-e", "ray_cluster_firewall=true")  # nothing to change
        assert all("changed=0" in l for l in res.out.splitlines() if l.startswith("spark")), res.out[-2000:]
        # a rule put above the jump (by hand, by another tool) would decide first: the jump goes back on top
        assert run(["ip", "netns", "exec", "spark1", "iptables", "-w", "-I", "INPUT", "1", "-s", "203.0.113.9/32",
                    "-j", "ACCEPT"]).returncode == 0
        res = deploy("-e", json.dumps({"ray_cluster_firewall": True, "ray_cluster_firewall_engine_clients": ["10.77.0.1"]}))
        assert res.returncode == 0, res.out[-3000:]
        head = [l for l in rules(chain=None).splitlines() if l.startswith("-A INPUT")]
        assert head[:2] == ["-A INPUT -j SPARKOPS-RAY", "-A INPUT -s 203.0.113.9/32 -j ACCEPT"], head
        # a listed client reaches the engine, and nothing else
        assert reachable("10.77.0.11", 8000) and not reachable("10.77.0.11")
    finally:
        run(["ip", "netns", "exec", "spark1", "iptables", "-w", "-D", "INPUT", "-s", "203.0.113.9/32", "-j", "ACCEPT"])
        res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "ray_cluster_firewall=true")
    assert res.returncode == 0, res.out[-3000:]
    assert "SPARKOPS-RAY" not in rules(chain=None) and "SPARKOPS-RAY" not in rules("ip6tables", None)
    assert reachable("10.77.0.11") is False  # nothing listens now: refused, not dropped
    # a listener on Ray's and the engine's ports answers the controller
    # on both of the head's addresses: no rule is left to drop it (was: ray.yml again, ~10 s more)
    listener = listen_on_head((6379, 8000))
    try:
        time.sleep(1)
        assert all(reachable(address, port) for address in ("10.77.0.11", "192.168.77.11") for port in (6379, 8000))
    finally:
        ssh(SPARK1, "kill %s" % listener)
