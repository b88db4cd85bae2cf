# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy left on a host, and how the host differs from it now (drift).

host_state() turns what is live on a host - `docker container inspect` documents of our
containers, the files a deploy writes, the model directory's manifest - into a record: plain,
sorted, JSON-ready. The deploy writes it at its end (deploy_record, mode record); drift
(mode compare) builds the same record from the host as it is now and differences() names every
key that moved. Secrets never enter a record: a secret file is recorded by its SHA-256, a
container environment variable whose name says it is a secret likewise.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import threading

from ansible_collections.sparkops.inference.plugins.module_utils._engine import EngineError, model_architectures
from ansible_collections.sparkops.inference.plugins.module_utils._files import read_file
from ansible_collections.sparkops.inference.plugins.module_utils._plan import PlanError, launch_plan

RECORD_VERSION = 1
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|CREDENTIAL)", re.I)


def sha256_text(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _file_sha256(full):
    h = hashlib.sha256()
    with open(full, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)  # hashlib lets go of the GIL for chunks this size: threads hash in parallel
    return h.hexdigest()


def _hash_all(paths, workers):
    """{path: SHA-256 hex, or the error reading it} with `workers` threads: a model's shards hashed
    one after the other take one core (~1.5 GB/s); a few at once reach the disk's rate."""
    results, todo, lock = {}, list(paths), threading.Lock()

    def work():
        while True:
            with lock:
                if not todo:
                    return
                full = todo.pop()
            try:
                results[full] = _file_sha256(full)
            except (IOError, OSError) as exc:
                results[full] = exc

    threads = [threading.Thread(target=work) for dummy in range(max(1, min(workers, len(todo))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def model_manifest(path, checksum=False, workers=None):
    """(files, bytes, digest) of a model directory: relative name and size of every file
    (its SHA-256 too with checksum, files hashed `workers` at a time - default: the host's cores,
    at most 8), hidden directories skipped, in a stable order."""
    found = []
    for root, dirs, files in os.walk(path, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            full = os.path.join(root, name)
            try:
                found.append((full, os.path.getsize(full)))
            except OSError:
                continue
    sums = {}
    if checksum:
        sums = _hash_all([full for full, dummy in found], workers or min(8, os.cpu_count() or 1))
    entries, total = [], 0
    for full, size in found:
        line = "%s\t%d" % (os.path.relpath(full, path), size)
        if checksum:
            if isinstance(sums[full], Exception):
                raise sums[full]  # as when the files were read one by one
            line += "\t" + sums[full]
        total += size
        entries.append(line)
    digest = hashlib.sha256("\n".join(entries).encode("utf-8")).hexdigest()
    return len(entries), total, digest


def model_summary(path, checksum=False):
    """What model_info and serve_check (precheck) say of a model directory on this host: whether
    it is there, and its manifest (files, bytes, digest) - equal on two hosts when they hold the
    same files."""
    res = {"path": path, "exists": os.path.isdir(path), "files": 0, "size_bytes": 0, "manifest": None}
    if res["exists"]:
        res["files"], res["size_bytes"], res["manifest"] = model_manifest(path, checksum)
    return res


def read_model(path, checksum=False, read_config=True):
    """What model_info says of a model directory: model_summary() and, with read_config, the
    architectures and model_type of its config.json; and why that config.json cannot be used, or None."""
    res = model_summary(path, checksum)
    if read_config:
        config = os.path.join(path, "config.json")
        try:
            res["architectures"], res["model_type"] = model_architectures(read_file(config), config)
        except EngineError as exc:
            return res, str(exc)
    return res, None


def env_pairs(lines):
    """KEY=VALUE lines (an env file, a container's Env) -> {KEY: VALUE}; secret-named keys
    keep only a digest of their value; comments and blank lines skipped."""
    pairs = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        pairs[key] = sha256_text(value) if SECRET_NAME.search(key) else value
    return pairs


def container_state(doc):
    """The parts of a `docker container inspect` document a deploy decides, or None (absent)."""
    if not doc:
        return None
    config = doc.get("Config") or {}
    state = doc.get("State") or {}
    host = doc.get("HostConfig") or {}
    labels = config.get("Labels") or {}
    return {
        "id": doc.get("Id"),
        "image": config.get("Image"),
        "image_id": doc.get("Image"),
        "status": state.get("Status"),
        "started_at": state.get("StartedAt"),
        "command": list(config.get("Entrypoint") or []) + list(config.get("Cmd") or []),
        "env": env_pairs(config.get("Env") or []),
        "labels": dict((k, v) for k, v in labels.items() if k.startswith("sparkops.")),
        "restart_policy": (host.get("RestartPolicy") or {}).get("Name"),
    }


def file_state(path, content, stat_result, show_values):
    """A file a deploy wrote: absent (None), else its digest, mode and (show_values: an env
    file, never a secret) its KEY=VALUE pairs."""
    if content is None:
        return None
    state = {"sha256": sha256_text(content), "mode": "%04o" % (stat_result.st_mode & 0o7777)}
    if show_values:
        state["env"] = env_pairs(content.splitlines())
    return state


def refreshed_starts(recorded, now):
    """After a rollback started the deployed containers again: (the record with the start time and
    state of each recorded container that runs now under the same ID taken from `now`, the names of
    those). Nothing else moves - files, inputs, images, a container replaced or not running - so
    whatever the failed run left that the rollback did not put back still differs from the record."""
    new = dict(recorded, containers=dict(recorded.get("containers") or {}))
    names = []
    for name, old in sorted(new["containers"].items()):
        cur = (now.get("containers") or {}).get(name)
        if not old or not cur or cur.get("id") != old.get("id") or cur.get("status") != "running":
            continue
        if (cur.get("started_at"), cur.get("status")) != (old.get("started_at"), old.get("status")):
            new["containers"][name] = dict(old, started_at=cur.get("started_at"), status=cur.get("status"))
            names.append(name)
    return new, names


def differences(recorded, now):
    """Every difference between two records, as {"what", "key", "recorded", "now"} dicts in a
    stable order. A container or file present in one and not the other is one difference; an
    env file's or a container's environment is compared key by key."""
    out = []

    def add(what, key, old, new):
        out.append({"what": what, "key": key, "recorded": old, "now": new})

    for kind in ("containers", "files"):
        old_all, new_all = recorded.get(kind) or {}, now.get(kind) or {}
        for name in sorted(set(old_all) | set(new_all)):
            what = "%s %s" % (kind[:-1], name)
            old, new = old_all.get(name), new_all.get(name)
            if old is None or new is None:
                if old != new:
                    add(what, "present", old is not None, new is not None)
                continue
            env_moved = (old.get("env") or {}) != (new.get("env") or {})
            for key in sorted(set(old) | set(new)):
                if key == "sha256" and env_moved:
                    continue  # the variables that moved say it; the digest alone says no more
                if key == "env":
                    o_env, n_env = old.get("env") or {}, new.get("env") or {}
                    for var in sorted(set(o_env) | set(n_env)):
                        if o_env.get(var) != n_env.get(var):
                            add(what, "env " + var, o_env.get(var), n_env.get(var))
                elif old.get(key) != new.get(key):
                    add(what, key, old.get(key), new.get(key))
    for key in sorted(set(recorded.get("model") or {}) | set(now.get("model") or {})):
        old, new = (recorded.get("model") or {}).get(key), (now.get("model") or {}).get(key)
        if old != new:
            add("model directory", key, old, new)
    # asked for by the deploy's re-run check only (drift.yml compares what is on the host)
    if "inputs_digest" in now and recorded.get("inputs_digest") != now["inputs_digest"]:
        add("inputs", "digest", recorded.get("inputs_digest"), now["inputs_digest"])
    if "images" in now:
        old_images = recorded.get("images") or {}
        for ref in sorted(now["images"]):
            if ref not in old_images:
                add("image " + ref, "recorded", False, True)
            elif old_images[ref] != now["images"][ref]:
                add("image " + ref, "id", old_images[ref], now["images"][ref])
    return out


def describe(diff):
    """One line a person reads: what, which key, recorded -> now."""
    def show(value):
        if value is None:
            return "absent"
        if isinstance(value, bool):
            return "present" if value else "absent"
        return str(value)
    if diff["key"] == "sha256":
        return "%s: content changed since the deploy (sha256 %s... now %s...)" % (
            diff["what"], str(diff["recorded"])[7:19], str(diff["now"])[7:19])
    if diff["what"] == "inputs" and diff["recorded"] is None:
        return "inputs: the record holds no digest of the deploy's variables (written before they were recorded)"
    if diff["what"] == "inputs":
        return ("inputs: the deploy's variables or this collection's build differ from those of the recorded deploy "
                "(digest %s... now %s...)"
                % (str(diff["recorded"])[:12], str(diff["now"])[:12]))
    if diff["key"] == "recorded":
        return "%s: not in the record (a candidate the recorded deploy did not have)" % diff["what"]
    if diff["key"] == "present":
        return "%s: %s, recorded %s" % (diff["what"], show(diff["now"]), show(diff["recorded"]))
    return "%s: %s was %s, now %s" % (diff["what"], diff["key"], show(diff["recorded"]), show(diff["now"]))


def launch_line(deployed):
    """How the recorded deploy launched its engine, for drift.yml's first line: 'vllm 0.17.0 without
    Ray from IMAGE: engine ranks on spark1, spark2' ('' when the record names no engine)."""
    deployed = deployed or {}
    engine = deployed.get("engine")
    if not engine:
        return ""
    ranks = [str(r) for r in deployed.get("ranks") or []]
    try:
        serving = launch_plan(engine, deployed.get("launcher"), ranks)["serving"]
    except PlanError:
        serving = "launched by %s" % deployed.get("launcher")
    version = (deployed.get("versions") or {}).get("engine")
    line = "%s%s %s" % (engine, " " + str(version) if version else "", "without Ray" if serving == "no Ray" else serving)
    if deployed.get("image"):
        line += " from %s" % deployed["image"]
    if ranks:
        line += ": engine %s on %s" % ("rank" if len(ranks) == 1 else "ranks", ", ".join(ranks))
    return line
