"""Nothing lost: a deploy that fails after it stopped the old services, or that was killed after
the stop, ends with the old services running again, from each host's record on disk."""
import concurrent.futures
import json
import os
import pwd
import re
import signal
import subprocess
import time

import pytest

from conftest import BIN, ROOT, engine_phase, playbook, ssh, still_serves
from conftest import old_model_only as reset_to_the_old_model

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
    reset_to_the_old_model()
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


@pytest.mark.fault(
    fault="memory still short after the old services were stopped",
    inject="gpu_memory_free_fraction 0.999 with a 2 s wait (the lab cannot free that much)",
    message="'wait until enough is free on spark1, spark2: only ... after 2 s, waiting for ...'; "
            "'Rolled back: ... started again (embeddings-embed-1, old-vllm)'",
    left="the old services on both hosts (restored from the record on disk), nothing of ours, the record put aside")
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


@pytest.mark.fault(
    fault="the engine fails where nothing of ours served (the engine phase alone, beside the old model)",
    inject="deploy.yml --tags model_server with an engine that exits 7, on the lab with only the old model running",
    message="'the engine exited during start ... exit code 7) on spark1'; 'Nothing was rolled back: this run stopped "
            "no service, and nothing of ours served before it. What it started was removed (sparkops-ray-head on "
            "spark1, sparkops-model-server on spark1, sparkops-ray-worker on spark2)'",
    left="the old model running on both hosts as before (never stopped); no container of ours, not even stopped - "
         "no engine left restarting beside it")
