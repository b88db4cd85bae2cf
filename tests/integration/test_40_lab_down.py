"""After molecule's destroy (lab down): nothing of the lab is left on the machine."""
import os
import shutil
import subprocess
import tempfile

from conftest import LAB, run

STATE = "/var/lib/sparkops-lab"


def this_labs_processes():
    """The argv of every process whose /var/lib/sparkops-lab is this controller's (a second lab's
    processes see their own state directory there: lab/isolated.sh binds another over it)."""
    try:
        mine = os.stat(STATE)
    except FileNotFoundError:
        mine = None
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
            theirs = os.stat("/proc/%s/root%s" % (pid, STATE))
        except OSError:  # gone meanwhile, or it has no such directory: not the lab's
            continue
        if mine and (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino):
            found.append(argv)
    return found


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
    # no sshd/dockerd of a simulated host, no registry - of this lab: the machine's process list
    # also shows the lab of the other test lane (lab/isolated.sh), whose paths read the same
    procs = [" ".join(argv) for argv in this_labs_processes()]
    assert not [p for p in procs if "/var/lib/sparkops-lab/hosts/" in p or "docker-registry serve" in p], procs


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
