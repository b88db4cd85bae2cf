# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine probe run on a host: which engine an image carries, its versions, and whether it
serves given model architectures - read from the image's files (static) or by running its Python
(runtime), cached on the host by image id.

Used by the engine_probe module and by engine_pull (its O(probe) option: the images a host holds,
and those it pulls, probed in the same call - one round trip per host where the phase made two).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tarfile
import time

from ansible_collections.sparkops.inference.plugins.module_utils import _cache
from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
    PROBE_VERSION,
    RUNTIME_SNIPPET,
    parse_runtime_output,
    result,
    static_facts,
)
from ansible_collections.sparkops.inference.plugins.module_utils._docker import (
    DockerError,
    host_platform,
    image_facts,
    same_platform,
)
from ansible_collections.sparkops.inference.plugins.module_utils._image_fs import LayerFS, TarFS

# the options of a probe (engine_probe's own; engine_pull's probe suboptions), with their defaults
OPTIONS = dict(
    architectures=dict(type="list", elements="str", default=[]),
    method=dict(type="str", choices=["static", "runtime", "auto"], default="auto"),
    cache_file=dict(type="path", default="/var/lib/sparkops/engine-probe-cache.json"),
    timeout=dict(type="int", default=300),
    static_reader=dict(type="str", choices=["auto", "export"], default="auto"),
)


def load_cache(p):
    return _cache.load(p["cache_file"]) if p["cache_file"] else {}


def probe_images(module, docker, images, p, inspected=None):
    """engine_probe's answer for each image (in order), the host's cache read and written once;
    inspected: image -> its image_facts() where the caller has inspected it already."""
    cache = load_cache(p)
    results = [probe_one(module, docker, image, p, cache, (inspected or {}).get(image)) for image in images]
    save_cache(module, p, cache)
    return results


def inspect_image(docker, image):
    """(image info, None) or (None, why it cannot be probed)."""
    if not image.strip():
        return None, "image is empty: expected an image reference such as lmsysorg/sglang:spark"
    data, text = docker.image_inspect(image)
    if data is None:
        if "invalid reference format" in text or "invalid repository name" in text:
            return None, ("%r is not a valid image reference (%s): expected "
                          "[registry/]repository[:tag|@sha256:digest]" % (image, text))
        return None, ("the image %s is not on this host (%s): pull it first "
                      "(sparkops.inference.engine_pull, or the engine_image role)" % (image, text[-300:]))
    return image_facts(image, data), None


def static_probe(module, docker, info, reader):
    graph = info["graph"]
    if reader != "export" and graph.get("Name") == "overlay2" and graph.get("Data", {}).get("UpperDir"):
        data = graph["Data"]
        layers = [data["UpperDir"]] + [d for d in (data.get("LowerDir") or "").split(":") if d]
        if all(os.path.isdir(d) for d in layers):
            return static_facts(LayerFS(layers), info["config"])
    # other storage drivers: stream the file system of a created (never started) container
    rc, cid, err = docker.run(["create", "--entrypoint", "/", info["id"]])
    if rc != 0:
        module.fail_json(msg="docker create of %s (to read its files) failed: %s"
                             % (info["image"], err.strip()[-300:]))
    cid = cid.strip()
    try:
        resp = docker.api.request("GET", "/containers/%s/export" % cid)
        with tarfile.open(fileobj=resp, mode="r|") as tar:
            fs = TarFS(tar)
    except (DockerError, tarfile.TarError) as exc:
        module.fail_json(msg="reading the files of %s (docker export) failed: %s" % (info["image"], exc))
    finally:
        docker.rm(cid)
    return static_facts(fs, info["config"])


def runtime_probe(module, docker, info, archs, timeout):
    host = host_platform(os.uname()[4])
    if not same_platform(info["platform"], host):
        return {"engine": None, "native": [], "fallback": [], "removed": {}, "versions": {},
                "errors": ["the image %s is built for %s and this host is %s: it cannot run here "
                           "(a runtime probe needs to run it; the static probe does not)"
                           % (info["image"], info["platform"], host)],
                "undecided": True, "refused": True}
    name = "sparkops-probe-%d" % os.getpid()
    rc, out, err = docker.run_bounded(timeout, [
        "run", "--rm", "--name", name, "--network", "none", "--entrypoint", "python3", info["id"],
        "-c", RUNTIME_SNIPPET, json.dumps(archs)])
    if rc in (124, 137):
        docker.rm(name)
        return {"engine": None, "native": [], "fallback": [], "removed": {}, "versions": {},
                "errors": ["the runtime probe of %s did not finish within %d s" % (info["image"], timeout)],
                "undecided": True, "timed_out": True}
    return parse_runtime_output(rc, out, err, info["image"])


def save_cache(module, p, cache):
    if p["cache_file"] and not module.check_mode and cache.pop("_dirty", False):
        problem = _cache.save(p["cache_file"], cache)
        if problem:
            module.warn(problem)


def probe_one(module, docker, image, p, cache, info=None):
    """The answer for one image, or {image, error} when it cannot be probed (info: its
    image_facts(), when the caller has inspected it already)."""
    started = time.time()
    info, error = (info, None) if info else inspect_image(docker, image)
    if error:
        return {"image": image, "error": error}
    entry = cache.get(info["id"]) or {}
    order = {"static": ["static"], "runtime": ["runtime"], "auto": ["static", "runtime"]}[p["method"]]
    facts, used, cached, errors = None, None, False, []
    for method in order:
        hit = entry.get(method)
        from_cache = bool(hit) and hit.get("probe_version") == PROBE_VERSION
        if from_cache:
            this = hit
        elif method == "static":
            this = static_probe(module, docker, info, p["static_reader"])
        else:
            this = runtime_probe(module, docker, info, p["architectures"], p["timeout"])
        if not from_cache and not this.get("refused") and not this.get("timed_out"):
            entry[method] = this
            cache[info["id"]] = entry
            cache["_dirty"] = True
        facts, used, cached = this, method, from_cache
        if method == "static" and p["method"] == "auto" and (this.get("native") or not this.get("engine")):
            break  # static decided: an engine with a readable registry, or no engine at all
        if method == "static" and len(order) > 1:
            errors.extend(this.get("errors") or [])
    res = result(info, facts, p["architectures"], used)
    res["errors"] = errors + [e for e in res["errors"] if e not in errors]
    res["cached"] = cached
    res["seconds"] = round(time.time() - started, 3)
    return res
