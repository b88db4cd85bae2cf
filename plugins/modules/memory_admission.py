#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: memory_admission
short_description: Admit an engine only when the memory it will ask for is free now
version_added: 0.3.0
description:
  - Decides, before an engine container is started, whether the engine's own start-up check
    would pass with O(utilization) (vLLM's C(--gpu-memory-utilization), SGLang's
    C(--mem-fraction-static)), from the figures that check reads - on unified memory (DGX Spark,
    GB10) the host's C(MemFree) against C(MemTotal); on discrete GPUs each GPU's free memory,
    less the engine's CUDA context, against its used + free.
  - When the memory is short, first evicts the page cache of the model's files only
    (C(posix_fadvise(DONTNEED)) on each file under O(model_path)) - the usual reason on a Spark,
    where reading the weights fills the same memory the engine needs - and looks again; then,
    with O(drop_caches=true), drops every page cache and looks again.
  - Still short, it fails with the figures (wanted, free, total, the highest utilization that
    would pass now) and what still holds memory, instead of letting the engine fail minutes later.
  - Without a shortfall it changes nothing.
author:
  - sparkops.inference developers (@sparkops)
options:
  utilization:
    description: The fraction of the memory the engine will take (0 < x <= 1).
    type: float
    required: true
  model_path:
    description: The model directory whose files' page cache may be evicted (followed links included).
    type: path
  evict_model_cache:
    description: Evict the page cache of the files under O(model_path) when the memory is short.
    type: bool
    default: true
  drop_caches:
    description: Still short after that, C(sync) and drop every page cache (C(echo 3 > /proc/sys/vm/drop_caches)).
    type: bool
    default: false
  wait:
    description:
      - Seconds to keep looking, every 2 s, while the memory is still short after the evictions
        (the ranks of an engine stopped just before let go of their memory).
    type: int
    default: 0
  flag:
    description: The engine's option the utilization is given as, for the message.
    type: str
    default: --gpu-memory-utilization
  nvidia_smi_path:
    description: Path of nvidia-smi; searched for when not set.
    type: path
  docker_cli:
    description: Docker CLI that names the containers of GPU processes.
    type: str
    default: docker
extends_documentation_fragment:
  - sparkops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reports the admission and evicts nothing; a shortfall is a warning, not a failure (in check
      mode nothing was stopped before it, so the memory it sees is not what a deploy would see).
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Evicting a page cache changes no state anyone manages; it always reports C(changed=false).
notes:
  - The check is vLLM's own (C(Free memory on device ... is less than desired GPU memory utilization));
    for SGLang the same arithmetic is a necessary condition, not its exact check.
"""

EXAMPLES = r"""
- name: Admit vLLM with 85 % of the unified memory, evicting the model's page cache if needed
  sparkops.inference.memory_admission:
    utilization: 0.85
    model_path: /opt/models/Qwen3.5-122B-A10B-FP8
    drop_caches: true
    wait: 30
"""

RETURN = r"""
admission:
  description: The decision, from the last look at the memory.
  returned: always
  type: dict
  contains:
    ok:
      description: Whether the engine's start-up check would pass.
      type: bool
    wanted_mib:
      description: What the engine asks for (utilization x total).
      type: int
    free_mib:
      description: What its check counts as free.
      type: int
    total_mib:
      description: What its check counts as the total.
      type: int
    reachable:
      description: The highest utilization (two decimals) that would pass now.
      type: float
    unified_memory:
      description: Whether the figures are the host's (unified memory) rather than a GPU's.
      type: bool
    evicted:
      description: What was evicted to get there (C(the model's page cache), C(all page caches)).
      type: list
      elements: str
    evicted_files:
      description: Files under O(model_path) whose page cache was evicted.
      type: int
    gained_mib:
      description: Free memory gained by the evictions (free after less free before).
      type: int
    holders:
      description: What still holds GPU memory (GPU processes and their containers).
      type: list
      elements: str
  sample:
    ok: true
    wanted_mib: 105861
    free_mib: 110402
    total_mib: 124543
    reachable: 0.88
    unified_memory: true
    evicted: [the model's page cache]
    evicted_files: 41
    gained_mib: 73011
    holders: []
"""

import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkops.inference.plugins.module_utils._gpu import GpuParseError
from ansible_collections.sparkops.inference.plugins.module_utils._host import read_gpu_facts
from ansible_collections.sparkops.inference.plugins.module_utils._memory import (
    admission_refusal,
    engine_admission,
    still_holding,
)


def evict_page_cache(root):
    """posix_fadvise(DONTNEED) on every regular file under root (links followed, each file once).
    Returns the number of files."""
    seen = set()
    count = 0
    for dirpath, dummy, files in os.walk(root, followlinks=True):
        for name in files:
            path = os.path.realpath(os.path.join(dirpath, name))
            if path in seen or not os.path.isfile(path):
                continue
            seen.add(path)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            except OSError:
                pass
            finally:
                os.close(fd)
    return count


class Look(object):
    """The memory as the engine's check would see it, looked at again on each call."""

    def __init__(self, module):
        self.module = module
        self.facts = None

    def __call__(self):
        p = self.module.params
        try:
            self.facts, dummy, dummy = read_gpu_facts(self.module, p["nvidia_smi_path"], p["docker_cli"])
        except GpuParseError as exc:
            self.module.fail_json(msg="cannot read the memory: %s" % exc)
        try:
            return engine_admission(self.facts, p["utilization"])
        except ValueError as exc:
            self.module.fail_json(msg="cannot judge the engine's memory: %s" % exc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            utilization=dict(type="float", required=True),
            model_path=dict(type="path"),
            evict_model_cache=dict(type="bool", default=True),
            drop_caches=dict(type="bool", default=False),
            wait=dict(type="int", default=0),
            flag=dict(type="str", default="--gpu-memory-utilization"),
            nvidia_smi_path=dict(type="path"),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not 0 < p["utilization"] <= 1:
        module.fail_json(msg="utilization must be above 0 and at most 1 (a fraction of the memory); got %s"
                         % p["utilization"])
    look = Look(module)
    view = look()
    first_free = view["free_mib"]
    evicted, files = [], 0
    if not view["ok"] and not module.check_mode:
        if p["evict_model_cache"] and p["model_path"] and os.path.isdir(p["model_path"]):
            files = evict_page_cache(p["model_path"])
            evicted.append("the model's page cache")
            view = look()
        if not view["ok"] and p["drop_caches"]:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            evicted.append("all page caches")
            view = look()
        deadline = time.time() + p["wait"]
        while not view["ok"] and time.time() < deadline:
            time.sleep(2)
            view = look()
    holders = still_holding(look.facts)
    result = dict(view, evicted=evicted, evicted_files=files, gained_mib=view["free_mib"] - first_free,
                  holders=holders)
    if not view["ok"]:
        msg = admission_refusal(socket.gethostname(), p["utilization"], view, holders, evicted, p["flag"])
        if module.check_mode:
            module.warn("in check mode nothing was stopped before this look, so it may differ from a deploy's: " + msg)
        else:
            module.fail_json(msg=msg, admission=result)
    module.exit_json(changed=False, admission=result)


if __name__ == "__main__":
    main()
