#!/usr/bin/env bash
# PID 1 of one simulated Spark (lab only).
#
# sparklab.py starts this as
#   nsenter --net=/run/netns/NAME unshare --mount --uts --pid --fork --kill-child
#           --mount-proc --propagation private host-init.sh NAME HOSTDIR
# so it already lives in the host's own network namespace and in fresh mount,
# UTS and PID namespaces. It gives the host its own /sys (so /sys/class/net
# shows the host's interfaces), cgroup hierarchies, /run and /tmp, per-host
# writable /etc /opt /root /usr/local /var/log (overlays over the machine's; root's shell
# start-up files a fresh host's),
# per-host /var/lib/{docker,containerd,sparkops}, a hostname, then starts dockerd and
# finally becomes tini -> sshd. Killing the outer unshare takes all of it down.
set -euo pipefail

name=$1
hostdir=$2

# cgroup hierarchies as the machine has them (read before /sys is replaced)
mapfile -t cgroup_mounts < <(awk '$3 == "cgroup" || $3 == "cgroup2" {print $3 " " $2 " " $4}' /proc/self/mounts)

mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup
for entry in "${cgroup_mounts[@]}"; do
    read -r fstype mountpoint options <<<"$entry"
    mkdir -p "$mountpoint"
    # keep only the controller/name options; rw/relatime are implied
    opts=$(tr ',' '\n' <<<"$options" | grep -vE '^(rw|ro|relatime|nosuid|nodev|noexec|seclabel)$' | paste -sd, - || true)
    if [ "$fstype" = cgroup2 ]; then
        mount -t cgroup2 cgroup2 "$mountpoint"
    else
        mount -t cgroup -o "${opts:-none}" cgroup "$mountpoint"
    fi
done

mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
for d in etc opt root usr/local var/log; do
    upper="$hostdir/upper/$d"
    work="$hostdir/work/$d"
    mkdir -p "$upper" "$work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$upper,workdir=$work" "/$d"
done
# root's shell start-up files as a freshly installed Spark has them (Debian's skeleton: a
# non-interactive shell returns at once), not this machine's: a controller's own ~/.bashrc
# (pyenv init, cargo, ...) would run in every ssh command and module call of the lab - on this
# machine that doubled the CPU of a module call and made a raw command 4x dearer
for f in .bashrc .profile; do
    if [ -f "/etc/skel/$f" ]; then
        cp "/etc/skel/$f" "/root/$f"
    else
        rm -f "/root/$f"
    fi
done
# per-host state under /var/lib: Docker's, containerd's and the collection's own records
for d in docker containerd sparkops; do
    mkdir -p "$hostdir/$d" "/var/lib/$d"
    mount --bind "$hostdir/$d" "/var/lib/$d"
done
# a lab fault (lab/lab small-disk HOST MIB): Docker's image stores on a small, empty tmpfs - a
# disk that fills up during a pull; the host's own store is untouched underneath
if [ -f "$hostdir/small-disk-mib" ]; then
    for d in docker containerd; do
        mount -t tmpfs -o size="$(cat "$hostdir/small-disk-mib")m" small-disk "/var/lib/$d"
    done
fi

hostname "$name"
mkdir -p /run/sshd /run/lock
ip link set lo up

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# A host of `lab up --docker26`: its dockerd and containerd come from the directory named in
# docker-bin (a current Docker, the containerd image store), with the lowest API it accepts.
docker_env=()
if [ -f "$hostdir/docker-bin" ]; then
    read -r docker_bin min_api <"$hostdir/docker-bin"
    docker_env=("PATH=$docker_bin:$PATH" "DOCKER_MIN_API_VERSION=$min_api")
fi
# dockerd (with its own managed containerd); also listens on a socket in the
# host directory so the controller can reach it without ssh.
env "${docker_env[@]}" dockerd --config-file /etc/docker/daemon.json \
    -H unix:///run/docker.sock -H "unix://$hostdir/docker.sock" \
    >/var/log/dockerd.log 2>&1 &

exec tini -s -- /usr/sbin/sshd -D -e -f "$hostdir/ssh/sshd_config"
