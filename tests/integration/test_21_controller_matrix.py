"""The deploy on the oldest and the newest ansible-core the README names as tested
(tests/controller-matrix.txt, each on its own Python), not only their unit tests and sanity. Both
failed before 2026-12-06, and neither showed in units or sanity:

- 2.21 hands the hosts of a run_once task that have no facts yet one dict of facts to share (its
  strategy no longer copies them per host): every fact one host learned later landed on all, the
  head's env file got the worker's fabric address, and Ray never formed. The collection's playbooks
  give each host facts of its own first (playbooks/targets.yml); a play of the user's own that runs a
  run_once task first is stopped by preflight, naming the hosts, before anything changes.
- 2.18 renders a template whose value is none as an empty string (2.19 keeps None) and hands a
  file's JSON over parsed: the re-run check's module refused its arguments, the fabric role's own
  argument spec refused its master port, status.yml and probe.yml failed.

Each line: a cold deploy from the old model, status.yml, then the engine phase with an engine that
exits - rolled back to the engine of before, which serves again."""
import json
import os
import subprocess

import pytest

import lab_core
from conftest import BIN, LAB_HOSTS, ROOT, flat, old_model_only, run, ssh, still_serves

SPARK1, SPARK2 = LAB_HOSTS


def suite_site_packages():
    """The suite's virtualenv's site-packages (asked when a test needs it, not when pytest collects)."""
    return subprocess.run([os.path.join(BIN, "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


def controller(name):
    """ansible-playbook of the matrix's line `name` (build/lab-core/NAME, tests/lab_core.py; `make test`
    builds both before the lanes). community.docker comes from the suite's virtualenv (the `ansible`
    package there carries it)."""
    bin_dir, core = lab_core.ensure(name)
    collections = os.pathsep.join([os.path.join(ROOT, ".collections"), suite_site_packages()])

    def playbook(*args):
        return run([os.path.join(bin_dir, "ansible-playbook")] + list(args),
                   env={"ANSIBLE_COLLECTIONS_PATH": collections})
    version = playbook("--version").out
    assert "[core %s]" % core in version, version
    return playbook


def env_address(ip):
    env = ssh(ip, "cat /etc/sparkops/fabric.env").out
    return dict(line.split("=", 1) for line in env.splitlines() if "=" in line).get("RAY_NODE_IP_ADDRESS")


@pytest.mark.parametrize("line", ["oldest", "newest"])
def test_the_oldest_and_newest_ansible_core_deploy_report_and_roll_back(lab, line):
    playbook = controller(line)
    old_model_only()
    res = playbook("deploy.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    assert "sparkops deploy: SERVED" in res.out, res.out[-3000:]
    # each host's env file has its own fabric address (2.21 without the fix: the other host's, on both)
    assert (env_address(SPARK1), env_address(SPARK2)) == ("192.168.77.11", "192.168.77.12")
    out = flat(res.out)
    assert "spark1: enp1s0f1np1 192.168.77.11/24" in out and "spark2: enp1s0f1np1 192.168.77.12/24" in out
    res = playbook("playbooks/status.yml", "-i", "inventories/lab")
    assert res.returncode == 0, res.out[-3000:]
    assert "Last deploy (" in res.out and ": served;" in res.out, res.out[-3000:]
    res = playbook("deploy.yml", "-i", "inventories/lab", "--tags", "model_server", "-e", json.dumps({
        "model_server_executable": ["python3", "-c", "import sys; print('CUDA out of memory (pretend)'); sys.exit(7)"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine exited during start (container sparkops-model-server, exit code 7) on spark1" in out
    assert "Rolled back: the engine and Ray containers that served before this run were started again" in out
    assert still_serves()


@pytest.mark.fault(
    fault="a play of the user's own runs a run_once task before the deploy role (ansible-core 2.21)",
    inject="a play on the lab's cluster hosts: a debug task with run_once, then the role sparkops.inference.deploy",
    message="'the hosts of this play share one set of facts: spark1 reads spark2's (sparkops_fact_owner in its "
            "facts)... start your play with a task that sets a cacheable fact on every host'",
    left="what served before, untouched: nothing stopped, no container of ours replaced")
def test_a_play_whose_hosts_share_one_set_of_facts_is_stopped_in_preflight(lab, tmp_path):
    playbook = controller("newest")
    ids = dict((ip, ssh(ip, "docker ps -q --no-trunc | sort").out) for ip in LAB_HOSTS)
    play = tmp_path / "site.yml"
    play.write_text("- name: A play of the user's own\n  hosts: llm_cluster\n  gather_facts: false\n  tasks:\n"
                    "    - name: Something once, first\n      ansible.builtin.debug:\n        msg: hello\n"
                    "      run_once: true\n"
                    "    - name: The deploy\n      ansible.builtin.import_role:\n        name: sparkops.inference.deploy\n")
    res = playbook(str(play), "-i", "inventories/lab")
    assert res.returncode != 0
    out = flat(res.out)
    assert "the hosts of this play share one set of facts: " in out, out[-3000:]
    assert "reads spark" in out and "(sparkops_fact_owner in its facts)" in out
    assert "ansible.builtin.set_fact with cacheable: true, not run_once" in out
    assert "TASK [sparkops.inference.sparkops : Take the cluster's lock" not in res.out
    for ip in LAB_HOSTS:  # nothing stopped, nothing replaced
        assert ssh(ip, "docker ps -q --no-trunc | sort").out == ids[ip], ip
    assert still_serves()
