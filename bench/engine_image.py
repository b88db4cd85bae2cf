"""Benchmark: probing engine images three ways, and getting an image onto N hosts two ways.

    .venv/bin/python bench/engine_image.py [--runs 3] [--only probe|distribute] [--baseline REF]

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
  image to the workers over the fabric (docker save | docker load), ids checked;
- with --baseline REF, the fabric case again from REF's tree (a git worktree, as bench/rerun.py
  makes it), cases alternating run by run.
Bytes served by the registry are summed from its access log (GET answers to lab hosts); bytes
on the fabric are the head's fabric interface's transmit counter, divided by the receivers,
and set against the compressed image (what the registry served for one pull). The head's image
store (`lab/lab up --docker26 spark1,spark2...` gives the hosts Docker 26's containerd store,
the default of a fresh Docker 29) decides what `docker save` streams: uncompressed layers from
the classic store, the registry's compressed blobs from the containerd store.
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
from rerun import baseline_tree  # noqa: E402 pylint: disable=wrong-import-position

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


def fabric_tx(host):
    """Bytes the host has sent on its fabric interface (the one holding its fabric address)."""
    return int(ssh(host["mgmt"], "cat /sys/class/net/$(ip -o -4 addr | awk '$4 ~ /^%s\\// {print $2}')"
                   "/statistics/tx_bytes" % host["fabric"].replace(".", "\\.")).strip())


def image_store(host):
    out = ssh(host["mgmt"], "docker info --format '{{.Driver}} {{json .DriverStatus}}'").strip()
    return "containerd image store" if "io.containerd.snapshotter" in out else "classic store (%s)" % out.split()[0]


def probe_from(tree, inventory, extra):
    """playbooks/probe.yml run from `tree` (this checkout or the baseline's worktree): seconds."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(tree, ".collections"))
    t0 = time.monotonic()
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/probe.yml", "-i", inventory,
                          "-e", json.dumps(extra)], cwd=tree, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    took = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit("probe.yml in %s failed:\n%s" % (tree, res.stdout[-3000:]))
    return took


def remove_images(hosts):
    for h in hosts:
        ssh(h["mgmt"], "docker rm -f $(docker ps -aq) >/dev/null 2>&1; docker image prune -a -f >/dev/null", check=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", choices=["probe", "distribute"], help="run one part only")
    p.add_argument("--baseline", help="commit whose fabric case runs beside this tree's (part 2)")
    args = p.parse_args()
    hosts = lab_hosts()
    inventory = os.path.join(ROOT, "inventories", "lab") if len(hosts) == 2 else os.path.join(LAB_DIR, "inventory")
    playbook("playbooks/teardown.yml", inventory)
    if args.only != "distribute":
        probing(args, hosts, inventory)
    if args.only != "probe":
        distribute(args, hosts, inventory)
    return 0


def probing(args, hosts, inventory):
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


def distribute(args, hosts, inventory):
    head, receivers = hosts[0], len(hosts) - 1
    cases = [("pull everywhere (engine_image_distribute=registry)", ROOT, "registry"),
             ("pull once, stream over the fabric (=fabric)", ROOT, "fabric")]
    if args.baseline:
        tree, commit = baseline_tree(args.baseline)
        cases.append(("=fabric, baseline %s" % commit, tree, "fabric"))
    took, served, wire = {}, {}, {}
    for run in range(args.runs):
        for label, tree, mode in (cases if run % 2 == 0 else cases[::-1]):
            remove_images(hosts)
            offset, tx = os.path.getsize(REGISTRY_LOG), fabric_tx(head)
            took.setdefault(label, []).append(probe_from(tree, inventory, {
                "sparkops_engine_candidates": [PULL_IMAGE], "engine_image_distribute": mode}))
            time.sleep(0.5)  # the registry flushes its log line after the answer
            served.setdefault(label, []).append(registry_bytes_since(offset))
            wire.setdefault(label, []).append(fabric_tx(head) - tx)
        print("run %d/%d done" % (run + 1, args.runs), file=sys.stderr)
    image = statistics.median(served[cases[1][0]])  # the fabric case: one pull, the compressed image
    print("\nGetting %s onto %d hosts (absent everywhere), playbooks/probe.yml, %d runs each; the head's %s; "
          "compressed image %.1f MB\n" % (PULL_IMAGE, len(hosts), args.runs, image_store(head), image / 1e6))
    print("%-52s %7s %7s %7s %12s %16s  %s" % ("case", "median", "min", "max", "registry MB",
                                               "fabric MB/recv", "time / pull everywhere, fabric / image"))
    base = statistics.median(took[cases[0][0]])
    for label, dummy, mode in cases:
        per = statistics.median(wire[label]) / receivers
        print("%-52s %7.2f %7.2f %7.2f %12.1f %16.1f  %.2fx%s" % (
            label, statistics.median(took[label]), min(took[label]), max(took[label]),
            statistics.median(served[label]) / 1e6, per / 1e6, statistics.median(took[label]) / base,
            ", %.2fx" % (per / image) if mode == "fabric" else ""))
    print("(fabric MB/recv: the head's fabric transmit counter over the run / %d receivers; the registry "
          "case's is its other traffic: Ray is down)" % receivers)


if __name__ == "__main__":
    sys.exit(main())