def test_an_engine_that_fails_where_nothing_of_ours_served_leaves_nothing_of_ours(old_model_only):
    before = dict((ip, ssh(ip, "docker ps -q --no-trunc | sort").out) for ip in HOSTS)
    res = engine_phase("-e", json.dumps({
        "model_server_executable": ["python3", "-c", "import sys; print('CUDA out of memory (pretend)'); sys.exit(7)"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine exited during start (container sparkops-model-server, exit code 7) on spark1" in out, out[-3000:]
    assert ("Nothing was rolled back: this run stopped no service, and nothing of ours served before it. What it "
            "started was removed (sparkops-ray-head on spark1, sparkops-model-server on spark1, sparkops-ray-worker "
            "on spark2), so that nothing of it keeps restarting beside what runs.") in out, out[-3000:]
    for ip in HOSTS:
        names = ssh(ip, "docker ps -a --format '{{.Names}}'").out.split()
        assert not set(names) & OURS, (ip, names)
        assert ssh(ip, "docker ps -q --no-trunc | sort").out == before[ip], ip  # the old model, never stopped


def kill_deploy(extra=(), when=None, banner=None, what=""):
    """Start a deploy and SIGKILL it (its whole process group) as soon as when() holds (looked at
    every 0.3 s) or the play prints the TASK banner that starts with `banner` (the task before it
    ended on every host)."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYTHONUNBUFFERED="1")
    for name in ("USER", "LOGNAME"):  # as under cron, a CI runner or an EE: the lock names the uid's account
        env.pop(name, None)
    proc = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "deploy.yml", "-i", "inventories/lab"]
                            + list(extra), cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE if banner else subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    try:
        if banner:
            seen = any(line.startswith("TASK [" + banner) for line in proc.stdout)  # stops at the first
        else:
            deadline = time.time() + 120
            while time.time() < deadline and proc.poll() is None and not when():
                time.sleep(0.3)
            seen = proc.poll() is None
        assert seen, "the deploy ended before " + what
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
    time.sleep(3)  # a module already running on a host finishes there


def kill_after_the_stop(extra=()):
    """A deploy SIGKILLed as soon as spark1's old model is down."""
    kill_deploy(extra, when=lambda: "old-vllm" not in running(HOSTS[0]), what="it stopped the old model")
    assert "old-vllm" not in running(HOSTS[0]) and "old-vllm" in recorded(HOSTS[0])


@pytest.mark.fault(
    fault="a deploy killed after it stopped the old services, then a deploy that fails",
    inject="SIGKILL of ansible-playbook's process group once old-vllm is down; then a deploy with no fitting candidate",
    message="'another deploy holds this cluster' (the dead run's lock); taken over: 'No candidate image can serve'; "
            "'An earlier deploy had stopped them and was interrupted'",
    left="the old services on both hosts, nothing of ours")
def test_a_deploy_killed_after_the_stop_is_recovered_by_the_next_one_that_fails(old_model_only):
    kill_after_the_stop()
    bad = {"sparkops_engine_candidates": ["10.77.0.5:5000/sparkops/lab-vllm:0.14.0"]}
    # the killed run's lock: the next deploy stops at once, naming it, and changes nothing
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(bad))
    assert res.returncode != 0
    out = flat(res.out)
    assert "another deploy holds this cluster: " in out and "Deploy - from" in out and " ago. Wait until it ends." in out
    # the killed run had no USER: the holder is the account of its uid, not '?'
    assert "another deploy holds this cluster: %s@" % pwd.getpwuid(os.getuid()).pw_name in out
    assert "-e sparkops_lock_take_over=true" in out and "TASK [sparkops.inference.engine_image" not in out
    # taken over, the deploy fails before it stops anything (no candidate fits): nothing of ours
    # serves, so it starts again what the killed run had stopped
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(dict(bad, sparkops_lock_take_over=True)))
    assert res.returncode != 0
    out = flat(res.out)
    assert "taken over on request (sparkops_lock_take_over) from " in out
    assert "No candidate image can serve" in out
    assert "An earlier deploy had stopped them and was interrupted; nothing of ours was serving." in out
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


@pytest.mark.fault(
    fault="a deploy killed after it stopped the old services, recovered by hand",
    inject="SIGKILL of ansible-playbook's process group; teardown.yml -e sparkops_restore=true",
    message="teardown names what it started again",
    left="the old services on both hosts, nothing of ours")
def test_a_deploy_killed_after_the_stop_is_recovered_by_teardown_restore(old_model_only):
    kill_after_the_stop()
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "sparkops_restore=true",
                   "-e", "sparkops_lock_take_over=true")
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    # spark1's old-vllm was down at the kill; its embeddings and spark2's stops may not have run
    assert re.search(r"spark1: started again (embeddings-embed-1, )?old-vllm", out), out[-2000:]
    assert "spark2: started again" in out
    for ip in HOSTS:
        assert OLD <= running(ip) and not running(ip) & OURS


@pytest.mark.fault(
    fault="a re-deploy of a serving cluster fails before it stops anything",
    inject="a candidate list with no image that fits",
    message="'Nothing was rolled back: this run stopped no service.'",
    left="exactly the containers that ran before on both hosts (the engine serving)")
def test_a_failure_before_the_stop_leaves_a_serving_cluster_alone(old_model_only):
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


@pytest.mark.fault(
    fault="a re-deploy of a serving cluster with a watchdog setting its agents would refuse",
    inject="watchdog_enabled with watchdog_timeout 45 above watchdog_interval 30",
    message="'watchdog_timeout is 45 s, longer than the interval (30 s) ... Nothing was changed on any host'",
    left="exactly the containers that ran before on both hosts (the engine serving); no agent")
@pytest.mark.fault(
    fault="a wait that is not whole seconds, 0 or more (a negative timeout)",
    inject="-e model_server_restore_timeout=-5 -e ray_cluster_ready_timeout=soon on a serving cluster",
    message="'inventory check found 2 problems: ... model_server_restore_timeout is -5: expected whole seconds, "
            "0 or more ... ray_cluster_ready_timeout is 'soon' ...'",
    left="exactly the containers that ran before on both hosts (the engine serving)")
@pytest.mark.fault(
    fault="a phase's variable its role's argument spec refuses (a port that is no number, a policy that is no choice)",
    inject="-e fabric_peer_port=abc -e engine_image_pull_policy=sometimes on a serving cluster",
    message="'spark1: 2 variable(s) the roles would refuse when their phase starts: - engine_image_pull_policy is "
            "'sometimes': the engine_image role expects one of missing, always ... - fabric_peer_port is 'abc': the "
            "fabric role expects a whole number ... Set it so, or drop it for its default (22)'",
    left="exactly the containers that ran before on both hosts (the engine serving); nothing after preflight ran")
def test_settings_that_would_fail_later_are_refused_in_preflight(lab):
    """Settings that failed only when their time came, after the stop: a watchdog setting its
    agents refuse (checked by them, in the watchdog phase after the model served: the rescue rolled
    back a good deploy), a wait that is not whole seconds (a negative wait was taken as given and
    ended in 'did not serve within -5 s' when the rollback's wait came), and any phase variable of the
    wrong kind (ansible-core checks a role's spec when the role starts: the fabric's after the GPU
    memory phase had stopped the old services). Preflight names each before anything is touched;
    one serving cluster for all."""
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    before = [running(ip) for ip in HOSTS]
    assert "sparkops-model-server" in before[0]
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", "watchdog_enabled=true", "-e", "watchdog_timeout=45")
    assert res.returncode != 0
    out = flat(res.out)
    assert ("watchdog_timeout is 45 s, longer than the interval (30 s): a probe would still run when the next is "
            "due; set watchdog_timeout below watchdog_interval. Nothing was changed on any host") in out, out[-2000:]
    assert "TASK [sparkops.inference.engine_image" not in res.out  # nothing after preflight ran
    assert [running(ip) for ip in HOSTS] == before
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", "model_server_restore_timeout=-5",
                   "-e", "ray_cluster_ready_timeout=soon")
    assert res.returncode != 0
    out = flat(res.out)
    assert "inventory check found 2 problems" in out, out[-2000:]
    assert ("model_server_restore_timeout is -5: expected whole seconds, 0 or more (0 looks once and does not "
            "wait) - set it to how long to wait, or drop it for its default") in out
    assert "ray_cluster_ready_timeout is 'soon': expected whole seconds" in out
    assert "TASK [sparkops.inference.engine_image" not in res.out  # nothing after preflight ran
    assert [running(ip) for ip in HOSTS] == before
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", "fabric_peer_port=abc",
                   "-e", "engine_image_pull_policy=sometimes")
    assert res.returncode != 0
    out = flat(res.out)
    for host in ("spark1", "spark2"):  # each host's own variables
        assert "%s: 2 variable(s) the roles would refuse when their phase starts" % host in out, out[-3000:]
    assert ("- engine_image_pull_policy is 'sometimes': the engine_image role expects one of missing, always - "
            "missing pulls images not on a host") in out
    assert ("- fabric_peer_port is 'abc': the fabric role expects a whole number - TCP port tried on each peer "
            "(a refused connection counts as reachable). Set it so, or drop it for its default (22)") in out
    assert "Nothing was changed on any host" in out
    assert "TASK [sparkops.inference.engine_image" not in res.out  # nothing after preflight ran
    assert [running(ip) for ip in HOSTS] == before
    assert still_serves()


