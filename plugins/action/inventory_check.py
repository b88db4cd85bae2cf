# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind sparkops.inference.inventory_check: runs on the controller only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.plugin_utils._controller import ControllerAction
import os

from ansible_collections.sparkops.inference.plugins.module_utils._inventory import (
    bad_waits,
    check_inventory,
    outside_cluster,
    format_problems,
    shared_facts,
)
from ansible_collections.sparkops.inference.plugins.module_utils._secrets import leaks, sources


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = dict(
        head_group=dict(type="str", default="llm_head"),
        worker_group=dict(type="str", default="llm_workers"),
        head_host=dict(type="str"),
        worker_hosts=dict(type="list", elements="str"),
        model_path=dict(type="str"),
        candidates=dict(type="raw"),
        fabric_subnet=dict(type="str"),
        require_model=dict(type="bool", default=True),
        require_candidates=dict(type="bool", default=True),
        secret_places=dict(type="dict", default={}),
        secret_sources=dict(type="list", elements="dict", default=[]),
        play_hosts=dict(type="list", elements="str"),
        waits=dict(type="dict", default={}),
    )

    def act(self, args, task_vars):
        groups = dict(task_vars.get("groups", {}))
        hostvars = task_vars.get("hostvars", {})
        per_host = {}
        for host in groups.get("all", []):
            hv = hostvars[host]
            per_host[host] = {
                "fabric_address": hv.get("fabric_address"),
                "fabric_subnet": hv.get("fabric_subnet"),
            }
        problems, plan = check_inventory(
            groups, per_host,
            head_group=args["head_group"], worker_group=args["worker_group"],
            head_host=args["head_host"], worker_hosts=args["worker_hosts"],
            model_path=args["model_path"], candidates=args["candidates"],
            fabric_subnet=args["fabric_subnet"], require_model=args["require_model"],
            require_candidates=args["require_candidates"])
        if args["play_hosts"] is not None:
            problems += outside_cluster(args["play_hosts"], [plan["head"]] + plan["workers"], args["head_group"],
                                        args["worker_group"])
            # each host's own name, as its facts and its variables hold it (the preflight role sets it)
            problems += shared_facts(dict((host, {
                "facts": (hostvars[host].get("ansible_facts") or {}).get("sparkops_fact_owner"),
                "variables": hostvars[host].get("sparkops_fact_owner")}) for host in args["play_hosts"]))
        problems = problems + leaks(args["secret_places"]) + bad_waits(args["waits"])
        for src in args["secret_sources"]:
            path = os.path.expanduser(str(src.get("file") or ""))
            problems += sources(src["name"], bool(src.get("set")), path, bool(path) and os.access(path, os.R_OK)
                                and os.path.isfile(path))
        result = {"problems": problems, "cluster": plan}
        if problems:
            result["failed"] = True
            result["msg"] = format_problems(problems)
        else:
            result["msg"] = "head %s, %d worker(s): %s" % (
                plan["head"], len(plan["workers"]), ", ".join(plan["workers"]) or "none")
        return result
