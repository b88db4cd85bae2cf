#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather GPUs, GPU processes and host memory as the C(sparkops_gpu) fact
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x) once and reads C(/proc/meminfo) to report every GPU (name, UUID,
    memory total/used/free), every process that holds GPU memory and the container it runs in,
    and the host's memory.
  - On unified-memory GPUs such as the DGX Spark's GB10 the driver reports the framebuffer as
    C(N/A) or C(Not Supported); those values become null and the GPU is marked
    O(ignore:unified_memory). There the memory that matters is the host's, from C(/proc/meminfo).
  - GPU processes are mapped to their container through C(/proc/<pid>/cgroup) (Docker,
    containerd, Podman, Kubernetes), and to the container's name when the Docker CLI is present.
  - Reads only; changes nothing.
author:
  - sparkops.inference developers (@sparkops)
options:
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi).
      - When not set, C(nvidia-smi) is looked for on E(PATH) and in C(/usr/local/nvidia/bin),
        C(/usr/lib/wsl/lib) and C(/opt/nvidia/bin).
    type: path
  require_gpu:
    description:
      - When V(true), a host without C(nvidia-smi), or where it fails, fails the task with what
        was looked for.
      - When V(false), such a host reports O(ignore:gpus=[]) with a warning, and the reason in
        RV(ansible_facts.sparkops_gpu.error).
    type: bool
    default: true
  docker_cli:
    description:
      - Docker CLI used to name the containers that own GPU processes. Skipped when absent.
    type: str
    default: docker
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.facts
notes:
  - Inside a container C(nvidia-smi) lists no processes (PID namespace); run this on the host.
seealso:
  - name: nvidia-smi documentation
    description: NVIDIA System Management Interface.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Gather GPU facts
  sparkops.inference.gpu_facts:

- name: Tolerate hosts without a GPU (a CPU-only controller, a CI runner)
  sparkops.inference.gpu_facts:
    require_gpu: false

- name: Show what holds GPU memory
  ansible.builtin.debug:
    msg: "{{ ansible_facts['sparkops_gpu']['processes'] | map(attribute='name') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    sparkops_gpu:
      description: GPUs, GPU processes and host memory of this host.
      returned: always
      type: dict
      contains:
        source:
          description: Where the GPU data came from (the command run), or null without a GPU tool.
          type: str
          sample: /usr/bin/nvidia-smi -q -x
        driver_version:
          description: NVIDIA driver version.
          type: str
          sample: 580.126.09
        cuda_version:
          description: Highest CUDA version the driver supports.
          type: str
          sample: "13.0"
        gpu_count:
          description: Number of GPUs.
          type: int
          sample: 1
        unified_memory:
          description: True when any GPU's framebuffer size is not reported (GB10 unified memory).
          type: bool
        gpus:
          description: One entry per GPU, in nvidia-smi's index order.
          type: list
          elements: dict
          sample:
            - index: 0
              name: NVIDIA GB10
              uuid: GPU-197478cf-17f9-3f4f-f688-1ea33edabdc6
              bus_id: 0000000F:01:00.0
              architecture: Blackwell
              memory_total_mib: null
              memory_used_mib: null
              memory_free_mib: null
              unified_memory: true
        processes:
          description:
            - Processes holding GPU memory, one entry per process and GPU.
            - C(container) is null for a process on the host, else its runtime, id and name.
          type: list
          elements: dict
          sample:
            - gpu_index: 0
              gpu_uuid: GPU-197478cf-17f9-3f4f-f688-1ea33edabdc6
              pid: 6330
              name: sglang::scheduler
              type: C
              used_mib: 96073
              container: {runtime: docker, id: 3f2a..., name: sglang-head}
        gpu_memory_used_by_processes_mib:
          description: Sum of the GPU memory the processes hold.
          type: int
        host_memory:
          description: From /proc/meminfo, in MiB.
          type: dict
          sample: {total_mib: 124546, available_mib: 110023, free_mib: 37632, cached_mib: 70011}
        error:
          description: Why no GPU was read (only with O(require_gpu=false)).
          type: str
          returned: when no GPU data could be read
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._gpu import GpuParseError
from ansible_collections.sparkops.inference.plugins.module_utils._host import (
    NVIDIA_SMI_DIRS,
    read_gpu_facts,
)

# where nvidia-smi is looked for besides PATH (tests point it elsewhere)
EXTRA_DIRS = NVIDIA_SMI_DIRS


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            require_gpu=dict(type="bool", default=True),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    try:
        facts, error, dummy = read_gpu_facts(module, module.params["nvidia_smi_path"],
                                             module.params["docker_cli"], EXTRA_DIRS)
    except GpuParseError as exc:
        module.fail_json(msg="cannot read host memory: %s" % exc)
    if error:
        if module.params["require_gpu"]:
            module.fail_json(msg=error)
        module.warn(error)
    module.exit_json(changed=False, ansible_facts={"sparkops_gpu": facts})


if __name__ == "__main__":
    main()
