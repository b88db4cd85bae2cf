"""The ansible-core versions of tests/controller-matrix.txt (oldest, newest) in virtualenvs of their
own, for the lab tests that deploy with them (tests/integration/test_21_controller_matrix.py).

    python3 tests/lab_core.py        # makes build/lab-core/NAME for each line (kept: a re-run installs nothing)

`make test` runs this before the lanes start: the second lane has a network namespace of its own
(lab/isolated.sh), where the package index cannot be reached. Not the matrix's own virtualenvs
(build/matrix/NAME): the static checks may be building those while the lanes run."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("oldest", "newest")


def matrix_line(name):
    """(ansible-core, python) of a line of tests/controller-matrix.txt."""
    with open(os.path.join(ROOT, "tests", "controller-matrix.txt")) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == name:
                return parts[1], parts[2]
    raise SystemExit("tests/controller-matrix.txt has no line %r" % name)


def find_python(version):
    """python<version> that can make a virtualenv: on PATH, else pyenv's (as tests/controller-matrix.sh looks)."""
    candidates = ["python%s" % version] + sorted(glob.glob(os.path.expanduser(
        "~/.pyenv/versions/%s*/bin/python%s" % (version, version))))
    for python in candidates:
        try:
            if subprocess.run([python, "-c", "import venv, ensurepip"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode == 0:
                return python
        except OSError:
            continue
    return None


def ensure(name):
    """(the virtualenv's bin directory, ansible-core version) of the matrix's line `name`; builds it
    when it is not there."""
    core, py = matrix_line(name)
    venv = os.path.join(ROOT, "build", "lab-core", name)
    marker = os.path.join(venv, ".installed")
    if os.path.exists(marker):
        with open(marker) as f:
            if f.read() == core:
                return os.path.join(venv, "bin"), core
    python = find_python(py)
    if not python:
        raise SystemExit("Python %s (tests/controller-matrix.txt's %s line) is not on this machine: install it "
                         "(Debian: apt-get install python%s python%s-venv) or change the line" % (py, name, py, py))
    subprocess.run([python, "-m", "venv", "--clear", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check",
                    "ansible-core==%s" % core], check=True, timeout=900)
    with open(marker, "w") as f:
        f.write(core)
    return os.path.join(venv, "bin"), core


if __name__ == "__main__":
    for line in NAMES:
        print("%s: %s (ansible-core %s)" % ((line,) + ensure(line)))
    sys.exit(0)
