# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""serve_check with progress: a wait for the engine to serve (phase ready) with progress_interval
set runs the module in calls of at most that many seconds; after each call that comes back still
waiting it prints, at the default verbosity, which host waits for which engine, how long of how
long, what the engine answered and its last log line, then calls again where the wait stood. A
real model loads 119 GB for many minutes: a silent task for that long looks like a hang. No
async job and no polling in between: an engine that serves within the interval costs one call,
as without progress."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "sparkops.inference.serve_check"


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            interval = int(args.get("progress_interval") or 0)
        except (TypeError, ValueError):
            interval = 0  # the module names the bad value
        if (args.get("phase") or "ready") != "ready" or self._task.check_mode or interval <= 0:
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        host = task_vars.get("inventory_hostname", "?")
        while True:
            res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if not res.get("waiting"):
                result.update(res)
                return result
            args["waited"], args["restart_count"] = res["waited"], res.get("restart_count")
            display.display(self._line(host, args, res))

    @staticmethod
    def _line(host, args, res):
        name = args.get("served_model_name")
        return "%s: waiting for the engine at %s to serve%s (%d s of %s s): %s; its last log line: %s" % (
            host, res.get("endpoint"), (" " + name) if name else "", res["waited"], args.get("timeout", 1800),
            res.get("last"), res.get("log") or "(none yet)")
