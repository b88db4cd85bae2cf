# -*- coding: utf-8 -*-
"""`make engine-parsers`: the engines' own parsers judge every launch plan's command line.

For each engine release named in RELEASES, a venv in the cache (SPARKOPS_PARSER_CACHE, default
~/.cache/sparkops/engine-parsers; several GB each, made once) holds the engine's wheel from PyPI and
what its parser imports. tests/parsers/judge.py parses there every argv of tests/unit/engine_argv.py
as the engine's entry point would and describes the parser; this script checks the parsed values
mean what the plan intends and writes tests/unit/fixtures/engine-parsers/<engine>-<version>.json
(the parser's options, what it parsed, provenance) for the CI test that needs no venv
(tests/unit/test_engine_argv.py). Exit 1 when any release parses a plan otherwise than meant.

    .venv/bin/python tests/parsers/build.py [--only vllm-0.17.1 ...]

What is not installed: the GPU-only packages (kernels, CUDA libraries, Ray, Triton: SKIP). torch is
the one of this machine's disk, shared by the venvs through a .pth file, not the release's pin: the
parsers do not depend on it.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

import engine_argv  # noqa: E402 pylint: disable=wrong-import-position
from packaging.requirements import Requirement  # noqa: E402 pylint: disable=wrong-import-position

# the releases we name as tested: the lab's own (vLLM 0.17, SGLang 0.5.10) and what users pull now
# (docs/validation.md); torch: what the parser's imports need (SGLang's import torchvision, which
# PyPI builds only against one torch)
RELEASES = [
    {"engine": "vllm", "version": "0.17.1", "torch": ["torch==2.13.0"]},
    {"engine": "vllm", "version": "0.34.0", "torch": ["torch==2.13.0"]},
    {"engine": "sglang", "version": "0.5.10", "torch": ["torch==2.14.1", "torchvision==0.29.1"]},
    {"engine": "sglang", "version": "0.5.23", "torch": ["torch==2.14.1", "torchvision==0.29.1"]},
]
SKIP = re.compile(r"^(torch|torchaudio|torchvision|torchcodec|torch[-_]memory[-_]saver|timm|triton|"
                  r"flashinfer.*|nvidia-.*|nvshmem.*|cuda-.*|cupy.*|xformers|flash[-_]attn.*|"
                  r"quack-kernels|humming-kernels|tilelang|apache-tvm-ffi|kernels|ray|"
                  r"sgl-.*|sglang-kernel|decord.*|tensorrt.*)$", re.I)
PIP_QUIET = ["-q", "--disable-pip-version-check"]


def run(cmd, **kwargs):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_requirements(wheel):
    """The wheel's Requires-Dist for this Python without extras, and the GPU-only ones left out."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8")
    keep, left = [], []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        (left if SKIP.match(req.name) else keep).append(str(req).split(";", 1)[0].strip())
    return keep, left


def torch_dir(cache, pins):
    """A directory with torch (and torchvision) installed once, shared by the venvs (.pth)."""
    where = os.path.join(cache, "torch-" + "-".join(p.split("==")[1] for p in pins))
    if not os.path.exists(os.path.join(where, ".ready")):
        run([sys.executable, "-m", "pip", "install"] + PIP_QUIET + ["--target", where] + pins)
        open(os.path.join(where, ".ready"), "w").close()
    return where


def venv(cache, release):
    name = "%s-%s" % (release["engine"], release["version"])
    where = os.path.join(cache, name)
    wheels = os.path.join(cache, "wheels")
    pip = [os.path.join(where, "bin", "python"), "-m", "pip"]
    found = [w for w in os.listdir(wheels) if w.startswith(name + "-")] if os.path.isdir(wheels) else []
    if not found:
        run([sys.executable, "-m", "pip", "download"] + PIP_QUIET
            + ["--no-deps", "-d", wheels, "%s==%s" % (release["engine"], release["version"])])
        found = [w for w in os.listdir(wheels) if w.startswith(name + "-")]
    wheel = os.path.join(wheels, sorted(found)[0])
    keep, left = wheel_requirements(wheel)
    if not os.path.exists(os.path.join(where, ".ready")):
        run([sys.executable, "-m", "venv", "--clear", where])
        shared = torch_dir(cache, release["torch"])
        site = subprocess.run([pip[0], "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(site, "sparkops-torch.pth"), "w") as f:
            f.write(shared + "\n")
        constraints = os.path.join(where, "constraints.txt")
        with open(constraints, "w") as f:
            f.write("\n".join(release["torch"]) + "\n")
        run(pip + ["install"] + PIP_QUIET + ["--no-deps", wheel])
        run(pip + ["install"] + PIP_QUIET + ["-c", constraints] + keep)
        open(os.path.join(where, ".ready"), "w").close()
    return where, wheel, left


def judge(where, release, cases, work):
    request = os.path.join(work, "in-%s-%s.json" % (release["engine"], release["version"]))
    answer = request.replace("in-", "out-")
    with open(request, "w") as f:
        json.dump({"engine": release["engine"], "cases": cases}, f)
    run([os.path.join(where, "bin", "python"), os.path.join(HERE, "judge.py"), request, answer],
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore"))
    with open(answer) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", nargs="*", default=[], help="engine-version names to build")
    opts = parser.parse_args()
    cache = os.environ.get("SPARKOPS_PARSER_CACHE") or os.path.expanduser("~/.cache/sparkops/engine-parsers")
    os.makedirs(cache, exist_ok=True)
    os.makedirs(engine_argv.FIXTURES, exist_ok=True)
    failed = []
    rows = []
    for release in RELEASES:
        name = "%s-%s" % (release["engine"], release["version"])
        if opts.only and name not in opts.only:
            continue
        cases = [c for c in engine_argv.cases() if c["engine"] == release["engine"]]
        where, wheel, left = venv(cache, release)
        out = judge(where, release, cases, cache)
        meant = dict((c["name"], c) for c in cases)
        for result in out["cases"]:
            case = meant[result["name"]]
            result["meaning"] = case["meaning"]
            if "error" in result:
                wrong = [result["error"]]
            else:
                wrong = engine_argv.mismatches(result["parsed"], case["meaning"])
                # keep what the plans mean, not the parser's whole namespace
                result["parsed"] = dict((k, v) for k, v in sorted(result["parsed"].items())
                                        if k in set(n for m in case["meaning"] for n in m.split("|")))
            result["verdict"] = "; ".join(wrong) or "as meant"
            rows.append((name, result["name"], result["verdict"]))
            if wrong:
                failed.append((name, result["name"], wrong))
        out["provenance"] = {
            "made_by": "make engine-parsers (tests/parsers/build.py, judge.py)",
            "date": datetime.date.today().isoformat(),
            "wheel": os.path.basename(wheel),
            "wheel_sha256": sha256(wheel),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "torch": release["torch"] + ["(the wheel's own pin not installed: the parser does not need it)"],
            "not_installed": left,
        }
        with open(os.path.join(engine_argv.FIXTURES, name + ".json"), "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
    width = max(len(r[1]) for r in rows) if rows else 10
    print("\n%-16s %-*s  %s" % ("release", width, "plan", "verdict"))
    for release_name, case, verdict in rows:
        print("%-16s %-*s  %s" % (release_name, width, case, verdict))
    if failed:
        print("\n%d plan(s) parsed otherwise than meant: fix the plan (module_utils/_containers.py) "
              "or the meaning (tests/unit/engine_argv.py)" % len(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
