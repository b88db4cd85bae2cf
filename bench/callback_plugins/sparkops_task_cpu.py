# -*- coding: utf-8 -*-
"""Bench helper (not part of the collection): what each task costs the whole machine.

Enabled by bench/task_cpu.py (ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins,
ANSIBLE_CALLBACKS_ENABLED=sparkops_task_cpu, SPARKOPS_TASK_CPU_FILE=PATH). The linear strategy
runs one task at a time on every host, so the machine's CPU-seconds (/proc/stat) between one
task's start and the next are that task's: the controller's fork and templating, ssh, the module
on each lab host, and what the task set going (Ray starting while a task waits for it to join).
Writes [[task name, CPU-s, wall s], ...] as JSON when the play ends.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sparkops_task_cpu
type: aggregate
short_description: the machine's CPU-seconds per task (bench only)
description: Writes each task's machine CPU-seconds and wall seconds to E(SPARKOPS_TASK_CPU_FILE).
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


def machine_cpu():
    """Busy CPU-seconds of the whole machine since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / float(os.sysconf("SC_CLK_TCK"))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sparkops_task_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.rows = []
        self.current = None

    def _close(self):
        if self.current:
            name, cpu0, wall0 = self.current
            self.rows.append([name, round(machine_cpu() - cpu0, 2), round(time.time() - wall0, 2)])
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self.current = (task.get_name(), machine_cpu(), time.time())

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("SPARKOPS_TASK_CPU_FILE")
        if path:
            with open(path, "w") as out:
                json.dump(self.rows, out)
