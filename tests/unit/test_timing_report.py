"""docs/testing.md's speed line (tests/timing_report.py): a run's minutes are compared with another's
only beside the time the same fixed work took on the machine that day (tests/suite_timing.py)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import suite_timing  # noqa: E402 pylint: disable=wrong-import-position,import-error
import timing_report  # noqa: E402 pylint: disable=wrong-import-position,import-error


def run_of(speed=None, seconds=100.0):
    test = {"test": "tests/integration/test_x.py::test_a", "lane": "gw0", "outcome": "passed", "start": 0.0,
            "wall": seconds, "machine_cpu_s": seconds * 1.8, "children_cpu_s": seconds / 2,
            "commands": [["ansible-playbook deploy.yml", seconds]]}
    data = {"written": "2026-12-07T00:00:00+0000", "tests": [test]}
    if speed:
        data["speed_probe_cpu_s"] = speed
    return data


def test_the_report_says_how_fast_the_machine_was_and_compares_by_it():
    then, now = run_of({"start": 0.2, "end": 0.21}), run_of({"start": 0.3, "end": 0.3}, seconds=150.0)
    text = timing_report.render(now, "now.json")
    assert "the fixed Python work of tests/suite_timing.py took 0.3 CPU-s before the tests and 0.3 after" in text
    compared = timing_report.compare(now, then, "then.json")
    assert "then 0.2, now 0.3 - now / then 1.50x: divide the CPU ratio by it" in compared
    assert "| 1.50x |" in compared  # the CPU ratio itself, before the machine's speed is taken out


def test_a_run_without_the_probe_says_so():
    assert "speed was not measured in this run" in timing_report.render(run_of(), "old.json")
    assert "then not measured, now 0.3." in timing_report.compare(run_of({"start": 0.3}), run_of(), "old.json")


def test_the_probe_times_the_same_work_in_a_child():
    took = suite_timing.speed_probe(runs=1)
    assert 0.01 < took < 30
    # the work itself runs alone, as the probe runs it
    assert subprocess.run([sys.executable, "-c", suite_timing.SPEED_WORK], check=False).returncode == 0


def test_the_report_says_how_busy_the_cores_were_and_when_the_background_checks_ran():
    data = run_of({"start": 0.2, "end": 0.2}, seconds=100.0)
    data["cores"] = 2
    data["tests"][0]["static_checks"] = [{"name": "lint", "began_s": 0.0, "wall_s": 30.0, "cpu_s": 28.4, "nice": 10},
                                         {"name": "matrix", "began_s": 95.5, "wall_s": 300.0, "cpu_s": None, "nice": 10}]
    text = timing_report.render(data, "now.json")
    assert "The machine's 2 cores were busy 90 % of the time while gw0 ran" in text  # 180 CPU-s over 100 s, 2 cores
    assert "| lint | 0 | 30 | 28 |" in text and "| matrix | 96 | 300 | ? |" in text
    assert "busy" not in timing_report.render(run_of(), "old.json")  # a run that did not say its cores


def background_helpers():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location(
        "integration_conftest", os.path.join(ROOT, "tests", "integration", "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_background_check_runs_in_an_autogroup_of_its_own_niced_and_its_cpu_is_read(tmp_path):
    helpers = background_helpers()
    times = str(tmp_path / "times")
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    res = subprocess.run(helpers.in_background(
        ["sh", "-c", "cat /proc/self/autogroup 2>/dev/null; echo nice $(nice); %s -c '%s'" % (sys.executable, burn)],
        times), capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    # the processes' own nice, above this one's (the controller matrix runs these tests inside a check)
    assert res.stdout.splitlines()[-1] == "nice %d" % min(19, os.nice(0) + helpers.STATIC_NICE), res.stdout
    # a kernel with autogroups: the session's group is niced too. The file is absent without them, and
    # reads empty for a process in no autogroup (as in the project's CI): nothing to compare there
    mine = open("/proc/self/autogroup").read().split() if os.path.exists("/proc/self/autogroup") else []
    if mine:
        assert res.stdout.split()[0] != mine[0] and res.stdout.split()[2] == str(helpers.STATIC_NICE), res.stdout
    assert 0.25 <= helpers._children_cpu(times) < 5  # pylint: disable=protected-access
    assert helpers._children_cpu(str(tmp_path / "absent")) is None  # pylint: disable=protected-access
