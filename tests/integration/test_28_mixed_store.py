"""A mixed lab: spark1 runs Debian 12's Docker 20.10 (classic overlay2 store), spark2 a current
Docker (26.1 from Debian trixie, the containerd image store, API versions below 1.44 refused as
Docker 29 does). The deploy must serve there as on the classic lab."""
import json
import re

import pytest

from conftest import LAB, playbook, run, ssh

SPARK1, SPARK2 = "10.77.0.11", "10.77.0.12"
SELECTED = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"


def deploy(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra)


def flat(text):
    return " ".join(text.split())


def image_id(ip, image):
    return ssh(ip, "docker image inspect -f '{{.Id}}' %s" % image).out.strip()


@pytest.fixture(scope="module")
def mixed(lab):
    res = run(LAB + ["up", "--docker26", "spark2"])
    assert res.returncode == 0, res.out[-3000:]
    res = run(LAB + ["old-model"])
    assert res.returncode == 0, res.out[-3000:]
    yield
    res = run(LAB + ["up"])  # every host back on Docker 20.10 for the tests after these
    assert res.returncode == 0, res.out[-3000:]


@pytest.fixture(scope="module")
def served(mixed):
    res = deploy()
    assert res.returncode == 0, res.out[-4000:]
    return res


def test_the_restarted_host_is_reachable_over_the_fabric_at_once(mixed):
    """spark2 was just restarted (with its other Docker): its interfaces keep their MACs, so
    spark1's ARP cache still points at it (a new MAC left it unreachable for seconds)."""
    assert ssh(SPARK1, "timeout 3 bash -c '</dev/tcp/192.168.77.12/22'").returncode == 0


def test_spark2_runs_a_current_docker_that_refuses_old_api_versions(mixed):
    out = ssh(SPARK2, "docker version -f '{{.Server.Version}} {{.Server.MinAPIVersion}}'").out.split()
    assert out[0].startswith("26.") and out[1] == "1.44"
    assert ssh(SPARK2, "docker info -f '{{.Driver}}'").out.strip() == "overlayfs"  # containerd snapshotter
    refused = ssh(SPARK2, "curl -s --unix-socket /run/docker.sock http://docker/v1.41/version").out
    assert "client version 1.41 is too old. Minimum supported API version is 1.44" in refused
    assert ssh(SPARK1, "docker info -f '{{.Driver}}'").out.strip() == "overlay2"


def test_deploy_serves_on_the_mixed_lab(served):
    out = flat(served.out)
    assert "sparkops deploy: SERVED" in out
    assert "* %s: selected" % SELECTED in out
    assert "the hosts hold different images" not in out  # one image, two stores
    assert "ray 2 nodes, 2.0 GPUs" in out
    # the same image, with a store-specific id on each host
    assert image_id(SPARK1, SELECTED) != image_id(SPARK2, SELECTED)
    code = ssh(SPARK1, "curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health").out
    assert code == "200"
    worker = ssh(SPARK2, "docker inspect -f '{{.State.Running}} {{json .Config.Entrypoint}}' sparkops-ray-worker").out
    assert worker.strip() == 'true ["ray","start"]'


def test_a_rerun_changes_nothing(served):
    res = deploy()
    assert res.returncode == 0, res.out[-3000:]
    recap = re.findall(r"^(spark\d)\s+:.*changed=(\d+)", res.out, re.M)
    assert sorted(recap) == [("spark1", "0"), ("spark2", "0")], res.out[-2000:]


def test_the_image_goes_over_the_fabric_into_the_containerd_store(served):
    assert playbook("playbooks/teardown.yml", "-i", "inventories/lab").returncode == 0
    assert ssh(SPARK2, "docker rmi -f %s" % SELECTED).returncode == 0
    res = deploy("-e", json.dumps({"engine_image_distribute": "fabric"}))
    assert res.returncode == 0, res.out[-4000:]
    assert "sparkops deploy: SERVED" in flat(res.out)
    assert image_id(SPARK2, SELECTED).startswith("sha256:")  # loaded through Docker 26's API
    assert ssh(SPARK2, "docker inspect -f '{{.State.Running}}' sparkops-ray-worker").out.strip() == "true"
