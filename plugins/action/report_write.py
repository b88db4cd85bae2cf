# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind sparkops.inference.report_write: writes on the controller only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write
from ansible_collections.sparkops.inference.plugins.plugin_utils._controller import ControllerAction


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = dict(
        dir=dict(type="path", required=True),
        report=dict(type="raw"),
        text=dict(type="str"),
        names=dict(type="list", elements="str", required=True),
    )

    def act(self, args, task_vars):
        directory = os.path.expanduser(args["dir"])
        if (args["report"] is None) == (args["text"] is None):
            return {"failed": True, "msg": "report_write needs one of report (a dict or list, written as JSON) "
                                           "and text (written as it is); got %s"
                                           % ("both" if args["text"] is not None else "neither")}
        if args["text"] is not None:
            text = args["text"]
        elif isinstance(args["report"], (dict, list)):
            text = json.dumps(args["report"], indent=2, sort_keys=True) + "\n"
        else:
            return {"failed": True, "msg": "report_write's report must be a dict or a list (written as JSON); "
                                           "got %s" % type(args["report"]).__name__}
        paths = [os.path.join(directory, n) for n in args["names"]]
        result = {"paths": paths, "written": not self._task.check_mode}
        if self._task.check_mode:
            # a dry run changes nothing, here too: latest.json stays the last real deploy's
            result["msg"] = "check mode: the report was not written (it would go to %s)" % ", ".join(paths)
            return result
        try:
            for path in paths:
                atomic_write(path, text)
        except (IOError, OSError) as exc:
            result.update(failed=True, msg="cannot write the deploy report to %s on the controller: %s "
                                           "(set sparkops_report_dir)" % (directory, exc))
        return result
