"""Launched without Ray: a vLLM image that carries no Ray (as stock images ship since vLLM 0.18) is
served natively - one engine rank per host, vLLM's multiprocessing backend across the hosts,
--headless on the rank that does not serve - by the default sparkops_launcher (auto). Moving
between Ray and native either way keeps what served until the new launch serves, and a failure
on the way gives it back. (The engine is the lab's stand-in: its ranks meet over the fabric at
the master address as torch.distributed's do; only rank 0 serves.)"""
import json
import re
import shutil
import socket
import tempfile

import pytest

from conftest import playbook, ssh, still_serves, wait_watchdog

HOSTS = ("10.77.0.11", "10.77.0.12")
REG = "10.77.0.5:5000/sparkops/"
# a stock vLLM image of late 2026 (0.34.0's source tree, no Ray), as users pull it now
NORAY = {"sparkops_engine_candidates": [REG + "lab-vllm:0.34.0"]}
ENGINE = "sparkops-model-server"
RAY = ("sparkops-ray-head", "sparkops-ray-worker")


def flat(text):
    return " ".join(text.split())


def deploy(*extra, **kw):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra, **kw)


def containers(ip):
    """{name: (id, running)} of every container of ours on the host, kept ones (*-previous) too."""
    out = ssh(ip, "docker ps -a --format '{{.ID}} {{.Names}} {{.State}}'").out.split("\n")
    rows = [line.split() for line in out if line.strip()]
    return dict((name, (cid, state == "running")) for cid, name, state in rows if name.startswith("sparkops-"))


def args_of(ip):
    return json.loads(ssh(ip, "docker inspect -f '{{json .Args}}' %s" % ENGINE).out)


def completion():
    """The text of one completion from the engine on the head (the stand-in names its ranks' nodes)."""
    out = ssh(HOSTS[0], "curl -s -m 10 http://10.77.0.11:8000/v1/completions -H 'Content-Type: application/json' "
                        "-d '{\"model\": \"qwen3.5-lab\", \"prompt\": \"hi\", \"max_tokens\": 4}'").out
    return json.loads(out)["choices"][0]["text"]


def recap_changed(out):
    return [l for l in out.splitlines() if l.startswith("spark") and "changed=" in l]


@pytest.fixture(scope="module")
def native(lab):
    """The lab served over Ray (the default candidates), then re-deployed with a Ray-less vLLM."""
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    before = dict((ip, containers(ip)) for ip in HOSTS)
    return before, deploy("-e", json.dumps(NORAY))


def test_a_ray_less_vllm_is_served_natively_on_every_host(native):
    before, res = native
    assert set(before[HOSTS[0]]) == {"sparkops-ray-head", ENGINE} and set(before[HOSTS[1]]) == {"sparkops-ray-worker"}
    assert res.returncode == 0, res.out[-4000:]
    out = flat(res.out)
    assert re.search(r"lab-vllm:0\.34\.0 selected vllm 0\.34\.0 ray - launch native ", out), out[-3000:]
    assert ("is served by vllm (%slab-vllm:0.34.0) at http://10.77.0.11:8000/v1 (no Ray, ranks on spark1, "
            "spark2)" % REG) in out
    assert "from 2 vLLM ranks (mp backend, no Ray) on 192.168.77.11, 192.168.77.12" in out
    assert "launch native - 2 engine ranks, one per host (spark1, spark2), no Ray" in out
    for ip in HOSTS:  # a rank on every host; the Ray containers and what served over Ray are gone
        assert containers(ip) == {ENGINE: (containers(ip)[ENGINE][0], True)}, containers(ip)
    head, worker = args_of(HOSTS[0]), args_of(HOSTS[1])
    for args, rank in ((head, "0"), (worker, "1")):
        at = args.index("--distributed-executor-backend")
        assert args[at:at + 10] == ["--distributed-executor-backend", "mp", "--nnodes", "2", "--node-rank", rank,
                                    "--master-addr", "192.168.77.11", "--master-port", "29501"], args
    assert "--headless" in worker and "--headless" not in head
    assert still_serves()


