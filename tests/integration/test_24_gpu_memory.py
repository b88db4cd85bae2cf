"""gpu_memory on the lab: the old model really stopped, recorded, memory freed, restored.

The phase runs alone (`deploy.yml --tags gpu_memory`: preflight, the lock, the memory phase, the
rescue), as an operator may run it: what it stops, records, waits for and refuses is the phase's
own, and no Ray or engine start is needed to show it. That a failure after the stop in a whole
deploy gives the services back is test_27_nothing_lost's."""
import json

import pytest

from conftest import LAB, playbook, run, ssh

HOSTS = ("10.77.0.11", "10.77.0.12")
RECORD = "/var/lib/sparkops/gpu_memory_stopped.json"


def running(host_ip):
    return sorted(ssh(host_ip, "docker ps --format '{{.Names}}'").out.split())


def memory_play(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", "--tags", "gpu_memory", *extra)


@pytest.fixture
def old_model(lab):
    """The old model running on both hosts, and no record from an earlier test."""
    for ip in HOSTS:
        ssh(ip, "rm -f %s %s.restored" % (RECORD, RECORD))
    res = run(LAB + ["old-model"])
    assert res.returncode == 0, res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))
    return res


def nvidia_smi_mib(ip):
    out = ssh(ip, "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits").out
    return sum(int(line.split(",")[1]) for line in out.splitlines() if line.strip())


def test_deploy_stops_records_frees_then_restore_brings_back(old_model):
    before = [nvidia_smi_mib(ip) for ip in HOSTS]
    assert before == [43008, 43008]
    res = memory_play()
    assert res.returncode == 0, res.out[-3000:]
    assert "stopped old-vllm, embeddings-embed-1 (43008 MiB of GPU memory)" in res.out
    for ip in HOSTS:
        assert "old-vllm" not in running(ip) and "embeddings-embed-1" not in running(ip)
        assert nvidia_smi_mib(ip) == 0  # the stand-in's count follows real processes
        record = json.loads(ssh(ip, "cat %s" % RECORD).out)
        assert [e["name"] for e in record["stopped"]] == ["old-vllm", "embeddings-embed-1"]
    # running again stops nothing and keeps the first record
    first = ssh(HOSTS[0], "cat %s" % RECORD).out
    res = memory_play()
    assert res.returncode == 0, res.out[-3000:]
    assert "stopped nothing (0 MiB of GPU memory)" in res.out
    assert ssh(HOSTS[0], "cat %s" % RECORD).out == first
    # teardown with restore: Ray gone, the old model back
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "sparkops_restore=true")
    assert res.returncode == 0, res.out[-3000:]
    for ip in HOSTS:
        assert running(ip) == ["embeddings-embed-1", "old-vllm"]
        assert nvidia_smi_mib(ip) == 43008
        assert ssh(ip, "test -e %s.restored" % RECORD).returncode == 0


def test_check_mode_reports_and_stops_nothing(old_model):
    res = memory_play("--check", "--diff")
    assert res.returncode == 0, res.out[-3000:]
    assert "would stop old-vllm, embeddings-embed-1 (43008 MiB of GPU memory)" in res.out
    # --diff: per host, each holder running before and stopped after
    for host in ("spark1", "spark2"):
        assert "--- before: %s: what holds GPU memory\n+++ after: %s: after this run\n" % (host, host) in res.out
    assert res.out.count("-container old-vllm: running\n") == 2, res.out[-3000:]
    assert res.out.count("+container old-vllm: stopped (recorded in %s)\n" % RECORD) == 2
    assert res.out.count("+container embeddings-embed-1: stopped (recorded in %s)\n" % RECORD) == 2
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))
        assert ssh(ip, "test -e %s" % RECORD).returncode != 0


@pytest.mark.fault(
    fault='a restore with no record of what was stopped',
    inject='teardown.yml -e sparkops_restore=true on hosts without a record',
    message="'no record of stopped services at /var/lib/sparkops/gpu_memory_stopped.json: nothing was restored'",
    left='the old services running on both hosts, as before')
def test_restore_without_a_record_fails_and_names_the_file(old_model):
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "sparkops_restore=true")
    assert res.returncode != 0
    assert "no record of stopped services at %s: nothing was restored" % RECORD in res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))


@pytest.mark.fault(
    fault='the record of stopped services is corrupt',
    inject="'{broken' written to the record on both hosts, then a restore",
    message="'the record of stopped services ... is corrupt'",
    left='the old services running on both hosts, as before; nothing started or stopped')
def test_corrupt_record_restores_nothing(old_model):
    for ip in HOSTS:
        ssh(ip, "mkdir -p /var/lib/sparkops && echo '{broken' > %s" % RECORD)
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "sparkops_restore=true")
    assert res.returncode != 0
    assert "the record of stopped services %s is corrupt" % RECORD in res.out
    for ip in HOSTS:
        ssh(ip, "rm -f %s" % RECORD)
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))


@pytest.mark.fault(
    fault='more free memory asked for than the host has',
    inject='gpu_memory_free_gib 100000',
    message="'waiting for 100000.0 GiB free, but the memory in all is ...'",
    left='the old services running on both hosts, as before (nothing was stopped)')
def test_threshold_above_total_fails_before_stopping(old_model):
    res = memory_play("-e", "gpu_memory_free_gib=100000")
    assert res.returncode != 0
    assert "waiting for 100000.0 GiB free, but the memory in all is" in res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))


@pytest.mark.fault(
    fault='memory that never frees (nothing listed to stop)',
    inject='no containers or projects to stop, free fraction 0.999, a 2 s wait',
    message="'... waiting for ... still holding GPU memory: pid ... in old-vllm'",
    left='the old services running on both hosts, as before')
def test_memory_that_never_frees_times_out_naming_holders(old_model):
    res = memory_play("-e", '{"gpu_memory_stop_containers": [], "gpu_memory_stop_compose_projects": [], '
                      '"gpu_memory_free_fraction": 0.999, "gpu_memory_wait_timeout": 2}')
    assert res.returncode != 0
    assert "waiting for" in res.out and "still holding GPU memory: pid" in res.out
    assert "in old-vllm" in res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))


@pytest.mark.fault(
    fault='a listed container does not exist, in strict mode',
    inject='gpu_memory_stop_containers [no-such-model] with gpu_memory_strict',
    message="'container no-such-model does not exist'",
    left='the old services running on both hosts, as before (nothing was stopped)')
def test_strict_fails_on_a_missing_container(old_model):
    res = memory_play("-e", '{"gpu_memory_stop_containers": ["no-such-model"], "gpu_memory_strict": true}')
    assert res.returncode != 0
    assert "container no-such-model does not exist" in res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= set(running(ip))
