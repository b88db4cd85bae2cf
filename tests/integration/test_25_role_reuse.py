"""The roles reused as users do: in their own plays (no any_errors_fatal there), from the built
tarball with a foreign inventory and a fresh controller home."""
import json
import os
import re
import shutil
import tarfile
import tempfile

import pytest

from conftest import BIN, LAB_HOSTS, ROOT, flat, playbook, run, ssh, still_serves


def test_role_in_own_play_names_unreachable_hosts(lab, tmp_path):
    inv = tmp_path / "inv"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shutil.copytree(os.path.join(root, "inventories", "lab", "group_vars"), str(inv / "group_vars"))
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n    gpu_boxes:\n      children:\n"
        "        llm_head:\n          hosts:\n            spark1: {ansible_host: 10.77.0.11, fabric_address: 192.168.77.11}\n"
        "        llm_workers:\n          hosts:\n            ghost: {ansible_host: 10.77.0.99, fabric_address: 192.168.77.99}\n")
    play = tmp_path / "site.yml"
    play.write_text("- hosts: gpu_boxes\n  gather_facts: false\n  roles:\n    - sparkops.inference.preflight\n")
    res = playbook(str(play), "-i", str(inv), "-e",
                   "ansible_ssh_common_args='-o ConnectTimeout=3 -o UserKnownHostsFile=/var/lib/sparkops-lab/ssh/known_hosts'")
    assert res.returncode != 0
    assert "unreachable: ghost." in res.out
    # the others stop too: no task after the check that every host answered runs
    assert "Report what each host has" not in res.out and "cluster's lock" not in res.out


def foreign_inventory(tmp_path, cluster_group="gpu_nodes"):
    """The lab's two Sparks under the user's own group and host names, the head in a group of
    its own, a host outside the cluster that does not even answer, and the groups named once in
    group_vars/all (as the issue's users do)."""
    inv = tmp_path / "inv"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shutil.copytree(os.path.join(root, "inventories", "lab", "group_vars"), str(inv / "group_vars"))
    (inv / "group_vars" / "all" / "cluster.yml").write_text(
        "sparkops_cluster_group: %s\nsparkops_head_group: inference_head\n"
        "sparkops_worker_group: inference_workers\n" % cluster_group)
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n"
        "    gpu_nodes:\n      children:\n"
        "        inference_head:\n          hosts:\n            spark1: {ansible_host: 10.77.0.11, fabric_address: 192.168.77.11}\n"
        "        inference_workers:\n          hosts:\n            spark2: {ansible_host: 10.77.0.12, fabric_address: 192.168.77.12}\n"
        "    office:\n      hosts:\n        printer: {ansible_host: 10.77.0.99}\n")
    return str(inv)


def built_tarball(where):
    """The collection as Galaxy would ship it: `ansible-galaxy collection build` of the checkout."""
    res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(where), ROOT])
    assert res.returncode == 0, res.out
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        version = re.search(r"^version: (\S+)", f.read(), re.M).group(1)
    tarball = os.path.join(str(where), "sparkops-inference-%s.tar.gz" % version)
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    for wanted in ("MANIFEST.json", "CHANGELOG.rst", "meta/runtime.yml", "playbooks/deploy.yml",
                   "plugins/modules/serve_check.py", "roles/model_server/tasks/main.yml", "docs/faults.md"):
        assert wanted in names, wanted
    lab_only = ("lab/", "bench/", "molecule/", "build/", "tests/integration/", "tests/parsers/", "inventories/lab/",
                ".ci/", ".venv/", ".collections/", "Makefile", "ansible.cfg")
    assert not [n for n in names if n.startswith(lab_only) or "__pycache__" in n], \
        [n for n in names if n.startswith(lab_only)][:10]
    return tarball