def test_a_native_re_run_changes_nothing(native):
    res = deploy("-e", json.dumps(dict(NORAY, deploy_fast_rerun=False)))
    assert res.returncode == 0, res.out[-3000:]
    assert all("changed=0" in l for l in recap_changed(res.out)) and len(recap_changed(res.out)) == 2


@pytest.mark.fault(
    fault="a launch the selected image cannot run (ray asked of a Ray-less image)",
    inject="-e sparkops_launcher=ray with only the Ray-less vLLM as candidate",
    message="'sparkops_launcher is ray: no Ray in the image' in the candidate table, 'No candidate image can "
            "serve ... (nothing was stopped)'",
    left="the native ranks that served, untouched (the same containers), nothing stopped")
def test_a_launch_that_cannot_run_is_refused_before_anything_stops(native):
    ids = dict((ip, containers(ip)) for ip in HOSTS)
    res = deploy("-e", json.dumps(dict(NORAY, sparkops_launcher="ray")))
    assert res.returncode != 0
    out = flat(res.out)
    assert "No candidate image can serve" in out and "(nothing was stopped)" in out
    assert "- sparkops_launcher is ray: no Ray in the image" in out
    assert "and Ray to engine_image_candidates (sparkops_launcher: ray)" in out
    assert "TASK [sparkops.inference.gpu_memory" not in res.out
    assert dict((ip, containers(ip)) for ip in HOSTS) == ids
    assert still_serves()


@pytest.mark.fault(
    fault="a re-deploy from native ranks to Ray whose new engine fails",
    inject="sparkops_launcher ray with the default candidates and a served name that does not match",
    message="'the engine serves other-name, not qwen3.5-lab'; 'Rolled back: the engine and Ray containers that "
            "served before this run were started again ... It serves again'",
    left="the very native ranks that served, on both hosts, serving; no Ray container, no *-previous left")
