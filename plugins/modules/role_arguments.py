#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check the variables of this collection's roles against their argument specs, up front
version_added: 0.3.0
description:
  - Runs on the controller only (an action plugin) and touches no host.
  - For each role in O(roles), reads the role's C(meta/argument_specs.yml) and checks every documented
    variable the play sets for this host - from the inventory, the play, C(-e), a fact - templated, as
    ansible-core's own check at the start of the role templates it, against its type, elements and
    choices. A variable that holds the role's own default (its C(defaults/main.yml) as written) is left to
    the phase (what the collection ships is tested with it, and a default may read what an earlier phase
    learns).
  - Reports every problem at once, one line each - the variable, the value found, what the role expects
    and what to do - and fails when there is any. A secret's value (C(no_log) in the spec) is never shown.
  - The deploy runs it in its preflight for the roles of every phase and imports those roles with
    C(rolespec_validate=false) - ansible-core checks a role's variables only when the role starts, and a
    phase starts after the old services were stopped.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.actiongroup_controller
options:
  roles:
    description: Names of this collection's roles (C(engine_image), C(fabric), ...) whose variables are checked.
    type: list
    elements: str
    required: true
  entry_point:
    description: The entry point of each role's argument spec.
    type: str
    default: main
"""

EXAMPLES = r"""
- name: Check every phase's variables before anything is changed
  sparkops.inference.role_arguments:
    roles: [engine_image, gpu_memory, fabric, ray_cluster, model_server, watchdog, report]
"""

RETURN = r"""
checked:
  description: For each role, how many of its documented variables the play sets (not its defaults) and were checked.
  returned: always
  type: dict
  sample: {fabric: 3, ray_cluster: 2}
problems:
  description: One line per variable a role would refuse.
  returned: failed
  type: list
  elements: str
  sample: ["fabric_peer_port is 'abc': the fabric role expects a whole number - TCP port tried on each peer (a refused
            connection counts as reachable). Set it so, or drop it for its default (22)"]
"""
