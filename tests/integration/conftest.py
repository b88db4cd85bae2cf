"""Integration tests: real ansible-core, real sshd/dockerd on the lab's simulated Sparks."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
LAB = [sys.executable, os.path.join(ROOT, "lab", "sparklab.py")]
INVENTORIES = os.path.join(ROOT, "tests", "integration", "inventories")


def run(argv, timeout=900, env=None, cwd=ROOT):
    """Run a command from the repository root; stdout and stderr together in .out."""
    full_env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", NO_COLOR="1",
                    PY_COLORS="0",
                    ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
                    PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    full_env.update(env or {})
    res = subprocess.run(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    res.out = res.stdout
    return res


SSH = ["ssh", "-i", "/var/lib/sparkops-lab/ssh/id_ed25519", "-o", "BatchMode=yes",
       "-o", "UserKnownHostsFile=/var/lib/sparkops-lab/ssh/known_hosts"]


def ssh(host_ip, command):
    """A command on a simulated Spark, over its real sshd."""
    return run(SSH + ["root@" + host_ip, command])


def playbook(*args, **kw):
    return run([os.path.join(BIN, "ansible-playbook")] + list(args), **kw)


@pytest.fixture(scope="session")
def lab():
    """The lab, up (idempotent: fast when it already runs)."""
    res = run(LAB + ["up"])
    assert res.returncode == 0, res.out
    return res
