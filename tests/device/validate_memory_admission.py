"""Run the memory_admission module itself on a real GPU host (discrete GPUs: the lab only has the
unified-memory path) and compare its decisions with what the engine's own check would see.

Run on the lent GPU host (device tool) from the repository root, with ansible-core importable:
    python3 tests/device/validate_memory_admission.py "$OUT"

1. idle: utilizations 0.5 .. 0.97 - the module's decision against torch.cuda.mem_get_info()
   from a fresh process (free >= utilization x total is vLLM's check);
2. another process holds 40 GiB on GPU 0: the same, and the refusal's message must name that
   process (pid, MiB) as what still holds memory; `nvidia-smi -q -x` saved as a fixture;
3. the holder lets go 6 s after the module starts with wait=30: admitted once it is gone (the
   wait for a stopped engine's ranks).
Writes OUT/results.json and OUT/nvidia-smi-q-held.xml; prints a summary table.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

OUT = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOLD = """
import sys, time, torch
held = torch.empty(40 * (1 << 30), dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
print("holding", flush=True)
time.sleep(float(sys.argv[1]))
"""
PROBE = """
import json, torch
print(json.dumps([torch.cuda.mem_get_info(i) for i in range(torch.cuda.device_count())]))
"""
UTILS = (0.5, 0.6, 0.65, 0.7, 0.71, 0.72, 0.75, 0.8, 0.9, 0.95, 0.97)

# the collection importable as ansible_collections.sparkops.inference
COLL = tempfile.mkdtemp()
os.makedirs(os.path.join(COLL, "ansible_collections", "sparkops"))
os.symlink(ROOT, os.path.join(COLL, "ansible_collections", "sparkops", "inference"))
ENV = dict(os.environ, PYTHONPATH=COLL + os.pathsep + os.environ.get("PYTHONPATH", ""))
MODEL = tempfile.mkdtemp()
with open(os.path.join(MODEL, "config.json"), "w") as f:
    f.write('{"architectures": ["Qwen3ForCausalLM"]}')


def module(utilization, wait=0):
    args = os.path.join(COLL, "args.json")
    with open(args, "w") as f:
        json.dump({"ANSIBLE_MODULE_ARGS": {"utilization": utilization, "model_path": MODEL, "wait": wait,
                                           "drop_caches": False}}, f)
    res = subprocess.run([sys.executable, "-m", "ansible_collections.sparkops.inference.plugins.modules.memory_admission",
                          args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=COLL, check=False)
    try:
        return json.loads(res.stdout)
    except ValueError:
        raise SystemExit("the module printed no JSON (rc %d): %s %s" % (res.returncode, res.stdout[-2000:], res.stderr[-2000:]))


def engine_view():
    free, total = json.loads(subprocess.run([sys.executable, "-c", PROBE], stdout=subprocess.PIPE, text=True,
                                            check=True).stdout)[0]
    return free / 1048576.0, total / 1048576.0


def compare(state):
    rows = []
    free, total = engine_view()
    for u in UTILS:
        r = module(u)
        rows.append({"state": state, "utilization": u, "module_ok": not r.get("failed"),
                     "engine_ok": free >= u * total, "engine_free_mib": round(free), "engine_total_mib": round(total),
                     "admission": r.get("admission"), "msg": r.get("msg")})
    return rows


results = {"idle": compare("idle")}
holder = subprocess.Popen([sys.executable, "-c", HOLD, "600"], stdout=subprocess.PIPE, text=True)
try:
    assert holder.stdout.readline().strip() == "holding"
    results["held"] = compare("held-40g-gpu0")
    results["holder_pid"] = holder.pid
    with open(os.path.join(OUT, "nvidia-smi-q-held.xml"), "w") as f:
        f.write(subprocess.run(["nvidia-smi", "-q", "-x"], stdout=subprocess.PIPE, text=True, check=True).stdout)
finally:
    holder.kill()
    holder.wait()
time.sleep(2)
# 3. the holder lets go while the module waits
holder = subprocess.Popen([sys.executable, "-c", HOLD, "6"], stdout=subprocess.PIPE, text=True)
assert holder.stdout.readline().strip() == "holding"
t0 = time.time()
waited = module(0.9, wait=30)
results["wait"] = {"ok": not waited.get("failed"), "seconds": round(time.time() - t0, 1),
                   "admission": waited.get("admission"), "msg": waited.get("msg")}
holder.wait()

with open(os.path.join(OUT, "results.json"), "w") as f:
    json.dump(results, f, indent=1)
print("%-14s %5s %9s %9s %11s %9s" % ("state", "util", "module", "engine", "free MiB", "reachable"))
for state in ("idle", "held"):
    for r in results[state]:
        print("%-14s %5.2f %9s %9s %11d %9s" % (r["state"], r["utilization"], r["module_ok"], r["engine_ok"],
                                                r["engine_free_mib"], (r["admission"] or {}).get("reachable")))
print("disagreements:", sum(r["module_ok"] != r["engine_ok"] for s in ("idle", "held") for r in results[s]))
print("held refusal names the holder:", any("pid %d " % results["holder_pid"] in (r["msg"] or "")
                                            for r in results["held"] if not r["module_ok"]))
print("wait:", results["wait"]["ok"], results["wait"]["seconds"], "s")
print("a refusal:", next((r["msg"] for r in results["held"] if not r["module_ok"]), None))
