# -*- coding: utf-8 -*-
"""No task or template decides on an engine or launcher name: the phases read the launch plan
(sparkops_launch, model_server_launch: module_utils/_plan.py), so a new engine or launch shape is a
plan, not a branch in every role. Names may still be passed on (to a filter, the report, a record)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NAME = r"""['"](?:vllm|sglang|ray|native)['"]"""
# a comparison with a name on either side, or membership in a list of names
COMPARES = re.compile(r"(?:==|!=|\bin)\s*\[?\s*%s|%s\s*(?:==|!=)" % (NAME, NAME))


def offending_lines():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "**", "*"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "playbooks", "**", "*"), recursive=True)):
        if not path.endswith((".yml", ".yaml", ".j2")) or not os.path.isfile(path):
            continue
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if line.lstrip().startswith("#"):
                    continue
                if COMPARES.search(line.split(" # ", 1)[0]):
                    found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    return found


def test_the_pattern_finds_a_comparison():
    assert COMPARES.search("when: model_server_engine_used == 'sglang'")
    assert COMPARES.search("{{ 'native' != launcher }}")
    assert COMPARES.search("when: engine in ['vllm', 'sglang']")
    assert not COMPARES.search("launcher: \"{{ sparkops_launch.launcher }}\"")


def test_no_task_or_template_compares_an_engine_or_launcher_name():
    found = offending_lines()
    assert not found, "read a field of the launch plan (module_utils/_plan.py) instead:\n" + "\n".join(found)
