"""After molecule's destroy (lab down): nothing of the lab is left on the machine."""
import os
import subprocess

from conftest import LAB, run


def test_down_leaves_nothing_behind():
    res = run(LAB + ["down"])  # already down after molecule: must be harmless
    assert res.returncode == 0, res.out
    netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    assert not [n for n in netns if n.startswith("spark")], netns
    links = run(["ip", "-o", "link", "show"]).out
    assert "splab-" not in links and "spl1m" not in links
    assert "SPARKOPS-LAB" not in run(["iptables", "-w", "-S"]).out
    with open("/proc/self/mounts") as f:
        assert "sparkops-lab" not in f.read()
    procs = run(["ps", "-eo", "args"]).out
    assert "/var/lib/sparkops-lab/hosts/" not in procs  # no sshd/dockerd of a simulated host
    assert "docker-registry serve" not in procs


def test_lab_needs_root_and_says_so():
    # Debian's python3: the one on PATH may live under /root, which uid 65534 cannot read
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          "/usr/bin/python3", LAB[1], "up"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert res.returncode != 0
    assert "the lab needs root" in res.stdout and "found uid 65534" in res.stdout
