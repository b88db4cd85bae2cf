"""Cluster shapes: three hosts with the head listed last, served by vLLM over Ray and then, on
the same hosts, by SGLang's multi-node launcher (ranks head-first, no Ray driver); one host alone.
Each deploys and serves; Ray counts every node and the report says so. (Three hosts show what four
did - more than one worker, the head last - for one host less to start and fill with images.)"""
import json
import os

import pytest

from conftest import LAB, ROOT, playbook, run, ssh

REG = "10.77.0.5:5000/sparkops/"
SGLANG = REG + "lab-sglang:0.5.10-ray"
# the candidate the lab's list selects (inventories/lab): spark3, a new host, pulls only it
VLLM = {"sparkops_engine_candidates": [REG + "lab-vllm:0.17.0"]}
# RDMA container settings the lab leaves empty (it has no /dev/infiniband, and its containers
# may not raise memlock): a capability and a ulimit, to see SGLang's containers get them
RDMA = {"sparkops_engine_candidates": [SGLANG], "sparkops_rdma_capabilities": ["IPC_LOCK"],
        "sparkops_rdma_ulimits": ["stack:67108864:67108864"]}


def mgmt(n):
    return "10.77.0.1%d" % n


def fabric(n):
    return "192.168.77.1%d" % n


def inventory(tmp, head, workers):
    """An inventory that lists the workers first and the head last."""
    os.makedirs(tmp, exist_ok=True)
    lines = ["llm_cluster:", "  children:", "    llm_workers:", "      hosts:" + ("" if workers else " {}")]
    for n in workers:
        lines.append("        spark%d: {ansible_host: %s, fabric_address: %s}" % (n, mgmt(n), fabric(n)))
    lines += ["    llm_head:", "      hosts:",
              "        spark%d: {ansible_host: %s, fabric_address: %s}" % (head, mgmt(head), fabric(head))]
    with open(os.path.join(tmp, "hosts.yml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    link = os.path.join(tmp, "group_vars")
    if not os.path.islink(link):
        os.symlink(os.path.join(ROOT, "inventories", "lab", "group_vars"), link)
    return tmp


def deploy(inv, reports, *extra):
    res = playbook("deploy.yml", "-i", inv, *extra, env={"SPARKOPS_REPORT_DIR": reports})
    report = None
    if os.path.exists(os.path.join(reports, "latest.json")):
        with open(os.path.join(reports, "latest.json")) as f:
            report = json.load(f)
    return res, report


def flat(text):
    return " ".join(text.split())


def container_args(n, name="sparkops-model-server"):
    out = ssh(mgmt(n), "docker inspect -f '{{json .Args}} {{json .HostConfig.CapAdd}} {{json .HostConfig.Ulimits}}' %s"
              % name).out.strip().split(" ", 2)
    return json.loads(out[0]), json.loads(out[1]), json.loads(out[2])


@pytest.fixture(scope="module")
def shapes(lab, tmp_path_factory):
    yield tmp_path_factory.mktemp("shapes")
    res = run(LAB + ["up", "--hosts", "2"])  # two hosts again for the tests after these
    assert res.returncode == 0, res.out[-3000:]


@pytest.fixture(scope="module")
def three_head_last(shapes):
    res = run(LAB + ["up", "--hosts", "3"])
    assert res.returncode == 0, res.out[-3000:]
    inv = inventory(str(shapes / "inv3"), 3, [1, 2])
    return deploy(inv, str(shapes / "reports3"), "-e", json.dumps(VLLM))


def test_three_hosts_with_the_head_listed_last_serve(three_head_last):
    res, report = three_head_last
    assert res.returncode == 0, res.out[-4000:]
    assert report["outcome"] == "served"
    assert report["ray"]["nodes"] == 3 and report["ray"]["head"] == fabric(3), report["ray"]
    out = flat(res.out)
    assert "ray 3 nodes, 3.0 GPUs, head %s" % fabric(3) in out
    # the stand-in's completion names the node of every rank: one per host
    assert "from 3 Ray actors on %s" % ", ".join(fabric(n) for n in (1, 2, 3)) in out
    names = ssh(mgmt(3), "docker ps --format '{{.Names}}'").out.split()
    assert names == ["sparkops-model-server", "sparkops-ray-head"]


@pytest.fixture(scope="module")
def sglang_three(three_head_last, shapes):
    """The same three hosts, re-deployed with SGLang (the engine changes: every rank anew)."""
    return deploy(str(shapes / "inv3"), str(shapes / "reports3"), "-e", json.dumps(RDMA))


def test_sglang_multi_node_ranks_the_head_first(sglang_three):
    res, report = sglang_three
    assert res.returncode == 0, res.out[-4000:]
    assert report["outcome"] == "served" and report["ray"]["nodes"] == 3, report["ray"]
    out = flat(res.out)
    assert "served by sglang (%s)" % SGLANG in out
    assert "from 3 SGLang ranks on %s" % ", ".join(fabric(n) for n in (1, 2, 3)) in out
    ranks = {}
    for n in (1, 2, 3):
        args, caps, ulimits = container_args(n)
        assert args[args.index("--nnodes") + 1] == "3"
        assert args[args.index("--dist-init-addr") + 1] == "%s:20000" % fabric(3)  # the head, listed last
        ranks[n] = args[args.index("--node-rank") + 1]
        # the same RDMA settings as the Ray container beside it
        ray_caps, ray_ulimits = container_args(n, "sparkops-ray-head" if n == 3 else "sparkops-ray-worker")[1:]
        assert caps == ray_caps == ["IPC_LOCK"] or caps == ray_caps == ["CAP_IPC_LOCK"], (caps, ray_caps)
        assert ulimits == ray_ulimits and ulimits[0]["Name"] == "stack", ulimits
    assert ranks == {3: "0", 1: "1", 2: "2"}  # head-first, then the workers in inventory order


def test_sglang_re_run_changes_nothing(sglang_three, shapes):
    res, dummy = deploy(str(shapes / "inv3"), str(shapes / "reports3"), "-e", json.dumps(RDMA))
    assert res.returncode == 0, res.out[-4000:]
    recap = [l for l in res.out.splitlines() if l.startswith("spark") and "changed=" in l]
    assert len(recap) == 3 and all("changed=0" in l for l in recap), recap


def test_one_host_alone_serves(sglang_three, shapes):
    res = run(LAB + ["up", "--hosts", "1"])
    assert res.returncode == 0, res.out[-3000:]
    res, report = deploy(inventory(str(shapes / "inv1"), 1, []), str(shapes / "reports1"))
    assert res.returncode == 0, res.out[-4000:]
    assert report["outcome"] == "served" and report["ray"]["nodes"] == 1, report["ray"]
    assert "from 1 Ray actors on %s" % fabric(1) in flat(res.out)
    names = ssh(mgmt(1), "docker ps --format '{{.Names}}'").out.split()
    assert names == ["sparkops-model-server", "sparkops-ray-head"]