@pytest.mark.fault(
    fault="a second operator deploys (or tears down) while a deploy runs",
    inject="deploy.yml and teardown.yml started while another deploy holds the lock",
    message="'another deploy holds this cluster: ... Deploy - from ...'; status.yml 'Lock: held by ...'",
    left="the first deploy served, undisturbed, and gave the lock back")
def test_a_second_deploy_while_one_runs_fails_at_once_naming_the_holder(lab):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    for name in ("USER", "LOGNAME"):  # as under cron, a CI runner or an EE: the lock names the uid's account
        env.pop(name, None)
    # every phase (a re-run check that found nothing to change would end before the others start)
    first = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "deploy.yml", "-i", "inventories/lab",
                              "-e", "deploy_fast_rerun=false"],
                             cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and ssh(HOSTS[0], "test -f /var/lib/sparkops/deploy.lock").returncode:
            time.sleep(0.3)
        # the three at once, inside the first one's run: one after the other, status.yml (which reads the
        # lock near its end) came after the first deploy had ended, on a busy 2-core CI machine
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            second, teardown, status = pool.map(lambda args: playbook(*args), [
                ("deploy.yml", "-i", "inventories/lab"),
                ("playbooks/teardown.yml", "-i", "inventories/lab"),
                ("playbooks/status.yml", "-i", "inventories/lab")])  # status is never locked out
        first_ran_on = first.poll() is None
    finally:
        out, dummy = first.communicate(timeout=600)
    assert first.returncode == 0, out[-3000:]
    assert first_ran_on, "the first deploy had ended before the other three did: the test saw no concurrent run"
    for res in (second, teardown):
        assert res.returncode != 0
        assert "another deploy holds this cluster: " in flat(res.out) and "Deploy - from" in flat(res.out)
    assert status.returncode == 0 and "Lock: held by " in flat(status.out)
    assert "sparkops-model-server" in running(HOSTS[0])  # the first one served, undisturbed
    assert ssh(HOSTS[0], "test -f /var/lib/sparkops/deploy.lock").returncode != 0  # and gave it back
    res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    assert "Lock: none (no deploy runs)" in flat(res.out)


