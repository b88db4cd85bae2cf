# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch plan: how an engine (vLLM, SGLang) runs across the cluster with a launcher.

ray    - a Ray head and Ray workers in containers; vLLM's engine on the head drives its ranks in
         them, SGLang runs its own launcher on every host beside them.
native - no Ray: one engine rank per host (vLLM's --nnodes/--node-rank/--master-addr with the
         other ranks --headless, SGLang's own launcher), rank 0 on the head.

A phase asks the plan what it needs (do Ray containers run, which hosts run an engine rank, the
engine's memory flag, how its API key reaches it, where the ranks meet) and never compares an
engine or launcher name itself: a new engine or launch shape is a new entry here, not a branch in
every role. Pure: no I/O. The sparkops.inference.launch_plan filter returns it to the roles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.module_utils._secrets import SGLANG_CONFIG_FILE

LAUNCHERS = ("ray", "native")
# where the ranks meet on the head: SGLang's --dist-init-addr port, vLLM's --master-port (its own
# default, ParallelConfig.master_port)
SGLANG_DIST_PORT = 20000
VLLM_MASTER_PORT = 29501

# per engine: its program, its memory-fraction flag, the file its API key reaches it in (empty:
# vLLM's key is exported from the root-only key file by a wrapper), its ranks' meeting port, the
# variable it binds its own sockets to (the fabric address), and whether it runs a rank on every host
# even over Ray (SGLang's launcher does)
_ENGINES = {
    "vllm": {"entrypoint": ["vllm", "serve"], "memory_flag": "--gpu-memory-utilization", "key_config": "",
             "meet_port": VLLM_MASTER_PORT, "host_ip_env": "VLLM_HOST_IP", "ranks_over_ray": False},
    "sglang": {"entrypoint": ["python3", "-m", "sglang.launch_server"], "memory_flag": "--mem-fraction-static",
               "key_config": SGLANG_CONFIG_FILE, "meet_port": SGLANG_DIST_PORT, "host_ip_env": "SGLANG_HOST_IP",
               "ranks_over_ray": True},
}
ENGINES = tuple(_ENGINES)


class PlanError(ValueError):
    """An engine or launcher this module has no plan for."""


def launch_plan(engine="", launcher="", hosts=()):
    """The plan for `engine` (empty: vllm) launched by `launcher` (empty or auto: ray - what a
    phase assumes before an image selection decides) on `hosts` (the cluster's, head first).

    Returns a dict:
      engine, launcher   the names, for the report and the record (not for decisions)
      ray                Ray containers run (the Ray phase starts them, the watchdog restarts them)
      ranks_everywhere   an engine container on every host (else on the head alone)
      rank_hosts         the hosts that run an engine container, rank order (head first)
      memory_flag        the engine's flag for the fraction of GPU memory it may take
      key_config         the secrets file the engine reads its API key from ('' for none)
      meet_port          where the ranks meet on the head (None: vLLM over Ray, Ray places them)
      serving            how the report names the launch: 'over Ray' (the engine on the head, its
                         ranks in the Ray containers), 'beside Ray' (ranks of its own next to a Ray
                         cluster) or 'no Ray'
      drives_ray         the engine places its ranks through Ray (vLLM over Ray: its container shares
                         the Ray head's PID namespace and session directory)
      entrypoint         the engine's program (argv before its options)
      host_ip_env        the variable the engine binds its own sockets to (set to the fabric address)
    """
    engine = engine or "vllm"
    if engine not in _ENGINES:
        raise PlanError("engine is %r: expected one of %s" % (engine, ", ".join(ENGINES)))
    launcher = launcher or "auto"
    if launcher == "auto":
        launcher = "ray"
    if launcher not in LAUNCHERS:
        raise PlanError("launcher is %r: expected auto, %s" % (launcher, " or ".join(LAUNCHERS)))
    spec = _ENGINES[engine]
    ray = launcher == "ray"
    everywhere = not ray or spec["ranks_over_ray"]
    hosts = [str(h) for h in hosts or ()]
    if ray and not everywhere:
        serving = "over Ray"
    elif ray:
        serving = "beside Ray"
    else:
        serving = "no Ray"
    return {
        "engine": engine,
        "launcher": launcher,
        "ray": ray,
        "ranks_everywhere": everywhere,
        "rank_hosts": hosts if everywhere else hosts[:1],
        "memory_flag": spec["memory_flag"],
        "key_config": spec["key_config"],
        "meet_port": spec["meet_port"] if everywhere else None,
        "serving": serving,
        "drives_ray": ray and not everywhere,
        "entrypoint": list(spec["entrypoint"]),
        "host_ip_env": spec["host_ip_env"],
    }
