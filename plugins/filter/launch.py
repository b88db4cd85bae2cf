# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""launch_plan: how the engine runs across the cluster (logic in module_utils/_plan)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def launch_plan(inputs):
    inputs = dict(inputs or {})
    unknown = sorted(set(inputs) - {"engine", "launcher", "hosts"})
    if unknown:
        raise AnsibleFilterError("launch_plan takes engine, launcher and hosts; found also %s" % ", ".join(unknown))
    plan = module_utils("_plan")
    try:
        return plan.launch_plan(inputs.get("engine") or "", inputs.get("launcher") or "", inputs.get("hosts") or [])
    except plan.PlanError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"launch_plan": launch_plan}
