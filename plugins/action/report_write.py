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
        report=dict(type="dict", required=True),
        names=dict(type="list", elements="str", required=True),
    )

    def act(self, args, task_vars):
        directory = os.path.expanduser(args["dir"])
        text = json.dumps(args["report"], indent=2, sort_keys=True) + "\n"
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
