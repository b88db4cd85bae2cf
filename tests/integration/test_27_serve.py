"""model_server on the lab: the stand-in engine on the real Ray cluster; every bad case named."""
import json
import re
import socket

import pytest

from conftest import BIN, LAB, engine_phase, flat, only_the_old_model_is_left, playbook, run, ssh, still_serves

SPARK1, SPARK2 = "10.77.0.11", "10.77.0.12"
MODEL = "/opt/models/lab-qwen3.5-tiny"


def deploy(*extra, **kw):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra, **kw)


def ours(ip):
    return set(ssh(ip, "docker ps --format '{{.Names}}'").out.split()) & {
        "sparkops-ray-head", "sparkops-ray-worker", "sparkops-model-server"}


@pytest.fixture(scope="module")
def served(lab):
    # whatever a file before left serving, this deploy starts the engine (one that finds the cluster
    # as it left it skips every phase and reports no start)
    ssh(SPARK1, "docker rm -f sparkops-model-server >/dev/null 2>&1 || true")
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    return res


def test_deploy_serves_and_reports(served):
    out = flat(served.out)
    assert "qwen3.5-lab is served by vllm (10.77.0.5:5000/sparkops/lab-vllm:0.17.0) at http://10.77.0.11:8000/v1" in out
    assert "sparkops deploy: SERVED" in out
    assert "ray 2 nodes, 2.0 GPUs, head 192.168.77.11" in out
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health").out
    assert code == "200"


def test_the_controller_reaches_the_engine_only_on_the_heads_management_address(served):
    """model_server_host's default: the head's ansible_host. The controller sits on both lab
    networks; the engine answers on the management one only (it used to bind 0.0.0.0)."""
    def connects(ip):
        try:
            socket.create_connection((ip, 8000), timeout=3).close()
            return True
        except OSError as exc:
            return exc
    assert connects("10.77.0.11") is True
    refused = connects("192.168.77.11")
    assert isinstance(refused, ConnectionRefusedError), refused


def test_status_shows_the_served_model(served):
    # completions while status looks at /metrics, so its two looks see the generation counter
    # move (bounded: 400 requests 0.2 s apart, stopped when status is done)
    traffic = ssh(SPARK1, "nohup sh -c 'for i in $(seq 400); do curl -s -m 5 -o /dev/null -H \"Content-Type: "
                          "application/json\" -d \"{\\\"prompt\\\": \\\"hi\\\", \\\"max_tokens\\\": 8}\" "
                          "http://10.77.0.11:8000/v1/completions; sleep 0.2; done' </dev/null >/dev/null 2>&1 & echo $!")
    try:
        res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    finally:
        ssh(SPARK1, "kill %s 2>/dev/null; true" % traffic.out.strip())
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert "Serving: sparkops-model-server (10.77.0.5:5000/sparkops/lab-vllm:0.17.0) running" in out
    assert "/health 200, models qwen3.5-lab" in out
    # the engine's own figures (the lab's stand-in counts its requests and words in vLLM's series)
    load = re.search(r"load: (\d+) request\(s\) running, 0 waiting, (\d+) tokens/s, KV cache 0 % \(vllm's /metrics\)", out)
    assert load, out[-2000:]
    assert int(load.group(2)) > 0, load.group(0)
    # the fabric as the last deploy measured it (the lab: sockets over the fabric's veth, no RDMA)
    assert "Fabric (as the last deploy found it): enp1s0f1np1, MTU 9000, NET/Socket" in out, out[-2000:]
    assert "Last deploy" in out and ": served; image 10.77.0.5:5000/sparkops/lab-vllm:0.17.0 (vllm 0.17.0)" in out


OURS = ("sparkops-ray-head", "sparkops-ray-worker", "sparkops-model-server")


def started_at(ip):
    """Each of our containers on the host: its ID and when it started (a restart changes the time)."""
    return ssh(ip, "docker inspect -f '{{.Name}} {{.Id}} {{.State.StartedAt}}' %s 2>/dev/null; true"
               % " ".join(OURS)).out


def phase_tasks(out):
    """The phase roles' tasks that ran after the re-run check, but their argument validation, their
    start marks and their end_role (preflight runs the watchdog's check of its settings before)."""
    out = out[out.index("Re-run check - what it found"):]
    return [t for t in re.findall(r"TASK \[sparkops\.inference\.(engine_image|gpu_memory|fabric|ray_cluster|"
                                  r"model_server|watchdog) : ([^\]]*)\]", out)
            if not t[1].startswith(("Validating arguments", "Nothing to change in this phase",
                                    "Mark the start of the phase"))]


