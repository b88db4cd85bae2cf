#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ray_cluster_facts
short_description: Read a Ray cluster's nodes and resources from its head container
version_added: 0.1.0
description:
  - Reads the node table from the cluster's GCS inside the Ray head container (C(docker exec);
    Ray's GCS client, or C(ray.nodes()) on Ray versions without it), and reports the alive nodes
    with their addresses, the CPU and GPU totals, and how they compare with the hosts expected to
    be in the cluster. Optionally waits until they match, and adds C(ray status).
  - Counts nodes per address, so a host registered twice (a second worker joining an old
    cluster) is reported as a duplicate, not counted as an extra GPU.
  - Reads only; changes nothing.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.facts
options:
  container:
    description: Name of the Ray head container.
    type: str
    default: sparkops-ray-head
  gcs_address:
    description: Address and port of the cluster's GCS (the head's fabric address and GCS port).
    type: str
    required: true
  wait_timeout:
    description:
      - Seconds to wait (polling every 0.1 s inside the head container) until the cluster has
        exactly the expected alive nodes and GPUs. V(0) reads once.
    type: float
    default: 0
  ray_status:
    description: Also run C(ray status) and return it parsed (about a second more).
    type: bool
    default: false
  expected:
    description:
      - The nodes the cluster should have, as a mapping of node address (the hosts' fabric
        addresses) to the GPUs each declares. Used to compute O(ignore:ready), missing and
        duplicate nodes.
    type: dict
    default: {}
  docker_cli:
    description: Docker CLI on the head host.
    type: str
    default: docker
"""

EXAMPLES = r"""
- name: Wait until both Sparks are in the cluster with their GPUs
  sparkops.inference.ray_cluster_facts:
    gcs_address: 192.168.100.10:6379
    expected:
      192.168.100.10: 1
      192.168.100.11: 1
    wait_timeout: 120
  register: ray_state
  failed_when: not ray_state.ansible_facts.sparkops_ray.ready
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    sparkops_ray:
      description: The cluster as Ray sees it.
      type: dict
      contains:
        ready:
          description: Every expected address has exactly one alive node, and the GPU total is the expected one.
          type: bool
        ray_version:
          description: Ray version in the head container.
          type: str
          sample: 2.60.0
        head_address:
          description: The head's node address.
          type: str
        nodes:
          description: Every node Ray knows (alive or dead) with address, CPUs and GPUs.
          type: list
          elements: dict
        alive_nodes:
          description: Number of alive nodes.
          type: int
        gpus_total:
          description: GPUs of the alive nodes.
          type: float
        cpus_total:
          description: CPUs of the alive nodes.
          type: float
        missing:
          description: Expected addresses with no alive node.
          type: list
          elements: str
        duplicates:
          description: Addresses with more than one alive node, and their node ids.
          type: dict
        unexpected:
          description: Alive node addresses that were not expected.
          type: list
          elements: str
        status:
          description: C(ray status) parsed (active nodes, pending, failures, usage), with O(ray_status=true).
          type: dict
        error:
          description: The last error met reading the GCS, or null.
          type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._ray import (
    POLL_SNIPPET,
    RayParseError,
    cluster_summary,
    parse_poll_output,
    parse_ray_status,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", default="sparkops-ray-head"),
            gcs_address=dict(type="str", required=True),
            expected=dict(type="dict", default={}),
            wait_timeout=dict(type="float", default=0),
            ray_status=dict(type="bool", default=False),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    name = p["container"]
    expected = dict((str(k), float(v)) for k, v in p["expected"].items())
    args = json.dumps({"address": p["gcs_address"], "timeout": p["wait_timeout"],
                       "nodes": len(expected), "gpus": sum(expected.values())})

    rc, out, err = docker.run(["exec", name, "python3", "-c", POLL_SNIPPET, args])
    if rc != 0:
        module.fail_json(msg="could not read the Ray cluster from container %s (exit %d): %s"
                         % (name, rc, (err or out).strip()[-800:]),
                         head_logs=docker.logs(name, 15))
    try:
        nodes, error, version = parse_poll_output(out)
    except RayParseError as exc:
        module.fail_json(msg="Ray in container %s printed something unexpected: %s" % (name, exc))
    facts = cluster_summary(nodes, expected)
    facts.update(nodes=nodes, ray_version=version, container=name, gcs_address=p["gcs_address"],
                 error=error)
    if error:
        facts["ready"] = False
    if p["ray_status"]:
        rc, status_out, status_err = docker.run(["exec", name, "ray", "status"])
        try:
            facts["status"] = parse_ray_status(status_out) if rc == 0 else None
        except RayParseError:
            facts["status"] = None
    msg = "%d node(s) with %s GPU(s) of %d expected with %s: %s" % (
        facts["alive_nodes"], facts["gpus_total"], len(expected), facts["expected_gpus"],
        "ready" if facts["ready"] else "not ready")
    module.exit_json(changed=False, msg=msg, ansible_facts={"sparkops_ray": facts})


if __name__ == "__main__":
    main()
