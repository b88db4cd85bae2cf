"""The lab and the deploy's preflight on it: real sshd, dockerd, ansible-core."""
import json
import os
import shutil

import pytest

from conftest import LAB, ROOT, playbook, run, ssh, still_serves, task_sections


def inventory(tmp_path, text):
    """An inventory in tmp_path with the lab's group_vars (connection, lab settings)."""
    inv = tmp_path / "inventory"
    shutil.copytree(os.path.join(ROOT, "inventories", "lab", "group_vars"), str(inv / "group_vars"))
    (inv / "hosts.yml").write_text(text)
    return str(inv)


def lab_state():
    res = run(LAB + ["status", "--json"])
    return json.loads(res.out)


def test_lab_hosts_run_sshd_and_dockerd(lab):
    state = lab_state()
    assert [h["name"] for h in state["hosts"]] == ["spark1", "spark2"]
    for h in state["hosts"]:
        assert h["running"] and h["sshd"] and h["docker"], h
    assert state["registry_up"]


def test_lab_up_twice_is_harmless(lab):
    before = {h["name"]: h for h in lab_state()["hosts"]}
    pids = {n: ssh(h["mgmt"], "cat /proc/1/stat").out.split()[21] for n, h in before.items()}
    res = run(LAB + ["up"])
    assert res.returncode == 0, res.out
    assert "all were already up" in res.out
    after = {n: ssh(h["mgmt"], "cat /proc/1/stat").out.split()[21] for n, h in before.items()}
    assert after == pids  # same PID 1 start time: nothing was restarted