def all_names(ip):
    return set(ssh(ip, "docker ps -a --format '{{.Names}}'").out.split())


def serves(name="qwen3.5-lab", timeout=90, key=None):
    """The engine on spark1 answers /v1/models with the served name (polls: it may be starting)."""
    deadline = time.time() + timeout
    out = ""
    auth = ("-H 'Authorization: Bearer %s' " % key) if key else ""
    while time.time() < deadline:
        out = ssh(HOSTS[0], "curl -s -m 5 %shttp://10.77.0.11:8000/v1/models" % auth).out
        if '"id": "%s"' % name in out:
            return True
        time.sleep(1)
    return out


def rolled_back_to(started, out, report_dir, key=None):
    """What a failed re-deploy whose new engine serves other-name leaves: the message, the report,
    the very containers of before (`started`: their IDs) serving (asked with `key`, the API key
    they serve with), nothing kept left over, Ray's 2 nodes."""
    assert "the engine serves other-name, not qwen3.5-lab (served model name mismatch)" in out, out[-3000:]
    assert "Rolled back: the engine and Ray containers that served before this run were started again" in out
    assert re.search(r"It serves again: http://10\.77\.0\.11:8000/v1 lists qwen3\.5-lab \([\d.]+ s after its "
                     r"start\)", out), out[-3000:]
    with open(os.path.join(str(report_dir), "latest.json")) as f:
        report = json.load(f)
    assert report["outcome"] == "failed" and report["rolled_back"] is True and report["rolled_back_serves"] is True
    # the very containers that served, not new ones; nothing kept is left over
    again = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server sparkops-ray-head").out.split()
    assert again == started
    assert serves(key=key) is True
    for ip in HOSTS:
        assert not [n for n in all_names(ip) if n.endswith("-previous")], all_names(ip)
        assert "old-vllm" not in running(ip)  # what the first deploy stopped stays stopped
    nodes = ssh(HOSTS[0], "docker exec sparkops-ray-head ray status").out
    assert nodes.count(" node_") == 2, nodes[-2000:]


@pytest.mark.fault(
    fault="the new engine serves another name than asked",
    inject="model_server_extra_args --served-model-name other-name on a serving cluster",
    message="'the engine serves other-name, not qwen3.5-lab (served model name mismatch)'",
    left="the engine that served before, serving again (kept, then brought back)")