def test_a_failed_move_from_native_to_ray_brings_the_native_ranks_back(native):
    ids = dict((ip, containers(ip)) for ip in HOSTS)
    res = deploy("-e", json.dumps({"sparkops_launcher": "ray", "model_server_extra_args": [
        "--served-model-name", "other-name"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine serves other-name, not qwen3.5-lab" in out, out[-3000:]
    assert re.search(r"Rolled back: the engine and Ray containers that served before this run were started again "
                     r"\(they were kept stopped while the new ones started\)\. It serves again: "
                     r"http://10\.77\.0\.11:8000/v1 lists qwen3\.5-lab", out), out[-3000:]
    # the ranks of before, not new ones; the Ray containers this run started are gone
    assert dict((ip, containers(ip)) for ip in HOSTS) == ids
    assert "from 2 vLLM ranks (mp backend, no Ray) on 192.168.77.11, 192.168.77.12" in completion()


@pytest.mark.fault(
    fault="a re-deploy from Ray to native ranks whose engine fails",
    inject="the Ray-less vLLM candidate (auto: native) and a served name that does not match, on a cluster "
           "served over Ray",
    message="'the engine serves other-name, not qwen3.5-lab'; 'Rolled back: the engine and Ray containers that "
            "served before this run were started again ... It serves again'",
    left="the very Ray head, worker and engine that served, serving; no engine rank left on the worker, no "
         "*-previous")
def test_back_to_ray_then_a_failed_move_to_native_brings_ray_back(native):
    res = deploy()  # from native ranks to Ray, with the default candidates
    assert res.returncode == 0, res.out[-3000:]
    assert "from 2 Ray actors on 192.168.77.11, 192.168.77.12" in flat(res.out)
    served = dict((ip, containers(ip)) for ip in HOSTS)
    assert set(served[HOSTS[0]]) == {"sparkops-ray-head", ENGINE} and set(served[HOSTS[1]]) == {"sparkops-ray-worker"}
    res = deploy("-e", json.dumps(dict(NORAY, model_server_extra_args=["--served-model-name", "other-name"])))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine serves other-name, not qwen3.5-lab" in out, out[-3000:]
    assert "It serves again: http://10.77.0.11:8000/v1 lists qwen3.5-lab" in out, out[-3000:]
    assert dict((ip, containers(ip)) for ip in HOSTS) == served
    assert still_serves()  # over Ray again: the engine of before placed its ranks on both nodes
    assert "from 2 Ray actors on 192.168.77.11, 192.168.77.12" in completion()


def test_sglang_without_ray_runs_its_own_ranks_one_per_host(native):
    """SGLang 0.5.23's image (what users pull in late 2026: its options defined in srt/arg_groups/fields/,
    read by the static probe) carries no Ray: auto launches SGLang's own multi-node ranks, one per host,
    head first, meeting at the head's fabric address (the launch plan's meet_port), and no Ray container
    (the move from what served over Ray keeps nothing of it once SGLang serves)."""
    res = deploy("-e", json.dumps({"sparkops_engine_candidates": [REG + "lab-sglang:0.5.23"]}))
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert re.search(r"lab-sglang:0\.5\.23 selected sglang 0\.5\.23 ray - launch native ", out), out[-3000:]
    assert ("is served by sglang (%slab-sglang:0.5.23) at http://10.77.0.11:8000/v1 (no Ray, ranks on spark1, "
            "spark2)" % REG) in out
    for rank, ip in enumerate(HOSTS):
        assert set(n for n, (dummy, up) in containers(ip).items() if up) == {ENGINE}, containers(ip)
        args = args_of(ip)
        assert args[args.index("--node-rank") + 1] == str(rank), args
        assert args[args.index("--dist-init-addr") + 1] == "192.168.77.11:20000", args
    assert "from 2 SGLang ranks on 192.168.77.11, 192.168.77.12" in completion()


WATCHDOG = {"watchdog_enabled": True, "watchdog_interval": 2, "watchdog_timeout": 1, "watchdog_failures": 3,
            "watchdog_max_restarts": 2, "watchdog_window": 3600, "watchdog_grace": 30, "watchdog_stop_timeout": 5}


def chain(ip):
    return ssh(ip, "iptables -w -S SPARKOPS-RAY").out


@pytest.mark.fault(
    fault="a native engine rank wedged (alive for Docker, silent for its clients), behind the opt-in firewall",
    inject="a move from Ray to native ranks with sparkops_firewall and watchdog_enabled; then kill -STOP of the "
           "head's rank",
    message="the head agent's log: 'gang restart, generation N: stop', 'ray', 'engine', 'done'; the chain: "
            "'--dports ...,29880,29501 -j DROP' after the cluster hosts' RETURN rules",
    left="both ranks started again once (no Ray container started), serving from both hosts; the ranks' master "
         "port dropped for the controller, let through for the worker; after teardown no chain and nothing of ours, "
         "and a second teardown finds nothing to change")
def test_native_ranks_behind_the_firewall_are_restarted_by_the_watchdog_as_one_gang(native):
    """The last of the file (it leaves the chain and the agents to its teardown): from SGLang's ranks (what
    the test before left) to vLLM's native ranks with the firewall and the watchdog on - the launch plan's
    meeting port in the chain, the agents' gang made of the ranks alone."""
    settings = dict(NORAY, sparkops_firewall=True, ray_cluster_firewall_engine_clients=["10.77.0.1"], **WATCHDOG)
    try:
        res = deploy("-e", json.dumps(settings))
        assert res.returncode == 0, res.out[-3000:]
        for ip in HOSTS:
            assert set(n for n, (dummy, up) in containers(ip).items() if up) == {ENGINE, "sparkops-watchdog"}, ip
            rules = chain(ip)
            assert "-A SPARKOPS-RAY -s 192.168.77.11/32 -j RETURN" in rules, rules
            assert "--dports 6379:6385,8265,10001:10999,8000,29876,29511,29880,29501 -j DROP" in rules, rules
        # the ranks' master port on the head: dropped for the controller (a timeout, not a refusal); the
        # worker's attempt over the fabric is let through (the stand-in's rank 0 listens there only while
        # the ranks meet: refused now, where a drop would time out)
        try:
            socket.create_connection(("192.168.77.11", 29501), timeout=1).close()
            dropped = False
        except socket.timeout:
            dropped = True
        except OSError:
            dropped = False
        assert dropped
        res = ssh(HOSTS[1], "timeout 3 bash -c '</dev/tcp/192.168.77.11/29501'")
        assert res.returncode == 0 or "Connection refused" in res.out, res.out
        status = flat(playbook("playbooks/status.yml", "-i", "inventories/lab").out)
        assert ("Ray: none - the last deploy launched vllm without Ray: 2 engine rank(s), one per host "
                "(spark1, spark2)") in status, status[-3000:]
        # a controller that never deployed (AWX, a fresh home: no report here) reads the head's record
        fresh = tempfile.mkdtemp(prefix="sparkops-no-reports-")
        status = flat(playbook("playbooks/status.yml", "-i", "inventories/lab", "-e", "sparkops_report_dir=" + fresh).out)
        shutil.rmtree(fresh)
        assert ("Ray: none - the last deploy launched vllm without Ray: 2 engine rank(s), one per host "
                "(spark1, spark2) - from the deploy record on spark1") in status, status[-3000:]
        assert "Ray: no cluster answered" not in status and "Last deploy (" not in status
        state = wait_watchdog(lambda s: s.get("state") == "watching", "start watching")
        gen = state["generation"]
        started = dict((ip, ssh(ip, "docker inspect -f '{{.State.StartedAt}}' %s" % ENGINE).out) for ip in HOSTS)
        pid = ssh(HOSTS[0], "docker inspect -f '{{.State.Pid}}' %s" % ENGINE).out.strip()
        assert pid.isdigit() and int(pid) > 0, pid
        assert ssh(HOSTS[0], "kill -STOP %s" % pid).returncode == 0
        wait_watchdog(lambda s: s.get("generation") == gen + 1 and s.get("phase") == "done", "restart the gang")
        state = wait_watchdog(lambda s: s.get("state") == "watching", "see the engine answer again")
        assert state["gangs"][-1]["missing"] == [] and state["workers"]["spark2"]["generation"] == gen + 1, state
        after = dict((ip, ssh(ip, "docker inspect -f '{{.State.StartedAt}}' %s" % ENGINE).out) for ip in HOSTS)
        assert all(after[ip] != started[ip] for ip in HOSTS), (started, after)
        log = ssh(HOSTS[0], "docker logs sparkops-watchdog 2>&1").out
        assert [line.split(": ")[-1] for line in log.splitlines() if "generation %d:" % (gen + 1) in line] == \
            ["stop", "ray", "engine", "done"], log[-2000:]
        for ip in HOSTS:  # the gang started no Ray container
            assert not any(n in RAY and up for n, (dummy, up) in containers(ip).items()), ip
        assert "from 2 vLLM ranks (mp backend, no Ray) on 192.168.77.11, 192.168.77.12" in completion()
    finally:
        res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "ray_cluster_firewall=true")
    assert res.returncode == 0, res.out[-3000:]
    for ip in HOSTS:
        assert "SPARKOPS-RAY" not in ssh(ip, "iptables -w -S").out
        assert not containers(ip), ip
    # again, with nothing left to remove (nf_tables' iptables-restore: "Chain 'SPARKOPS-RAY' does not exist")
    res = playbook("playbooks/teardown.yml", "-i", "inventories/lab", "-e", "ray_cluster_firewall=true")
    assert res.returncode == 0 and all("changed=0" in l for l in recap_changed(res.out)), res.out[-3000:]
