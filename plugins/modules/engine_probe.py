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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._probe import (
    OPTIONS,
    load_cache,
    probe_images,
    probe_one,
    save_cache,
)


def main():
    spec = dict(image=dict(type="str"), images=dict(type="list", elements="str"),
                docker_cli=dict(type="str", default="docker"))
    spec.update(OPTIONS)
    module = AnsibleModule(
        argument_spec=spec,
        required_one_of=[("image", "images")],
        mutually_exclusive=[("image", "images")],
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    if p["image"] is not None:
        cache = load_cache(p)
        res = probe_one(module, docker, p["image"], p, cache)
        if res.get("error"):
            module.fail_json(msg=res["error"])
        save_cache(module, p, cache)
        res["ansible_facts"] = {"sparkops_engine_probe": dict(res)}
        module.exit_json(changed=False, **res)
    results = probe_images(module, docker, p["images"], p)
    module.exit_json(changed=False, probes=results, ansible_facts={
        "sparkops_engine_probes": dict((r["image"], r) for r in results)})


if __name__ == "__main__":
    main()
