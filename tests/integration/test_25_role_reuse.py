"""The preflight role reused in a user's own playbook (no any_errors_fatal there)."""
import os
import shutil

from conftest import playbook


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
    assert "Gather GPU and memory facts" not in res.out


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


def test_a_foreign_inventory_names_its_groups_once_in_group_vars(lab, tmp_path):
    inv = foreign_inventory(tmp_path)
    res = playbook("deploy.yml", "-i", inv, env={"SPARKOPS_REPORT_DIR": str(tmp_path / "reports")})
    assert res.returncode == 0, res.out[-3000:]
    assert "sparkops deploy: SERVED" in " ".join(res.out.split())
    recap = dict((l.split()[0], l) for l in res.out.splitlines() if " : ok=" in l)
    assert set(recap) >= {"spark1", "spark2"}
    # the host outside the cluster (10.77.0.99 answers nothing) was never contacted: the first
    # play's run_once tasks may run in its name, on the controller
    assert "UNREACHABLE" not in res.out and all("unreachable=0" in l for l in recap.values()), recap
    assert "TASK [sparkops.inference.preflight" in res.out and "[printer]" not in res.out.split("PLAY [Deploy")[1].split("PLAY RECAP")[0]
    res = playbook("playbooks/status.yml", "-i", inv)
    assert res.returncode == 0, res.out[-3000:]
    assert "2 node(s) alive" in res.out
    assert "printer" not in res.out.split("PLAY [Status")[1].split("PLAY RECAP")[0]


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
