"""Integration tests: real ansible-core, real sshd/dockerd on the lab's simulated Sparks."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import pytest

try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # run without pytest-xdist: one lane, nothing to schedule
    LoadScopeScheduling = object

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
LAB = [sys.executable, os.path.join(ROOT, "lab", "sparklab.py")]
INVENTORIES = os.path.join(ROOT, "tests", "integration", "inventories")
# The deploy's reports (latest.json, latest.lock.json) of this lane: the two lanes share one HOME,
# and one lane's deploy replacing the other's latest.json made status.yml show the other lab's
# last deploy. A command given SPARKOPS_REPORT_DIR of its own (env=) still gets that.
REPORTS = os.environ.get("SPARKOPS_REPORT_DIR") or os.path.join(
    os.path.expanduser("~"), ".sparkops", "reports-" + os.environ.get("PYTEST_XDIST_WORKER", "main"))


def run(argv, timeout=900, env=None, cwd=ROOT):
    """Run a command from the repository root; stdout and stderr together in .out."""
    t0 = time.time()
    try:
        return _run(argv, timeout, env, cwd)
    finally:
        _note_command(argv, time.time() - t0)
        if list(argv[:len(LAB)]) == LAB:
            _ssh_masters_done()  # the lab may have replaced, reset or rebooted its hosts


def _run(argv, timeout, env, cwd):
    full_env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", NO_COLOR="1",
                    PY_COLORS="0",
                    ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
                    PATH=BIN + os.pathsep + os.environ.get("PATH", ""), SPARKOPS_REPORT_DIR=REPORTS)
    full_env.update(env or {})
    # stdin: none. ssh makes the stdin it inherits non-blocking while it runs, and O_NONBLOCK belongs to
    # the open file that this lane and every command it starts share: an ansible-playbook starting beside
    # an ssh then refused to run ("Ansible requires blocking IO on stdin/stdout/stderr")
    res = subprocess.run(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    res.out = res.stdout
    return res


SSH = ["ssh", "-i", "/var/lib/sparkops-lab/ssh/id_ed25519", "-o", "BatchMode=yes",
       "-o", "UserKnownHostsFile=/var/lib/sparkops-lab/ssh/known_hosts",
       "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"]
# The tests' ~640 commands on the hosts share one master connection per host (a new connection
# costs ~0.24 s and ~0.15 CPU-s here, its key exchange on both ends; through the master, ~0.01 s).
# The sockets are this lane's own (a directory of this process: the other lane's hosts have the
# same addresses). A master must not outlive its host: one to a host rebooted under it waits for
# ServerAlive to give up (~10 s) on every command, so after each lab command (up, reset, reboot,
# small-disk, down: they may replace the hosts) the masters are closed and the next command opens
# a new one, under a new name (a master that does not answer is left to its ControlPersist).
_SSH_MUX = {"dir": None, "generation": 0}


def _ssh_control_path():
    if _SSH_MUX["dir"] is None:
        _SSH_MUX["dir"] = tempfile.mkdtemp(prefix="sparkops-ssh-")
    return os.path.join(_SSH_MUX["dir"], "%d-%%h" % _SSH_MUX["generation"])


def _ssh_masters_done():
    if _SSH_MUX["dir"] is None:
        return
    prefix = "%d-" % _SSH_MUX["generation"]
    _SSH_MUX["generation"] += 1
    for name in os.listdir(_SSH_MUX["dir"]):
        if name.startswith(prefix):
            subprocess.run(["ssh", "-o", "ControlPath=" + os.path.join(_SSH_MUX["dir"], name), "-O", "exit",
                            name[len(prefix):]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=10, check=False)


def ssh(host_ip, command):
    """A command on a simulated Spark, over its real sshd (through this lane's master connection)."""
    return run(SSH + ["-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o", "ControlPath=" + _ssh_control_path(),
                      "root@" + host_ip, command])


def pytest_sessionfinish(session):  # pylint: disable=unused-argument
    _ssh_masters_done()


def playbook(*args, **kw):
    return run([os.path.join(BIN, "ansible-playbook")] + list(args), **kw)


def engine_phase(*extra, **kw):
    """The engine's phase as an operator runs it (deploy.yml --tags model_server: with the image
    selection and the Ray phase it serves on): the serving engine kept aside, the new one started or
    refused, the rescue's rollback - the deploy's own, without the memory phase and the fabric's checks."""
    return playbook("deploy.yml", "-i", "inventories/lab", "--tags", "model_server", *extra, **kw)


def task_sections(out, title):
    """What the play printed under each task whose banner holds `title`, in order: [(banner, results)]."""
    return [(banner, results) for banner, dummy, results in
            (part.partition("\n") for part in out.split("\nTASK [")[1:]) if title in banner]


def flat(text):
    """Output with its line breaks and runs of spaces as single spaces (messages wrap)."""
    return " ".join(text.split())


def still_serves():
    """The lab's engine answers on the head: /health 200 and the served name."""
    health = ssh("10.77.0.11", "curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health").out
    models = ssh("10.77.0.11", "curl -s -m 5 http://10.77.0.11:8000/v1/models").out
    return health == "200" and '"id": "qwen3.5-lab"' in models


LAB_HOSTS = ("10.77.0.11", "10.77.0.12")


def gpu_mib(host_ip):
    """The GPU memory of each compute process, as the lab's nvidia-smi stand-in counts it, sorted."""
    out = ssh(host_ip, "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits").out
    return sorted(int(line.split(",")[1]) for line in out.splitlines() if line.strip())


WATCHDOG_STATE = "/var/lib/sparkops/watchdog.json"


def watchdog_state(ip="10.77.0.11"):
    """The state file of a host's watchdog agent (the head's by default), {"unreadable": ...} if none."""
    out = ssh(ip, "cat %s" % WATCHDOG_STATE).out
    try:
        return json.loads(out)
    except ValueError:
        return {"unreadable": out}


def wait_watchdog(predicate, what, timeout=120):
    """Until the head agent's state satisfies predicate; its state and log when it never does."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        state = watchdog_state()
        if predicate(state):
            return state
        time.sleep(1)
    pytest.fail("the watchdog did not %s within %d s: state %s; log:\n%s" % (
        what, timeout, watchdog_state(), ssh("10.77.0.11", "docker logs --tail 30 sparkops-watchdog 2>&1").out))


def only_the_old_model_is_left(host_ip, record="/var/lib/sparkops/gpu_memory_stopped.json"):
    """What a restore (a rollback, or teardown with sparkops_restore) leaves on a lab host: the old
    model's two containers and nothing else, even stopped; their GPU memory held again; the record
    of what was stopped used once (put aside as .restored, in the order they were stopped)."""
    every = sorted(ssh(host_ip, "docker ps -a --format '{{.Names}}'").out.split())
    assert every == ["embeddings-embed-1", "old-vllm"], (host_ip, every)
    assert sorted(ssh(host_ip, "docker ps --format '{{.Names}}'").out.split()) == every
    assert gpu_mib(host_ip) == [2048, 40960], host_ip
    assert ssh(host_ip, "test -e %s" % record).returncode != 0, host_ip
    import json  # pylint: disable=import-outside-toplevel
    restored = json.loads(ssh(host_ip, "cat %s.restored" % record).out)
    assert [e["name"] for e in restored["stopped"]] == ["old-vllm", "embeddings-embed-1"], (host_ip, restored)


def old_model_only():
    """The lab as before any deploy: nothing of ours runs or is left on the hosts (containers, the
    collection's files and records, a lock a killed test run left), the old model running. The
    lab resets its hosts itself (`lab up --reset`: the image stores kept), where a teardown.yml
    with a lock take-over cost a whole playbook run and left the collection's files behind."""
    res = run(LAB + ["up", "--reset"])
    assert res.returncode == 0, res.out
    res = run(LAB + ["old-model"])
    assert res.returncode == 0, res.out


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fault(fault, inject, message, left): a fault case of docs/faults.md - what goes wrong, "
        "how the test causes it, what the message names, what the test proves is left running")


@pytest.fixture(scope="session")
def lab():
    """The lab, up (idempotent: fast when it already runs)."""
    res = run(LAB + ["up"])
    assert res.returncode == 0, res.out
    return res


# The slow checks that need no lab - ansible-lint, ansible-test sanity, the controller matrix - start in a
# background thread as soon as the tests are collected, one after the other (the matrix's sanity
# runs build beside build/ansible-test), beside the lab tests; test_90_static reads their results at the
# end. Run alone (-k, one file), they run inline.
# Their priority: the lanes are bound by the 2 cores (~92 % busy), and Linux divides the CPU between
# *autogroups* (one per session: CONFIG_SCHED_AUTOGROUP, on by default) before it looks at nice values,
# so `nice` alone changed nothing against the lab - every sshd session of a module run and every
# container is a session of its own. In a session of their own whose autogroup is niced (setsid, then
# /proc/self/autogroup), the checks take what the lanes leave: the cores the lanes idle on while
# they wait for Ray, an engine or a watchdog, instead of a share of the cores they need.
STATIC_CHECKS = {
    "lint": ([os.path.join(BIN, "ansible-lint"), "--nocolor"], 1200),
    "sanity": ([os.path.join(ROOT, "tests", "ansible-test.sh"), "sanity"], 1800),
    # unit tests and sanity on the oldest and newest supported ansible-core (tests/controller-matrix.txt)
    "matrix": ([os.path.join(ROOT, "tests", "controller-matrix.sh")], 2400),
}
STATIC_NICE = 10
STATIC_RESULTS = {}
STATIC_TIMES = {}  # name: {began_s (after the first check began), wall_s, cpu_s, nice}
_STATIC_THREAD = []


def in_background(argv, times_file, nice=STATIC_NICE):
    """argv in a session (so an autogroup) of its own, that autogroup and its processes niced (where
    the kernel has no autogroups the file is absent - or reads empty, as in the project's CI - and plain
    nice is all there is); the shell's `times` (its children's user and system CPU) written to times_file."""
    script = ('echo %d > /proc/self/autogroup 2>/dev/null; nice -n %d "$@"; rc=$?; times > "%s"; exit $rc'
              % (nice, nice, times_file))
    return ["setsid", "-w", "sh", "-c", script, "static-check"] + list(argv)


def _children_cpu(times_file):
    """The CPU-s of the second line of a shell's `times` ("0m1.5s 0m0.2s"), None if unreadable."""
    try:
        with open(times_file) as f:
            fields = f.read().split("\n")[1].split()
        return round(sum(int(m) * 60 + float(s) for m, s in (v.rstrip("s").split("m") for v in fields)), 1)
    except (OSError, IndexError, ValueError):
        return None


def _run_static_checks(names):
    t0 = time.time()
    for name in names:
        argv, timeout = STATIC_CHECKS[name]
        start = time.time()
        with tempfile.NamedTemporaryFile(prefix="static-times-") as times:
            try:
                STATIC_RESULTS[name] = run(in_background(argv, times.name), timeout=timeout)
            except Exception as exc:  # pylint: disable=broad-except
                STATIC_RESULTS[name] = exc
            STATIC_TIMES[name] = {"began_s": round(start - t0, 1), "wall_s": round(time.time() - start, 1),
                                  "cpu_s": _children_cpu(times.name), "nice": STATIC_NICE}
        # the whole output beside timings.json (a failed check's assertion shows only part of it)
        result = STATIC_RESULTS[name]
        try:
            os.makedirs(os.path.join(ROOT, "tests", "output"), exist_ok=True)
            with open(os.path.join(ROOT, "tests", "output", "static-%s.log" % name), "w") as f:
                f.write(result.out if not isinstance(result, Exception) else repr(result))
        except OSError:
            pass


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return  # the static checks run in lane 0 only, which runs test_90_static (Lanes below)
    static = [i for i in session.items if os.path.basename(str(i.fspath)) == "test_90_static.py"]
    wanted = [n for n in STATIC_CHECKS if any(n in i.name for i in static)]
    if wanted and len(static) < len(session.items):  # only when there is other work to overlap
        thread = threading.Thread(target=_run_static_checks, args=(wanted,), daemon=True)
        thread.start()
        _STATIC_THREAD.append(thread)


def static_check(name):
    """The result of one static check (run() result): from the background thread, else now."""
    if _STATIC_THREAD:
        _STATIC_THREAD[0].join(timeout=sum(t for dummy, t in STATIC_CHECKS.values()))
    if name not in STATIC_RESULTS:
        _run_static_checks([name])
    result = STATIC_RESULTS[name]
    if name in STATIC_TIMES and _CURRENT_ITEM:  # into timings.json with the test that reads it
        _CURRENT_ITEM[0].user_properties.append(("static_check", dict(STATIC_TIMES[name], name=name)))
    if isinstance(result, Exception):
        raise result
    return result


# ------------------------------------------------------------------------------------------------
# Lanes: `make test` runs the suite in two pytest-xdist workers, each with a lab of its own.
# gw0 runs on this machine's network (PyPI for the controller matrix, the lab at 10.77.0.0/24);
# every other worker is started through lab/isolated.sh, in network and mount namespaces of its
# own where the same addresses, names and paths hold a second lab. The lab tests mostly wait on
# Ray, sshd and Docker; two lanes keep both cores busy. A test file runs whole in one lane (its
# module fixtures own that lane's lab). The scheduler (pytest_xdist_make_scheduler) keeps:
#   - unit tests and test_90_static in lane 0 (the static checks' thread runs there; test_90
#     waits for it, so it comes last there);
#   - molecule's scenarios and then test_40 (both take the lab down) as one unit, given out only
#     when no other lab file is left to give: after them a lane has no lab;
#   - every other lab file to whichever lane is free first, the dearest first: the lane that
#     starts the longest file last ends last (a clean-clone run of ef3353d: 2009 s and 1805 s,
#     test_35 begun at 1453 s). How dear a file is comes from the last recorded run, the "By file"
#     table of docs/testing.md (tests/timing_report.py writes it); a file it lacks goes last, and
#     files of equal cost go in file order. The order decides nothing else: a file sets up what it
#     needs (`lab up`, its own deploys), whatever ran before it in its lane.
LANE0_ONLY = ("tests/unit/", "tests/integration/test_90_static.py")
LAST_IN_LANE = ("tests/integration/test_30_molecule.py", "tests/integration/test_40_lab_down.py")
LAST_UNIT = "tests/integration/[molecule, then lab down]"


def file_seconds(doc=os.path.join(ROOT, "docs", "testing.md")):
    """{test file: its wall seconds} from docs/testing.md's "By file" table; {} without it."""
    try:
        with open(doc) as f:
            text = f.read()
    except OSError:
        return {}
    table = text.partition("## By file")[2].partition("\n## ")[0]
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\| (tests/\S+\.py) \| \d+ \| \d+ \| ([\d.]+) \|", table, re.M)}


class Lanes(LoadScopeScheduling):
    """LoadScopeScheduling (a file at a time) with the lane rules above."""

    def _split_scope(self, nodeid):
        path = nodeid.split("::", 1)[0]
        return LAST_UNIT if path in LAST_IN_LANE else path

    def _allowed(self, node, scope):
        lane0 = node.gateway.id == "gw0"
        if scope.startswith(LANE0_ONLY) and not lane0:
            return False
        lab_left = [s for s in self.workqueue if s != LAST_UNIT and not s.startswith(LANE0_ONLY)]
        if scope == LAST_UNIT:
            return not lab_left
        if scope == LANE0_ONLY[1]:  # test_90 last in lane 0
            return not [s for s in self.workqueue if s != scope]
        return True

    def _assign_work_unit(self, node):
        if not hasattr(self, "_seconds"):
            self._seconds = file_seconds()
        allowed = [s for s in self.workqueue if self._allowed(node, s)]
        # the dearest first; sorted() keeps file order among equals
        scope = sorted(allowed, key=lambda s: -self._seconds.get(s, 0))[0] if allowed else None
        if scope is None:
            return  # nothing for this lane now; the scheduler asks again as its tests complete
        self.workqueue.move_to_end(scope, last=False)  # the base class hands out the first unit
        super()._assign_work_unit(node)


if LoadScopeScheduling is not object:
    def pytest_xdist_make_scheduler(config, log):
        config.option.loadscopereorder = False  # Lanes orders them (docs/testing.md), not by test count
        return Lanes(config, log)


def pytest_sessionstart(session):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and worker != "gw0" and not os.environ.get("SPARKOPS_LAB_ISOLATED"):
        raise pytest.UsageError(
            "pytest-xdist worker %s would share gw0's lab (one lab per machine at 10.77.0.0/24); "
            "start every worker but gw0 through lab/isolated.sh, as `make test` does: --tx popen "
            "--tx 'popen//python=lab/isolated.sh b .venv/bin/python'" % worker)


# Where the suite's time goes, lane by lane: each file's seconds (setup, call and teardown of its
# tests) in the lane that ran it, and each lane's total and span - the numbers to balance the
# lanes by and to find the files worth making cheaper. Printed by the process that runs the
# session (xdist's controller), after the summary of failures.
FILE_TIMES = {}


def pytest_runtest_logreport(report):
    _note_commands(report)
    node = getattr(report, "node", None)  # set on the controller for a worker's report
    lane = node.gateway.id if node is not None else "-"
    path = report.nodeid.split("::", 1)[0]
    entry = FILE_TIMES.setdefault((lane, path), [0.0, 0, None, None])
    entry[0] += report.duration
    if report.when == "call":
        entry[1] += 1
    start, stop = getattr(report, "start", None), getattr(report, "stop", None)
    if start is not None:
        entry[2] = start if entry[2] is None else min(entry[2], start)
        entry[3] = stop if entry[3] is None else max(entry[3], stop)


def pytest_terminal_summary(terminalreporter):
    if not FILE_TIMES or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    write = terminalreporter.write_line
    terminalreporter.section("seconds per file and lane")
    lanes = sorted(set(lane for lane, dummy in FILE_TIMES))
    for lane in lanes:
        rows = sorted(((v, path) for (ln, path), v in FILE_TIMES.items() if ln == lane), key=lambda r: -r[0][0])
        spans = [v[2] for v, dummy in rows if v[2] is not None], [v[3] for v, dummy in rows if v[3] is not None]
        span = (max(spans[1]) - min(spans[0])) if spans[0] else 0.0
        write("lane %s: %.0f s in tests, from its first test to its last %.0f s" % (
            lane, sum(v[0] for v, dummy in rows), span))
        for v, path in rows:
            write("  %7.1f s  %3d tests  %s" % (v[0], v[1], path))
    if COMMAND_TIMES:
        command_summary(write)
    if os.environ.get("SPARKOPS_COMMAND_LOG"):  # each test's commands, in order, as JSON
        import json  # pylint: disable=import-outside-toplevel
        with open(os.environ["SPARKOPS_COMMAND_LOG"], "w") as f:
            json.dump(COMMANDS_BY_TEST, f, indent=1)


# What the tests ran, by kind (a playbook, a lab command, ssh, molecule): how many times and their
# seconds, over the whole suite - the work worth making cheaper or sharing between tests. Each
# command is noted on the test that runs it (its user_properties travel to xdist's controller
# with its reports; the teardown report holds them all).
_CURRENT_ITEM = []
COMMAND_TIMES = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    _CURRENT_ITEM[:] = [item]
    yield
    _CURRENT_ITEM[:] = []


def command_kind(argv):
    """'ansible-playbook deploy.yml', 'lab old-model', 'ssh', 'molecule test', ..."""
    name = os.path.basename(argv[0])
    if name == "setsid" and "static-check" in argv:  # a static check, run inline (in_background)
        return command_kind(argv[argv.index("static-check") + 1:])
    if name == "ansible-playbook":
        plays = [os.path.basename(a) for a in argv[1:] if a.endswith((".yml", ".yaml"))]
        return "ansible-playbook " + (plays[0] if plays else "?")
    lab = [i for i, a in enumerate(argv[:2]) if os.path.basename(a) == "sparklab.py"]
    if lab:  # LAB + [command, ...], or sparklab.py itself
        return " ".join(["lab"] + argv[lab[0] + 1:lab[0] + 2])
    if name in ("molecule", "ip") and len(argv) > 1:
        return "%s %s" % (name, argv[1])
    return name


def _note_command(argv, seconds):
    if _CURRENT_ITEM and threading.current_thread() is threading.main_thread():
        _CURRENT_ITEM[0].user_properties.append(("command", [command_kind(argv), seconds]))


COMMANDS_BY_TEST = {}


def _note_commands(report):
    if report.when != "teardown":
        return
    for key, value in report.user_properties:
        if key == "command":
            entry = COMMAND_TIMES.setdefault(value[0], [0, 0.0])
            entry[0] += 1
            entry[1] += value[1]
            COMMANDS_BY_TEST.setdefault(report.nodeid, []).append(value)


def command_summary(write):
    rows = sorted(COMMAND_TIMES.items(), key=lambda kv: -kv[1][1])
    write("commands the tests ran, by kind (all lanes): %d, %.0f s" % (
        sum(v[0] for dummy, v in rows), sum(v[1] for dummy, v in rows)))
    for kind, (count, seconds) in rows:
        write("  %7.1f s  %4d x  %6.1f s each  %s" % (seconds, count, seconds / count, kind))
