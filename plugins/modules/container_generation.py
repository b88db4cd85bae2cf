#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: container_generation
short_description: Keep the serving containers while a new generation starts; drop or restore them
version_added: 0.2.0
description:
  - A re-deploy that replaces the engine or the Ray containers keeps what serves instead of
    removing it. Two 120 GB models do not fit side by side on a Spark, so the kept generation is
    stopped first, then the new one starts, then the old one is dropped.
  - With O(state=kept), each container of O(containers) that exists is stopped (the last one
    first - the engine before the Ray containers whose ranks it drives) and renamed
    C(NAME<suffix>). A C(NAME<suffix>) that exists already is the generation that last served (an
    earlier run kept it and never got its new engine ready); it stays, and C(NAME) is removed.
  - With O(state=dropped), removes every C(NAME<suffix>) (the new generation serves).
  - With O(state=restored), removes C(NAME) and renames C(NAME<suffix>) back, then starts it, in
    the order of O(containers); containers without a kept one are left alone.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
attributes:
  check_mode:
    support: full
    details: Returns the steps it would take; changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Once kept, dropped or restored, a second run finds nothing left to do.
options:
  state:
    description: V(kept), V(dropped) or V(restored).
    type: str
    choices: [kept, dropped, restored]
    required: true
  containers:
    description: This host's containers of the generation, in start order (Ray, then the engine).
    type: list
    elements: str
    required: true
  suffix:
    description: What the kept containers' names end with.
    type: str
    default: -previous
  stop_timeout:
    description: Seconds a container gets between SIGTERM and SIGKILL when it is stopped.
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Keep the serving engine and Ray head, stopped, before new ones start
  sparkops.inference.container_generation:
    state: kept
    containers: [sparkops-ray-head, sparkops-model-server]
"""

RETURN = r"""
steps:
  description: What was done (or would be, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["stop sparkops-model-server", "rename sparkops-model-server sparkops-model-server-previous"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._generation import (
    plan_drop,
    plan_keep,
    plan_restore,
    previous,
)

PLANS = {"kept": plan_keep, "dropped": plan_drop, "restored": plan_restore}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=list(PLANS), required=True),
            containers=dict(type="list", elements="str", required=True),
            suffix=dict(type="str", default="-previous"),
            stop_timeout=dict(type="int", default=30),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    present = {}
    for name in p["containers"]:
        for n in (name, previous(name, p["suffix"])):
            doc = docker.container(n)
            if doc is not None:
                present[n] = {"running": bool((doc.get("State") or {}).get("Running"))}
    steps = PLANS[p["state"]](p["containers"], present, p["suffix"])
    words = [" ".join(s) for s in steps]
    if module.check_mode or not steps:
        module.exit_json(changed=bool(steps), steps=words)
    for step in steps:
        action, name = step[0], step[1]
        if action == "stop":
            args = ["stop", "-t", str(p["stop_timeout"]), name]
        elif action == "rename":
            args = ["rename", name, step[2]]
        elif action == "start":
            args = ["start", name]
        else:
            args = ["rm", "-f", name]
        docker.run(args, check=True, what="%s (%s)" % (" ".join(step), p["state"]))
    module.exit_json(changed=True, steps=words)


if __name__ == "__main__":
    main()
