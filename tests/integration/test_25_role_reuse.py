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
