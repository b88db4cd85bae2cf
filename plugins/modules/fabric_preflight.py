#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fabric_preflight
short_description: Run this host's rank of an all-reduce across the cluster, inside the engine image
version_added: 0.1.0
description:
  - Starts a throwaway container of O(image) (host network, the fabric environment file,
    C(NCCL_DEBUG=INFO)) that joins a C(torch.distributed) all-reduce of O(world_size) ranks - NCCL
    on GPUs, gloo without - checks the sum, measures the bus bandwidth, and reports the transport
    actually used (for NCCL parsed from its log - C(NET/IB) with which HCAs, or C(NET/Socket) with
    which interface; for gloo the interface it was given).
  - Run it on every host at once (one rank each). Bounded by O(timeout) - the container is killed
    and removed when it runs over.
  - Fails when the all-reduce fails or is wrong, or when the fabric has RDMA (O(rdma_expected)) but
    NCCL used sockets.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
options:
  image:
    description: The engine image (it needs python3 and torch).
    type: str
    required: true
  rank:
    description: This host's rank (the head is 0).
    type: int
    required: true
  world_size:
    description: Number of ranks (hosts).
    type: int
    required: true
  master_address:
    description: The head's fabric address.
    type: str
    required: true
  master_port:
    description: Port of the rendezvous on the head.
    type: int
    default: 29511
  backend:
    description: V(nccl) (GPUs), V(gloo) (CPU), or V(auto) (NCCL when O(gpus=true)).
    type: str
    choices: [auto, nccl, gloo]
    default: auto
  gpus:
    description: Give the container every GPU.
    type: bool
    default: false
  env_file:
    description: The fabric environment file on the host.
    type: path
    default: /etc/sparkops/fabric.env
  size_mib:
    description: Size of the all-reduced tensor.
    type: int
    default: 64
  iterations:
    description: Timed all-reduces after the warm-up one.
    type: int
    default: 3
  timeout:
    description: Seconds the whole all-reduce may take on this host.
    type: int
    default: 90
  rdma_expected:
    description: The fabric has RDMA, so NCCL must use C(NET/IB).
    type: bool
    default: false
  docker_args:
    description: Extra C(docker run) arguments (devices, ulimits, privileged).
    type: list
    elements: str
    default: []
  name:
    description: Name of the throwaway container.
    type: str
    default: sparkops-fabric-preflight
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It changes nothing that stays; the container is removed.
"""

EXAMPLES = r"""
- name: All-reduce across the cluster over the fabric
  sparkops.inference.fabric_preflight:
    image: "{{ engine_image_selected }}"
    rank: "{{ ([sparkops_head_host] + sparkops_worker_hosts).index(inventory_hostname) }}"
    world_size: "{{ ([sparkops_head_host] + sparkops_worker_hosts) | length }}"
    master_address: "{{ hostvars[sparkops_head_host]['ansible_facts']['sparkops_fabric']['fabric_address'] }}"
    gpus: true
    rdma_expected: "{{ ansible_facts['sparkops_fabric']['rdma'] }}"
"""

RETURN = r"""
backend:
  description: The collective backend used.
  returned: success
  type: str
  sample: nccl
transport:
  description: The transport actually used (C(NET/IB), C(NET/Socket), or C(gloo/tcp)).
  returned: success
  type: str
net_devices:
  description: The devices or interface it used.
  returned: success
  type: list
  elements: str
  sample: ["rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE"]
busbw_gbs:
  description: Bus bandwidth of the timed all-reduces, GB/s.
  returned: success
  type: float
seconds:
  description: Wall time of this rank.
  returned: always
  type: float
log_tail:
  description: The last lines the rank printed.
  returned: always
  type: list
  elements: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._containers import preflight_run_args
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._fabric import judge_transport, parse_nccl_log

