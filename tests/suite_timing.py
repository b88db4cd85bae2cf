"""Where the suite's minutes go: a pytest plugin (`-p suite_timing`, tests/ on PYTHONPATH).

Each test records, around its whole run (setup, call, teardown - a module fixture's deploy counts
against the first test that needs it):
  - wall: its seconds;
  - machine_cpu_s: the CPU-seconds the whole machine spent meanwhile (/proc/stat: every core's
    user, nice, system, irq, softirq and steal). The lab's hosts, their Docker engines, Ray and
    the engine stand-in are no child of pytest, so only the machine-wide count sees them; with
    two lanes it also holds the other lane's work over the same seconds;
  - children_cpu_s: the CPU-seconds of the commands the test ran and waited for (getrusage of
    this process's children: ansible-playbook and its forks, ssh, the lab script) - this lane's
    controller side alone;
  - commands: what it ran (kind, seconds), as tests/integration/conftest.py notes them.
The run also times a fixed piece of Python work (SPEED_WORK) before the tests start and after they
end: the same work in every run of every commit, so that a run that took longer because this VM's
cores were slower that day can be told from one whose tests cost more (tests/timing_report.py
prints both runs' figures beside their minutes).
xdist's controller gathers them; `SPARKOPS_TIMINGS=FILE` (make test: tests/output/timings.json)
names the JSON file, and the terminal summary lists the 15 tests that cost the most machine
CPU. tests/timing_report.py turns the file into docs/testing.md's table.
"""
import json
import os
import resource
import subprocess
import sys
import time

import pytest

TOP = 15
KEY = "suite_timing"
RESULTS = []
SPEED = {}
# compiling generated source (what ansible-core's templating and module builds spend most on) and a
# JSON round trip: ~0.25 CPU-s on this 2-core machine
SPEED_WORK = r"""
import json
src = "\n".join("def f%d(a, b):\n    x = [i * a for i in range(b)]\n    return {'k%d': sum(x), 'v': str(x)[:40]}"
                % (i, i) for i in range(400))
for n in range(10):
    ns = {}
    exec(compile(src, "speed", "exec"), ns)
    json.loads(json.dumps([ns["f%d" % i](i, 50) for i in range(400)]))
"""


def machine_cpu_seconds():
    """CPU-seconds the machine has spent busy since boot (idle and iowait left out)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    ticks = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / float(os.sysconf("SC_CLK_TCK"))


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def speed_probe(runs=3):
    """CPU-seconds SPEED_WORK takes in a child process, the best of `runs`."""
    best = None
    for dummy in range(runs):
        before = children_cpu_seconds()
        subprocess.run([sys.executable, "-c", SPEED_WORK], check=True)
        took = children_cpu_seconds() - before
        best = took if best is None else min(best, took)
    return round(best, 3)


def pytest_configure(config):  # pylint: disable=unused-argument
    # in xdist's controller (or a run without lanes), before any test starts
    if not os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("SPARKOPS_TIMINGS"):
        SPEED["start"] = speed_probe()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.suite_timing_start = (time.time(), machine_cpu_seconds(), children_cpu_seconds())
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):  # pylint: disable=unused-argument
    yield
    # after the teardown, before its report is made from user_properties (the report travels
    # from an xdist worker to the controller with them)
    start = getattr(item, "suite_timing_start", None)
    if start is not None:
        t0, m0, c0 = start
        item.user_properties.append((KEY, {
            "wall": round(time.time() - t0, 2),
            "machine_cpu_s": round(machine_cpu_seconds() - m0, 2),
            "children_cpu_s": round(children_cpu_seconds() - c0, 2),
            "start": round(t0, 2)}))


def pytest_runtest_logreport(report):
    if report.when == "call" and report.outcome != "passed":
        _outcomes[report.nodeid] = report.outcome
    if report.when == "setup" and report.outcome != "passed":
        _outcomes[report.nodeid] = "error" if report.outcome == "failed" else report.outcome
    if report.when != "teardown":
        return
    timing = next((v for k, v in report.user_properties if k == KEY), None)
    if timing is None:
        return
    node = getattr(report, "node", None)
    entry = dict(timing, test=report.nodeid, lane=node.gateway.id if node is not None else "main",
                 outcome=_outcomes.get(report.nodeid, "passed"),
                 commands=[v for k, v in report.user_properties if k == "command"])
    static = [v for k, v in report.user_properties if k == "static_check"]
    if static:  # the background checks (tests/integration/conftest.py), with the test that read them
        entry["static_checks"] = static
    RESULTS.append(entry)


_outcomes = {}


def summary(results):
    """The totals and the most expensive tests, as plain data (also what the report reads)."""
    by_file = {}
    for r in results:
        empty = {"tests": 0, "wall": 0.0, "machine_cpu_s": 0.0, "children_cpu_s": 0.0, "deploys": 0}
        f = by_file.setdefault(r["test"].split("::", 1)[0], empty)
        f["tests"] += 1
        for k in ("wall", "machine_cpu_s", "children_cpu_s"):
            f[k] += r[k]
        f["deploys"] += sum(1 for kind, dummy in r["commands"] if kind == "ansible-playbook deploy.yml")
    top = sorted(results, key=lambda r: -r["machine_cpu_s"])[:TOP]
    return by_file, top


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("PYTEST_XDIST_WORKER") or not RESULTS:
        return
    path = os.environ.get("SPARKOPS_TIMINGS")
    if path:
        SPEED["end"] = speed_probe()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "speed_probe_cpu_s": SPEED, "cores": os.cpu_count(),
                       "tests": RESULTS}, f, indent=1)
    dummy, top = summary(RESULTS)
    write = terminalreporter.write_line
    terminalreporter.section("the %d most expensive tests (machine CPU-s while each ran)" % len(top))
    write("  %8s %8s %8s  %s" % ("cpu-s", "wall-s", "ctl-cpu", "test"))
    for r in top:
        write("  %8.1f %8.1f %8.1f  %s" % (r["machine_cpu_s"], r["wall"], r["children_cpu_s"], r["test"]))
    if path:
        write("every test's numbers: %s (docs/testing.md: python3 tests/timing_report.py %s)" % (path, path))
