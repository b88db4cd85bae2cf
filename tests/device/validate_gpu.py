"""Validate gpu_facts' parsing and gpu_memory's holder decisions on a real GPU host.

Run on the lent GPU host (device tool) from the repository root:
    python3 tests/device/validate_gpu.py "$OUT"
It starts a process holding 3 GiB on GPU 0 and 21 GiB on GPU 1 (torch), reads the live
`nvidia-smi -q -x`, /proc/meminfo and the holder's /proc/<pid>/cgroup with the collection's own
parsers, decides what holds memory, stops the holder, reads again, and writes every raw output
and the parsed results under OUT (brought back as fixtures).
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.sparkops.inference.plugins.module_utils._gpu import (  # noqa: E402
    gpu_summary, parse_meminfo, parse_nvidia_smi_xml)
from ansible_collections.sparkops.inference.plugins.module_utils._memory import (  # noqa: E402
    free_mib, plan_holders, still_holding)

OUT = sys.argv[1]
HOLD = """
import sys, time, torch
sizes = [3, 21]
held = [torch.empty(int(g * (1 << 30)), dtype=torch.uint8, device="cuda:%d" % i) for i, g in enumerate(sizes[:torch.cuda.device_count()])]
torch.cuda.synchronize()
print("holding", flush=True)
time.sleep(600)
"""


def smi(*args):
    return subprocess.run(["nvidia-smi"] + list(args), stdout=subprocess.PIPE, text=True, check=True).stdout


def save(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def facts(tag):
    xml = smi("-q", "-x")
    meminfo = open("/proc/meminfo").read()
    save("%s-q.xml" % tag, xml)
    save("%s-meminfo.txt" % tag, meminfo)
    report = parse_nvidia_smi_xml(xml)
    cgroups = {}
    for p in report["processes"]:
        try:
            cgroups[p["pid"]] = open("/proc/%d/cgroup" % p["pid"]).read()
            save("%s-cgroup-%d.txt" % (tag, p["pid"]), cgroups[p["pid"]])
        except OSError:
            pass
    return gpu_summary(report, parse_meminfo(meminfo), pid_cgroups=cgroups)


def main():
    os.makedirs(OUT, exist_ok=True)
    result = {"idle": None, "busy": None, "after": None}
    result["idle"] = facts("idle")
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    time.sleep(1)
    busy = facts("busy")
    save("busy-apps.csv", smi("--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv"))
    save("busy-gpu.csv", smi("--query-gpu=index,name,memory.total,memory.used,memory.free", "--format=csv"))
    holders, notes = plan_holders([], {}, [], busy, True, [])
    result["busy"] = busy
    result["busy_decisions"] = {"holders_in_containers": holders, "notes": notes,
                                "still_holding": still_holding(busy),
                                "free_mib_least_gpu": free_mib(busy, "free")}
    holder.terminate()
    holder.wait(timeout=30)
    time.sleep(2)
    after = facts("after")
    result["after"] = after
    result["after_decisions"] = {"still_holding": still_holding(after), "free_mib_least_gpu": free_mib(after, "free")}
    with open(os.path.join(OUT, "validation.json"), "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    print(json.dumps({"busy_processes": [(p["pid"], p["gpu_index"], p["used_mib"], p["container"]) for p in busy["processes"]],
                      "busy_still_holding": result["busy_decisions"]["still_holding"],
                      "busy_free_least_gpu": result["busy_decisions"]["free_mib_least_gpu"],
                      "after_processes": after["processes"],
                      "after_free_least_gpu": result["after_decisions"]["free_mib_least_gpu"],
                      "gpus": [(g["name"], g["memory_total_mib"], g["unified_memory"]) for g in busy["gpus"]]}, indent=1))


if __name__ == "__main__":
    main()
