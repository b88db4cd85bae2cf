#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: engine_probe
short_description: Which engine an image carries, its versions, and whether it serves given model architectures
version_added: 0.1.0
description:
  - Probes one image present on the host (pull it first, see M(sparkops.inference.engine_pull)).
  - C(static) reads the image's files without running it - the layer directories of Docker's
    overlay2 driver in place, or, for other storage drivers, the export stream of a created
    (never started) container from the Docker API socket (C(DOCKER_HOST) when it is a unix
    socket), read as it arrives. Versions come from C(*.dist-info/METADATA), editable installs
    are followed (C(direct_url.json), C(.pth) lines, setuptools finder maps), architectures from
    the engine's own registry source parsed with Python's C(ast) (vLLM's model tables in
    C(vllm/model_executor/models/registry.py); C(EntryClass) of every module in
    C(sglang/srt/models/)). Works for an image of any CPU architecture, without a GPU.
  - C(runtime) runs python inside the image (C(docker run --rm --network none)) and asks the
    engine - vLLM C(ModelRegistry.get_supported_archs()) after C(load_general_plugins()) and
    C(load_model_cls()) of the requested ones, SGLang's C(ModelRegistry) - keeping the import
    errors the engines log and swallow. An image built for another CPU architecture is refused
    before it is run.
  - C(auto) probes statically and runs the image only when the static read cannot decide.
  - Results are cached on the host by image id, so probing the same image again costs a
    C(docker image inspect).
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
options:
  image:
    description:
      - Image reference, passed to Docker as one argument (never through a shell). The answer is
        returned as top-level keys and as C(sparkops_engine_probe).
      - One of O(image) and O(images) is required.
    type: str
  images:
    description:
      - Several images in one run (what the engine_image role uses); the answers are returned as
        RV(probes) and as C(sparkops_engine_probes) (image -> answer). An image that is not on
        the host, or not a valid reference, gets C(error) instead of failing the task. Returned as RV(probes).
    type: list
    elements: str
  architectures:
    description:
      - Model architectures to judge (the C(architectures) of the model's C(config.json)), for
        example C(Qwen3_5MoeForConditionalGeneration). May be empty.
    type: list
    elements: str
    default: []
  method:
    description: How to probe.
    type: str
    choices: [static, runtime, auto]
    default: auto
  cache_file:
    description: Where results are cached by image id; empty disables the cache.
    type: path
    default: /var/lib/sparkops/engine-probe-cache.json
  timeout:
    description: Seconds the runtime probe may take.
    type: int
    default: 300
  static_reader:
    description:
      - How the static probe reads the image - C(auto) reads overlay2 layer directories in place
        and falls back to the export stream for other storage drivers; C(export) always streams.
    type: str
    choices: [auto, export]
    default: auto
attributes:
  check_mode:
    support: full
    details: A probe changes nothing on the host but its cache, which check mode leaves alone.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Can this image serve Qwen3.5?
  sparkops.inference.engine_probe:
    image: lmsysorg/sglang:spark
    architectures: [Qwen3_5MoeForConditionalGeneration]
  register: probe

- name: Ask the engine itself (runs the image)
  sparkops.inference.engine_probe:
    image: nvcr.io/nvidia/vllm:26.01-py3
    architectures: [Qwen3_5MoeForConditionalGeneration]
    method: runtime
"""

RETURN = r"""
image:
  description: The image probed, as given.
  returned: always
  type: str
engine:
  description: C(vllm), C(sglang), or null when the image carries neither.
  returned: always
  type: str
versions:
  description: Versions found (null when absent) of engine, torch, cuda, triton, transformers, flashinfer, ray.
  returned: always
  type: dict
  sample: {engine: "0.17.0", torch: "2.10.0", cuda: "13.0", triton: "3.5.1", transformers: "4.57.1", flashinfer: null, ray: "2.60.0"}
platform:
  description: The image's platform (C(os/architecture)).
  returned: always
  type: str
  sample: linux/arm64
digest:
  description: The image's registry digest (C(repo@sha256:...)), or null for an image never pushed or pulled.
  returned: always
  type: str
id:
  description:
    - The image id on this host - the digest of its configuration in Docker's classic image store,
      of its manifest in the containerd image store. The probe cache is keyed by it.
  returned: always
  type: str
content_id:
  description:
    - An id of the image's content that is the same in every image store - platform, layer diff
      ids and run config hashed. Hosts whose copies have equal content ids hold the same image.
  returned: always
  type: str
architectures:
  description: Each requested architecture - C(native), C(fallback) (only the engine's generic Transformers backend), or C(unsupported).
  returned: always
  type: dict
  sample: {Qwen3_5MoeForConditionalGeneration: native}
supported:
  description: Whether the image has an engine and every requested architecture is native.
  returned: always
  type: bool
launchers:
  description:
    - How the image can be launched across hosts - C(ray) (Ray is installed) and C(native) (the engine's
      own multi-node options, read from its command-line sources by the static probe) - each null when
      offered, else why not. The runtime probe does not read the sources (C(native) says so).
  returned: always
  type: dict
  sample: {ray: "no Ray in the image", native: null}
  version_added: 0.3.0
method:
  description: The method that produced the answer (C(static) or C(runtime)).
  returned: always
  type: str
cached:
  description: Whether the answer came from the host's cache.
  returned: always
  type: bool
errors:
  description: Plain sentences about what the probe met (missing python, import errors the engine swallowed, ...).
  returned: always
  type: list
  elements: str
notes:
  description: Why an architecture is only C(fallback) or C(unsupported).
  returned: always
  type: list
  elements: str
probes:
  description: One answer per image of O(images), in order (each as the top-level keys above, or C(image) and C(error)).
  returned: when O(images) is given
  type: list
  elements: dict
ansible_facts:
  description: The answer as C(sparkops_engine_probe) (O(image)), or C(sparkops_engine_probes) by image (O(images)).
  returned: always
  type: dict
"""

import json
import os
import tarfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils import _cache
from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
    PROBE_VERSION,
    RUNTIME_SNIPPET,
    parse_runtime_output,
    result,
    static_facts,
)
from ansible_collections.sparkops.inference.plugins.module_utils._docker import (
    Docker,
    DockerError,
    host_platform,
    image_facts,
    same_platform,
)
from ansible_collections.sparkops.inference.plugins.module_utils._image_fs import LayerFS, TarFS


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str"),
            images=dict(type="list", elements="str"),
            architectures=dict(type="list", elements="str", default=[]),
            method=dict(type="str", choices=["static", "runtime", "auto"], default="auto"),
            docker_cli=dict(type="str", default="docker"),
            cache_file=dict(type="path", default="/var/lib/sparkops/engine-probe-cache.json"),
            timeout=dict(type="int", default=300),
            static_reader=dict(type="str", choices=["auto", "export"], default="auto"),
        ),
        required_one_of=[("image", "images")],
        mutually_exclusive=[("image", "images")],
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    cache = _cache.load(p["cache_file"]) if p["cache_file"] else {}
    if p["image"] is not None:
        res = probe_one(module, docker, p["image"], p, cache)
        if res.get("error"):
            module.fail_json(msg=res["error"])
        save_cache(module, p, cache)
        res["ansible_facts"] = {"sparkops_engine_probe": dict(res)}
        module.exit_json(changed=False, **res)
    results = [probe_one(module, docker, image, p, cache) for image in p["images"]]
    save_cache(module, p, cache)
    module.exit_json(changed=False, probes=results, ansible_facts={
        "sparkops_engine_probes": dict((r["image"], r) for r in results)})


def save_cache(module, p, cache):
    if p["cache_file"] and not module.check_mode and cache.pop("_dirty", False):
        problem = _cache.save(p["cache_file"], cache)
        if problem:
            module.warn(problem)


def probe_one(module, docker, image, p, cache):
    """The answer for one image, or {image, error} when it cannot be probed."""
    started = time.time()
    info, error = inspect_image(docker, image)
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


if __name__ == "__main__":
    main()
