# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind sparkops.inference.engine_select: decides on the controller, from the
hosts' probe facts (logic and table text in module_utils/_engine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.plugin_utils._controller import ControllerAction
from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
    EngineError,
    host_inputs,
    mixed_platforms,
    no_candidate_message,
    pending,
    select,
    table_text,
)


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = dict(
        candidates=dict(type="list", elements="str", required=True),
        hosts=dict(type="list", elements="str", required=True),
        architectures=dict(type="list", elements="str", default=[]),
        launcher=dict(type="str", default="auto", choices=["auto", "ray", "native"]),
        cluster_hosts=dict(type="list", elements="str", default=[]),
    )

    def act(self, args, task_vars):
        probes, platforms = host_inputs(args["hosts"], task_vars.get("hostvars", {}))
        # every host of the cluster, also those the image only reaches over the fabric
        dummy, everyone = host_inputs(args["cluster_hosts"] or args["hosts"], task_vars.get("hostvars", {}))
        mixed = mixed_platforms(everyone)
        if mixed:
            return dict(failed=True, msg=mixed, selected=None, rows=[], table=[], pending=False)
        try:
            selected, rows = select(args["candidates"], probes, platforms, args["launcher"])
        except EngineError as exc:
            return dict(failed=True, msg=str(exc))
        chosen = next((r for r in rows if r["image"] == selected), {})
        result = dict(selected=selected, rows=rows, table=table_text(rows), launcher=chosen.get("launcher"),
                      engine=chosen.get("engine"), pending=selected is None and pending(rows))
        if selected is None and not result["pending"]:
            result.update(failed=True, msg=no_candidate_message(args["architectures"], args["hosts"], rows,
                                                                args["launcher"]))
        else:
            result["msg"] = "selected %s" % selected if selected else "not decided: check mode pulled nothing"
        return result
