"""After molecule's destroy (lab down): nothing of the lab is left on the machine."""
import os
import shutil
import subprocess
import tempfile

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
        points = [line.split()[1] for line in f]
    # what the lab mounts (lab/isolated.sh's own mounts of a second lane are not the lab's)
    left = [p for p in points if p.startswith("/var/lib/sparkops-lab/") or p.startswith("/run/netns/spark")]
    assert not left, left
    procs = run(["ps", "-eo", "args"]).out
    assert "/var/lib/sparkops-lab/hosts/" not in procs  # no sshd/dockerd of a simulated host
    assert "docker-registry serve" not in procs


def test_lab_needs_root_and_says_so():
    # uid 65534 may not read the checkout (a clone under /root, which is 0700) nor the python3 on
    # PATH (pyenv under /root): a readable copy of the lab script, run by Debian's python3 from /
    where = tempfile.mkdtemp(prefix="sparklab-nobody-")
    try:
        os.chmod(where, 0o755)
        script = shutil.copy(LAB[1], os.path.join(where, "sparklab.py"))
        os.chmod(script, 0o644)
        res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "/usr/bin/python3", script, "up"], cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    finally:
        shutil.rmtree(where)
    assert res.returncode != 0
    assert "the lab needs root" in res.stdout and "found uid 65534" in res.stdout, res.stdout