@pytest.mark.fault(
    fault="a re-deploy of a serving cluster whose new engine fails (only the engine changed)",
    inject="a changed engine whose served name does not match",
    message="'the engine serves other-name, not qwen3.5-lab'; 'Rolled back: the engine and Ray containers "
            "that served before this run were started again ... It serves again: http://10.77.0.11:8000/v1 lists "
            "qwen3.5-lab (N s after its start)'",
    left="the very containers that served before, serving (waited for, the report's rolled_back_serves true); "
         "no *-previous left; Ray 2 nodes")
def test_a_failed_re_deploy_brings_back_what_served(lab, tmp_path):
    """A serving cluster, re-deployed with settings whose new engine fails its readiness check:
    the engine that served was kept stopped, not removed, and serves again on the same Ray
    cluster - the run waits for that before it ends, and says so. (Ray changed too: the API key
    case below, on its set-up.)"""
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    started = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server sparkops-ray-head").out.split()
    bad = {"model_server_extra_args": ["--served-model-name", "other-name"]}
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(bad),
                   env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
    assert res.returncode != 0
    rolled_back_to(started, flat(res.out), tmp_path)


@pytest.mark.fault(
    fault="the engine that served before, started again by a rollback, does not serve in time",
    inject="an engine that takes 10 s to load (the lab stand-in's SPARKOPS_LAB_LOAD_SECONDS), then a re-deploy "
           "whose new engine serves another name, with model_server_restore_timeout 0",
    message="'Rolled back: ... started again ... But it does not serve again: the engine did not serve within "
            "0 s on spark1 ... playbooks/status.yml shows what runs now'",
    left="the engine that served before, running (and serving once it has started); the report's "
         "rolled_back_serves false")