SCRIPT = r"""
import datetime, json, os, sys, time
import torch
import torch.distributed as dist
rank, world, master, port, size_mib, iters, backend, timeout = sys.argv[1:9]
rank, world, size_mib, iters, timeout = int(rank), int(world), int(size_mib), int(iters), int(timeout)
os.environ.update(MASTER_ADDR=master, MASTER_PORT=port)
dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout))
device = "cuda" if backend == "nccl" else "cpu"
n = size_mib * (1 << 20) // 4
want = float(sum(range(1, world + 1)))
x = torch.full((n,), float(rank + 1), device=device)
dist.all_reduce(x)
ok = float(x[0]) == want and float(x[-1]) == want
took = 0.0
for _ in range(iters):
    x.fill_(float(rank + 1))
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.time()
    dist.all_reduce(x)
    if device == "cuda":
        torch.cuda.synchronize()
    took += time.time() - t
    ok = ok and float(x[0]) == want and float(x[-1]) == want
dist.destroy_process_group()
busbw = (n * 4) * 2.0 * (world - 1) / world / (took / max(iters, 1)) / 1e9 if took else 0.0
print("SPARKOPS_ALLREDUCE=" + json.dumps({"ok": ok, "value": float(x[0]), "expected": want,
      "busbw_gbs": round(busbw, 2), "interface": os.environ.get("GLOO_SOCKET_IFNAME")}), flush=True)
"""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            rank=dict(type="int", required=True),
            world_size=dict(type="int", required=True),
            master_address=dict(type="str", required=True),
            master_port=dict(type="int", default=29511),
            backend=dict(type="str", default="auto", choices=["auto", "nccl", "gloo"]),
            gpus=dict(type="bool", default=False),
            env_file=dict(type="path", default="/etc/sparkops/fabric.env"),
            size_mib=dict(type="int", default=64),
            iterations=dict(type="int", default=3),
            timeout=dict(type="int", default=90),
            rdma_expected=dict(type="bool", default=False),
            docker_args=dict(type="list", elements="str", default=[]),
            name=dict(type="str", default="sparkops-fabric-preflight"),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=False,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    backend = p["backend"] if p["backend"] != "auto" else ("nccl" if p["gpus"] else "gloo")
    docker.rm(p["name"])  # a leftover of an earlier run
    t0 = time.time()
    rc, out, err = docker.run_bounded(p["timeout"] + 15, preflight_run_args(p, backend, SCRIPT), kill_after=5)
    seconds = round(time.time() - t0, 1)
    docker.rm(p["name"])  # gone even when it ran over
    tail = (out + err).strip().splitlines()[-12:]
    result = None
    for line in out.splitlines():
        if line.startswith("SPARKOPS_ALLREDUCE="):
            result = json.loads(line.split("=", 1)[1])
    nccl = parse_nccl_log(out + "\n" + err)
    if rc != 0 or result is None:
        why = ("did not finish within %d s (a peer never joined, or the fabric drops the traffic)"
               % p["timeout"]) if rc in (124, 137) else "failed (exit %d)" % rc
        module.fail_json(msg="the %s all-reduce (rank %d of %d, master %s:%d) %s%s" % (
            backend, p["rank"], p["world_size"], p["master_address"], p["master_port"], why,
            ("; NCCL: " + "; ".join(nccl["errors"])) if nccl["errors"] else ""),
            seconds=seconds, log_tail=tail, rc=rc)
    if not result["ok"]:
        module.fail_json(msg="the all-reduce returned %s, expected %s: the collective is broken"
                         % (result["value"], result["expected"]), seconds=seconds, log_tail=tail)
    if backend == "nccl":
        problem = judge_transport(nccl, p["rdma_expected"])
        if problem:
            module.fail_json(msg=problem, seconds=seconds, log_tail=tail, transport=nccl["transport"],
                             net_devices=nccl["net_devices"])
        transport, devices = nccl["transport"], nccl["net_devices"]
    else:
        transport, devices = "gloo/tcp", [result["interface"]] if result["interface"] else []
    module.exit_json(changed=False, backend=backend, transport=transport, net_devices=devices,
                     busbw_gbs=result["busbw_gbs"], seconds=seconds, log_tail=tail)


if __name__ == "__main__":
    main()