def test_the_tarball_deploys_from_a_foreign_inventory_without_the_project_and_a_fresh_home(lab, tmp_path):
    """As a new user: the built tarball installed into a fresh collections path, run from a
    directory with no ansible.cfg (so no pipelining, no forks setting), a foreign inventory, a
    controller home that has never seen the cluster; a second run changes nothing."""
    colls = tmp_path / "collections"
    work = tmp_path / "work"
    work.mkdir()
    inv = foreign_inventory(work)
    home = tempfile.mkdtemp(prefix="h", dir="/tmp")  # short: ssh's ControlPath lives under it
    # community.docker comes from the `ansible` package's site-packages (collections_scan_sys_path)
    env = {"HOME": home, "ANSIBLE_COLLECTIONS_PATH": str(colls), "ANSIBLE_CONFIG": "",
           "SPARKOPS_REPORT_DIR": str(tmp_path / "reports")}
    try:
        res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(colls),
                   built_tarball(tmp_path / "dist")], env=env, cwd=str(work))
        assert res.returncode == 0, res.out
        assert (colls / "ansible_collections" / "sparkops" / "inference" / "MANIFEST.json").is_file(), res.out
        res = playbook("sparkops.inference.deploy", "-i", inv, env=env, cwd=str(work))
        assert res.returncode == 0, res.out[-3000:]
        assert "sparkops deploy: SERVED" in " ".join(res.out.split())
        version = playbook("--version", env=env, cwd=str(work)).out
        assert "config file = None" in version and "ansible collection location = %s" % colls in version, version
        recap = dict((l.split()[0], l) for l in res.out.splitlines() if " : ok=" in l)
        assert set(recap) >= {"spark1", "spark2"}
        # the host outside the cluster (10.77.0.99 answers nothing) was never contacted: the first
        # play's run_once tasks may run in its name, on the controller
        assert "UNREACHABLE" not in res.out and all("unreachable=0" in l for l in recap.values()), recap
        assert "TASK [sparkops.inference.preflight" in res.out
        assert "[printer]" not in res.out.split("PLAY [Deploy")[1].split("PLAY RECAP")[0]
        again = playbook("sparkops.inference.deploy", "-i", inv, env=env, cwd=str(work))
        assert again.returncode == 0, again.out[-3000:]
        recap = [l for l in again.out.splitlines() if " : ok=" in l and l.split()[0] in ("spark1", "spark2")]
        assert len(recap) == 2 and all(" changed=0 " in l for l in recap), recap
        res = playbook("sparkops.inference.status", "-i", inv, env=env, cwd=str(work))
        assert res.returncode == 0, res.out[-3000:]
        assert "2 node(s) alive" in res.out
        assert "printer" not in res.out.split("PLAY [Status")[1].split("PLAY RECAP")[0]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_cluster_group_that_names_no_host_fails_naming_the_variable(lab, tmp_path):
    inv = foreign_inventory(tmp_path, cluster_group="gpu_noeds")
    for play in ("deploy.yml", "playbooks/teardown.yml", "playbooks/status.yml"):
        res = playbook(play, "-i", inv)
        assert res.returncode != 0, play
        out = " ".join(res.out.split())
        assert "sparkops_cluster_group is gpu_noeds: the inventory has no group of that name (its groups: gpu_nodes, " \
               "inference_head, inference_workers, office). Set sparkops_cluster_group" in out, out[-1500:]


def test_the_cluster_keeps_the_inventory_order_of_its_hosts(tmp_path):
    """Messages and the report list hosts in the play's order; targets.yml must keep the
    inventory's (a set in between reordered them from run to run: 'on spark2, spark1'). Nothing
    is contacted: the play after targets.yml only prints, on the controller."""
    names = ["node%02d" % i for i in (7, 3, 11, 1, 9, 5, 2, 8)]
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    llm_cluster:\n      hosts:\n%s    spare:\n      hosts:\n        node99: {}\n"
                   % "".join("        %s: {ansible_connection: local}\n" % n for n in names))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    play = tmp_path / "order.yml"
    play.write_text("- import_playbook: %s/playbooks/targets.yml\n"
                    "- hosts: sparkops_cluster\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.debug:\n        msg: \"ORDER {{ ansible_play_hosts_all | join(',') }}\"\n"
                    "      run_once: true\n" % root)
    for dummy in range(3):
        res = playbook(str(play), "-i", str(inv), "--forks", "8")
        assert res.returncode == 0, res.out[-2000:]
        assert "ORDER %s" % ",".join(names) in res.out, res.out[-2000:]