def test_a_rollback_whose_engine_does_not_serve_again_in_time_says_so(lab, tmp_path):
    """The run does not say the engine serves again unless it answered: with no time to wait
    (a 120 GB model still loading: here the stand-in waits 10 s before it serves, and the rollback
    waits 0 s), it says it does not, with why, and the report too; the kept engine is left running,
    and serves once it has loaded."""
    slow = {"model_server_env": {"SPARKOPS_LAB_LOAD_SECONDS": "10"}, "model_server_progress_interval": 2}
    res = engine_phase("-e", json.dumps(slow))
    assert res.returncode == 0, res.out[-3000:]
    # while it loads, the phase's wait says so at the default verbosity (the role's interval reaches
    # serve_check; what the lines hold: test_27_serve's module-level case)
    assert re.search(r"spark1: waiting for the engine at http://10\.77\.0\.11:8000 to serve qwen3\.5-lab "
                     r"\(\d+ s of \d+ s\)", flat(res.out)), res.out[-3000:]
    started = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split()
    bad = {"model_server_extra_args": ["--served-model-name", "other-name"], "model_server_restore_timeout": 0}
    res = engine_phase("-e", json.dumps(bad), env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
    assert res.returncode != 0
    out = flat(res.out)
    assert "Rolled back: the engine and Ray containers that served before this run were started again" in out
    assert "But it does not serve again: the engine did not serve within 0 s on spark1" in out, out[-3000:]
    assert "playbooks/status.yml shows what runs now" in out and "It serves again" not in out
    with open(str(tmp_path / "latest.json")) as f:
        report = json.load(f)
    assert report["rolled_back"] is True and report["rolled_back_serves"] is False
    assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() == started
    assert serves() is True


def models_code(key):
    """The HTTP status /v1/models answers on spark1 with this key (none: no Authorization)."""
    auth = ("-H 'Authorization: Bearer %s'" % key) if key else ""
    return ssh(HOSTS[0], "curl -s -m 5 -o /dev/null -w '%%{http_code}' %s http://10.77.0.11:8000/v1/models"
               % auth).out.strip()


@pytest.mark.fault(
    fault="a re-deploy of a serving cluster whose new engine fails, Ray changed too",
    inject="on the engine of the case below (key-one), a re-deploy with a changed Ray (ray_cluster_env, the Ray "
           "token of before) whose engine serves another name",
    message="'the engine serves other-name, not qwen3.5-lab'; 'Rolled back: the engine and Ray containers "
            "that served before this run were started again ... It serves again: http://10.77.0.11:8000/v1 lists "
            "qwen3.5-lab (N s after its start)'",
    left="the very containers that served before (the engine and the Ray head), serving (waited for, the "
         "report's rolled_back_serves true); no *-previous left; Ray 2 nodes")
@pytest.mark.fault(
    fault="a failed re-deploy that rotated or removed the engine's API key",
    inject="an engine serving with key-one (loading 5 s: the stand-in's SPARKOPS_LAB_LOAD_SECONDS); a re-deploy "
           "with key-two and a new Ray token whose engine does not serve in time (model_server_ready_timeout 0: "
           "the same spec, only the key differs), then one with no key and the Ray token of before whose engine serves another name",
    message="'Rolled back: ... It serves again ... The engine's secret files were put back as they were before "
            "this run on spark1 (the API key and Hugging Face token this run set are not in effect). The Ray "
            "token this run wrote stays in effect on spark1, spark2: the Ray containers of before were started again "
            "with it'",
    left="the engine that served before, serving with key-one: key-one answered 200, key-two and no key 401; "
         "no kept secrets left on the head; the Ray cluster of before, both nodes, on the new token; after the second, "
         "drift.yml finds no drift (the rollback took the restarted containers' start times into the record)")
def test_a_rollback_gives_the_engine_of_before_its_api_key_back(lab, tmp_path):
    """The engine reads its key from the host's file at start. A failed run had already written
    its own key there: the engine started again by the rollback took the new key (a rotation) or
    served with none (a removed key: open to anyone). The files are kept until the new engine
    serves, and put back first."""
    # every engine start takes 5 s here (the stand-in's simulated load): a look after 0 s always fails
    slow = {"model_server_env": {"SPARKOPS_LAB_LOAD_SECONDS": "5"}}
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e",
                   json.dumps(dict(slow, sparkops_engine_api_key="key-one")))
    assert res.returncode == 0, res.out[-3000:]
    assert (models_code("key-one"), models_code("key-two"), models_code("")) == ("200", "401", "401")
    started = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split()
    # the files are where the engine runs a rank: over Ray the head alone (a native launch: every host)
    put_back = ("The engine's secret files were put back as they were before this run on spark1 (the API "
                "key and Hugging Face token this run set are not in effect).")
    assert ssh(HOSTS[1], "ls -A /etc/sparkops/secrets 2>/dev/null").out.strip() == ""  # the worker holds none
    # each also rotates the Ray token (the second back to the lab's own, the controller's file): the
    # cluster's own, not kept - it stays in effect, and the message says so
    ray_token = "cat /etc/sparkops/ray-token"
    with open("/var/lib/sparkops-lab/ray-token") as f:
        lab_token = f.read().strip()
    token_stays = ("The Ray token this run wrote stays in effect on spark1, spark2: the Ray containers of before were "
                   "started again with it")
    for bad in ({"sparkops_engine_api_key": "key-two", "model_server_ready_timeout": 0,
                 "ray_cluster_auth_token": "ray-token-rotated-0123456789"},
                # the case of a failed re-deploy with Ray changed too (its own spec, not only the token)
                {"model_server_extra_args": ["--served-model-name", "other-name"], "ray_cluster_auth_token": lab_token,
                 "ray_cluster_env": {"SPARKOPS_TEST_GENERATION": "2"}}):
        ray_and_engine = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server sparkops-ray-head").out.split()
        res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(dict(slow, **bad)),
                       env={"SPARKOPS_REPORT_DIR": str(tmp_path)})
        assert res.returncode != 0
        out = flat(res.out)
        if "ray_cluster_env" in bad:
            rolled_back_to(ray_and_engine, out, tmp_path, key="key-one")
        assert "Rolled back: the engine and Ray containers that served before this run were started again" in out, \
            out[-3000:]
        assert "It serves again: http://10.77.0.11:8000/v1 lists qwen3.5-lab" in out, out[-3000:]
        assert put_back in out and token_stays in out, out[-3000:]
        for ip in HOSTS:
            assert ssh(ip, ray_token).out.strip() == bad["ray_cluster_auth_token"]
        if "ray_cluster_env" not in bad:  # rolled_back_to counted them
            assert ssh(HOSTS[0], "docker exec sparkops-ray-head ray status").out.count(" node_") == 2
        assert bad["ray_cluster_auth_token"] not in res.out
        assert "key-one" not in res.out and "key-two" not in res.out and "ray-token-rotated" not in res.out
        assert (models_code("key-one"), models_code("key-two"), models_code("")) == ("200", "401", "401"), bad
        assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() == started
        assert ssh(HOSTS[0], "test -e /etc/sparkops/secrets.previous && echo left || echo gone").out.strip() == "gone"
    # the hosts are as the first deploy left them (the Ray token of before is back too): the rollback
    # took the start times of what it started again into the record, so drift.yml names no restart
    res = playbook("playbooks/drift.yml", "-i", "inventories/lab", "-e", "sparkops_drift_fail=true")
    assert res.returncode == 0 and "no drift" in res.out, res.out[-3000:]


