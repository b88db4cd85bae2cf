"""The ansible-core versions of tests/controller-matrix.txt (oldest, newest), each in a virtualenv of
its own with the pytest of requirements-test.txt: the lab tests deploy with them
(tests/integration/test_21_controller_matrix.py) and tests/controller-matrix.sh runs the unit tests
and ansible-test sanity in them. The one place that finds each line's Python and builds its
virtualenv.

    python3 tests/lab_core.py             # makes build/lab-core/NAME for each line (kept: a re-run installs nothing)
    python3 tests/lab_core.py --bin NAME  # the same for one line, then prints its bin directory;
                                          # exit 3 when the line's Python is not on this machine

`make test` runs this before the lanes start: the second lane has a network namespace of its own
(lab/isolated.sh), where the package index cannot be reached, and the matrix's static check runs
beside the lanes - both find every virtualenv made."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("oldest", "newest")


class MissingPython(Exception):
    pass


def pytest_pin():
    """The pytest requirement of requirements-test.txt (pytest==X), the matrix's test runner."""
    with open(os.path.join(ROOT, "requirements-test.txt")) as f:
        for line in f:
            if line.startswith("pytest=="):
                return line.split()[0]
    raise SystemExit("requirements-test.txt pins no pytest (pytest==X)")


def matrix_line(name):
    """(ansible-core, python) of a line of tests/controller-matrix.txt."""
    with open(os.path.join(ROOT, "tests", "controller-matrix.txt")) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == name:
                return parts[1], parts[2]
    raise SystemExit("tests/controller-matrix.txt has no line %r" % name)


def find_python(version):
    """python<version> that can make a virtualenv: the distribution's (built with PGO and LTO, as the
    Makefile's PYTHON), else on PATH, else pyenv's (as tests/controller-matrix.sh looks)."""
    candidates = ["/usr/bin/python%s" % version, "python%s" % version] + sorted(glob.glob(os.path.expanduser(
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
    pin = pytest_pin()
    venv = os.path.join(ROOT, "build", "lab-core", name)
    marker = os.path.join(venv, ".installed")
    wanted = " ".join((core, py, pin))
    if os.path.exists(marker):
        with open(marker) as f:
            if f.read() == wanted:
                return os.path.join(venv, "bin"), core
    python = find_python(py)
    if not python:
        raise MissingPython("Python %s (tests/controller-matrix.txt's %s line) is not on this machine: install it "
                            "(Debian: apt-get install python%s python%s-venv) or change the line" % (py, name, py, py))
    subprocess.run([python, "-m", "venv", "--clear", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check",
                    "ansible-core==%s" % core, pin], check=True, timeout=900)
    with open(marker, "w") as f:
        f.write(wanted)
    return os.path.join(venv, "bin"), core


def main(argv):
    if argv[:1] == ["--bin"] and len(argv) == 2:
        try:
            print(ensure(argv[1])[0])
        except MissingPython as exc:
            sys.stderr.write("MISSING: %s\n" % exc)
            return 3
        return 0
    if argv:
        raise SystemExit("usage: tests/lab_core.py [--bin NAME]")
    for line in NAMES:
        try:
            print("%s: %s (ansible-core %s)" % ((line,) + ensure(line)))
        except MissingPython as exc:
            raise SystemExit(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
