# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind sparkops.inference.engine_select: decides on the controller, from the
hosts' probe facts (logic and table text in module_utils/_engine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
    EngineError,
    host_inputs,
    no_candidate_message,
    pending,
    select,
    table_text,
)

ARGUMENT_SPEC = dict(
    candidates=dict(type="list", elements="str", required=True),
    hosts=dict(type="list", elements="str", required=True),
    architectures=dict(type="list", elements="str", default=[]),
    need_ray=dict(type="bool", default=True),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = (task_vars or {}).get("hostvars", {})
        probes, platforms = host_inputs(args["hosts"], hostvars)
        try:
            selected, rows = select(args["candidates"], probes, platforms, args["need_ray"])
        except EngineError as exc:
            return dict(result, failed=True, msg=str(exc))
        result.update(changed=False, selected=selected, rows=rows, table=table_text(rows),
                      pending=selected is None and pending(rows))
        if selected is None and not result["pending"]:
            result.update(failed=True, msg=no_candidate_message(args["architectures"], args["hosts"], rows,
                                                                args["need_ray"]))
        else:
            result["msg"] = "selected %s" % selected if selected else "not decided: check mode pulled nothing"
        return result
