"""Capture, on a real GPU host, what an engine's start-up memory check sees beside what nvidia-smi
and /proc/meminfo say - the inputs of a memory admission before the engine starts (#17 item 4).

Run on the lent GPU host (device tool) from the repository root:
    python3 tests/device/capture_admission.py "$OUT"
Twice - idle, and while another process holds 40 GiB on GPU 0 - it writes
`nvidia-smi --query-gpu=index,memory.total,memory.used,memory.free --format=csv,noheader,nounits`,
/proc/meminfo and, from a fresh process, torch.cuda.mem_get_info() per GPU (what vLLM's
"Free memory on device ... is less than desired GPU memory utilization" check compares: free
against utilization x total). Everything raw, under OUT/<state>/; nothing parsed here.
"""
import json
import os
import subprocess
import sys
import time

OUT = sys.argv[1]
HOLD_GIB = 40
HOLD = """
import time, torch
held = torch.empty(%d * (1 << 30), dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
print("holding", flush=True)
time.sleep(600)
""" % HOLD_GIB
PROBE = """
import json, torch
print(json.dumps([dict(zip(("free", "total"), torch.cuda.mem_get_info(i))) for i in range(torch.cuda.device_count())]))
"""


def capture(state):
    where = os.path.join(OUT, state)
    os.makedirs(where, exist_ok=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.total,memory.used,memory.free",
                          "--format=csv,noheader,nounits"], stdout=subprocess.PIPE, text=True, check=True).stdout
    with open(os.path.join(where, "query-gpu.csv"), "w") as f:
        f.write(smi)
    with open("/proc/meminfo") as src, open(os.path.join(where, "meminfo.txt"), "w") as f:
        f.write(src.read())
    torch_view = subprocess.run([sys.executable, "-c", PROBE], stdout=subprocess.PIPE, text=True, check=True).stdout
    with open(os.path.join(where, "torch-mem-get-info.json"), "w") as f:
        f.write(torch_view)
    print(state, smi.strip().splitlines()[0], json.loads(torch_view)[0], flush=True)


capture("idle")
holder = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True)
try:
    assert holder.stdout.readline().strip() == "holding"
    time.sleep(1)
    capture("held-40g-gpu0")
finally:
    holder.kill()
    holder.wait()
with open(os.path.join(OUT, "README.md"), "w") as f:
    f.write("Captured by tests/device/capture_admission.py on the lent GPU host, %s.\n"
            "idle/: nothing running; held-40g-gpu0/: another process holds %d GiB on GPU 0.\n"
            "query-gpu.csv: nvidia-smi (MiB); torch-mem-get-info.json: bytes, per GPU, from a fresh\n"
            "process (what vLLM's start-up check reads); meminfo.txt: /proc/meminfo.\n"
            % (time.strftime("%Y-%m-%d"), HOLD_GIB))
