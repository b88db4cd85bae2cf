#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_prereqs
short_description: Check what a host needs before anything is deployed on it
version_added: 0.1.0
description:
  - Checks, in one pass, that the Docker engine is reachable, that Docker can give containers a
    GPU (an C(nvidia) runtime or C(nvidia-container-runtime-hook) on E(PATH), or a CDI spec),
    that the Python running this module has C(requests) (which community.docker needs), and
    that the disk under Docker's root has room for the engine images.
  - Fails naming every missing prerequisite with its fix; returns the findings as the
    C(sparkops_host) fact either way. Changes nothing.
author:
  - sparkops.inference developers (@sparkops)
options:
  docker_cli:
    description: Docker CLI to ask the engine with.
    type: str
    default: docker
  min_free_disk_gib:
    description: Free space needed under Docker's root directory, in GiB. V(0) skips the check.
    type: float
    default: 0
  require_gpu_runtime:
    description: Whether a missing NVIDIA container runtime is a problem.
    type: bool
    default: true
  require_iptables:
    description: Whether C(iptables), C(ip6tables) and their C(-restore) must be on E(PATH) (the opt-in firewall is on).
    type: bool
    default: false
    version_added: 0.2.0
  fail_on_problems:
    description: When V(false), report problems without failing.
    type: bool
    default: true
  gpu_facts:
    description:
      - Also gather the C(sparkops_gpu) fact, as M(sparkops.inference.gpu_facts) does, in the same
        call (one round trip per host for the whole preflight).
      - Read only when the prerequisites pass (or O(fail_on_problems=false)).
    type: bool
    default: false
    version_added: 0.3.0
  nvidia_smi_path:
    description:
      - With O(gpu_facts), the path of C(nvidia-smi); when not set it is looked for as
        M(sparkops.inference.gpu_facts) does.
    type: path
    version_added: 0.3.0
  require_gpu:
    description:
      - With O(gpu_facts), whether a host without a readable GPU fails the task (with
        M(sparkops.inference.gpu_facts)'s message) or only warns.
    type: bool
    default: true
    version_added: 0.3.0
  model_path:
    description:
      - Also read the model directory at this path, as M(sparkops.inference.model_info) does (its
        manifest, and the architectures and model_type of its C(config.json)), into the
        C(sparkops_model) fact - in the same call (the engine_image role reads the head's from it).
      - A directory or C(config.json) that cannot be used is not a failure here; its reason is in
        C(error) of the fact (the phase that needs the architectures fails with it).
    type: path
    version_added: 0.4.0
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.facts
"""

EXAMPLES = r"""
- name: Check prerequisites (80 GiB free for two engine images)
  sparkops.inference.host_prereqs:
    min_free_disk_gib: 80

- name: Check prerequisites and gather the GPU facts in one call
  sparkops.inference.host_prereqs:
    gpu_facts: true
"""

RETURN = r"""
problems:
  description: Every missing prerequisite with its fix.
  returned: always
  type: list
  elements: str
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    sparkops_host:
      description: What was found.
      type: dict
      sample:
        architecture: arm64
        docker: {server_version: 28.3.0, root_dir: /var/lib/docker, runtimes: [nvidia, runc]}
        gpu_runtime: true
        python: /usr/bin/python3
        python_requests: true
        timeout: /usr/bin/timeout
        free_disk_gib: 812.4
        disk_path: /var/lib/docker
    sparkops_gpu:
      description: With O(gpu_facts), what M(sparkops.inference.gpu_facts) returns.
      returned: when O(gpu_facts=true) and the prerequisites pass
      type: dict
    sparkops_model:
      description:
        - With O(model_path), what M(sparkops.inference.model_info) returns for it (path, exists,
          files, size_bytes, manifest, architectures, model_type), and C(error) - why its
          C(config.json) cannot be used, or null.
      returned: when O(model_path) is given
      type: dict
      version_added: 0.4.0
"""

import os
import platform
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker, architecture
from ansible_collections.sparkops.inference.plugins.module_utils._gpu import GpuParseError
from ansible_collections.sparkops.inference.plugins.module_utils._host import NVIDIA_SMI_DIRS, read_gpu_facts
from ansible_collections.sparkops.inference.plugins.module_utils._prereqs import (
    evaluate,
    parse_docker_info,
)
from ansible_collections.sparkops.inference.plugins.module_utils._record import read_model

CDI_SPECS = ["/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia.json", "/var/run/cdi/nvidia.yaml",
             "/var/run/cdi/nvidia.json"]


def has_requests():
    try:
        import requests  # noqa: F401 pylint: disable=unused-import
    except ImportError:
        return False
    return True


def free_gib(path):
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.statvfs(path or "/")
    return round(st.f_bavail * st.f_frsize / float(1 << 30), 1), path


def main():
    module = AnsibleModule(
        argument_spec=dict(
            docker_cli=dict(type="str", default="docker"),
            min_free_disk_gib=dict(type="float", default=0),
            require_gpu_runtime=dict(type="bool", default=True),
            require_iptables=dict(type="bool", default=False),
            fail_on_problems=dict(type="bool", default=True),
            gpu_facts=dict(type="bool", default=False),
            nvidia_smi_path=dict(type="path"),
            require_gpu=dict(type="bool", default=True),
            model_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    info = {"python": sys.executable, "python_requests": has_requests(),
            "architecture": architecture(platform.machine()), "docker": None}
    docker = Docker(module, module.params["docker_cli"], required=False)
    info["docker_cli"] = docker.bin
    if docker.bin:
        rc, out, err = docker.run(["info", "--format", "{{json .}}"])
        try:
            parsed = parse_docker_info(out) if out.strip() else None
        except ValueError:
            parsed = None
        if rc != 0 or parsed is None or not parsed["server_version"]:
            errors = (parsed or {}).get("server_errors") or [(err or out).strip()[-300:]]
            info["docker_error"] = "; ".join(errors)
        else:
            info["docker"] = parsed
    info["timeout"] = module.get_bin_path("timeout")
    if module.params["require_iptables"]:
        info["iptables"] = [t for t in ("iptables", "iptables-restore", "ip6tables", "ip6tables-restore")
                            if not module.get_bin_path(t)]
    info["path"] = os.environ.get("PATH", "")
    hook = module.get_bin_path("nvidia-container-runtime-hook")
    runtimes = (info["docker"] or {}).get("runtimes", [])
    info["gpu_runtime"] = bool("nvidia" in runtimes or hook or any(os.path.exists(p) for p in CDI_SPECS))
    root = (info["docker"] or {}).get("root_dir") or "/var/lib/docker"
    info["free_disk_gib"], info["disk_path"] = free_gib(root)

    problems = evaluate(info, module.params["min_free_disk_gib"],
                        module.params["require_gpu_runtime"])
    facts = {"sparkops_host": info}
    if module.params["model_path"]:
        model, error = read_model(module.params["model_path"])
        facts["sparkops_model"] = dict(model, error=error)
    if problems and module.params["fail_on_problems"]:
        module.fail_json(msg="%d missing prerequisite(s) on this host:\n- %s"
                         % (len(problems), "\n- ".join(problems)),
                         problems=problems, ansible_facts=facts)
    if module.params["gpu_facts"]:
        try:
            gpu, error, dummy = read_gpu_facts(module, module.params["nvidia_smi_path"],
                                               module.params["docker_cli"], NVIDIA_SMI_DIRS)
        except GpuParseError as exc:
            module.fail_json(msg="cannot read host memory: %s" % exc, ansible_facts=facts)
        if error and module.params["require_gpu"]:
            module.fail_json(msg=error, problems=problems, ansible_facts=facts)
        if error:
            module.warn(error)
        facts["sparkops_gpu"] = gpu
    module.exit_json(changed=False, problems=problems, ansible_facts=facts)


if __name__ == "__main__":
    main()
