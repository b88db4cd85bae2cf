"""Benchmark: where ansible-playbook's own CPU goes in one deploy (the controller's share).

    .venv/bin/python bench/controller_cpu.py [--warm] [--top 15] [-- EXTRA ansible-playbook ARGS]

Needs the lab up and nothing else running. Cold (the default): `teardown.yml` first (not
counted), then `deploy.yml` with bench/controller_hooks on PYTHONPATH: every task worker runs
under cProfile and every Jinja compile is timed (the hooks' own cost is in the numbers: compare
runs of this tool with each other, not with bench/task_cpu.py). Printed: the controller's CPU
(ansible-playbook and its children: getrusage), the workers' CPU by part - building modules
(AnsiballZ), compiling templates, forking - and the templates compiled most. Nothing here
asserts a time.
"""
import argparse
import collections
import glob
import io
import os
import pstats
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".venv", "bin")
# cumulative CPU of these functions in the workers' profiles (a function's time includes its callees)
PARTS = (("module builds (AnsiballZ)", "module_common.py", "_find_module_utils"),
         ("task arguments templated", "task.py", "post_validate"),
         ("ssh: waiting for the host (not CPU)", "selectors.py", "select"),
         ("module cache lock (waiting, not CPU)", "_locking.py", "named_mutex"))


def playbook(name, extra=(), env=None):
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), name, "-i", "inventories/lab"] + list(extra),
                         cwd=ROOT, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    if res.returncode != 0:
        sys.exit("%s failed (rc %d):\n%s" % (name, res.returncode, res.stdout[-3000:]))


def workers(out):
    stats = None
    for path in glob.glob(os.path.join(out, "*.prof")):
        try:
            one = pstats.Stats(path, stream=io.StringIO())
        except (EOFError, ValueError):  # a worker still writing when the run ended
            continue
        if stats is None:
            stats = one
        else:
            stats.add(one)
    return stats


def cumulative(stats, filename, function):
    return sum(v[3] for k, v in stats.stats.items() if k[0].endswith(filename) and k[2] == function)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", action="store_true", help="deploy on the cluster as it is (no teardown first)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("extra", nargs="*", help="more ansible-playbook arguments for the deploy")
    args = ap.parse_args(argv)
    if not args.warm:
        playbook("playbooks/teardown.yml")
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        playbook("deploy.yml", args.extra, env={
            "SPARKOPS_CONTROLLER_DIR": out,
            "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "bench", "controller_hooks")]
                                          + [p for p in [os.environ.get("PYTHONPATH")] if p])})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stats = workers(out)
        compiles, seconds = collections.Counter(), collections.Counter()
        for path in glob.glob(os.path.join(out, "*.jinja")):
            with open(path) as f:
                for line in f:
                    took, text = line.rstrip("\n").split("\t", 1)
                    compiles[text] += 1
                    seconds[text] += float(took)
    ctl = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print("%s deploy: the controller (ansible-playbook and its children) %.1f CPU-s"
          % ("warm" if args.warm else "cold", ctl))
    if stats is not None:
        calls = sum(v[1] for k, v in stats.stats.items() if k[2] == "_run" and k[0].endswith("worker.py"))
        print("task workers: %d, %.1f s inside them (waits included)" % (calls, stats.total_tt))
        for label, filename, function in PARTS:
            print("%8.2f s  %s" % (cumulative(stats, filename, function), label))
    print("%8.2f CPU-s  Jinja compiles: %d of %d distinct templates (every worker is a fresh fork: "
          "nothing is reused)" % (sum(seconds.values()), sum(compiles.values()), len(compiles)))
    print("\n%8s %6s  %s" % ("CPU-s", "times", "the templates compiled at most cost"))
    for text, took in seconds.most_common(args.top):
        print("%8.3f %6d  %s" % (took, compiles[text], text[:110]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
