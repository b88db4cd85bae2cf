"""Benchmark: where a deploy's CPU goes, task by task (the machine's CPU-seconds per task).

    .venv/bin/python bench/task_cpu.py [--runs 3] [--warm] [--top 25] [-- EXTRA ansible-playbook ARGS]

Needs the lab up (`lab/lab up`) and nothing else running on the machine. Cold (the default):
`teardown.yml` first (not counted: the engine images stay on the hosts), then `deploy.yml`; --warm:
`deploy.yml` on the cluster as the last run left it. Each task's cost is the whole machine's
CPU-seconds from its start to the next task's (bench/callback_plugins/sparkops_task_cpu.py: the
controller, ssh, the module on each host, and Ray or the engine starting meanwhile). Printed: the
median of each over the runs - the dearest tasks, each role's sum, and the tasks that cost under
0.2 CPU-s (set_fact, assert, a skipped task: the controller's fork and templating) in all.
Nothing here asserts a time.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".venv", "bin")
SMALL = 0.2


def playbook(name, extra=(), rows_file=None):
    env = dict(os.environ)
    if rows_file:
        env.update(ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "bench", "callback_plugins"),
                   ANSIBLE_CALLBACKS_ENABLED="sparkops_task_cpu", SPARKOPS_TASK_CPU_FILE=rows_file)
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/" + name, "-i", "inventories/lab"]
                         + list(extra), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=False)
    if res.returncode != 0:
        sys.exit("%s failed (rc %d):\n%s" % (name, res.returncode, res.stdout[-3000:]))


def role_of(task):
    return task.split(" : ", 1)[0].replace("sparkops.inference.", "") if " : " in task else "(play)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="deploy on the cluster as it is (no teardown first)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("extra", nargs="*", help="more ansible-playbook arguments for the deploy")
    args = ap.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.runs):
            if not args.warm:
                playbook("teardown.yml")
            path = os.path.join(tmp, "run%d.json" % n)
            playbook("deploy.yml", args.extra, rows_file=path)
            with open(path) as f:
                runs.append(json.load(f))
    cpu, wall = collections.defaultdict(list), collections.defaultdict(list)
    for rows in runs:
        seen = collections.Counter()
        for name, c, w in rows:
            seen[name] += 1
            key = name if seen[name] == 1 else "%s (#%d)" % (name, seen[name])
            cpu[key].append(c)
            wall[key].append(w)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    totals = [sum(r[1] for r in rows) for rows in runs]
    print("%s deploy, %d run(s): %d tasks, %.1f machine CPU-s per run (median; min %.1f, max %.1f)"
          % ("warm" if args.warm else "cold", len(runs), len(med), statistics.median(totals), min(totals), max(totals)))
    print("\n%8s %7s  %s" % ("CPU-s", "wall s", "the dearest tasks"))
    for key in sorted(med, key=lambda k: -med[k])[:args.top]:
        print("%8.2f %7.2f  %s" % (med[key], statistics.median(wall[key]), key[:120]))
    by_role = collections.defaultdict(lambda: [0, 0.0])
    for key, c in med.items():
        by_role[role_of(key)][0] += 1
        by_role[role_of(key)][1] += c
    print("\n%8s %6s  %s" % ("CPU-s", "tasks", "role"))
    for role, (count, c) in sorted(by_role.items(), key=lambda kv: -kv[1][1]):
        print("%8.2f %6d  %s" % (c, count, role))
    small = [c for c in med.values() if c < SMALL]
    print("\ntasks under %.1f CPU-s: %d, %.2f CPU-s in all" % (SMALL, len(small), sum(small)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
