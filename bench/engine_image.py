"""Benchmark: probing engine images three ways, and getting an image onto N hosts two ways.

    .venv/bin/python bench/engine_image.py [--runs 3]

Needs the lab up (`lab/lab up [--hosts N]`). Destructive for the lab's containers and images:
it tears the deploy down first and removes the lab images from the hosts between cases.

Part 1, per image on the head (image present): the engine_probe module's own time (its
`seconds`) and the task's wall-clock time (ansible ad hoc, one ssh round trip) for
- static: the image's layers read in place, registry source parsed with ast (cache off);
- runtime: `docker run` python inside the image (cache off). The lab images cannot import
  their engines (no torch, no GPU): the runtime probe ends at the import error, which is what
  a runtime probe of such an image costs;
- cached: the static probe again with the cache on (after one warm-up run).

Part 2, N hosts, image absent everywhere: playbooks/probe.yml with one candidate
- baseline "pull everywhere": engine_image_distribute=registry, every host pulls;
- "pull once and distribute": engine_image_distribute=fabric, the head pulls and streams the
  image to the workers over the fabric (docker save | docker load), ids checked.
Bytes served by the registry are summed from its access log (GET answers to lab hosts).
Nothing here asserts a time.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ray_up import BIN, LAB_DIR, ROOT, lab_hosts, playbook, ssh  # noqa: E402 pylint: disable=wrong-import-position

REG = "10.77.0.5:5000/sparkops/"
PROBE_IMAGES = ["lab-vllm:0.14.0", "lab-vllm:0.17.0", "lab-sglang:0.5.4", "lab-sglang:0.5.10"]
PULL_IMAGE = REG + "lab-vllm:0.17.0"
QWEN35 = "Qwen3_5MoeForConditionalGeneration"
REGISTRY_LOG = os.path.join(LAB_DIR, "registry.log")
LOG_LINE = re.compile(r'^(10\.77\.0\.\d+) .*"GET /v2/[^ ]+/blobs/[^ ]+ HTTP/[\d.]+" 200 (\d+)')


def adhoc_probe(inventory, image, method, cache):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    t0 = time.monotonic()
    res = subprocess.run([os.path.join(BIN, "ansible"), "-i", inventory, "llm_head", "-m",
                          "sparkops.inference.engine_probe", "-a",
                          json.dumps({"image": REG + image, "architectures": [QWEN35], "method": method,
                                      "cache_file": cache})],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.monotonic() - t0
    data = json.loads(res.stdout[res.stdout.index("{"):])
    host = list(data["plays"][0]["tasks"][0]["hosts"].values())[0]
    if host.get("failed"):
        raise SystemExit("probe of %s failed: %s" % (image, host.get("msg")))
    return host["seconds"], wall, host


def registry_bytes_since(offset):
    total = 0
    with open(REGISTRY_LOG) as f:
        f.seek(offset)
        for line in f:
            m = LOG_LINE.match(line)
            if m and m.group(1) != "10.77.0.1":
                total += int(m.group(2))
    return total


def remove_images(hosts):
    for h in hosts:
        ssh(h["mgmt"], "docker rm -f $(docker ps -aq) >/dev/null 2>&1; docker image prune -a -f >/dev/null", check=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    hosts = lab_hosts()
    inventory = os.path.join(ROOT, "inventories", "lab") if len(hosts) == 2 else os.path.join(LAB_DIR, "inventory")
    playbook("playbooks/teardown.yml", inventory)
    head = hosts[0]
    for image in PROBE_IMAGES:
        ssh(head["mgmt"], "docker pull -q %s%s >/dev/null" % (REG, image))
    probe = {}
    for image in PROBE_IMAGES:
        adhoc_probe(inventory, image, "static", "/tmp/bench-probe-cache.json")  # warm the cache
        for run in range(args.runs):
            for method, cache in (("static", ""), ("runtime", ""), ("cached", "/tmp/bench-probe-cache.json")):
                secs, wall, res = adhoc_probe(inventory, image, "static" if method == "cached" else method, cache)
                if method == "cached" and not res["cached"]:
                    raise SystemExit("the cached probe of %s did not hit the cache" % image)
                probe.setdefault((image, method), []).append((secs, wall, res))
    print("\nProbing on %s (image present), %d runs each: module seconds / task wall-clock seconds (medians)\n"
          % (head["name"], args.runs))
    print("%-20s %-18s %15s %15s %15s  %s" % ("image", "verdict (static)", "static", "runtime", "cached",
                                              "runtime/static  cached/static"))
    for image in PROBE_IMAGES:
        med = {}
        for method in ("static", "runtime", "cached"):
            rows = probe[(image, method)]
            med[method] = (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        verdict = probe[(image, "static")][0][2]["architectures"][QWEN35]
        print("%-20s %-18s %6.3f / %6.2f %6.3f / %6.2f %6.3f / %6.2f  %8.1fx %12.2fx" % (
            image, verdict, med["static"][0], med["static"][1], med["runtime"][0], med["runtime"][1],
            med["cached"][0], med["cached"][1], med["runtime"][0] / med["static"][0],
            med["cached"][0] / med["static"][0]))
    err = probe[(PROBE_IMAGES[0], "runtime")][0][2]["errors"]
    print("(runtime probe of the lab images ends at: %s)" % (err[-1][:100] if err else "no error"))

    results = {"registry": [], "fabric": []}
    served = {"registry": [], "fabric": []}
    for run in range(args.runs):
        for mode in ("registry", "fabric"):
            remove_images(hosts)
            offset = os.path.getsize(REGISTRY_LOG)
            took, dummy = playbook("playbooks/probe.yml", inventory, "-e", json.dumps({
                "sparkops_engine_candidates": [PULL_IMAGE], "engine_image_distribute": mode}))
            results[mode].append(took)
            time.sleep(0.5)  # the registry flushes its log line after the answer
            served[mode].append(registry_bytes_since(offset))
        print("run %d/%d done" % (run + 1, args.runs), file=sys.stderr)
    med = dict((k, statistics.median(v)) for k, v in results.items())
    mb = dict((k, statistics.median(v) / 1e6) for k, v in served.items())
    print("\nGetting %s onto %d hosts (absent everywhere), playbooks/probe.yml, %d runs each\n"
          % (PULL_IMAGE, len(hosts), args.runs))
    print("%-58s %7s %7s %7s %14s  %s" % ("case", "median", "min", "max", "registry MB", "ratio"))
    print("%-58s %7.2f %7.2f %7.2f %14.1f  %s" % ("pull everywhere (engine_image_distribute=registry)",
                                                  med["registry"], min(results["registry"]),
                                                  max(results["registry"]), mb["registry"], "1.00 (baseline)"))
    print("%-58s %7.2f %7.2f %7.2f %14.1f  %.2f x time, %.2f x registry bytes" % (
        "pull once, stream over the fabric (=fabric)", med["fabric"], min(results["fabric"]),
        max(results["fabric"]), mb["fabric"], med["fabric"] / med["registry"],
        mb["fabric"] / mb["registry"] if mb["registry"] else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
