"""Nothing lost: a deploy that fails after it stopped the old services, or that was killed after
the stop, ends with the old services running again, from each host's record on disk."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, LAB, ROOT, playbook, run, ssh

HOSTS = ("10.77.0.11", "10.77.0.12")
OLD = {"old-vllm", "embeddings-embed-1"}
OURS = {"sparkops-ray-head", "sparkops-ray-worker", "sparkops-model-server"}
RECORD = "/var/lib/sparkops/gpu_memory_stopped.json"


def flat(text):
    return " ".join(text.split())


def running(ip):
    return set(ssh(ip, "docker ps --format '{{.Names}}'").out.split())


def recorded(ip):
    out = ssh(ip, "cat %s 2>/dev/null || echo '{\"stopped\": []}'" % RECORD).out
    return [e["name"] for e in json.loads(out)["stopped"]]


@pytest.fixture
def old_model_only(lab):
    """The old model runs, nothing of ours does, no record is left."""
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    for ip in HOSTS:
        ssh(ip, "rm -f %s" % RECORD)
    res = run(LAB + ["old-model"])
    assert res.returncode == 0, res.out
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


def test_memory_still_short_after_the_stop_rolls_back(old_model_only):
    """gpu_memory stops the old services, then fails waiting for memory that never frees: its
    facts are dropped with the failed task, the record on disk is not."""
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e",
                   json.dumps({"gpu_memory_free_fraction": 0.999, "gpu_memory_wait_timeout": 2}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "fatal: [spark1]: FAILED!" in out and "fatal: [spark2]: FAILED!" in out
    assert "wait until enough is free on spark1, spark2: only" in out and "after 2 s, waiting for" in out
    # started again in the reverse of the order they were stopped in
    assert "Rolled back: the engine and Ray containers were removed and what the deploy had stopped " \
           "was started again (embeddings-embed-1, old-vllm)" in out
    assert "Nothing was rolled back" not in out
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS
        assert recorded(ip) == []  # restored: the record was put aside


def kill_after_the_stop(extra=()):
    """Start a deploy, SIGKILL it (its whole process group) as soon as spark1's old model is down."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "deploy.yml", "-i", "inventories/lab"]
                            + list(extra), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if "old-vllm" not in running(HOSTS[0]):
                break
            time.sleep(0.3)
        assert proc.poll() is None, "the deploy ended before it stopped the old model"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(3)  # a module already running on a host finishes there
    assert "old-vllm" not in running(HOSTS[0]) and "old-vllm" in recorded(HOSTS[0])


def test_a_deploy_killed_after_the_stop_is_recovered_by_the_next_one_that_fails(old_model_only):
    kill_after_the_stop()
    # the next deploy fails before it stops anything (no candidate fits): nothing of ours serves,
    # so it starts again what the killed run had stopped
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps({
        "sparkops_engine_candidates": ["10.77.0.5:5000/sparkops/lab-vllm:0.14.0"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "No candidate image can serve" in out
    assert "An earlier deploy had stopped them and was interrupted; nothing of ours was serving." in out
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


def test_a_deploy_killed_after_the_stop_is_recovered_by_teardown_restore(old_model_only):
    kill_after_the_stop()
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "sparkops_restore=true")
    assert res.returncode == 0, res.out[-3000:]
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


def test_a_failure_before_the_stop_leaves_a_serving_cluster_alone(lab):
    """The record lists what an earlier good deploy stopped, and the engine serves: a deploy that
    fails in engine_image touches nothing."""
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    before = [running(ip) for ip in HOSTS]
    assert "sparkops-model-server" in before[0] and "old-vllm" in recorded(HOSTS[0])
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps({
        "sparkops_engine_candidates": ["10.77.0.5:5000/sparkops/lab-vllm:0.14.0"]}))
    assert res.returncode != 0
    assert "Nothing was rolled back: this run stopped no service." in flat(res.out)
    assert [running(ip) for ip in HOSTS] == before
