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
  - With O(trust_running), a container that runs this image (the same image ID) with the GPUs
    already - the Ray container or the engine of an earlier deploy - shows the path works, and
    nothing is run (RV(proven_by) names it). A driver that broke after it started shows when a
    new container starts (and a deploy then rolls back).
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
  trust_running:
    description:
      - Take a running container of the same image ID with the GPUs as the check passed, and run
        nothing. V(false) always runs the check.
    type: bool
    default: true
    version_added: 0.4.0
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
  description: How long the run took (0 when a running container proved the path).
  returned: always
  type: float
  sample: 0.8
proven_by:
  description:
    - The running container of this image with the GPUs that stood for the check (O(trust_running)),
      or V(null) when the check ran.
  returned: always
  type: str
  sample: sparkops-ray-head
  version_added: 0.4.0
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._prereqs import gpu_run_problem, gpus_proven_by


def running_of(docker, image_id):
    """The inspect documents of the running containers made from image_id (none on any error:
    the check then runs)."""
    rc, out, dummy = docker.run(["ps", "-q", "--no-trunc", "--filter", "ancestor=" + image_id])
    ids = out.split() if rc == 0 else []
    if not ids:
        return []
    rc, out, dummy = docker.run(["container", "inspect"] + ids)
    try:
        return json.loads(out) if rc == 0 else []
    except ValueError:
        return []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            timeout=dict(type="int", default=60),
            docker_cli=dict(type="str", default="docker"),
            trust_running=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    image_id = docker.image_id(p["image"])
    if image_id is None:
        module.fail_json(msg="%s is not on this host: pull it first (the GPU check never pulls)" % p["image"])
    if p["trust_running"]:
        proven_by = gpus_proven_by(running_of(docker, image_id), image_id)
        if proven_by:
            module.exit_json(changed=False, seconds=0.0, proven_by=proven_by)
    t0 = time.time()
    rc, out, err = docker.run_bounded(p["timeout"], [
        "run", "--rm", "--gpus", "all", "--network", "none", "--pull", "never",
        "--entrypoint", "true", p["image"]])
    seconds = round(time.time() - t0, 2)
    problem = gpu_run_problem(rc, (err or "") + " " + (out or ""), p["image"], p["timeout"])
    if problem:
        module.fail_json(msg=problem, seconds=seconds, rc=rc)
    module.exit_json(changed=False, seconds=seconds, proven_by=None)


if __name__ == "__main__":
    main()
