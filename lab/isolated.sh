#!/usr/bin/env bash
# lab/isolated.sh NAME COMMAND [ARG...]: run COMMAND as a second controller with a lab of its own.
#
# The lab's addresses, bridges, namespace names and paths are fixed (10.77.0.0/24, spark1,
# /var/lib/sparkops-lab, ...), and the tests name them. To run two labs side by side (the test
# suite's second lane, see tests/integration/conftest.py), COMMAND runs in a network namespace
# and a mount namespace of its own, where every one of those names is free again:
#   - its own network stack: the lab's bridges, iptables chain and addresses, loopback up;
#   - its own /run/netns (a tmpfs), so `ip netns` sees only this lab's hosts;
#   - /var/lib/sparkops-lab is /var/lib/sparkops-lab.NAME (this lab's state, host disks, ssh key);
#   - the image cache's registry storage is an overlay: this lab reads the images built once for
#     both, and what it pushes stays its own;
#   - ~/.ansible/cp is a tmpfs: ssh's ControlPersist sockets are named after host, port and user,
#     which are the same in both labs; a shared socket would run one lab's tasks on the other's host.
# When COMMAND ends, this lab is taken down (its hosts' processes would outlive the namespace).
set -euo pipefail
if [ "${1:-}" != "--inside" ]; then
    [ $# -ge 2 ] || { echo "usage: $0 NAME COMMAND [ARG...]" >&2; exit 2; }
    [ "$(id -u)" = 0 ] || { echo "lab/isolated.sh: needs root (namespaces, mounts); found uid $(id -u)" >&2; exit 2; }
    exec unshare --net --mount --propagation private -- "$0" --inside "$@"
fi
shift
name=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
state=/var/lib/sparkops-lab
cache=${SPARKOPS_LAB_CACHE:-/var/cache/sparkops-lab}
own=$state.$name
[[ "$name" =~ ^[a-z0-9]+$ ]] || { echo "lab/isolated.sh: NAME must be lower-case letters and digits; found '$name'" >&2; exit 2; }

ip link set lo up
mount -t sysfs sysfs /sys  # /sys/class/net of this network namespace
mkdir -p /run/netns "$state" "$own/state" "$own/registry-upper" "$own/registry-work" "$cache/registry" \
    "$HOME/.ansible/cp"
# the copies of the first lab's namespace mounts (taken with this mount namespace) go: they would
# show in this lab's mount table and keep the first lab's namespaces alive after it deletes them
umount -R -l /run/netns 2>/dev/null || true
mount -t tmpfs -o mode=755 lab-netns /run/netns
mount --bind "$own/state" "$state"
mount -t overlay lab-registry -o "lowerdir=$cache/registry,upperdir=$own/registry-upper,workdir=$own/registry-work" \
    "$cache/registry"
mount -t tmpfs -o mode=700 lab-ssh-cp "$HOME/.ansible/cp"
export SPARKOPS_LAB_ISOLATED=$name

status=0
"$@" || status=$?
"${PYTHON:-python3}" "$here/sparklab.py" down >&2 || true
exit $status
