"""Benchmark: a deploy with nothing to change against a cold deploy, this checkout against a
baseline commit, side by side.

    .venv/bin/python bench/rerun.py [--runs 3] [--baseline REF]

Needs the lab up (`lab/lab up`). The baseline is REF (default: origin/main, else HEAD) checked
out as a git worktree under build/bench-baseline, with its own .collections link, so both trees
run the same lab, the same inventory and the same ansible-core. Cases alternate tree by tree
and run by run, so that the machine's load hits them alike:

- cold: `teardown.yml` first (not timed: the engine images stay on the hosts), then `deploy.yml`;
- re-run: `deploy.yml` again, nothing to change (changed=0 is checked on every host).

Printed: wall-clock seconds (median, min, max), re-run / cold for each tree, ours / baseline,
and the modules each run sent to the head and to a worker per phase - the round trips over
ssh, counted by bench/callback_plugins/sparkops_calls.py. Nothing here asserts a time.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
PHASES = ["preflight", "sparkops", "engine_image", "gpu_memory", "fabric", "ray_cluster", "model_server",
          "deploy", "report"]


def git(*args, cwd=ROOT):
    return subprocess.run(["git"] + list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)


def baseline_tree(ref):
    path = os.path.join(ROOT, "build", "bench-baseline")
    commit = git("rev-parse", "--verify", ref + "^{commit}").stdout.strip()
    if not commit or " " in commit:
        raise SystemExit("no such commit: %s" % ref)
    if os.path.isdir(path) and git("rev-parse", "HEAD", cwd=path).stdout.strip() != commit:
        git("worktree", "remove", "--force", path)
    if not os.path.isdir(path):
        res = git("worktree", "add", "--detach", path, commit)
        if res.returncode != 0:
            raise SystemExit("git worktree add failed: " + res.stdout)
    link = os.path.join(path, ".collections", "ansible_collections", "sparkops", "inference")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink("../../..", link)
    return path, commit[:9]


def playbook(tree, name, calls=None):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(
        [os.path.join(tree, ".collections"), os.path.expanduser("~/.ansible/collections")]),
        ANSIBLE_NOCOLOR="1")
    if calls:
        env.update(ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "bench", "callback_plugins"),
                   ANSIBLE_CALLBACKS_ENABLED="sparkops_calls", SPARKOPS_CALLS_FILE=calls)
    t0 = time.monotonic()
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/" + name, "-i", "inventories/lab"],
                         cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         check=False)
    took = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit("%s in %s failed:\n%s" % (name, tree, res.stdout[-3000:]))
    return took, res.stdout


def count(calls, head="spark1", worker="spark2"):
    per = {head: collections.Counter(), worker: collections.Counter()}
    with open(calls) as lines:
        for line in lines:
            host, role, dummy = line.rstrip("\n").split("\t")
            host = host.replace(" (delegated)", "")
            if host in per:
                per[host][role.split(".")[-1]] += 1
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default=None, help="commit to compare with (default origin/main or HEAD)")
    args = ap.parse_args()
    ref = args.baseline or ("origin/main" if git("rev-parse", "--verify", "origin/main").returncode == 0 else "HEAD")
    base, base_commit = baseline_tree(ref)
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no").stdout.strip() else ""
    trees = [("baseline " + base_commit, base), ("this tree" + dirty, ROOT)]
    times = collections.defaultdict(list)
    calls = {}
    for run in range(args.runs):
        for label, tree in (trees if run % 2 == 0 else trees[::-1]):
            playbook(tree, "teardown.yml")
            cold, dummy = playbook(tree, "deploy.yml")
            with tempfile.NamedTemporaryFile(prefix="calls-", delete=False) as tmp:
                path = tmp.name
            rerun, out = playbook(tree, "deploy.yml", calls=path)
            recap = [l for l in out.splitlines() if l.startswith(("spark1 ", "spark2 "))]
            if not recap or not all("changed=0" in l for l in recap):
                raise SystemExit("%s: the re-run changed something:\n%s" % (label, "\n".join(recap)))
            calls[label] = count(path)
            os.unlink(path)
            times[(label, "cold")].append(cold)
            times[(label, "re-run")].append(rerun)
            print("run %d %-34s cold %5.1f s  re-run %5.1f s" % (run + 1, label, cold, rerun), flush=True)

    def med(label, case):
        return statistics.median(times[(label, case)])

    print("\n%-34s %-7s %7s %7s %7s" % ("tree", "case", "median", "min", "max"))
    for label, dummy in trees:
        for case in ("cold", "re-run"):
            t = times[(label, case)]
            print("%-34s %-7s %6.1fs %6.1fs %6.1fs" % (label, case, statistics.median(t), min(t), max(t)))
    print()
    for label, dummy in trees:
        print("%-34s re-run / cold = %.2fx" % (label, med(label, "re-run") / med(label, "cold")))
    (bl, dummy), (ours, dummy) = trees
    print("%-34s ours / baseline: cold %.2fx, re-run %.2fx" % (
        "", med(ours, "cold") / med(bl, "cold"), med(ours, "re-run") / med(bl, "re-run")))
    print("\nmodules sent per re-run (round trips over ssh), head spark1 / worker spark2:")
    print("%-14s" % "phase" + "".join("%22s" % label[:20] for label, dummy in trees))
    for phase in PHASES + ["total"]:
        cells = []
        for label, dummy in trees:
            per = calls[label]
            h = sum(per["spark1"].values()) if phase == "total" else per["spark1"][phase]
            w = sum(per["spark2"].values()) if phase == "total" else per["spark2"][phase]
            cells.append("%22s" % ("%d / %d" % (h, w)))
        print("%-14s" % phase + "".join(cells))


if __name__ == "__main__":
    main()
