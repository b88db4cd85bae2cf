"""Validate engine_probe's version reading on a real GPU host's Python (torch with CUDA).

Run on the lent GPU host (device tool) from the repository root:
    python3 tests/device/validate_probe.py "$OUT"
The host's root file system stands in for an image: the static probe reads it as a layer
(LayerFS(["/"])) - dist-info METADATA, torch/version.py for CUDA - with the image environment
taken from this process's PATH; the runtime probe runs the same snippet the module runs inside
an image, with this Python. Both answers, the raw snippet output and torch's version.py are
written under OUT (brought back as fixtures), with a comparison.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.sparkops.inference.plugins.module_utils._engine import (  # noqa: E402
    RUNTIME_SNIPPET, parse_runtime_output, site_dirs, static_facts)
from ansible_collections.sparkops.inference.plugins.module_utils._image_fs import LayerFS  # noqa: E402

OUT = sys.argv[1]
ARCHS = ["Qwen3_5MoeForConditionalGeneration", "LlamaForCausalLM"]


def write(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


env = {"Env": ["PATH=" + os.path.dirname(sys.executable) + ":" + os.environ.get("PATH", "")]}
fs = LayerFS(["/"])
static = static_facts(fs, env)
proc = subprocess.run([sys.executable, "-c", RUNTIME_SNIPPET, json.dumps(ARCHS)], capture_output=True,
                      text=True, check=False, timeout=600)
write("runtime-stdout.txt", proc.stdout)
write("runtime-stderr.txt", proc.stderr[-20000:])
runtime = parse_runtime_output(proc.returncode, proc.stdout, proc.stderr, "host python")
import torch  # noqa: E402 pylint: disable=wrong-import-position
write("torch-version.py", open(os.path.join(os.path.dirname(torch.__file__), "version.py")).read())
facts = {"static": static, "runtime": runtime, "sites": site_dirs(fs, {"PATH": env["Env"][0][5:]}),
         "sys_path": sys.path, "python": sys.version, "torch_file": torch.__file__,
         "cuda_available": torch.cuda.is_available(),
         "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
same = {}
for key in ("torch", "cuda", "triton", "transformers", "flashinfer", "ray", "vllm", "sglang"):
    same[key] = {"static": static["versions"].get(key), "runtime": runtime["versions"].get(key)}
facts["compare"] = same
write("probe.json", json.dumps(facts, indent=2, sort_keys=True, default=str))
print(json.dumps(same, indent=1))
print("cuda available:", facts["cuda_available"], facts["device"])
print("static errors:", static["errors"])
print("runtime errors:", runtime["errors"][:3])
bad = [k for k, v in same.items() if v["static"] != v["runtime"]]
print("MISMATCH: %s" % bad if bad else "static and runtime agree on every version")
