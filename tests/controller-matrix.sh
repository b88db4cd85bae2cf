#!/usr/bin/env bash
# Unit tests and ansible-test sanity on each controller version of tests/controller-matrix.txt, each
# in its own virtualenv under build/matrix/NAME (kept: a re-run installs nothing).
# Usage: tests/controller-matrix.sh [NAME...]   (default: every line of the matrix)
# Exit: 0 all passed, 1 a line failed, 3 none failed but a line's Python is not on this machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pytest_pin=$(grep -oP '^pytest==\S+' requirements-test.txt)

find_python() {  # python3.X on PATH, else pyenv's, else nothing
    local want=$1 p
    for p in "python$want" "$HOME/.pyenv/versions/$want"*/bin/"python$want" /root/.pyenv/versions/"$want"*/bin/"python$want"; do
        if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import venv, ensurepip' 2>/dev/null; then
            command -v "$p"
            return 0
        fi
    done
    return 1
}

status=0
missing=0
while read -r name core py; do
    case "$name" in ''|'#'*) continue ;; esac
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
    echo "== $name: ansible-core $core on Python $py"
    if ! python=$(find_python "$py"); then
        echo "MISSING: $name: Python $py not found (looked for python$py on PATH and under ~/.pyenv/versions);" \
             "install it (Debian: apt-get install python$py python$py-venv) or drop the line from" \
             "tests/controller-matrix.txt" >&2
        missing=1
        continue
    fi
    venv="$root/build/matrix/$name"
    if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$core $py $pytest_pin" ]; then
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$core" "$pytest_pin"
        echo "$core $py $pytest_pin" >"$venv/.installed"
    fi
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