def test_a_rerun_with_nothing_to_change_skips_the_phases(served, tmp_path):
    """deploy_fast_rerun: the same inputs on hosts as the last deploy left them - one look per host,
    the engine asked for a completion, no phase task, changed=0, nothing restarted; the report
    says so and still names what is served (from the record)."""
    before = dict((ip, started_at(ip)) for ip in (SPARK1, SPARK2))
    res = deploy(env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert "nothing to change, the phases are skipped (-e deploy_fast_rerun=false runs them all)" in out, out[-3000:]
    assert phase_tasks(res.out) == []
    recap = [l for l in res.out.splitlines() if l.startswith("spark")]
    assert len(recap) == 2 and all(" changed=0 " in l and " failed=0 " in l for l in recap), recap
    assert dict((ip, started_at(ip)) for ip in (SPARK1, SPARK2)) == before
    with open(str(tmp_path / "latest.json")) as f:
        report = json.load(f)
    assert report["outcome"] == "served" and report["unchanged"] is True and report["unchanged_since"]
    assert report["serving"]["endpoint"] == "http://10.77.0.11:8000/v1" and report["serving"]["restarted"] is False
    assert report["image"]["selected"].endswith("lab-vllm:0.17.0") and report["image"]["versions"]["engine"] == "0.17.0"
    assert report["ray"]["nodes"] == 2 and report["fabric"]["interface"] == "enp1s0f1np1"
    assert "ray 2 nodes, 2.0 GPUs, head 192.168.77.11" in out
    # asked to, every phase runs (and still changes nothing)
    full = deploy("-e", "deploy_fast_rerun=false")
    assert full.returncode == 0, full.out[-3000:]
    assert "already serving, left alone" in flat(full.out)
    assert phase_tasks(full.out) and dict((ip, started_at(ip)) for ip in (SPARK1, SPARK2)) == before


@pytest.mark.fault(
    fault="a Ray worker restarted, or an old service started again, on a serving cluster",
    inject="docker restart sparkops-ray-worker on spark2; then docker start old-vllm on spark1",
    message="'full deploy: spark2: container sparkops-ray-worker: started_at was ..., now ...'; then "
            "'full deploy: spark1: the GPU memory phase would stop old-vllm'",
    left="the model served; old-vllm stopped again by the full deploy")
def test_the_rerun_check_sends_a_changed_cluster_through_every_phase(served):
    """What the re-run check must not take for 'nothing to change': a container of ours restarted
    (its start time moved) and a service the deploy stopped running again (gpu_memory in check
    mode would stop it). Each time the full deploy runs, says why, and puts it right."""
    assert ssh(SPARK2, "docker restart -t 1 sparkops-ray-worker >/dev/null").returncode == 0
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    # (the lab's engine exits with its Ray worker and Docker starts it again: named too, on spark1)
    found = out[out.index("full deploy: "):] if "full deploy: " in out else out[-3000:]
    assert re.search(r"spark2: container sparkops-ray-worker: started_at was \S+, now \S+", found), found[:3000]
    assert phase_tasks(res.out)
    assert still_serves()
    # the old model as the deploy left it (stopped), or again where an earlier test removed it
    started = ssh(SPARK1, "docker start old-vllm >/dev/null")
    if "No such container" in started.out:
        started = run(LAB + ["old-model"])
    assert started.returncode == 0, started.out
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    assert "full deploy: spark1: the GPU memory phase would stop old-vllm" in flat(res.out), res.out[-3000:]
    assert "old-vllm" not in ssh(SPARK1, "docker ps --format '{{.Names}}'").out.split()
    assert still_serves()


def test_the_engine_phase_alone_serves_what_the_deploy_selected_and_changes_nothing(served):
    """--tags model_server brings the phases it serves on (the image selection, the Ray cluster): it
    used to fail on the Ray phase's missing facts, and --tags ray_cluster,model_server took the first
    candidate (lab-vllm:0.14.0), recreated Ray and the engine on it and recorded that as deployed.
    Skipping the Ray phase on purpose is stopped before anything changes, saying what to run.
    The engine keeps the fabric's env file (fabric does not run: it was recreated without it), and
    the whole deploy's record stays (the phases' own lacked the fabric, and the next re-run check
    trusted it)."""
    record = "sha256sum /var/lib/sparkops/deployed.json"
    # the deploy's defaults (a test before may have changed a setting): left alone when they serve
    assert deploy().returncode == 0
    records = [ssh(ip, record).out for ip in (SPARK1, SPARK2)]
    res = engine_phase("-e", "deploy_fast_rerun=false")
    assert res.returncode == 0, res.out[-3000:]
    assert [int(n) for n in re.findall(r"^spark\d +: ok=\d+ +changed=(\d+)", res.out, re.M)] == [0, 0], res.out[-3000:]
    assert [ssh(ip, record).out for ip in (SPARK1, SPARK2)] == records
    images = ssh(SPARK1, "docker inspect -f '{{.Config.Image}}' sparkops-ray-head sparkops-model-server").out.split()
    assert images == ["10.77.0.5:5000/sparkops/lab-vllm:0.17.0"] * 2, images
    res = engine_phase("--skip-tags", "ray_cluster")
    assert res.returncode != 0
    out = flat(res.out)
    assert ("the model_server phase needs what the ray_cluster phase learns in the same run (each node's fabric "
            "address and GPUs; the serving engine kept aside before Ray changes), and ray_cluster did not run on "
            "spark1, spark2: run both (--tags ray_cluster,model_server) or the whole deploy") in out, out[-2000:]
    assert "Nothing was rolled back" in out and still_serves()


def test_changed_engine_setting_restarts_the_engine_not_ray(served):
    """An engine argument and a setting of its container (model_server_shm_size: once left out of
    the engine's hand-kept spec hash, so a change was ignored; the whole spec is hashed now, each
    field unit-tested in test_containers.py) reach the engine, which is recreated - Ray is not;
    the same settings again change nothing."""
    def inspect(fmt, name="sparkops-model-server"):
        return ssh(SPARK1, "docker inspect -f '%s' %s" % (fmt, name)).out.strip()
    ray_before, engine_before = inspect("{{.State.StartedAt}}", "sparkops-ray-head"), inspect("{{.State.StartedAt}}")
    changed = json.dumps({"model_server_max_model_len": "4096", "model_server_shm_size": "2g"})
    res = deploy("-e", changed)
    assert res.returncode == 0, res.out[-3000:]
    assert inspect("{{.State.StartedAt}}", "sparkops-ray-head") == ray_before
    assert inspect("{{.State.StartedAt}}") != engine_before
    assert "--max-model-len 4096" in inspect("{{json .Args}}").replace('","', " ")
    assert inspect("{{.HostConfig.ShmSize}}") == str(2 << 30)
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health").out
    assert code == "200"  # and it serves with them
    recreated = inspect("{{.State.StartedAt}}")
    again = deploy("-e", changed)
    assert again.returncode == 0, again.out[-3000:]
    assert "nothing to change, the phases are skipped" in flat(again.out)  # the re-run check
    assert inspect("{{.State.StartedAt}}") == recreated


IMAGE = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"  # on every lab host once the file's deploy ran


def engine_wait(container, timeout):
    """The engine phase's wait (serve_check phase ready, its action plugin printing progress every
    2 s) for `container`, on spark1, at a port nothing listens on: ansible -m, no deploy."""
    return run([BIN + "/ansible", "-i", "inventories/lab", "spark1", "-m", "sparkops.inference.serve_check", "-a",
                json.dumps({"phase": "ready", "container": container, "port": 8001, "address": SPARK1,
                            "served_model_name": "qwen3.5-lab", "timeout": timeout, "progress_interval": 2})])


@pytest.mark.fault(
    fault='the new engine does not serve in time',
    inject='a container that prints a line and sleeps (the engine as it loads), waited for with a 5 s timeout and '
           'progress every 2 s - the engine phase\'s wait, called with ansible -m',
    message="'waiting for the engine at http://10.77.0.11:8001 to serve qwen3.5-lab (2 s of 5 s): ... its last log "
            "line: loading weights, slowly' while it waits, then 'the engine did not serve within 5 s on spark1' "
            "with the engine's last log lines",
    left='the serving engine untouched (what a failed wait leaves after it: the rollback of a failed re-deploy, '
         'test_27_nothing_lost)')
@pytest.mark.fault(
    fault='the new engine exits during start',
    inject="a container that prints 'CUDA out of memory (pretend)' and exits 7, waited for as above",
    message="'the engine exited during start (container sparkops-test-exits, exit code 7) on spark1' with its log",
    left='the serving engine untouched (the rollback after it: test_27_nothing_lost)')
def test_the_engine_wait_names_an_engine_that_is_slow_or_exits_with_its_log(served):
    """What the engine phase prints while a real model loads for minutes (a line every
    model_server_progress_interval seconds: how long of how long, what the engine answered, its
    last log line), and when it never serves or exits: the module and its action plugin on a lab
    host, as the phase calls them. What a failed start leaves - the engine of before serving again -
    is the rollback's, proven once by test_27_nothing_lost on a whole deploy."""
    runs = ("docker rm -f sparkops-test-slow sparkops-test-exits >/dev/null 2>&1; "
            "docker run -d --name sparkops-test-slow --network host --entrypoint python3 %s -c "
            "\"print('loading weights, slowly', flush=True); import time; time.sleep(600)\" >/dev/null && "
            "docker run -d --name sparkops-test-exits --entrypoint python3 %s -c "
            "\"import sys; print('CUDA out of memory (pretend)'); sys.exit(7)\" >/dev/null" % (IMAGE, IMAGE))
    assert ssh(SPARK1, runs).returncode == 0
    try:
        slow = engine_wait("sparkops-test-slow", 5)
        exits = engine_wait("sparkops-test-exits", 30)
    finally:
        ssh(SPARK1, "docker rm -f sparkops-test-slow sparkops-test-exits >/dev/null 2>&1")
    assert slow.returncode != 0
    out = flat(slow.out.replace("\\n", " "))
    waits = re.findall(r"spark1: waiting for the engine at http://10\.77\.0\.11:8001 to serve qwen3\.5-lab "
                       r"\((\d+) s of 5 s\): /health answered [^;]+; its last log line: loading weights, slowly", out)
    assert len(waits) >= 1 and all(2 <= int(w) < 5 for w in waits), out[-3000:]
    assert "the engine did not serve within 5 s on spark1" in out
    assert "loading weights, slowly" in out.split("the engine did not serve within")[1]  # its log, in the failure
    assert exits.returncode != 0
    out = flat(exits.out.replace("\\n", " "))
    assert "the engine exited during start (container sparkops-test-exits, exit code 7) on spark1" in out, out[-3000:]
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
        res = engine_phase()
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
        res = engine_phase("-e", "sparkops_model_path=/opt/models/head-only")
    finally:
        ssh(SPARK1, "rm -rf /opt/models/head-only")
    assert res.returncode != 0
    assert "the model directory /opt/models/head-only is missing on spark2" in flat(res.out)
    assert still_serves()
    assert "Nothing was rolled back: the engine that served before this run is untouched and still serves." \
        in flat(res.out)


CANARY_KEY = "sk-canary-api-7d1c9e42f00d"
CANARY_HF = "hf_canaryToken0b5e77aa1"


def test_engine_secrets_reach_the_engine_only_from_root_only_files(served, tmp_path):
    """An API key (from a file on the controller) and a Hugging Face token (a variable), both
    canaries: the engine requires the key, serve_check and status.yml send it, and neither is in
    the -vvv output, the JSON report, docker inspect of any container, the hosts' process lists,
    the env file or the engine's log. Unset again, they are removed and the engine answers anyone."""
    key_file = tmp_path / "engine-api-key"
    key_file.write_text(CANARY_KEY + "\n")
    reports = tmp_path / "reports"
    secrets = json.dumps({"sparkops_engine_api_key_file": str(key_file), "sparkops_hf_token": CANARY_HF})
    res = playbook("deploy.yml", "-i", "inventories/lab", "-vvv", "-e", secrets,
                   env={"SPARKOPS_REPORT_DIR": str(reports)})
    assert res.returncode == 0, res.out[-3000:]
    for canary in (CANARY_KEY, CANARY_HF):
        assert canary not in res.out
        assert canary not in (reports / "latest.json").read_text()
    models = "curl -s -m 5 -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/v1/models"
    assert ssh(SPARK1, models).out == "401"
    assert ssh(SPARK1, models.replace("curl ", "curl -H 'Authorization: Bearer %s' " % CANARY_KEY)).out == "200"
    for ip in (SPARK1, SPARK2):
        seen = ssh(ip, "docker inspect $(docker ps -aq); ps -eo args; cat /etc/sparkops/fabric.env; "
                       "docker logs sparkops-model-server 2>&1 || true").out
        assert CANARY_KEY not in seen and CANARY_HF not in seen, ip
    modes = ssh(SPARK1, "stat -c '%a %U %n' /etc/sparkops/secrets /etc/sparkops/secrets/* "
                        "/etc/sparkops/fabric.env").out.strip().split("\n")
    assert modes == ["700 root /etc/sparkops/secrets", "600 root /etc/sparkops/secrets/engine-api-key",
                     "600 root /etc/sparkops/secrets/hf-token", "600 root /etc/sparkops/fabric.env"], modes
    assert oct((reports / "latest.json").stat().st_mode & 0o777) == "0o600"
    # what the change replaced was kept only until the new engine served
    assert ssh(SPARK1, "ls -d /etc/sparkops/secrets.previous 2>&1 || true").out.strip().endswith(
        "No such file or directory")
    # the engine reads the token from its file (HF_TOKEN_PATH), not from its environment
    env = ssh(SPARK1, "docker inspect -f '{{json .Config.Env}}' sparkops-model-server").out
    assert '"HF_TOKEN_PATH=/run/sparkops/secrets/hf-token"' in env
    status = playbook("playbooks/status.yml", "-i", "inventories/lab", "-vvv")
    assert status.returncode == 0, status.out[-3000:]
    assert "/health 200, models qwen3.5-lab" in flat(status.out) and CANARY_KEY not in status.out
    # unset: the files go, the engine restarts without a key
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    assert ssh(SPARK1, "ls -A /etc/sparkops/secrets; ls -d /etc/sparkops/secrets.previous 2>/dev/null").out.strip() == ""
    assert ssh(SPARK1, models).out == "200" and still_serves()


@pytest.mark.fault(
    fault="a secret given where it would leak (an API key in model_server_extra_args, a token in model_server_env)",
    inject="-e model_server_extra_args=[--api-key, <canary>] model_server_env={HF_TOKEN: <canary>}",
    message="'model_server_extra_args holds --api-key: ... Set sparkops_engine_api_key (or "
            "sparkops_engine_api_key_file) instead - vault it'; the same for HF_TOKEN",
    left="the engine that served before, untouched and serving (refused in preflight); the canary in no output")
def test_a_secret_where_it_would_leak_is_refused_before_anything_changes(served):
    res = deploy("-v", "-e", json.dumps({"model_server_extra_args": ["--api-key", CANARY_KEY],
                                         "model_server_env": {"HF_TOKEN": CANARY_HF}}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "model_server_extra_args holds --api-key: a secret there lands in the container's command line " \
           "(docker inspect, ps on the host). Set sparkops_engine_api_key (or sparkops_engine_api_key_file) " \
           "instead - vault it" in out
    assert "model_server_env sets HF_TOKEN: a secret there lands in the container's environment" in out
    assert "TASK [sparkops.inference.gpu_memory" not in res.out  # refused before anything was stopped
    assert still_serves()


@pytest.mark.fault(
    fault="model_server_host is not an address of the head",
    inject="-e model_server_host=203.0.113.77 (TEST-NET-3)",
    message="'model_server_host is 203.0.113.77, which is not an address of this host (...) on spark1: the engine "
            "could not listen there. Set model_server_host to one of this host's addresses'",
    left="the engine that served before, untouched and serving on the head's management address")
def test_a_listen_address_that_is_not_the_heads_is_named(served):
    res = engine_phase("-e", "model_server_host=203.0.113.77")
    assert res.returncode != 0
    out = flat(res.out)
    assert "model_server_host is 203.0.113.77, which is not an address of this host (" in out
    assert "on spark1: the engine could not listen there. Set model_server_host to one of this host's " \
           "addresses (ip -brief addr), or 0.0.0.0 for all of them" in out
    assert still_serves()
    assert "Nothing was rolled back: the engine that served before this run is untouched and still serves." in out


def test_teardown_stops_serving_and_ray(served):
    """The engine that served and the Ray containers go, on every host."""
    assert still_serves()
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    for ip in (SPARK1, SPARK2):
        assert not ours(ip) and not {n for n in ssh(ip, "docker ps -a --format '{{.Names}}'").out.split()
                                     if n.startswith("sparkops-")}, ip
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health").out
    assert code == "000"  # nothing answers


# last: it ends on the old model alone (what a failed cold deploy's rollback leaves), where the tests
# above would each need a cold deploy first
@pytest.mark.fault(
    fault="the engine's port is taken by another program",
    inject='after teardown, the old model started again (lab old-model), then python3 -m http.server 8000 on the '
           'head; a cold deploy',
    message="'port 8000 on spark1 is in use by something other than sparkops-model-server'",
    left='the deploy rolled back: nothing of ours on either host, the old model it had stopped running again on both, '
         'their record put aside')
def test_port_in_use_is_named(served):
    # the old model running again, whatever ran before this test: the deploy stops it (its record
    # lists it) and the rollback must start it again
    assert run(LAB + ["old-model"]).returncode == 0
    assert ssh(SPARK1, "docker rm -f sparkops-model-server >/dev/null 2>&1; docker ps -a --format '{{.Names}}' "
                       "| grep -c '^sparkops-model-server$'").out.strip() == "0"
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
    # nothing of ours left, even stopped; the old model's memory held again; the record put aside
    # (what molecule's rollback scenario verified after its failed cold deploy)
    for ip in (SPARK1, SPARK2):
        only_the_old_model_is_left(ip)
