"""Benchmark: a deploy with nothing to change against a cold deploy, this checkout against a
baseline commit, side by side.

    .venv/bin/python bench/rerun.py [--runs 3] [--baseline REF] [--baseline-bin DIR]

Needs the lab up (`lab/lab up`). The baseline is REF (default: origin/main, else HEAD) checked
out as a git worktree under build/bench-baseline, with its own .collections link, so both trees
run the same lab, the same inventory and the same ansible-core. --baseline-bin runs the baseline's
playbooks with another virtualenv's Python (its bin directory): with --baseline HEAD, the same code on
two controller interpreters. Cases alternate tree by tree
and run by run, so that the machine's load hits them alike:

- cold: `teardown.yml` first (not timed: the engine images stay on the hosts), then `deploy.yml`;
- re-run: `deploy.yml` again, nothing to change (changed=0 is checked on every host).

Printed: wall-clock seconds (median, min, max), re-run / cold for each tree, ours / baseline;
the CPU-seconds each run cost - the controller's (ansible-playbook and every process it waited for:
its forks, ssh) and the whole machine's (/proc/stat: the lab's hosts, their sshd and dockerd, Ray
and the engine stand-in are all on this machine) - with ours / baseline; the tasks each host ran
(its recap's ok + skipped + failed: a task skipped by its condition still costs a fork on the
controller) and the modules each run sent to the head and to a worker, per phase - the round trips
over ssh, counted by bench/callback_plugins/sparkops_calls.py. Nothing here asserts a time.
"""
import argparse
import collections
import os
import resource
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


def machine_cpu():
    """CPU-seconds the whole machine has spent (every core, not idle or iowait) - /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # user nice system idle iowait irq softirq steal
    return busy / float(os.sysconf("SC_CLK_TCK"))


def controller_cpu():
    """CPU-seconds of the processes this one has waited for (ansible-playbook, its forks, ssh)."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def recap_tasks(out):
    """{host: tasks it ran} from the PLAY RECAP (ok counts changed ones; skipped ones cost a fork)."""
    tasks = {}
    for line in out.splitlines():
        if " : ok=" not in line:
            continue
        host, counts = line.split(" : ", 1)
        vals = dict(part.split("=") for part in counts.split())
        tasks[host.strip()] = tasks.get(host.strip(), 0) + sum(int(vals.get(k, 0)) for k in ("ok", "skipped", "failed"))
    return tasks


def tree_env(tree):
    """The environment a playbook of TREE runs with: TREE's own collection first."""
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(
        [os.path.join(tree, ".collections"), os.path.expanduser("~/.ansible/collections")]),
        ANSIBLE_NOCOLOR="1")


def playbook(tree, name, calls=None, bin_dir=BIN):
    """Run playbooks/NAME from TREE with the Python of BIN_DIR: {wall, controller, machine, out}."""
    env = tree_env(tree)
    if calls:
        env.update(ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "bench", "callback_plugins"),
                   ANSIBLE_CALLBACKS_ENABLED="sparkops_calls", SPARKOPS_CALLS_FILE=calls)
    t0, c0, m0 = time.monotonic(), controller_cpu(), machine_cpu()
    res = subprocess.run([os.path.join(bin_dir, "python"), os.path.join(bin_dir, "ansible-playbook"),
                          "playbooks/" + name, "-i", "inventories/lab"],
                         cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         check=False)
    took = {"wall": time.monotonic() - t0, "controller": controller_cpu() - c0, "machine": machine_cpu() - m0,
            "out": res.stdout}
    if res.returncode != 0:
        raise SystemExit("%s in %s failed:\n%s" % (name, tree, res.stdout[-3000:]))
    return took


