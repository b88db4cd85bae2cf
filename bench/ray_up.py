"""Benchmark: bring the Ray cluster up on the lab, the hand-run way and with the collection.

    .venv/bin/python bench/ray_up.py [--runs 3]

Needs the lab up (`lab/lab up [--hosts N]`; with N != 2 it uses the inventory the lab writes). The engine image is pulled on every host first, so
every case starts with the image present. Cases alternate run by run (hand, role, hand, role...)
so that the machine's load hits them alike. Printed: a table of wall-clock seconds (median, min,
max) and ratios. Nothing here asserts a time: the numbers are for people to read.

Baseline, "the bare hand-run recipe": what a person types, host by host over ssh -- `docker run
... ray start --head --block ...` on the head, `docker run ... ray start --address ...` on each
worker -- then `ray status` on the head until every node is listed (no token, no checks).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_DIR = os.environ.get("SPARKOPS_LAB_DIR", "/var/lib/sparkops-lab")
KEY = os.path.join(LAB_DIR, "ssh", "id_ed25519")
KNOWN = os.path.join(LAB_DIR, "ssh", "known_hosts")
IMAGE = "10.77.0.5:5000/sparkops/lab-engine:ray-2.60.0"
BIN = os.path.dirname(sys.executable)


def ssh(ip, command, check=True):
    res = subprocess.run(["ssh", "-i", KEY, "-o", "UserKnownHostsFile=" + KNOWN, "-o", "BatchMode=yes",
                          "root@" + ip, command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=False)
    if check and res.returncode != 0:
        raise SystemExit("ssh %s %r failed: %s" % (ip, command, res.stdout))
    return res.stdout


def lab_hosts():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "lab", "sparklab.py"), "status", "--json"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    hosts = json.loads(out)["hosts"]
    if not hosts or not all(h["sshd"] and h["docker"] for h in hosts):
        raise SystemExit("the lab is not up: run lab/lab up first")
    return hosts


def clean(hosts):
    for h in hosts:
        ssh(h["mgmt"], "docker rm -f hand-ray sparkops-model-server sparkops-ray-head sparkops-ray-worker >/dev/null 2>&1 || true",
            check=False)


def hand_recipe(hosts):
    head = hosts[0]
    t0 = time.monotonic()
    ssh(head["mgmt"], "docker run -d --name hand-ray --network host --gpus all %s ray start --head --block "
        "--port 6379 --node-ip-address %s --num-gpus 1 --include-dashboard false --disable-usage-stats"
        % (IMAGE, head["fabric"]))
    for w in hosts[1:]:
        ssh(w["mgmt"], "docker run -d --name hand-ray --network host --gpus all %s ray start --block "
            "--address %s:6379 --node-ip-address %s --num-gpus 1 --disable-usage-stats"
            % (IMAGE, head["fabric"], w["fabric"]))
    while True:
        out = ssh(head["mgmt"], "docker exec hand-ray ray status", check=False)
        if out.count(" node_") == len(hosts):
            return time.monotonic() - t0
        if time.monotonic() - t0 > 180:
            raise SystemExit("hand recipe: cluster not up after 180 s:\n" + out)
        time.sleep(0.5)


def playbook(name, inventory, *extra):
    t0 = time.monotonic()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), name, "-i", inventory] + list(extra),
                         cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    took = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, res.stdout[-3000:]))
    changed = sum(int(part.split("=")[1]) for line in res.stdout.splitlines() if "changed=" in line
                  for part in line.split() if part.startswith("changed="))
    return took, changed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    hosts = lab_hosts()
    inventory = os.path.join(ROOT, "inventories", "lab") if len(hosts) == 2 else os.path.join(LAB_DIR, "inventory")
    for h in hosts:  # every case starts with the image present
        ssh(h["mgmt"], "docker pull -q %s >/dev/null" % IMAGE)
    results = {k: [] for k in ("hand", "ray_cold", "ray_rerun", "deploy_cold", "deploy_rerun")}
    rerun_changed = []
    for run in range(args.runs):
        clean(hosts)
        results["hand"].append(hand_recipe(hosts))
        clean(hosts)
        results["ray_cold"].append(playbook("playbooks/ray.yml", inventory)[0])
        took, changed = playbook("playbooks/ray.yml", inventory)
        results["ray_rerun"].append(took)
        rerun_changed.append(changed)
        clean(hosts)
        results["deploy_cold"].append(playbook("deploy.yml", inventory)[0])
        took, changed = playbook("deploy.yml", inventory)
        results["deploy_rerun"].append(took)
        rerun_changed.append(changed)
        print("run %d/%d done" % (run + 1, args.runs), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in results.items()}
    rows = [
        ("hand", "hand-run recipe: docker run + ray start over ssh, host by host", med["hand"], "1.00 (baseline)"),
        ("ray_cold", "playbooks/ray.yml, containers absent (token auth, checks)", med["ray_cold"],
         "%.2f x hand recipe" % (med["ray_cold"] / med["hand"])),
        ("ray_rerun", "playbooks/ray.yml again, nothing to change", med["ray_rerun"],
         "%.2f x its cold run" % (med["ray_rerun"] / med["ray_cold"])),
        ("deploy_cold", "deploy.yml (all phases, images present), containers absent", med["deploy_cold"],
         "%.2f x hand recipe" % (med["deploy_cold"] / med["hand"])),
        ("deploy_rerun", "deploy.yml again, nothing to change", med["deploy_rerun"],
         "%.2f x its cold run" % (med["deploy_rerun"] / med["deploy_cold"])),
    ]
    print("\nRay cluster bring-up on the lab: %d hosts, image present, %d runs each (wall-clock seconds)\n"
          % (len(hosts), args.runs))
    print("%-72s %7s %7s %7s  %s" % ("case", "median", "min", "max", "ratio"))
    for key, label, m, ratio in rows:
        print("%-72s %7.2f %7.2f %7.2f  %s" % (label, m, min(results[key]), max(results[key]), ratio))
    print("\nchanged tasks in the re-runs: %s" % rerun_changed)
    clean(hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
