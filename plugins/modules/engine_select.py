#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: engine_select
short_description: Pick the first engine image that can serve the model on every host
version_added: 0.2.0
description:
  - Runs on the controller only (an action plugin) and touches no host.
  - Reads each host's C(sparkops_engine_probes) (image -> probe result, or C({error}) for an
    image that could not be pulled or probed) and C(sparkops_host.architecture), and selects the
    first candidate, in preference order, that every host holds as the same image, that is built
    for the hosts' CPU, carries an engine that serves every architecture natively, and can be
    launched as O(launcher) asks - over Ray (Ray installed in the image) or natively, one engine
    rank per host (the engine's own multi-node options, read from its command-line sources by
    the probe).
  - Returns a row per candidate with the reasons it was rejected, and the rows as text lines.
  - Fails, with that table and what to do, when no candidate fits; in check mode a candidate
    not yet pulled is not judged (C(pending)) instead.
author:
  - sparkops.inference developers (@sparkops)
options:
  candidates:
    description: Candidate images, preferred first.
    type: list
    elements: str
    required: true
  hosts:
    description: The hosts whose probe results count.
    type: list
    elements: str
    required: true
  architectures:
    description: The model's architectures (named in the failure message).
    type: list
    elements: str
    default: []
  launcher:
    description:
      - V(ray) - the image must carry Ray; V(native) - the engine's own multi-node launch (vLLM's
        C(--nnodes)/C(--node-rank)/C(--master-addr)/C(--headless), SGLang's C(--nnodes)/C(--node-rank)/C(--dist-init-addr));
        V(auto) - Ray when the image has it, else native.
    type: str
    choices: [auto, ray, native]
    default: auto
    version_added: 0.3.0
  cluster_hosts:
    description:
      - Every host of the cluster (default O(hosts)), including those the image reaches only over
        the fabric. Hosts of different CPU architectures fail here, naming each host's platform -
        one engine image serves the whole cluster.
    type: list
    elements: str
    default: []
    version_added: 0.2.0
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.actiongroup_controller
"""

EXAMPLES = r"""
- name: Select the first candidate that can serve the model on every host
  sparkops.inference.engine_select:
    candidates: "{{ engine_image_candidates }}"
    hosts: "{{ ansible_play_hosts }}"
    architectures: [Qwen3_5MoeForConditionalGeneration]
  register: engine_image_selection
  run_once: true
"""

RETURN = r"""
selected:
  description: The selected image, or null.
  returned: always
  type: str
launcher:
  description: How the selected image is launched (V(ray) or V(native)), or null.
  returned: always
  type: str
  version_added: 0.3.0
engine:
  description: The selected image's engine as its probe found it (V(vllm) or V(sglang)), or null.
  returned: always
  type: str
  version_added: 0.3.0
rows:
  description: >-
    One row per candidate (image, status, engine, version, ray, launchers - launcher to null where
    the image offers it or why not -, launcher, platform, digest, architectures, reasons).
  returned: always
  type: list
  elements: dict
table:
  description: The rows as text lines.
  returned: always
  type: list
  elements: str
pending:
  description: Check mode - no candidate was selected because one was not pulled yet.
  returned: always
  type: bool
"""
