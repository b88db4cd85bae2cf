"""Benchmark: bring the Ray cluster up on the lab, the hand-run way and with the collection.

    .venv/bin/python bench/ray_up.py [--runs 3]

Needs the lab up (`lab/lab up [--hosts N]`; with N != 2 it uses the inventory the lab writes). The engine image is pulled on every host first, so
every case starts with the image present. Cases alternate run by run (hand, role, hand, role...)
so that the machine's load hits them alike. Printed: a table of wall-clock seconds (median, min,
max) and ratios. Nothing here asserts a time: the numbers are for people to read.

Baseline, "the bare hand-run recipe": what a person types, host by host over ssh -- `docker run
... ray start --head --block ...` on the head, `docker run ... ray start --address ...` on each
worker -- then `ray status` on the head until every node is listed (no token, no checks).

The launch without Ray beside it: its baseline is the hand-run native recipe of NVIDIA's two-Spark
guide and eugr's no-Ray scripts -- `docker run ... vllm serve MODEL --distributed-executor-backend
mp --nnodes N --node-rank R --master-addr HEAD --master-port 29501` on every host, `--headless`
on all but the head -- then the head's /v1/models until it lists the model; against it,
`deploy.yml` with the Ray-less vLLM candidate (sparkops_launcher auto: native), cold and again.
On the lab the engine is its stand-in (lab/standins/model_server.py, run as the images' vllm).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_DIR = os.environ.get("SPARKOPS_LAB_DIR", "/var/lib/sparkops-lab")
KEY = os.path.join(LAB_DIR, "ssh", "id_ed25519")
KNOWN = os.path.join(LAB_DIR, "ssh", "known_hosts")
IMAGE = "10.77.0.5:5000/sparkops/lab-engine:ray-2.60.0"
NORAY = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0-noray"
MODEL = "/opt/models/lab-qwen3.5-tiny"  # the lab's model (inventories/lab: sparkops_model_path)
# the lab's vllm (model_server_executable): the images' entrypoint is vLLM's own `vllm`, which has no torch here
STANDIN = "--entrypoint python3"
STANDIN_ARGS = "/opt/sparkops-lab/model_server.py serve"
BIN = os.path.dirname(sys.executable)


def ssh(ip, command, check=True):
    res = subprocess.run(["ssh", "-i", KEY, "-o", "UserKnownHostsFile=" + KNOWN, "-o", "BatchMode=yes",
                          "root@" + ip, command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=False)
    if check and res.returncode != 0:
        raise SystemExit("ssh %s %r failed: %s" % (ip, command, res.stdout))
    return res.stdout


def lab_hosts():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "lab", "sparklab.py"), "status", "--json"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    hosts = json.loads(out)["hosts"]
    if not hosts or not all(h["sshd"] and h["docker"] for h in hosts):
        raise SystemExit("the lab is not up: run lab/lab up first")
    return hosts


def clean(hosts):
    for h in hosts:
        ssh(h["mgmt"], "docker rm -f hand-ray hand-native sparkops-model-server sparkops-ray-head sparkops-ray-worker "
            "sparkops-watchdog >/dev/null 2>&1 || true", check=False)


def hand_recipe(hosts):
    head = hosts[0]
    t0 = time.monotonic()
    ssh(head["mgmt"], "docker run -d --name hand-ray --network host --gpus all %s ray start --head --block "
        "--port 6379 --node-ip-address %s --num-gpus 1 --include-dashboard false --disable-usage-stats"
        % (IMAGE, head["fabric"]))
    for w in hosts[1:]:
        ssh(w["mgmt"], "docker run -d --name hand-ray --network host --gpus all %s ray start --block "
            "--address %s:6379 --node-ip-address %s --num-gpus 1 --disable-usage-stats"
            % (IMAGE, head["fabric"], w["fabric"]))
    while True:
        out = ssh(head["mgmt"], "docker exec hand-ray ray status", check=False)
        if out.count(" node_") == len(hosts):
            return time.monotonic() - t0
        if time.monotonic() - t0 > 180:
            raise SystemExit("hand recipe: cluster not up after 180 s:\n" + out)
        time.sleep(0.5)


def hand_native(hosts):
    """The no-Ray recipe: a `vllm serve` rank per host (mp backend across hosts), the head's rank 0
    serving; done when the head lists the model."""
    head = hosts[0]
    t0 = time.monotonic()
    for rank, h in enumerate(hosts):
        ssh(h["mgmt"], "docker run -d --name hand-native --network host --gpus all -v %s:%s:ro -e VLLM_HOST_IP=%s %s "
            "%s %s %s --served-model-name qwen3.5-lab --host 0.0.0.0 --port 8000 --distributed-executor-backend mp "
            "--tensor-parallel-size %d --gpu-memory-utilization 0.5 --nnodes %d --node-rank %d --master-addr %s "
            "--master-port 29501%s" % (MODEL, MODEL, h["fabric"], STANDIN, NORAY, STANDIN_ARGS, MODEL, len(hosts),
                                       len(hosts), rank, head["fabric"], " --headless" if rank else ""))
    while True:
        out = ssh(head["mgmt"], "curl -s -m 2 http://127.0.0.1:8000/v1/models", check=False)
        if '"qwen3.5-lab"' in out:
            return time.monotonic() - t0
        if time.monotonic() - t0 > 180:
            raise SystemExit("hand native recipe: not serving after 180 s:\n%s\n%s" % (
                out, ssh(head["mgmt"], "docker logs --tail 20 hand-native 2>&1", check=False)))
        time.sleep(0.5)


def playbook(name, inventory, *extra):
    t0 = time.monotonic()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), name, "-i", inventory] + list(extra),
                         cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    took = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, res.stdout[-3000:]))
    changed = sum(int(part.split("=")[1]) for line in res.stdout.splitlines() if "changed=" in line
                  for part in line.split() if part.startswith("changed="))
    return took, changed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    hosts = lab_hosts()
    inventory = os.path.join(ROOT, "inventories", "lab") if len(hosts) == 2 else os.path.join(LAB_DIR, "inventory")
    for h in hosts:  # every case starts with the images present
        ssh(h["mgmt"], "docker pull -q %s >/dev/null && docker pull -q %s >/dev/null" % (IMAGE, NORAY))
    noray = json.dumps({"sparkops_engine_candidates": [NORAY]})
    results = {k: [] for k in ("hand", "ray_cold", "ray_rerun", "deploy_cold", "deploy_rerun",
                               "hand_native", "native_cold", "native_rerun")}
    rerun_changed = []
    for run in range(args.runs):
        clean(hosts)
        results["hand"].append(hand_recipe(hosts))
        clean(hosts)
        results["ray_cold"].append(playbook("playbooks/ray.yml", inventory)[0])
        took, changed = playbook("playbooks/ray.yml", inventory)
        results["ray_rerun"].append(took)
        rerun_changed.append(changed)
        clean(hosts)
        results["deploy_cold"].append(playbook("deploy.yml", inventory)[0])
        took, changed = playbook("deploy.yml", inventory)
        results["deploy_rerun"].append(took)
        rerun_changed.append(changed)
        clean(hosts)
        results["hand_native"].append(hand_native(hosts))
        clean(hosts)
        results["native_cold"].append(playbook("deploy.yml", inventory, "-e", noray)[0])
        took, changed = playbook("deploy.yml", inventory, "-e", noray)
        results["native_rerun"].append(took)
        rerun_changed.append(changed)
        print("run %d/%d done" % (run + 1, args.runs), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in results.items()}
    rows = [
        ("hand", "hand-run recipe: docker run + ray start over ssh, host by host", med["hand"], "1.00 (baseline)"),
        ("ray_cold", "playbooks/ray.yml, containers absent (token auth, checks)", med["ray_cold"],
         "%.2f x hand recipe" % (med["ray_cold"] / med["hand"])),
        ("ray_rerun", "playbooks/ray.yml again, nothing to change", med["ray_rerun"],
         "%.2f x its cold run" % (med["ray_rerun"] / med["ray_cold"])),
        ("deploy_cold", "deploy.yml (all phases, images present), containers absent", med["deploy_cold"],
         "%.2f x hand recipe" % (med["deploy_cold"] / med["hand"])),
        ("deploy_rerun", "deploy.yml again, nothing to change", med["deploy_rerun"],
         "%.2f x its cold run" % (med["deploy_rerun"] / med["deploy_cold"])),
        ("hand_native", "hand-run native recipe: vllm serve --nnodes rank per host (no Ray)", med["hand_native"],
         "1.00 (native baseline)"),
        ("native_cold", "deploy.yml, Ray-less vLLM (launch native), containers absent", med["native_cold"],
         "%.2f x native recipe" % (med["native_cold"] / med["hand_native"])),
        ("native_rerun", "deploy.yml native again, nothing to change", med["native_rerun"],
         "%.2f x its cold run" % (med["native_rerun"] / med["native_cold"])),
    ]
    print("\nBring-up on the lab, over Ray and without: %d hosts, images present, %d runs each (wall-clock seconds)\n"
          % (len(hosts), args.runs))
    print("%-72s %7s %7s %7s  %s" % ("case", "median", "min", "max", "ratio"))
    for key, label, m, ratio in rows:
        print("%-72s %7.2f %7.2f %7.2f  %s" % (label, m, min(results[key]), max(results[key]), ratio))
    print("\nchanged tasks in the re-runs: %s" % rerun_changed)
    clean(hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
