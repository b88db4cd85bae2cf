"""Benchmark: a model directory's checksums (model_server_verify_checksums), shards hashed one
after the other (the baseline, workers=1) against a few at once (the default: the host's cores,
at most 8), side by side, cases alternating run by run.

    .venv/bin/python bench/checksums.py [--shards 8] [--mib 512] [--runs 3] [--dir DIR]

The shards are written first, so they are read from the page cache: this measures hashing, the
CPU's part; a cold read adds the disk's (docs/performance.md). Needs no lab; nothing asserted.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.sparkops.inference.plugins.module_utils._record import (  # noqa: E402 pylint: disable=wrong-import-position
    model_manifest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--mib", type=int, default=512, help="size of each shard")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the shards (default: a temporary directory)")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="sparkops-bench-", dir=args.dir)
    try:
        block = os.urandom(1 << 20)
        for i in range(args.shards):
            with open(os.path.join(base, "model-%05d-of-%05d.safetensors" % (i + 1, args.shards)), "wb") as f:
                for dummy in range(args.mib):
                    f.write(block)
        total = args.shards * args.mib / 1024.0
        default = min(8, os.cpu_count() or 1)
        cases = [("one shard at a time (workers=1)", 1), ("shards at once (workers=%d, the default here)" % default, None)]
        times = {name: [] for name, dummy in cases}
        digests = set()
        for dummy in range(args.runs):
            for name, workers in cases:
                t0 = time.monotonic()
                digests.add(model_manifest(base, checksum=True, workers=workers)[2])
                times[name].append(time.monotonic() - t0)
        if len(digests) != 1:
            raise SystemExit("the two ways gave different manifests: %s" % sorted(digests))
        print("%d shards x %d MiB = %.1f GiB, %d cores, %d runs each (medians)\n" % (
            args.shards, args.mib, total, os.cpu_count() or 1, args.runs))
        print("%-50s %8s %8s %10s  %s" % ("case", "median", "min", "GiB/s", "ratio"))
        base_median = statistics.median(times[cases[0][0]])
        for name, dummy in cases:
            med = statistics.median(times[name])
            note = " (baseline)" if name == cases[0][0] else ""
            row = (name, med, min(times[name]), total / med, med / base_median, note)
            print("%-50s %7.2fs %7.2fs %10.2f  %.2fx%s" % row)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
