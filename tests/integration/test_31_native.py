"""Launched without Ray: a vLLM image that carries no Ray (as stock images ship since vLLM 0.18) is
served natively - one engine rank per host, vLLM's multiprocessing backend across the hosts,
--headless on the rank that does not serve - by the default sparkops_launcher (auto). Moving
between Ray and native either way keeps what served until the new launch serves, and a failure
on the way gives it back. (The engine is the lab's stand-in: its ranks meet over the fabric at
the master address as torch.distributed's do; only rank 0 serves.)"""
import json
import re

import pytest

from conftest import playbook, ssh, still_serves

HOSTS = ("10.77.0.11", "10.77.0.12")
REG = "10.77.0.5:5000/sparkops/"
NORAY = {"sparkops_engine_candidates": [REG + "lab-vllm:0.17.0-noray"]}
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
    assert re.search(r"lab-vllm:0\.17\.0-noray selected vllm 0\.17\.0 ray - launch native ", out), out[-3000:]
    assert ("is served by vllm (%slab-vllm:0.17.0-noray) at http://10.77.0.11:8000/v1 (ranks on spark1, spark2, "
            "no Ray)" % REG) in out
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
    fault="a launch the selected image or these settings cannot run (ray asked of a Ray-less image; native "
          "with the opt-in firewall)",
    inject="-e sparkops_launcher=ray with only the Ray-less vLLM as candidate; then native with sparkops_firewall",
    message="'sparkops_launcher is ray: no Ray in the image' in the candidate table; '... is launched natively "
            "... sparkops_firewall is on: its chain admits the Ray ports, not the master and NCCL ports of the ranks'",
    left="the native ranks that served, untouched (the same containers), nothing stopped")
def test_a_launch_that_cannot_run_is_refused_before_anything_stops(native):
    ids = dict((ip, containers(ip)) for ip in HOSTS)
    res = deploy("-e", json.dumps(dict(NORAY, sparkops_launcher="ray")))
    assert res.returncode != 0
    out = flat(res.out)
    assert "No candidate image can serve" in out and "(nothing was stopped)" in out
    assert "- sparkops_launcher is ray: no Ray in the image" in out
    assert "and Ray to engine_image_candidates (sparkops_launcher: ray)" in out
    res = deploy("-e", json.dumps(dict(NORAY, sparkops_firewall=True)))
    assert res.returncode != 0
    assert ("%slab-vllm:0.17.0-noray is launched natively (sparkops_launcher: auto; one engine rank per host, no "
            "Ray), and sparkops_firewall is on: its chain admits the Ray ports, not the master and NCCL ports "
            "of the ranks. Set sparkops_firewall: false, or sparkops_launcher: ray" % REG) in flat(res.out)
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