def python_version(bin_dir):
    """'Python 3.11.7' of a virtualenv's bin directory."""
    return subprocess.run([os.path.join(bin_dir, "python"), "--version"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=True).stdout.strip()


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
    ap.add_argument("--baseline-bin", default=BIN, help="bin directory of the virtualenv the baseline runs with")
    args = ap.parse_args()
    ref = args.baseline or ("origin/main" if git("rev-parse", "--verify", "origin/main").returncode == 0 else "HEAD")
    base, base_commit = baseline_tree(ref)
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no").stdout.strip() else ""
    python = ("", "")
    if args.baseline_bin != BIN:
        python = (" (%s)" % python_version(args.baseline_bin), " (%s)" % python_version(BIN))
    trees = [("baseline " + base_commit + python[0], base), ("this tree" + dirty + python[1], ROOT)]
    bins = {base: args.baseline_bin, ROOT: BIN}
    runs = collections.defaultdict(list)  # (label, case) -> [playbook() results]
    calls = {}  # (label, case) -> count() of the last run
    for run in range(args.runs):
        for label, tree in (trees if run % 2 == 0 else trees[::-1]):
            playbook(tree, "teardown.yml", bin_dir=bins[tree])
            for case in ("cold", "re-run"):
                with tempfile.NamedTemporaryFile(prefix="calls-", delete=False) as tmp:
                    path = tmp.name
                took = playbook(tree, "deploy.yml", calls=path, bin_dir=bins[tree])
                calls[(label, case)] = count(path)
                os.unlink(path)
                recap = [line for line in took["out"].splitlines() if line.startswith(("spark1 ", "spark2 "))]
                if case == "re-run" and (not recap or not all("changed=0" in line for line in recap)):
                    raise SystemExit("%s: the re-run changed something:\n%s" % (label, "\n".join(recap)))
                took["tasks"] = recap_tasks(took["out"])
                runs[(label, case)].append(took)
            print("run %d %-44s cold %5.1f s %5.1f CPU-s  re-run %5.1f s %5.1f CPU-s" % (
                run + 1, label, runs[(label, "cold")][-1]["wall"], runs[(label, "cold")][-1]["machine"],
                runs[(label, "re-run")][-1]["wall"], runs[(label, "re-run")][-1]["machine"]), flush=True)
    report(trees, runs, calls)


def med(runs, label, case, key):
    return statistics.median(r[key] for r in runs[(label, case)])


def report(trees, runs, calls):
    """The tables: seconds, CPU-seconds, tasks and module calls per host, ours against the baseline."""
    (bl, dummy), (ours, dummy) = trees
    for key, what in (("wall", "wall-clock seconds"), ("controller", "controller CPU-s"),
                      ("machine", "machine CPU-s (controller + the lab's hosts)")):
        print("\n%s\n%-44s %-7s %7s %7s %7s" % (what, "tree", "case", "median", "min", "max"))
        for label, dummy in trees:
            for case in ("cold", "re-run"):
                vals = [r[key] for r in runs[(label, case)]]
                print("%-44s %-7s %7.1f %7.1f %7.1f" % (label, case, statistics.median(vals), min(vals), max(vals)))
        print("%-44s ours / baseline: cold %.2fx, re-run %.2fx" % (
            "", med(runs, ours, "cold", key) / med(runs, bl, "cold", key),
            med(runs, ours, "re-run", key) / med(runs, bl, "re-run", key)))
    print()
    for label, dummy in trees:
        print("%-44s re-run / cold = %.2fx (wall)" % (label, med(runs, label, "re-run", "wall") /
                                                      med(runs, label, "cold", "wall")))
    print("\ntasks each host ran (ok + skipped + failed in its recap), head spark1 / worker spark2:")
    print("%-8s" % "case" + "".join("%22s" % label[:20] for label, dummy in trees))
    for case in ("cold", "re-run"):
        cells = []
        for label, dummy in trees:
            tasks = runs[(label, case)][-1]["tasks"]
            cells.append("%22s" % ("%d / %d" % (tasks.get("spark1", 0), tasks.get("spark2", 0))))
        print("%-8s" % case + "".join(cells))
    for case in ("cold", "re-run"):
        print("\nmodules sent per %s deploy (round trips over ssh), head spark1 / worker spark2:" % case)
        print("%-14s" % "phase" + "".join("%22s" % label[:20] for label, dummy in trees))
        for phase in PHASES + ["total"]:
            cells = []
            for label, dummy in trees:
                per = calls[(label, case)]
                h = sum(per["spark1"].values()) if phase == "total" else per["spark1"][phase]
                w = sum(per["spark2"].values()) if phase == "total" else per["spark2"][phase]
                cells.append("%22s" % ("%d / %d" % (h, w)))
            print("%-14s" % phase + "".join(cells))


if __name__ == "__main__":
    main()
