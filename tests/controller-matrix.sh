#!/usr/bin/env bash
# Unit tests and ansible-test sanity on each controller version of tests/controller-matrix.txt, each
# in its own virtualenv under build/lab-core/NAME (tests/lab_core.py makes it; kept: a re-run installs nothing).
# Usage: tests/controller-matrix.sh [NAME...]   (default: every line of the matrix)
# Exit: 0 all passed, 1 a line failed, 3 none failed but a line's Python is not on this machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
missing=0
while read -r name core py; do
    case "$name" in ''|'#'*) continue ;; esac
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
    echo "== $name: ansible-core $core on Python $py"
    # the line's virtualenv (build/lab-core/NAME: ansible-core and pytest), made by tests/lab_core.py -
    # the one place that finds its Python - where make test has not made it before the lanes
    set +e
    bin=$(python3 tests/lab_core.py --bin "$name")
    made=$?
    set -e
    if [ $made -eq 3 ]; then
        missing=1
        continue
    elif [ $made -ne 0 ]; then
        echo "ERROR: $name: no virtualenv for ansible-core $core on Python $py (tests/lab_core.py --bin $name)" >&2
        status=1
        continue
    fi
    venv=$(dirname "$bin")
    got=$("$venv/bin/python" -c 'import ansible, sys; print(ansible.__version__, "%d.%d" % sys.version_info[:2])')
    if [ "$got" != "$core $py" ]; then
        echo "ERROR: $name: the virtualenv has ansible-core/Python $got, wanted $core $py" >&2
        status=1
        continue
    fi
    if ! ANSIBLE_COLLECTIONS_PATH="$root/.collections" "$venv/bin/pytest" -q -p no:cacheprovider tests/unit; then
        echo "ERROR: $name: unit tests failed on ansible-core $core, Python $py" >&2
        status=1
    fi
    if ! PATH="$venv/bin:$PATH" PYTHON="$venv/bin/python" ANSIBLE_TEST_BUILD="$root/build/matrix/$name-test" \
            tests/ansible-test.sh sanity; then
        echo "ERROR: $name: ansible-test sanity failed on ansible-core $core, Python $py" >&2
        status=1
    fi
    rm -rf "$root/build/matrix/$name-test"
done <tests/controller-matrix.txt
# 3: every line that could run passed, but a Python of the matrix is not on this machine
[ $status -eq 0 ] && [ $missing -eq 1 ] && exit 3
exit $status
