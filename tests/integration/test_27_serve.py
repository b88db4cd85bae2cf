"""model_server on the lab: the stand-in engine on the real Ray cluster; every bad case named."""
import json

import pytest

from conftest import playbook, ssh

SPARK1, SPARK2 = "10.77.0.11", "10.77.0.12"
MODEL = "/opt/models/lab-qwen3.5-tiny"


def flat(text):
    return " ".join(text.split())


def deploy(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra)


def still_serves():
    """The engine that served before answers on the head: /health 200 and the served name."""
    health = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/health").out
    models = ssh(SPARK1, "curl -s -m 5 http://127.0.0.1:8000/v1/models").out
    return health == "200" and '"id": "qwen3.5-lab"' in models


def ours(ip):
    return set(ssh(ip, "docker ps --format '{{.Names}}'").out.split()) & {
        "sparkops-ray-head", "sparkops-ray-worker", "sparkops-model-server"}


@pytest.fixture(scope="module")
def served(lab):
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    return res


def test_deploy_serves_and_reports(served):
    out = flat(served.out)
    assert "qwen3.5-lab is served by vllm (10.77.0.5:5000/sparkops/lab-vllm:0.17.0) at http://10.77.0.11:8000/v1" in out
    assert "sparkops deploy: SERVED" in out
    assert "ray 2 nodes, 2.0 GPUs, head 192.168.77.11" in out
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/health").out
    assert code == "200"


def test_status_shows_the_served_model(served):
    res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert "Serving: sparkops-model-server (10.77.0.5:5000/sparkops/lab-vllm:0.17.0) running" in out
    assert "/health 200, models qwen3.5-lab" in out
    assert "Last deploy" in out and ": served; image 10.77.0.5:5000/sparkops/lab-vllm:0.17.0 (vllm 0.17.0)" in out


def test_changed_engine_setting_restarts_the_engine_not_ray(served):
    def started(name):
        return ssh(SPARK1, "docker inspect -f '{{.State.StartedAt}}' %s" % name).out.strip()
    ray_before, engine_before = started("sparkops-ray-head"), started("sparkops-model-server")
    res = deploy("-e", json.dumps({"model_server_max_model_len": "4096"}))
    assert res.returncode == 0, res.out[-3000:]
    assert started("sparkops-ray-head") == ray_before
    assert started("sparkops-model-server") != engine_before
    assert "--max-model-len 4096" in ssh(SPARK1, "docker inspect -f '{{json .Args}}' sparkops-model-server").out.replace(
        '","', " ")


def test_changed_shm_size_recreates_the_engine_not_ray(served):
    """model_server_shm_size was left out of the engine's hand-kept spec hash: a change was ignored."""
    def inspect(fmt, name="sparkops-model-server"):
        return ssh(SPARK1, "docker inspect -f '%s' %s" % (fmt, name)).out.strip()
    ray_before, engine_before = inspect("{{.State.StartedAt}}", "sparkops-ray-head"), inspect("{{.State.StartedAt}}")
    res = deploy("-e", json.dumps({"model_server_shm_size": "2g"}))
    assert res.returncode == 0, res.out[-3000:]
    assert inspect("{{.HostConfig.ShmSize}}") == str(2 << 30)
    assert inspect("{{.State.StartedAt}}") != engine_before
    assert inspect("{{.State.StartedAt}}", "sparkops-ray-head") == ray_before
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/health").out
    assert code == "200"  # and it serves with the new size
    again = deploy("-e", json.dumps({"model_server_shm_size": "2g"}))
    assert again.returncode == 0, again.out[-3000:]
    assert "already serving, left alone" in flat(again.out)


@pytest.mark.fault(
    fault='the new engine serves another name than asked',
    inject='model_server_extra_args --served-model-name other-name on a serving cluster',
    message="'the engine serves other-name, not qwen3.5-lab (served model name mismatch)'",
    left='the engine that served before, serving again (kept, then brought back)')
def test_served_name_mismatch_is_named(served):
    res = deploy("-e", json.dumps({"model_server_extra_args": ["--served-model-name", "other-name"]}))
    assert res.returncode != 0
    assert "the engine serves other-name, not qwen3.5-lab (served model name mismatch)" in flat(res.out)
    assert still_serves()


@pytest.mark.fault(
    fault='the new engine does not serve in time',
    inject='an engine that prints a line and sleeps, model_server_ready_timeout 5',
    message="'the engine did not serve within 5 s on spark1' with the engine's last log lines",
    left='the engine that served before, serving again')