def running():
    """The containers running on each lab host (what a refused play must leave as it was)."""
    return dict((ip, sorted(ssh(ip, "docker ps --format '{{.Names}}'").out.split())) for ip in LAB_HOSTS)


def own_play(tmp_path, inv, *extra, hosts="gpu_nodes"):
    """The user's own play: their group, no keyword of ours, the role that wraps the deploy."""
    play = tmp_path / "site.yml"
    play.write_text("- name: Our inference hosts\n  hosts: %s\n  gather_facts: false\n"
                    "  roles:\n    - sparkops.inference.deploy\n" % hosts)
    return playbook(str(play), "-i", inv, *extra, env={"SPARKOPS_REPORT_DIR": str(tmp_path / "reports")})


@pytest.mark.fault(
    fault="a host fails preflight in the user's own play (no any_errors_fatal in it)",
    inject="preflight_min_free_disk_gib 100000 for spark2 only, the role sparkops.inference.deploy in a play of ours",
    message="spark2: 'only N GiB free under /var/lib/docker: expected at least 100000.0 GiB'; nothing after preflight runs on spark1",
    left='whatever ran before, untouched')
def test_in_a_play_of_their_own_one_host_failing_preflight_stops_every_host(lab, tmp_path):
    inv = foreign_inventory(tmp_path)
    host_vars = tmp_path / "inv" / "host_vars"
    host_vars.mkdir()
    (host_vars / "spark2.yml").write_text("preflight_min_free_disk_gib: 100000\n")
    before = running()
    res = own_play(tmp_path, inv)
    assert res.returncode != 0
    out = flat(res.out)
    assert "fatal: [spark2]" in out, out[-2000:]
    assert "expected at least 100000.0 GiB for the engine images (preflight_min_free_disk_gib)" in out, out[-2000:]
    # any_errors_fatal of the role's block: spark1 went no further either
    assert "TASK [sparkops.inference.sparkops : Take the cluster's lock" not in res.out
    assert "TASK [sparkops.inference.engine_image" not in res.out
    assert running() == before


@pytest.mark.fault(
    fault="the new engine exits during start in the user's own play",
    inject="an engine that exits 7, the role sparkops.inference.deploy in a play of ours on a serving cluster",
    message="'the engine exited during start (container sparkops-model-server, exit code 7) on spark1', 'Rolled back'",
    left='the engine that served before, serving again')
def test_in_a_play_of_their_own_a_failed_engine_is_rolled_back(lab, tmp_path):
    inv = foreign_inventory(tmp_path)
    res = own_play(tmp_path, inv)
    assert res.returncode == 0, res.out[-3000:]
    assert "sparkops deploy: SERVED" in flat(res.out) and still_serves()
    res = own_play(tmp_path, inv, "-e", json.dumps({"model_server_executable": ["python3", "-c", "import sys; sys.exit(7)"]}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "the engine exited during start (container sparkops-model-server, exit code 7) on spark1" in out
    assert "Rolled back: the engine and Ray containers that served before this run were started again" in out
    assert still_serves()


@pytest.mark.fault(
    fault="the user's own play runs the deploy role on a host that is neither head nor worker",
    inject="the role sparkops.inference.deploy in a play on `all` of an inventory that also holds printer",
    message="'the play runs on printer, which is neither the head (sparkops_head_group: inference_head) nor a worker'",
    left='whatever ran before, untouched (printer never contacted)')
def test_a_play_host_outside_the_cluster_is_refused_before_anything_runs(lab, tmp_path):
    before = running()
    res = own_play(tmp_path, foreign_inventory(tmp_path), hosts="all")
    assert res.returncode != 0
    out = flat(res.out)
    assert "the play runs on printer, which is neither the head (sparkops_head_group: inference_head) nor a " \
           "worker (sparkops_worker_group: inference_workers)" in out, out[-2000:]
    assert "UNREACHABLE" not in res.out  # printer (10.77.0.99 answers nothing) was never contacted
    assert "TASK [sparkops.inference.preflight : Check this host's prerequisites" not in res.out
    assert running() == before
