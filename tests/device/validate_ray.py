"""Two Ray nodes on one real two-GPU host (one GPU each), token authentication on, a STRICT_SPREAD
placement group with one GPU bundle per node, and an NCCL all-reduce between the two actors.

Run on the lent two-GPU host (device tool), with a Ray wheel installed, from the repo root:
    python3 tests/device/validate_ray.py "$OUT"
Writes `ray status`, the GCS node table as the collection's poll snippet reads it, the NCCL logs
and a summary under OUT. The NCCL environment is the sockets-only one the fabric role renders
for a host without RDMA (here the interface is lo: both nodes are on one host).
"""
import json
import os
import secrets
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.sparkops.inference.plugins.module_utils._ray import (  # noqa: E402
    POLL_SNIPPET, cluster_summary, parse_poll_output, parse_ray_status)

OUT = sys.argv[1]
FABRIC_ENV = {"NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo", "TP_SOCKET_IFNAME": "lo",
              "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1",
              "NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": os.path.join(OUT, "nccl.%h.%p.log"),
              "RAY_memory_monitor_refresh_ms": "0", "NCCL_IGNORE_CPU_AFFINITY": "1"}


def sh(argv, env, name=None):
    res = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if name:
        with open(os.path.join(OUT, name), "w") as f:
            f.write(res.stdout)
    return res


def main():
    os.makedirs(OUT, exist_ok=True)
    token_file = os.path.join(OUT, "..", "ray-token")
    with open(token_file, "w") as f:
        f.write(secrets.token_hex(24))
    os.chmod(token_file, 0o600)
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=os.path.abspath(token_file), **FABRIC_ENV)
    t0 = time.time()
    head = sh(["ray", "start", "--head", "--port", "6379", "--node-ip-address", "127.0.0.1", "--num-gpus", "1",
               "--include-dashboard", "false", "--disable-usage-stats"], dict(env, CUDA_VISIBLE_DEVICES="0"),
              "ray-start-head.txt")
    worker = sh(["ray", "start", "--address", "127.0.0.1:6379", "--node-ip-address", "127.0.0.1", "--num-gpus", "1",
                 "--disable-usage-stats"], dict(env, CUDA_VISIBLE_DEVICES="1"), "ray-start-worker.txt")
    print("ray start: head rc=%d worker rc=%d (%.1f s)" % (head.returncode, worker.returncode, time.time() - t0))
    poll = sh([sys.executable, "-c", POLL_SNIPPET, json.dumps({"address": "127.0.0.1:6379", "timeout": 60,
                                                               "nodes": 2, "gpus": 2})], env, "ray-poll.txt")
    nodes, error, version = parse_poll_output(poll.stdout)
    status = sh(["ray", "status"], env, "ray-status.txt")
    parsed = parse_ray_status(status.stdout)
    print("ray", version, "poll error:", error, "nodes:", [(n["address"], n["gpus"], n["alive"], n["reachable"]) for n in nodes])
    print("ray status active:", len(parsed["active"]), "GPU:", parsed["usage"].get("GPU"))
    print("summary vs one address:", {k: v for k, v in cluster_summary(nodes, {"127.0.0.1": 2}).items()
                                      if k in ("alive_nodes", "gpus_total", "duplicates", "ready")})
    refused = sh(["ray", "status", "--address", "127.0.0.1:6379"],
                 dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="wrong"), "ray-status-wrong-token.txt")
    print("client with a wrong token: rc=%d, refused=%s" % (refused.returncode, "InvalidAuthToken" in refused.stdout))

    # Ray reads its auth mode when it is imported: set it for this driver before that
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=env["RAY_AUTH_TOKEN_PATH"])
    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
    ray.init(address="auto", logging_level="ERROR", runtime_env={"env_vars": FABRIC_ENV})
    pg = placement_group([{"GPU": 1, "CPU": 1}] * 2, strategy="STRICT_SPREAD")
    ray.get(pg.ready(), timeout=120)

    @ray.remote(num_gpus=1, num_cpus=1)
    class Rank(object):
        def run(self, rank, master, port):
            import torch
            import torch.distributed as dist
            os.environ.update(MASTER_ADDR=master, MASTER_PORT=str(port))
            dist.init_process_group("nccl", rank=rank, world_size=2)
            x = torch.full((64 << 20,), float(rank + 1), device="cuda")  # 256 MiB of float32
            dist.all_reduce(x)
            torch.cuda.synchronize()
            t = time.time()
            for dummy in range(5):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            took = (time.time() - t) / 5
            size = x.numel() * 4
            value = x[0].item()
            dist.destroy_process_group()
            return {"rank": rank, "node": ray.get_runtime_context().get_node_id()[:12],
                    "gpu_ids": ray.get_gpu_ids(), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                    "device": torch.cuda.get_device_name(0), "first_value": value,
                    "busbw_gbs": round(size * 2 * (2 - 1) / 2 / took / 1e9, 2)}

    actors = [Rank.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
        placement_group=pg, placement_group_bundle_index=i)).remote() for i in range(2)]
    master = "127.0.0.1"  # both nodes are on this one host
    results = ray.get([a.run.remote(i, master, 29511) for i, a in enumerate(actors)], timeout=300)
    print("actors:", json.dumps(results))
    logs = ""
    for name in sorted(os.listdir(OUT)):
        if name.startswith("nccl."):
            with open(os.path.join(OUT, name)) as f:
                logs += f.read()
    with open(os.path.join(OUT, "nccl-all.log"), "w") as f:
        f.write(logs)
    for line in logs.splitlines():
        if "NET/Socket : Using" in line or "via NET/" in line or "NCCL version" in line:
            print("nccl:", line.strip())
            if "via NET/" in line:
                break
    with open(os.path.join(OUT, "summary.json"), "w") as f:
        json.dump({"nodes": nodes, "status_active": len(parsed["active"]), "actors": results}, f, indent=1)
    ray.shutdown()
    sh(["ray", "stop", "--force"], env)


if __name__ == "__main__":
    main()
