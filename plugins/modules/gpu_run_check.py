#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_run_check
short_description: Check that Docker gives an image's containers the GPUs (docker run --gpus all)
version_added: 0.2.0
description:
  - Runs C(true) in the image with C(docker run --rm --gpus all --network none --entrypoint true),
    bounded by coreutils C(timeout), and removes the container. This is the path every Ray and
    engine container takes to its GPUs (the NVIDIA Container Toolkit, the driver, the image's
    CUDA requirement), tried before any service is stopped.
  - Fails naming what is broken and its fix (the toolkit missing, the driver not loaded, a
    driver too old for the image's CUDA), with Docker's own words.
  - The image must be on the host already; it is never pulled.
author:
  - sparkops.inference developers (@sparkops)
options:
  image:
    description: The image to run (an engine candidate on this host).
    type: str
    required: true
  timeout:
    description: Seconds the run may take.
    type: int
    default: 60
  docker_cli:
    description: Docker CLI to run the container with.
    type: str
    default: docker
extends_documentation_fragment:
  - sparkops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Runs the check in check mode too; the container it starts is removed when it ends.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Changes nothing on the host; it always reports C(changed=false).
"""

EXAMPLES = r"""
- name: Check that the selected engine image gets the GPUs
  sparkops.inference.gpu_run_check:
    image: nvcr.io/nvidia/vllm:25.11-py3
"""

RETURN = r"""
seconds:
  description: How long the run took.
  returned: always
  type: float
  sample: 0.8
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._prereqs import gpu_run_problem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            timeout=dict(type="int", default=60),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    if docker.image_id(p["image"]) is None:
        module.fail_json(msg="%s is not on this host: pull it first (the GPU check never pulls)" % p["image"])
    t0 = time.time()
    rc, out, err = docker.run_bounded(p["timeout"], [
        "run", "--rm", "--gpus", "all", "--network", "none", "--pull", "never",
        "--entrypoint", "true", p["image"]])
    seconds = round(time.time() - t0, 2)
    problem = gpu_run_problem(rc, (err or "") + " " + (out or ""), p["image"], p["timeout"])
    if problem:
        module.fail_json(msg=problem, seconds=seconds, rc=rc)
    module.exit_json(changed=False, seconds=seconds)


if __name__ == "__main__":
    main()