# the re-deploy of the case below, and what it leaves serving (the set-up of the case after it)
KEY_TWO = {"model_server_env": {"SPARKOPS_LAB_LOAD_SECONDS": "5"}, "sparkops_engine_api_key": "key-two",
           "sparkops_lock_take_over": True}


@pytest.mark.fault(
    fault="a deploy killed after it wrote a new API key, before its engine started again; then re-deploys",
    inject="SIGKILL of ansible-playbook's process group once the head holds key-two (the engine serving with "
           "key-one); a deploy with key-two whose engine does not serve in time; killed the same way again; a "
           "deploy with key-two",
    message="the failed one: 'Rolled back: ... It serves again ... The engine's secret files were put back as they "
            "were before this run on spark1' (the head: the worker of a launch over Ray holds none); the last one "
            "serves",
    left="after the failure, the engine of before serving with key-one (key-two 401); after the last deploy a new "
         "engine serving with key-two (key-one 401); no kept secrets left")
def test_a_deploy_killed_after_it_wrote_a_new_key_is_finished_by_the_next(lab):
    """The engine reads its key at start. A run killed between writing the new key and starting
    the engine left the old engine serving with the old key, the file holding the new one: the
    next run saw no key change, left the engine alone - and a failed run after it had no old key to
    give back. The interrupted run's kept files stay; the next run starts the engine, and a rollback
    gives the key the engine of before had."""
    slow = {"model_server_env": {"SPARKOPS_LAB_LOAD_SECONDS": "5"}}
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(dict(slow, sparkops_engine_api_key="key-one")))
    assert res.returncode == 0, res.out[-3000:]
    started = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split()
    two = KEY_TWO
    key_file = "cat /etc/sparkops/secrets/engine-api-key"
    after_the_key = "sparkops.inference.model_server : Build the command line"  # the task after the secrets

    kill_deploy(["-e", json.dumps(two)], banner=after_the_key, what="it wrote the key")
    # the key is where the engine runs (over Ray: the head); the worker holds none
    assert ssh(HOSTS[0], key_file).out.strip() == "key-two"
    assert ssh(HOSTS[1], "test -e /etc/sparkops/secrets/engine-api-key && echo held || echo none").out.strip() == "none"
    assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() == started
    assert (models_code("key-one"), models_code("key-two")) == ("200", "401")
    # status.yml says why the engine lists no model, and what the dead run left
    res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert ("/v1/models: HTTP 401 - the engine refuses the API key in /etc/sparkops/secrets/engine-api-key: it was "
            "started with another one") in out, out[-3000:]
    assert ("Secret files kept by a deploy that runs or did not finish (it changed them; the engine of before was "
            "started with these): /etc/sparkops/secrets.previous on spark1. deploy.yml finishes the change"
            ) in out, out[-3000:]
    assert "Lock: held by " in out and "key-one" not in res.out and "key-two" not in res.out
    # a run that fails: the engine of before comes back with the key it was started with
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(dict(two, model_server_ready_timeout=0)))
    assert res.returncode != 0
    out = flat(res.out)
    assert "It serves again: http://10.77.0.11:8000/v1 lists qwen3.5-lab" in out, out[-3000:]
    assert ("The engine's secret files were put back as they were before this run on spark1 " in out), out[-3000:]
    assert "key-one" not in res.out and "key-two" not in res.out
    assert (models_code("key-one"), models_code("key-two"), models_code("")) == ("200", "401", "401")
    assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() == started
    # killed again; the next run finishes it: a new engine with the new key
    kill_deploy(["-e", json.dumps(two)], banner=after_the_key, what="it wrote the key")
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(two))
    assert res.returncode == 0, res.out[-3000:]
    assert (models_code("key-one"), models_code("key-two"), models_code("")) == ("401", "200", "401")
    assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() != started
    # a good re-deploy drops what it kept: no secrets, no *-previous container, on any host
    for ip in HOSTS:
        assert ssh(ip, "test -e /etc/sparkops/secrets.previous && echo left || echo gone").out.strip() == "gone"
        assert not [n for n in all_names(ip) if n.endswith("-previous")], all_names(ip)
    assert serves(key="key-two") is True


