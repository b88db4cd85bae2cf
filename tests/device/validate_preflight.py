"""Run the fabric preflight's all-reduce script (plugins/modules/fabric_preflight.py SCRIPT) with NCCL
on a real two-GPU host, one process per GPU, and judge the NCCL log with the collection's parser.

    python3 tests/device/validate_preflight.py "$OUT"

The host has no Docker, so the script runs directly (the module runs the same script in the
engine image). Environment: the sockets-only one the fabric role renders, on lo.
"""
import ast
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.sparkops.inference.plugins.module_utils._fabric import (  # noqa: E402
    judge_transport, parse_nccl_log)

OUT = sys.argv[1]


def script():
    tree = ast.parse(open(os.path.join(ROOT, "plugins", "modules", "fabric_preflight.py")).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "SCRIPT":
            return node.value.value
    raise SystemExit("no SCRIPT in fabric_preflight.py")


def main():
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, NCCL_DEBUG="INFO", NCCL_SOCKET_IFNAME="lo", GLOO_SOCKET_IFNAME="lo",
               NCCL_IB_DISABLE="1", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1")
    procs = []
    for rank in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-c", script(), str(rank), "2", "127.0.0.1", "29511", "256", "3", "nccl", "120"],
            env=dict(env, CUDA_VISIBLE_DEVICES=str(rank)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    for rank, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        with open(os.path.join(OUT, "rank%d.log" % rank), "w") as f:
            f.write(out + err)
        result = [json.loads(l.split("=", 1)[1]) for l in out.splitlines() if l.startswith("SPARKOPS_ALLREDUCE=")]
        parsed = parse_nccl_log(out + err)
        print("rank %d rc=%d result=%s transport=%s devices=%s judged(no RDMA)=%s judged(RDMA expected)=%s" % (
            rank, p.returncode, result, parsed["transport"], parsed["net_devices"],
            judge_transport(parsed, False), judge_transport(parsed, True)))


if __name__ == "__main__":
    main()
