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
