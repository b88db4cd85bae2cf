"""Benchmark: how the deploy grows with the number of hosts, against the hand-run recipe.

    .venv/bin/python bench/scale.py [--hosts 2,4,8] [--runs 1] [--png build/bench/scale.png]

Brings the lab up at each size (`lab/lab up --hosts N`: a lab host is a network namespace with
its own sshd and dockerd, sharing the machine's /usr), and at each measures, images present:

- the hand-run recipe (bench/ray_up.py's: `docker run ... ray start` host by host over ssh, then
  `ray status` until every node is listed) - the baseline;
- `deploy.yml` with none of our containers (cold), again with nothing to change (re-run), and
  `teardown.yml`;
- the memory the machine uses with the cluster serving (MemTotal - MemAvailable), and from it
  the memory each lab host adds.

Printed: seconds per case and size, T(N)/T(2) for ours and the baseline's, and a PNG plot of
seconds against hosts (matplotlib, if it is installed: `.venv/bin/pip install matplotlib`).
Cases alternate within a size so that the machine's load hits them alike. The lab is left at 2
hosts. Nothing here asserts a time.
"""
import argparse
import os
import statistics
import subprocess
import sys

from ray_up import IMAGE, LAB_DIR, ROOT, clean, hand_recipe, lab_hosts, playbook, ssh

LAB = [sys.executable, os.path.join(ROOT, "lab", "sparklab.py")]
CASES = (("hand", "hand-run recipe (Ray only)"), ("cold", "deploy.yml, cold"), ("rerun", "deploy.yml, re-run"),
         ("teardown", "teardown.yml"))


def lab(*args):
    res = subprocess.run(LAB + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit("lab %s failed:\n%s" % (" ".join(args), res.stdout[-3000:]))


def used_mib():
    with open("/proc/meminfo") as f:
        info = dict((line.split(":")[0], int(line.split()[1])) for line in f)
    return (info["MemTotal"] - info["MemAvailable"]) // 1024


def measure(n, runs):
    lab("up", "--hosts", str(n))
    hosts = lab_hosts()
    inventory = os.path.join(ROOT, "inventories", "lab") if n == 2 else os.path.join(LAB_DIR, "inventory")
    for h in hosts:  # every case starts with the image present
        ssh(h["mgmt"], "docker pull -q %s >/dev/null" % IMAGE)
    times = dict((k, []) for k, dummy in CASES)
    memory = []
    for run in range(runs):
        playbook("playbooks/teardown.yml", inventory)
        clean(hosts)
        times["hand"].append(hand_recipe(hosts))
        clean(hosts)
        times["cold"].append(playbook("deploy.yml", inventory)[0])
        memory.append(used_mib())
        took, changed = playbook("deploy.yml", inventory)
        times["rerun"].append(took)
        if changed:
            print("note: %d hosts, run %d: the re-run changed %d task(s)" % (n, run + 1, changed), file=sys.stderr)
        times["teardown"].append(playbook("playbooks/teardown.yml", inventory)[0])
        print("%d hosts: run %d/%d done" % (n, run + 1, runs), file=sys.stderr)
    clean(hosts)
    return dict((k, statistics.median(v)) for k, v in times.items()), statistics.median(memory)


def plot(sizes, results, path):
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError:
        return "no plot: matplotlib is not installed (.venv/bin/pip install matplotlib)"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in CASES:
        ax.plot(sizes, [results[n][0][key] for n in sizes], marker="o", label=label)
    ax.set_xlabel("hosts")
    ax.set_ylabel("seconds (median)")
    ax.set_xticks(sizes)
    ax.set_title("sparkops.inference on the lab: seconds per case against hosts")
    ax.grid(True, alpha=0.3)
    ax.legend()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return "plot: %s" % path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hosts", default="2,4,8", help="lab sizes, comma-separated; the first is the reference")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--png", default=os.path.join(ROOT, "build", "bench", "scale.png"))
    args = p.parse_args()
    sizes = [int(n) for n in args.hosts.split(",")]
    results = {}
    try:
        for n in sizes:
            results[n] = measure(n, args.runs)
    finally:
        lab("up", "--hosts", "2")  # the lab as the tests and `make lab` expect it
    ref = sizes[0]
    print("\nThe lab at %s hosts, images present, %d run(s) each: wall-clock seconds (median)\n"
          % (", ".join(map(str, sizes)), args.runs))
    print("%-30s" % "case" + "".join("%10s" % ("%d hosts" % n) for n in sizes)
          + "".join("%12s" % ("T(%d)/T(%d)" % (n, ref)) for n in sizes[1:]))
    for key, label in CASES:
        row = [results[n][0][key] for n in sizes]
        print("%-30s" % label + "".join("%10.1f" % t for t in row)
              + "".join("%12.2f" % (t / row[0]) for t in row[1:]))
    print("\n%-30s" % "memory used, cluster serving" + "".join("%7d MiB" % results[n][1] for n in sizes))
    if len(sizes) > 1:
        extra = [(results[n][1] - results[ref][1]) / float(n - ref) for n in sizes[1:] if n != ref]
        print("%-30s %s" % ("memory per added lab host", ", ".join("%d MiB" % e for e in extra)))
    for n in sizes[1:]:
        ours = results[n][0]["cold"] / results[ref][0]["cold"]
        hand = results[n][0]["hand"] / results[ref][0]["hand"]
        # growth = the time added over the reference size; the target: ours at most half the baseline's
        # the recipe's end is `ray status` listing every node, on Ray's 5 s monitor tick: under 10 %
        # it has not grown, and a rate against it would be a ratio of noise
        rate = ("ours grows %.2f times as fast as the baseline" % ((ours - 1) / (hand - 1)) if hand >= 1.1
                else "the baseline did not grow (under 10 %: its end is ray status's 5 s tick), so no rate")
        print("growth %d -> %d hosts: cold deploy %.2fx, hand recipe %.2fx (%s)" % (ref, n, ours, hand, rate))
    print(plot(sizes, results, args.png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
