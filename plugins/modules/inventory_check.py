#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: inventory_check
short_description: Check the inventory and variables against the sparkops cluster contract
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin) and touches no host.
  - Checks that exactly one head is named, that workers do not include the head, that every
    cluster host has a usable fabric address or subnet (valid, unique, inside its subnet), that
    a model path is given and that the candidate image list is not empty, and that every wait
    is whole seconds, 0 or more.
  - Reports every problem at once, each saying what was expected, what was found and what to
    do, and fails when there is any. Without problems, returns the cluster plan.
author:
  - sparkops.inference developers (@sparkops)
options:
  head_group:
    description: Inventory group that holds the head host.
    type: str
    default: llm_head
  worker_group:
    description: Inventory group that holds the worker hosts.
    type: str
    default: llm_workers
  head_host:
    description: The head host by name; overrides O(head_group).
    type: str
  worker_hosts:
    description: The worker hosts by name; overrides O(worker_group).
    type: list
    elements: str
  model_path:
    description: Model directory on the hosts; must be absolute.
    type: str
  candidates:
    description: Candidate engine images, preferred first; must be a non-empty list of strings.
    type: raw
  fabric_subnet:
    description: Fabric subnet for hosts that set neither C(fabric_address) nor C(fabric_subnet).
    type: str
  require_model:
    description: Whether O(model_path) must be set.
    type: bool
    default: true
  require_candidates:
    description: Whether O(candidates) must be set.
    type: bool
    default: true
  play_hosts:
    description:
      - The hosts the play runs on (C(ansible_play_hosts_all)); each one that is neither the head
        nor a worker is a problem (every phase would make it a worker). Not given, not checked.
      - Each of them whose C(sparkops_fact_owner) - in its facts or its variables - names another host
        is a problem too - the hosts share one set of facts (ansible-core 2.21 does this to the hosts of
        a C(run_once) task that ran before they had facts of their own). The preflight role sets it,
        on every host, just before this check.
    type: list
    elements: str
  secret_places:
    description:
      - Variables that must not hold a secret, by name - a list of arguments (an engine flag such
        as C(--api-key)) or a dict of environment variables (such as C(HF_TOKEN)); each one found
        is a problem naming the variable to use instead.
    type: dict
    default: {}
    version_added: 0.3.0
  secret_sources:
    description:
      - Each secret's two sources, by the variable's name - C(set) (whether the variable holds a
        value; never the value) and C(file) (a path on the controller). Both given, or a file
        that cannot be read, is a problem.
    type: list
    elements: dict
    default: []
    version_added: 0.3.0
  waits:
    description:
      - The deploy's waits in seconds, by the variable's name (C(model_server_ready_timeout) ...);
        each one that is not a whole number, 0 or more, is a problem. A value of V(null) is unset
        (the role's default applies).
    type: dict
    default: {}
    version_added: 0.3.0
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.actiongroup_controller
"""

EXAMPLES = r"""
- name: Check the inventory contract once, before touching any host
  sparkops.inference.inventory_check:
    model_path: "{{ sparkops_model_path }}"
    candidates: "{{ sparkops_engine_candidates }}"
  run_once: true
"""

RETURN = r"""
problems:
  description: Every problem found (empty when the inventory is usable).
  returned: always
  type: list
  elements: str
  sample:
    - "inventory group 'llm_head' has 2 hosts (spark1, spark2): expected exactly one head"
cluster:
  description: The cluster plan.
  returned: always
  type: dict
  sample:
    head: spark1
    workers: [spark2]
    size: 2
    hosts:
      spark1: {fabric_address: 192.168.100.10, fabric_subnet: null}
      spark2: {fabric_address: 192.168.100.11, fabric_subnet: null}
"""