def test_each_host_is_its_own_machine(lab):
    res = ssh("10.77.0.11", "hostname; cat /sys/class/net/enp1s0f1np1/mtu; ip -4 -o addr show enp1s0f1np1")
    lines = res.out.splitlines()
    assert lines[0] == "spark1"
    assert lines[1] == "9000"
    assert "192.168.77.11/24" in lines[2]
    # the fabric reaches the other host, and the registry image is there to pull
    assert ssh("10.77.0.11", "timeout 3 bash -c '</dev/tcp/192.168.77.12/22'").returncode == 0
    res = ssh("10.77.0.12", "curl -sf http://10.77.0.5:5000/v2/sparkops/lab-engine/tags/list")
    assert "ray-2.60.0" in res.out, res.out
    # root's shell start-up files are a fresh host's, not the controller's (whose ~/.bashrc may
    # run pyenv or conda in every ssh command): a command sees the plain PATH sshd gives root
    res = ssh("10.77.0.12", "echo $PATH; cmp /root/.bashrc /etc/skel/.bashrc && echo skeleton")
    assert res.out.splitlines() == ["/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "skeleton"], res.out


def test_deploy_on_the_lab_twice(lab, tmp_path):
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    assert "spark1 (head): NVIDIA GB10, unified memory" in res.out
    assert "spark2 (worker): NVIDIA GB10" in res.out
    res = playbook("deploy.yml", "-i", "inventories/lab", env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
    assert res.returncode == 0, res.out[-3000:]
    for host in ("spark1", "spark2"):
        assert [l for l in res.out.splitlines() if l.startswith(host) and "changed=0" in l and "failed=0" in l]
    # beside the report: the Prometheus targets of this cluster and the alert rules, as promtool reads them
    with open(str(tmp_path / "prometheus" / "sparkops-targets.json")) as f:
        targets = json.load(f)
    assert targets == [
        {"targets": ["10.77.0.11:8000"], "labels": {"sparkops_cluster": "spark1", "sparkops_role": "engine",
                                                    "sparkops_engine": "vllm", "sparkops_model": "qwen3.5-lab"}},
        {"targets": ["10.77.0.11:9100", "10.77.0.12:9100"], "labels": {"sparkops_cluster": "spark1",
                                                                       "sparkops_role": "node"}}]
    from test_90_static import PROMTOOL  # pylint: disable=import-outside-toplevel
    check = run([PROMTOOL, "check", "rules", str(tmp_path / "prometheus" / "sparkops-alerts.yml")])
    assert check.returncode == 0 and "SUCCESS: 3 rules found" in check.out, check.out


def task_section(out, title):
    """What the play printed under the task whose title holds `title` (its results and diffs)."""
    parts = task_sections(out, title)
    assert parts, "no task %r ran" % title
    return "\n".join(banner + "\n" + results for banner, results in parts)


def containers(ip):
    return sorted(ssh(ip, "docker ps --no-trunc --format '{{.ID}} {{.Names}}'").out.split("\n"))


def test_check_diff_shows_each_host_what_would_change_and_writes_nothing(lab, tmp_path):
    """On a serving cluster, a changed fabric variable under --check --diff: each host's env file
    diff, the Ray containers and the engine that would be recreated; afterwards nothing differs and
    no report was written (a dry run's; latest.json stays the last real deploy's). This check-mode
    run is the suite's one: a plain --check of the same cluster proved only the last two."""
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    before = {ip: containers(ip) for ip in ("10.77.0.11", "10.77.0.12")}
    env_before = {ip: ssh(ip, "cat /etc/sparkops/fabric.env").out for ip in before}
    res = playbook("deploy.yml", "-i", "inventories/lab", "--check", "--diff", "-e",
                   json.dumps({"fabric_env_extra": {"SPARKOPS_DIFF_CANARY": "1"}}),
                   env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
    assert res.returncode == 0, res.out[-3000:]
    env_file = task_section(res.out, "Write the environment file every container reads")
    assert "changed: [spark1]" in env_file and "changed: [spark2]" in env_file, env_file
    assert env_file.count("+SPARKOPS_DIFF_CANARY=1") == 2, env_file
    assert env_file.count("--- before: /etc/sparkops/fabric.env") == 2, env_file
    ray = task_section(res.out, "Start the Ray head and the Ray workers")
    assert "changed: [spark1]" in ray and "changed: [spark2]" in ray, ray
    assert "sparkops.env-sha256" in ray, ray  # docker_container's diff: the env file's hash label
    engine = task_section(res.out, "ray_cluster : Keep what serves")
    assert "changed: [spark1]" in engine, engine  # the engine would be kept aside, then replaced
    # nothing was written: env files, containers and the report directory as they were
    assert list(tmp_path.iterdir()) == []
    for ip in before:
        assert ssh(ip, "cat /etc/sparkops/fabric.env").out == env_before[ip]
        assert containers(ip) == before[ip]
    assert still_serves()


LAB_HOSTS = """
llm_cluster:
  children:
    llm_head:
      hosts:
%s
    llm_workers:
      hosts:
%s
"""
SPARK1 = "        spark1: {ansible_host: 10.77.0.11, fabric_address: 192.168.77.11}"
SPARK2 = "        spark2: {ansible_host: 10.77.0.12, fabric_address: 192.168.77.12}"


def test_two_heads_fail_before_touching_a_host(lab, tmp_path):
    inv = inventory(tmp_path, LAB_HOSTS % (SPARK1 + "\n" + SPARK2, "        {}"))
    res = playbook("deploy.yml", "-i", inv)
    assert res.returncode != 0
    assert "inventory group 'llm_head' has 2 hosts (spark1, spark2): expected exactly one head" in res.out
    assert "Check this host's prerequisites" not in res.out


def test_no_head_fails_clearly(lab, tmp_path):
    inv = inventory(tmp_path, "llm_cluster:\n  children:\n    llm_workers:\n      hosts:\n%s\n%s\n"
                    % (SPARK1, SPARK2))
    res = playbook("deploy.yml", "-i", inv)
    assert res.returncode != 0
    assert "inventory group 'llm_head' is missing or empty" in res.out


def test_bad_fabric_address_and_missing_model_are_reported_together(lab, tmp_path):
    inv = inventory(tmp_path, LAB_HOSTS % (SPARK1, "        spark2: {ansible_host: 10.77.0.12, fabric_address: 192.168.77.300}"))
    res = playbook("deploy.yml", "-i", inv, "-e", "sparkops_model_path=''")
    assert res.returncode != 0
    assert "found 2 problems" in res.out
    assert "fabric_address '192.168.77.300' is not an IP address" in res.out
    assert "sparkops_model_path is not set" in res.out


def test_unreachable_host_stops_the_deploy(lab, tmp_path):
    inv = inventory(tmp_path, LAB_HOSTS % (SPARK1, SPARK2 + "\n        ghost: {ansible_host: 10.77.0.99, fabric_address: 192.168.77.99}"))
    res = playbook("deploy.yml", "-i", inv, "-e", "ansible_ssh_common_args='-o ConnectTimeout=3 -o UserKnownHostsFile=/var/lib/sparkops-lab/ssh/known_hosts'")
    assert res.returncode != 0
    assert "UNREACHABLE" in res.out and "ghost" in res.out
    assert "fatal: [ghost]: UNREACHABLE" in res.out
    # ansible's own words, one of two: whether ssh gave up before or while the pipelined module was
    # written to it is a race ("Data could not be sent ... Make sure this host can be reached over
    # ssh" or "Failed to connect to the host via ssh: ... 10.77.0.99 ...")
    assert ("Make sure this host can be reached over ssh" in res.out
            or "Failed to connect to the host via ssh" in res.out), res.out[-3000:]
    # the others stop too: no task after the check that every host answered runs
    assert "Report what each host has" not in res.out and "cluster's lock" not in res.out


def test_nvidia_smi_printing_garbage_fails_clearly(lab):
    assert ssh("10.77.0.12", "printf '#!/bin/sh\\necho Segmentation fault\\n' > /tmp/bad-smi && chmod +x /tmp/bad-smi").returncode == 0
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", "preflight_nvidia_smi_path=/tmp/bad-smi")
    assert res.returncode != 0
    assert "expected nvidia-smi's XML report" in res.out and "Segmentation fault" in res.out


def test_nvidia_smi_absent_fails_clearly(lab):
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", "preflight_nvidia_smi_path=/opt/none/nvidia-smi")
    assert res.returncode != 0
    assert "nvidia_smi_path /opt/none/nvidia-smi is not an executable file" in res.out


@pytest.fixture
def old_model(lab):
    """A container holding (stand-in) GPU memory on spark2, like the old model."""
    image = "10.77.0.5:5000/sparkops/lab-engine:ray-2.60.0"
    res = ssh("10.77.0.12", "docker run -d --name old-model -e SPARKOPS_LAB_GPU_MIB=30720 %s sleep infinity" % image)
    assert res.returncode == 0, res.out
    yield "old-model"
    ssh("10.77.0.12", "docker rm -f old-model")


def test_status_shows_gpu_processes_and_their_container(old_model):
    res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    # the table's rows (the first ones of each host: the sections below it list hosts too)
    rows = {}
    for l in res.out.splitlines():
        if l.strip().startswith(("spark1", "spark2")) and "ok=" not in l:
            rows.setdefault(l.split()[0], l)
    assert "NVIDIA GB10" in rows["spark1"] and "unified" in rows["spark1"]
    assert "30720" in rows["spark2"]
    assert "sleep" in res.out and "container old-model" in res.out
    assert "2 node(s) alive, 2.0 GPU(s)" in res.out and "ready" in res.out
