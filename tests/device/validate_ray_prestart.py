"""What Ray's worker prestart costs on a many-core host when an engine's driver connects.

Run on a lent GPU host (device tool), with the carried Ray wheel installed, from the repo root:
    python3 tests/device/validate_ray_prestart.py "$OUT"
(NUM_CPUS=20 gives the head Ray's CPU resource of a 20-core Spark on a machine with fewer cores.)

For each setting (Ray's default; RAY_prestart_worker_first_driver=0): `ray start --head` with the
arguments the ray_cluster role gives it (plugins/module_utils/_containers.ray_command: no
--num-cpus, so Ray counts every core, as on a 20-core Spark), then a driver shaped like vLLM's Ray
executor (ray.init on the cluster, a placement group with one GPU bundle, one actor with the GPU
on it, one call), then - the engine serving - what runs besides the actor: the idle Python workers
Ray started, and their memory (Pss and private bytes from /proc/PID/smaps_rollup; on a Spark that
memory is the GPU's). Writes summary.json and each setting's process table under OUT.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.sparkops.inference.plugins.module_utils._containers import ray_command  # noqa: E402

OUT = sys.argv[1]
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())"]
DRIVER = r"""
import json, os, sys, time
import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
t0 = time.time()
ray.init(address="auto", logging_level="ERROR")
pg = placement_group([{"GPU": 1}], strategy="PACK")
ray.get(pg.ready(), timeout=120)

@ray.remote(num_gpus=1, num_cpus=0)
class Rank:
    def gpu(self):
        return ray.get_gpu_ids(), os.getpid()

rank = Rank.options(scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pg)).remote()
gpus, pid = ray.get(rank.gpu.remote(), timeout=120)
print(json.dumps({"ready_s": round(time.time() - t0, 2), "actor_pid": pid, "gpus": gpus,
                  "cpus": ray.cluster_resources().get("CPU")}), flush=True)
time.sleep(float(sys.argv[1]))
"""


def smaps(pid):
    """{Pss, Private} in MiB of a process, or None when it is gone."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            kb = dict((line.split(":")[0], int(line.split()[1])) for line in f if line.split()[-1] == "kB")
    except (OSError, ValueError, IndexError):
        return None
    return {"pss_mib": round(kb.get("Pss", 0) / 1024.0, 1),
            "private_mib": round((kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) / 1024.0, 1)}


def ray_processes():
    rows = []
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmd.startswith("ray::") or "/ray/" in cmd or " ray start" in cmd:
            mem = smaps(pid)
            if mem:
                rows.append(dict(mem, pid=pid, cmd=cmd[:160]))
    return rows


def one(name, env):
    subprocess.run(RAY + ["stop", "--force"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    argv = ray_command({"head": True, "address": "127.0.0.1", "num_gpus": 1, "gcs_port": 6399})
    argv = [a for a in argv if a != "--block"]  # here in the background of this script, not a container's main
    if os.environ.get("NUM_CPUS"):  # a machine with fewer cores standing for a Spark's 20 (Ray's CPU resource)
        argv += ["--num-cpus", os.environ["NUM_CPUS"]]
    start = subprocess.run(RAY + argv[1:], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    result = {"setting": name, "ray_start_rc": start.returncode, "argv": argv}
    if start.returncode != 0:
        result["ray_start_out"] = start.stdout[-3000:]
        return result
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, "25"], env=dict(env, RAY_ADDRESS="127.0.0.1:6399"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = driver.stdout.readline()
    try:
        result.update(json.loads(first))
    except ValueError:
        result["driver_out"] = first + driver.stdout.read()[-3000:]
    time.sleep(10)  # the engine serving: what Ray keeps beside it
    rows = ray_processes()
    with open(os.path.join(OUT, "processes-%s.json" % name), "w") as f:
        json.dump(rows, f, indent=1)
    idle = [r for r in rows if r["cmd"].startswith("ray::IDLE")]
    workers = [r for r in rows if r["cmd"].startswith("ray::")]
    result.update(idle_workers=len(idle), idle_pss_mib=round(sum(r["pss_mib"] for r in idle), 1),
                  idle_private_mib=round(sum(r["private_mib"] for r in idle), 1),
                  ray_workers=len(workers), ray_processes=len(rows),
                  all_pss_mib=round(sum(r["pss_mib"] for r in rows), 1))
    driver.kill()
    driver.wait()
    subprocess.run(RAY + ["stop", "--force"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return result


def main():
    os.makedirs(OUT, exist_ok=True)
    base = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", CUDA_VISIBLE_DEVICES="0")
    results = {"nproc": os.cpu_count(), "num_cpus": os.environ.get("NUM_CPUS") or "Ray's default (nproc)", "runs": [
        one("default", base),
        one("no-first-driver-prestart", dict(base, RAY_prestart_worker_first_driver="0")),
    ]}
    with open(os.path.join(OUT, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
