#!/usr/bin/env bash
# Run ansible-test (sanity or units) on a copy of the collection laid out as
# ansible_collections/sparkops/inference, as ansible-test requires.
# Usage: tests/ansible-test.sh sanity|units [ansible-test args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${ANSIBLE_TEST_BUILD:-$root/build/ansible-test}"
dest="$build/ansible_collections/sparkops/inference"
python=${PYTHON:-python3}
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test bootstraps pip from a download this machine cannot reach: give it a
# local script that bootstraps pip with ensurepip instead (same result, no network).
at=$("$python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
pip_version=$(grep -oP "pip='\K[0-9.]+" "$at/_internal/python_requirements.py" | head -1)
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
cat >"$cache/get_pip_${pip_version//./_}.py" <<'PY'
# Local stand-in for get-pip.py (its download is unreachable here): bootstrap pip with
# ensurepip, then install what get-pip would have (e.g. pip==24.2) from the package index.
import subprocess
import sys

# in a child process: ensurepip sets PIP_CONFIG_FILE=/dev/null in its own environment,
# which would hide the machine's pip configuration (index, certificates) from the install
if subprocess.call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"]):
    sys.exit(1)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args) if args else 0)
PY

rm -rf "$build"
mkdir -p "$dest"
cd "$root"
git ls-files -co --exclude-standard -z | grep -zv -e '^\.collections/' -e '^build/' \
    | xargs -0 cp --parents -t "$dest"
cd "$dest"
git init -q && git add -A  # ansible-test lists the files git tracks
kind=$1
shift
exec ansible-test "$kind" --python "$pyver" --color no "$@"