def test_readiness_timeout_shows_the_engine_log(served):
    res = deploy("-e", json.dumps({
        "model_server_executable": ["python3", "-c", "print('loading weights, slowly', flush=True); "
                                    "import time; time.sleep(600)"],
        "model_server_ready_timeout": 5}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine did not serve within 5 s on spark1" in out
    assert "loading weights, slowly" in out
    assert still_serves()


@pytest.mark.fault(
    fault='the new engine exits during start',
    inject="an engine that prints 'CUDA out of memory (pretend)' and exits 7",
    message="'the engine exited during start (container sparkops-model-server, exit code 7) on spark1' with its log",
    left='the engine that served before, serving again')
def test_engine_that_exits_is_named_with_its_log(served):
    res = deploy("-e", json.dumps({
        "model_server_executable": ["python3", "-c", "import sys; print('CUDA out of memory (pretend)'); sys.exit(7)"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine exited during start (container sparkops-model-server, exit code 7) on spark1" in out
    assert "CUDA out of memory (pretend)" in out
    assert still_serves()


@pytest.mark.fault(
    fault='the model directory differs on a worker',
    inject="an extra file in spark2's copy of the model",
    message="'the model directory ... differs between the hosts: spark1 3 files ... spark2 4 files'",
    left='the engine that served before, untouched and serving')
def test_model_directory_that_differs_on_a_worker(served):
    assert ssh(SPARK2, "echo extra > %s/extra.txt" % MODEL).returncode == 0
    try:
        res = deploy()
    finally:
        ssh(SPARK2, "rm -f %s/extra.txt" % MODEL)
    assert res.returncode != 0
    out = flat(res.out)
    assert "the model directory %s differs between the hosts: spark1 3 files" % MODEL in out
    assert "spark2 4 files" in out
    assert still_serves()
    assert "Nothing was rolled back: the engine that served before this run is untouched and still serves." \
        in flat(res.out)


@pytest.mark.fault(
    fault='the model directory is missing on a worker',
    inject='sparkops_model_path set to a directory only spark1 has',
    message="'the model directory /opt/models/head-only is missing on spark2'",
    left='the engine that served before, untouched and serving')
def test_model_directory_missing_on_a_worker(served):
    assert ssh(SPARK1, "mkdir -p /opt/models/head-only && cp %s/config.json /opt/models/head-only/" % MODEL).returncode == 0
    try:
        res = deploy("-e", "sparkops_model_path=/opt/models/head-only")
    finally:
        ssh(SPARK1, "rm -rf /opt/models/head-only")
    assert res.returncode != 0
    assert "the model directory /opt/models/head-only is missing on spark2" in flat(res.out)
    assert still_serves()
    assert "Nothing was rolled back: the engine that served before this run is untouched and still serves." \
        in flat(res.out)


@pytest.mark.fault(
    fault="the engine's port is taken by another program",
    inject='docker rm -f of the engine, then python3 -m http.server 8000 on the head',
    message="'port 8000 on spark1 is in use by something other than sparkops-model-server'",
    left='the deploy rolled back: nothing of ours on either host, the old services the records listed running again')
def test_port_in_use_is_named(served):
    record = "cat /var/lib/sparkops/gpu_memory_stopped.json 2>/dev/null || echo '{\"stopped\": []}'"
    listed = dict((ip, [e["name"] for e in json.loads(ssh(ip, record).out)["stopped"]]) for ip in (SPARK1, SPARK2))
    assert ssh(SPARK1, "docker rm -f sparkops-model-server").returncode == 0
    pid = ssh(SPARK1, "nohup python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1 & echo $!").out.strip()
    try:
        res = deploy()
    finally:
        ssh(SPARK1, "kill %s" % pid)
    assert res.returncode != 0
    assert "port 8000 on spark1 is in use by something other than sparkops-model-server" in flat(res.out)
    # a failure after the stop: our containers removed, what the record listed started again
    assert "Rolled back: the engine and Ray containers were removed and what the deploy had stopped was " \
           "started again" in flat(res.out)
    for ip in (SPARK1, SPARK2):
        names = ssh(ip, "docker ps --format '{{.Names}}'").out.split()
        assert not ours(ip) and set(listed[ip]) <= set(names), (listed, names)


def test_teardown_stops_serving_and_ray(served):
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    names = ssh(SPARK1, "docker ps -a --format '{{.Names}}'").out.split()
    assert "sparkops-model-server" not in names and "sparkops-ray-head" not in names
    res = deploy()  # and back
    assert res.returncode == 0, res.out[-3000:]
