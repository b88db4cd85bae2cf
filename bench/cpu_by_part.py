"""Benchmark: where a deploy's CPU goes on the lab, by part, from the kernel's own accounting.

    .venv/bin/python bench/cpu_by_part.py [--runs 3] [--baseline REF] [--case cold|rerun]

The whole machine's /proc/stat holds everything that ran meanwhile, and three runs of this VM
spread by more than a change of a few percent. Control groups count each part alone: before the
runs, each lab host's own processes (found by their PID namespace) move into cpuacct groups of
their own - `lab-<host>-ssh` (sshd and every module it runs) and `lab-<host>-docker` (dockerd,
containerd and the shims); each container already has its own (`docker/<id>`, named over ssh
afterwards), and the controller is what this process waited for (ansible-playbook, its forks, ssh).
Cases alternate tree by tree as in bench/rerun.py (whose baseline worktree this shares):

- cold: `teardown.yml`, then `lab/lab old-model` (not counted), then `deploy.yml`;
- rerun: `deploy.yml` on what the previous deploy left.

Printed per tree: the median CPU-s of each part - controller, the head's and the workers' module
runs, each container (Ray head, Ray worker, engine, ...), the Docker daemons - and ours / baseline.
Needs root, cgroup v1's cpuacct at /sys/fs/cgroup/cpuacct (as on this machine) and the lab up.
Nothing here asserts a time.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rerun import BIN, ROOT, baseline_tree, controller_cpu, playbook, tree_env  # noqa: E402 pylint: disable=wrong-import-position

CPUACCT = "/sys/fs/cgroup/cpuacct"
LAB = os.environ.get("SPARKOPS_LAB_STATE", "/var/lib/sparkops-lab")
HOSTS = {"spark1": "10.77.0.11", "spark2": "10.77.0.12", "spark3": "10.77.0.13"}
SSH = ["ssh", "-i", os.path.join(LAB, "ssh", "id_ed25519"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
       "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=error", "-o", "ConnectTimeout=3"]


def host_inits():
    """{lab host: the PID of its init (tini running its sshd)}."""
    found = {}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[:3] == [b"tini", b"-s", b"--"]:
            for host in HOSTS:
                if b"/hosts/%s/" % host.encode() in b" ".join(argv):
                    found[host] = pid
    return found


def group_hosts():
    """Each lab host's own processes (not its containers') into lab-<host>-ssh / lab-<host>-docker."""
    inits = host_inits()
    if not inits:
        raise SystemExit("no lab host is running: lab/lab up first")
    for host, init in inits.items():
        ns = os.readlink("/proc/%s/ns/pid" % init)
        for part in ("ssh", "docker"):
            os.makedirs(os.path.join(CPUACCT, "lab-%s-%s" % (host, part)), exist_ok=True)
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                if os.readlink("/proc/%s/ns/pid" % pid) != ns:
                    continue
                with open("/proc/%s/cgroup" % pid) as f:
                    if any(":/docker/" in line for line in f):
                        continue  # a container's: counted by its own group
                with open("/proc/%s/comm" % pid) as f:
                    comm = f.read().strip()
                part = "docker" if comm in ("dockerd", "containerd") or comm.startswith("containerd-shim") else "ssh"
                with open(os.path.join(CPUACCT, "lab-%s-%s" % (host, part), "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                continue  # gone meanwhile
    return sorted(inits)


def usage():
    """{group: CPU-ns} for the lab hosts' groups and every container's."""
    out = {}
    paths = [os.path.join(CPUACCT, d) for d in os.listdir(CPUACCT) if d.startswith("lab-")]
    docker = os.path.join(CPUACCT, "docker")
    if os.path.isdir(docker):
        paths += [os.path.join(docker, d) for d in os.listdir(docker)]
    for path in paths:
        try:
            with open(os.path.join(path, "cpuacct.usage")) as f:
                out[os.path.basename(path)] = int(f.read())
        except (OSError, ValueError):
            continue
    return out


def container_names(hosts):
    names = {}
    for host in hosts:
        res = subprocess.run(SSH + ["root@" + HOSTS[host], "docker ps -a --no-trunc --format '{{.ID}} {{.Names}}'"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
        for line in res.stdout.splitlines():
            if " " in line:
                cid, name = line.split(" ", 1)
                names[cid] = "%s %s" % (host, name)
    return names


def measure(tree, case, hosts):
    """{part: CPU-s} of one deploy of `tree`."""
    if case == "cold":
        playbook(tree, "teardown.yml")
        subprocess.run([sys.executable, os.path.join(ROOT, "lab", "sparklab.py"), "old-model"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    before, seen, ctl = usage(), {}, controller_cpu()
    start = time.time()
    with tempfile.TemporaryFile(mode="w+") as log:
        run = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "-i", "inventories/lab", "deploy.yml"],
                               cwd=tree, env=tree_env(tree), stdout=log, stderr=subprocess.STDOUT, text=True)
        while run.poll() is None:  # a container's group goes with it: keep its last count
            for key, value in usage().items():
                seen[key] = max(seen.get(key, 0), value)
            time.sleep(0.2)
        log.seek(0)
        out = log.read()
    for key, value in usage().items():
        seen[key] = max(seen.get(key, 0), value)
    if run.returncode != 0:
        raise SystemExit("the deploy failed (%s):\n%s" % (tree, out[-3000:]))
    names = container_names(hosts)
    parts = collections.Counter({"controller": controller_cpu() - ctl})
    head = hosts[0]
    for key, value in seen.items():
        spent = (value - before.get(key, 0)) / 1e9
        if spent <= 0:
            continue
        if key.startswith("lab-"):
            host, part = key[4:].rsplit("-", 1)
            who = "head" if host == head else "workers"
            parts["module runs on the %s (sshd)" % who if part == "ssh" else "docker daemons"] += spent
        else:
            name = names.get(key, "containers since removed").split(" ", 1)[-1]
            parts["container " + name] += spent
    parts["wall seconds (not CPU)"] = time.time() - start
    return parts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="a commit to compare with, side by side")
    ap.add_argument("--case", choices=["cold", "rerun"], default="cold")
    args = ap.parse_args(argv)
    hosts = group_hosts()
    trees = [("this tree", ROOT)]
    if args.baseline:
        path, commit = baseline_tree(args.baseline)
        trees.insert(0, ("baseline " + commit, path))
    results = collections.defaultdict(list)
    for i in range(args.runs):
        for label, tree in (trees if i % 2 == 0 else trees[::-1]):
            parts = measure(tree, args.case, hosts)
            results[label].append(parts)
            print("run %d %-22s %s CPU-s in all" % (i + 1, label, round(sum(
                v for k, v in parts.items() if not k.startswith("wall")), 1)), flush=True)
    keys = sorted(set(k for runs in results.values() for parts in runs for k in parts),
                  key=lambda k: (k.startswith("wall"), k != "controller", k))
    labels = [label for label, dummy in trees]
    print("\n%s deploy, median CPU-s of each part over %d runs" % (args.case, args.runs))
    print("%-44s" % "part" + "".join("%22s" % label[:22] for label in labels) + ("   ours / baseline" if args.baseline else ""))
    medians = {}
    for key in keys + ["all (CPU)"]:
        row = []
        for label in labels:
            if key == "all (CPU)":
                values = [sum(v for k, v in p.items() if not k.startswith("wall")) for p in results[label]]
            else:
                values = [p.get(key, 0.0) for p in results[label]]
            row.append(statistics.median(values))
        medians[key] = row
        ratio = ("   %.2fx" % (row[-1] / row[0])) if args.baseline and row[0] else ""
        print("%-44s" % key[:44] + "".join("%22.2f" % v for v in row) + ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