@pytest.mark.fault(
    fault="a re-deploy whose engine would ask for more memory than is free (vLLM's start-up check would fail)",
    inject="model_server_gpu_memory_utilization 0.99 on a serving cluster (MemFree is never 99 % of MemTotal)",
    message="'spark1: the engine would not start - --gpu-memory-utilization 0.99 wants ... at most 0.NN is "
            "reachable now ... Lower model_server_gpu_memory_utilization to 0.NN or less'; the same for spark2; "
            "'Rolled back: the engine and Ray containers that served before this run were started again'",
    left="the engine that served before (the same container), serving; no new engine was ever created")
def test_an_engine_the_memory_cannot_admit_is_refused_before_it_starts(lab):
    """The admission runs after the serving engine was kept aside and before the new one is
    created, on every host that runs its ranks (vLLM: the head's driver and the workers' Ray
    containers): it evicts the model's page cache, then every page cache, and refuses with the
    figures; the rescue brings back the kept engine."""
    # the settings the case above served with: a re-run that changes nothing when it ran first
    served = KEY_TWO
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(served))
    assert res.returncode == 0, res.out[-3000:]
    started = ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split()
    res = playbook("deploy.yml", "-i", "inventories/lab", "-e", json.dumps(dict(
        served, model_server_gpu_memory_utilization=0.99, model_server_admission_wait=2)))
    assert res.returncode != 0
    out = flat(res.out)
    for host in ("spark1", "spark2"):
        refusal = re.search(r"%s: the engine would not start - --gpu-memory-utilization 0\.99 wants [\d.]+ GiB of "
                            r"[\d.]+ GiB, and [\d.]+ GiB is free \(MemFree of the unified memory\) after evicting "
                            r"the model's page cache and all page caches; at most (0\.\d\d) is reachable now" % host, out)
        assert refusal, out[-3000:]
        assert "Lower model_server_gpu_memory_utilization to %s or less" % refusal.group(1) in out
    assert "Rolled back: the engine and Ray containers that served before this run were started again" in out
    # the engine that served, not a new one; the new one was never created
    assert ssh(HOSTS[0], "docker inspect -f '{{.Id}}' sparkops-model-server").out.split() == started
    assert serves(key=served["sparkops_engine_api_key"]) is True
    for ip in HOSTS:
        assert not [n for n in all_names(ip) if n.endswith("-previous")], all_names(ip)
