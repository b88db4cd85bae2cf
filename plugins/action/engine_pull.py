# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_pull with progress: the module runs asynchronously on the host (as `async:` would run
it) while this action polls it and, every progress_interval seconds, prints at the default
verbosity which host pulls which image and how far it is (layers done, attempt, seconds), read
from the progress file the module keeps. Real candidates are 10-25 GB: a silent task for half an
hour looks like a hang."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import time
import uuid

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

POLL = 2


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        interval = int(args.pop("progress_interval", 30) or 0)
        module = "sparkops.inference.engine_pull"
        if self._task.check_mode or interval <= 0 or not args.get("images"):
            result.update(self._execute_module(module_name=module, module_args=args, task_vars=task_vars))
            return result
        host = task_vars.get("inventory_hostname", "?")
        args["progress_file"] = "/tmp/.sparkops-pull-%s.json" % uuid.uuid4().hex
        # as long as every attempt of every image may take, and a minute more
        budget = (int(args.get("timeout", 1800)) + 60) * (int(args.get("retries", 3)) + 1) * len(args["images"]) + 60
        self._task.async_val = budget  # what wrap_async reads; the task itself is not async
        try:
            started = self._execute_module(module_name=module, module_args=args, task_vars=task_vars,
                                           wrap_async=True)
        finally:
            self._task.async_val = 0
        jid = started.get("ansible_job_id")
        if not jid:  # it did not start asynchronously (a failure before the module ran)
            result.update(started)
            return result
        async_dir = self.get_shell_option("async_dir", default="~/.ansible_async")
        t0, shown, status = time.time(), time.time(), {}
        try:
            while time.time() - t0 < budget:
                time.sleep(POLL)
                status = self._execute_module(module_name="ansible.legacy.async_status",
                                              module_args={"jid": jid, "_async_dir": async_dir},
                                              task_vars=task_vars)
                if status.get("finished") or (status.get("failed") and not status.get("started")):
                    break
                if time.time() - shown >= interval:
                    shown = time.time()
                    display.display(self._progress_line(host, args, task_vars, time.time() - t0))
            else:
                status = {"failed": True, "msg": "engine_pull on %s did not end within %d s" % (host, budget)}
        finally:
            self._execute_module(module_name="ansible.legacy.async_status",
                                 module_args={"jid": jid, "mode": "cleanup", "_async_dir": async_dir},
                                 task_vars=task_vars)
            self._execute_module(module_name="ansible.legacy.file",
                                 module_args={"path": args["progress_file"], "state": "absent"},
                                 task_vars=task_vars)
        for key in ("ansible_job_id", "started", "finished", "results_file", "stdout", "stderr",
                    "stdout_lines", "stderr_lines"):
            status.pop(key, None)
        result.update(status)
        return result

    def _progress_line(self, host, args, task_vars, seconds):
        doc = {}
        res = self._execute_module(module_name="ansible.legacy.slurp", module_args={"src": args["progress_file"]},
                                   task_vars=task_vars)
        if res.get("content"):
            try:
                doc = json.loads(base64.b64decode(res["content"]).decode("utf-8"))
            except ValueError:
                doc = {}
        if not doc.get("image"):
            return "%s: engine_pull starting (%d s)" % (host, seconds)
        attempt = doc.get("attempt") or 1
        retries = int(args.get("retries", 3))
        return "%s: pulling %s (%d of %d): %s; attempt %d of %d, %d s on this image" % (
            host, doc["image"], (doc.get("index") or 0) + 1, doc.get("images") or len(args["images"]),
            doc.get("summary") or "waiting for the registry", attempt, retries + 1,
            time.time() - (doc.get("image_started") or time.time()))
