#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: engine_pull
short_description: Pull engine images, each attempt bounded by a timeout, retried with backoff
version_added: 0.1.0
description:
  - Pulls each of O(images) with C(docker pull) (the reference is one argument, never seen by
    a shell). An attempt that takes longer than O(timeout) is stopped (Docker abandons the
    pull; layers already fetched are kept, so the next attempt resumes) and retried after
    O(backoff) seconds, doubling, up to O(retries) more times - a 40 GB pull that times out
    once succeeds on the retry.
  - An image that cannot be pulled is reported with the reason (unknown image, registry
    unreachable, timed out after N attempts) and does not fail the task unless
    O(fail_on_error=true) - a candidate that cannot be pulled is simply not a candidate.
  - While it pulls, its action plugin prints at the default verbosity, every
    O(progress_interval) seconds, which host pulls which image and how far it is (layers done,
    those the host had already, the attempt, the seconds), from the progress file the module
    keeps; the module runs asynchronously on the host meanwhile, all hosts at once.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
options:
  images:
    description: Image references to pull, in order.
    type: list
    elements: str
    required: true
  policy:
    description:
      - C(missing) pulls only images not on the host; C(always) asks the registry each time
        (changed only when the image behind the reference changed); C(never) pulls nothing and
        says which images the host holds (an image it lacks has C(id) null and no C(error)).
    type: str
    choices: [missing, always, never]
    default: missing
  timeout:
    description: Seconds one pull attempt may take.
    type: int
    default: 1800
  retries:
    description: Further attempts after a failed or timed-out one.
    type: int
    default: 3
  backoff:
    description: Seconds before the first retry; doubled before each next one.
    type: float
    default: 10
  fail_on_error:
    description: Fail the task when an image could not be pulled.
    type: bool
    default: false
  registry_digests:
    description:
      - Also ask the registry (through the daemon - its mirrors and insecure registries apply; the
        credentials C(docker login) left in the user's C(config.json) are passed) which digest the tag of
        each image this host holds points to now, without pulling, in C(registry_digest) of each
        RV(images) entry; C(moved) is true when the tag has moved away from the digest this host holds.
        Each question waits at most 5 seconds.
      - A registry that cannot be asked is named in C(registry_error); nothing fails.
    type: bool
    default: false
    version_added: 0.3.0
  probe:
    description:
      - Also probe every image the host holds once the pulls are done, as
        M(sparkops.inference.engine_probe) with O(images) does (its options, below), in the same
        call; RV(probes) has one answer per image the host holds. An image the host does not
        hold (not pulled, or its pull failed) is not probed.
      - Omitted, nothing is probed.
    type: dict
    version_added: 0.4.0
    suboptions:
      architectures:
        description: Model architectures to judge (see M(sparkops.inference.engine_probe)).
        type: list
        elements: str
        default: []
      method:
        description: C(static), C(runtime) or C(auto) (see M(sparkops.inference.engine_probe)).
        type: str
        choices: [static, runtime, auto]
        default: auto
      cache_file:
        description: The host's probe cache, by image id; empty, none is kept.
        type: path
        default: /var/lib/sparkops/engine-probe-cache.json
      timeout:
        description: Seconds a runtime probe may take.
        type: int
        default: 300
      static_reader:
        description: How the static probe reads the image's files (see M(sparkops.inference.engine_probe)).
        type: str
        choices: [auto, export]
        default: auto
  progress_interval:
    description:
      - Seconds between two progress lines while it pulls (read by the action plugin on the
        controller). V(0) runs the module in one piece, silently.
    type: int
    default: 30
    version_added: 0.2.0
  progress_file:
    description:
      - Where the module keeps how far it is, on the host. Set by the action plugin; empty, none is kept.
    type: path
    version_added: 0.2.0
attributes:
  action:
    description: Has a corresponding action plugin, so parts of it run on the controller.
    support: full
    details: The action plugin runs the module asynchronously and prints its progress.
  async:
    description: Supports being used with the C(async) keyword.
    support: none
    details: It runs itself asynchronously; do not add C(async) to the task.
  check_mode:
    support: full
    details: Reports which images would be pulled; pulls nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Pull the candidates on every host at once
  sparkops.inference.engine_pull:
    images: [lmsysorg/sglang:spark, nvcr.io/nvidia/vllm:26.01-py3]
    timeout: 1800
    retries: 3
    progress_interval: 30
  poll: 10
"""

RETURN = r"""
images:
  description:
    - One entry per image, in order.
    - With O(registry_digests) each entry also has C(registry_digest) (what the registry gives the
      tag now, or null), C(registry_error) (why it could not be asked, or null) and C(moved) (true
      when the tag points elsewhere than this host's copy, null when unknown).
  returned: always
  type: list
  elements: dict
  sample:
    - image: lmsysorg/sglang:spark
      present_before: false
      pulled: true
      id: "sha256:6f0e..."
      digest: "lmsysorg/sglang@sha256:91ab..."
      platform: linux/arm64
      attempts: 2
      seconds: 812.4
      error: null
      log: ["attempt 1 timed out after 600 s", "attempt 2 succeeded"]
failed_images:
  description: Images that could not be pulled, with the reason.
  returned: always
  type: dict
probes:
  description:
    - With O(probe), the answer of M(sparkops.inference.engine_probe) for each image the host holds,
      in the order of O(images) (each as that module's RV(sparkops.inference.engine_probe#module:probes)).
  returned: when O(probe) is given
  type: list
  elements: dict
  version_added: 0.4.0
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker, architecture, tag_moved
from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write
from ansible_collections.sparkops.inference.plugins.module_utils._probe import OPTIONS as PROBE_OPTIONS, probe_images
from ansible_collections.sparkops.inference.plugins.module_utils._pull import (
    DISK_FULL,
    PullProgress,
    disk_full_reason,
    manifest_size,
    repository_of,
)


class ProgressFile(object):
    """Writes how far the pulls are to a file (on each layer line), for the action plugin
    that shows it while the module runs."""

    def __init__(self, path, images):
        self.path, self.images, self.last = path, images, 0.0
        self.doc = {"images": len(images), "index": 0, "image": None, "attempt": 0, "summary": "",
                    "layers": {}, "started": time.time(), "image_started": time.time()}

    def start(self, index, image, attempt, progress):
        self.doc.update(index=index, image=image, attempt=attempt)
        if attempt == 1:
            self.doc["image_started"] = time.time()
        self.progress = progress
        self.write(force=True)

    def line(self, text):
        if self.progress.feed(text):  # a few lines per layer: each one is written
            self.write()

    def write(self, force=False):
        if not self.path:
            return
        self.last = time.time()
        self.doc.update(summary=self.progress.summary(), layers=self.progress.counts(), updated=self.last)
        try:
            atomic_write(self.path, json.dumps(self.doc), mode=0o600)
        except OSError:
            self.path = None  # progress is a courtesy: never fail a pull for it


NO_RETRY = ("invalid reference format", "manifest unknown", "not found", "repository does not exist",
            "pull access denied", "unauthorized", "denied", "no basic auth credentials", DISK_FULL)


def describe(docker, image, inspected):
    """What an entry says of the image on this host, or None; its whole inspection goes into
    inspected[image] (the probe reads it there, without a second docker image inspect)."""
    facts = docker.image(image)
    if facts is None:
        return None
    inspected[image] = facts
    return {"id": facts["id"], "content_id": facts["content_id"], "digest": facts["digest"],
            "platform": facts["platform"]}


def disk_facts(docker, image):
    """(Docker's data root, its free bytes, the image's compressed bytes, a note) for a full disk."""
    # the daemon's own data root and architecture (uname -m spelling: aarch64 on a Spark)
    rc, out, dummy = docker.run(["info", "--format", "{{.DockerRootDir}} {{.Architecture}}"])
    fields = out.split() if rc == 0 else []
    root = fields[0] if fields else None
    arch = architecture(fields[1] if len(fields) > 1 else os.uname()[4])
    free = None
    if root:
        try:
            st = os.statvfs(root)
            free = st.f_bavail * st.f_frsize
        except OSError:
            pass
    size, note, ref = None, "", image
    for dummy in range(2):  # a manifest list, then this platform's manifest
        rc, out, err = docker.run(["manifest", "inspect", "--insecure", ref])
        if rc != 0:
            note = "docker manifest inspect: %s" % (err or out).strip()[-160:]
            break
        try:
            size, digest = manifest_size(json.loads(out), "linux", arch)
        except ValueError:
            break
        if size is not None or not digest:
            break
        ref = "%s@%s" % (repository_of(image), digest)
    return root, free, size, note


def reason(image, text, timed_out, attempts, timeout, docker=None, allowed=None):
    low = text.lower()
    if DISK_FULL in low and docker is not None:
        return disk_full_reason(image, attempts, allowed or attempts, *disk_facts(docker, image))
    if timed_out:
        return "pulling %s timed out (%d attempts of %d s each): raise engine_image_pull_timeout " \
               "or check the bandwidth to the registry" % (image, attempts, timeout)
    if "invalid reference format" in low:
        return "%r is not a valid image reference: expected [registry/]repository[:tag|@digest]" % image
    if any(w in low for w in ("manifest unknown", "not found", "does not exist")):
        return "the registry does not know %s (%s)" % (image, text.strip()[-200:])
    if any(w in low for w in ("unauthorized", "denied", "no basic auth credentials")):
        return "the registry refused %s (%s): set engine_image_registry_username/password" % (
            image, text.strip()[-200:])
    if any(w in low for w in ("connection refused", "no such host", "i/o timeout", "network is unreachable",
                              "no route to host", "dial tcp", "tls handshake")):
        return "the registry of %s is unreachable after %d attempts (%s)" % (image, attempts, text.strip()[-200:])
    return "pulling %s failed after %d attempts: %s" % (image, attempts, text.strip()[-300:])


def pull(module, docker, image, p, progress, index, inspected):
    before = describe(docker, image, inspected)
    entry = {"image": image, "present_before": before is not None, "pulled": False, "error": None,
             "attempts": 0, "seconds": 0.0, "log": []}
    entry.update(before or {"id": None, "digest": None, "platform": None})
    if (before and p["policy"] == "missing") or p["policy"] == "never":
        return entry
    if module.check_mode:
        entry["log"].append("would pull")
        return entry
    started, delay, text, timed_out = time.time(), p["backoff"], "", False
    for attempt in range(1, p["retries"] + 2):
        entry["attempts"] = attempt
        t0 = time.time()
        # coreutils timeout ends the client; Docker then abandons the pull and keeps the layers
        # (the next attempt lists them as "Already exists")
        layers = PullProgress(image)
        progress.start(index, image, attempt, layers)
        rc, out, err = docker.stream_bounded(p["timeout"], ["pull", image], progress.line)
        progress.write(force=True)
        timed_out = rc in (124, 137)
        text = (out or "") + (err or "")
        if not timed_out and rc == 0:
            entry["log"].append("attempt %d succeeded in %.1f s: %s" % (attempt, time.time() - t0, layers.summary()))
            break
        entry["log"].append("attempt %d %s after %.1f s%s" % (
            attempt, "timed out" if timed_out else "failed", time.time() - t0,
            (" with %s" % layers.summary()) if timed_out else ": " + text.strip()[-200:]))
        if not timed_out and any(w in text.lower() for w in NO_RETRY):
            break
        if attempt <= p["retries"]:
            time.sleep(delay)
            delay *= 2
    entry["seconds"] = round(time.time() - started, 1)
    after = describe(docker, image, inspected)
    if after and not timed_out and rc == 0:
        entry.update(after)
        entry["pulled"] = before is None or before["id"] != after["id"]
    else:
        entry["error"] = reason(image, text, timed_out, entry["attempts"], p["timeout"], docker, p["retries"] + 1)
    return entry


def main():
    module = AnsibleModule(
        argument_spec=dict(
            images=dict(type="list", elements="str", required=True),
            policy=dict(type="str", choices=["missing", "always", "never"], default="missing"),
            timeout=dict(type="int", default=1800),
            retries=dict(type="int", default=3),
            backoff=dict(type="float", default=10),
            fail_on_error=dict(type="bool", default=False),
            docker_cli=dict(type="str", default="docker"),
            registry_digests=dict(type="bool", default=False),
            progress_file=dict(type="path"),
            probe=dict(type="dict", options=PROBE_OPTIONS),
            progress_interval=dict(type="int", default=30),  # the action plugin's
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["images"]:
        module.fail_json(msg="images is empty: expected the engine images to pull")
    if p["timeout"] < 1 or p["retries"] < 0 or p["backoff"] < 0:
        module.fail_json(msg="timeout must be >= 1, retries and backoff >= 0; found timeout=%s "
                             "retries=%s backoff=%s" % (p["timeout"], p["retries"], p["backoff"]))
    docker = Docker(module, p["docker_cli"])
    progress = ProgressFile(p["progress_file"], p["images"])
    inspected = {}
    images = [pull(module, docker, image, p, progress, i, inspected) for i, image in enumerate(p["images"])]
    if p["registry_digests"]:
        for entry in images:
            # only a copy this host holds can have been left behind by its tag (and an absent
            # image's registry may be the one that is down: no wait for it)
            entry["registry_digest"], entry["registry_error"] = (
                docker.registry_digest(entry["image"], timeout=5) if entry["id"] else (None, "not on this host"))
            entry["moved"] = tag_moved(entry.get("digest"), entry["registry_digest"])
    failed = dict((e["image"], e["error"]) for e in images if e["error"])
    changed = any(e["pulled"] for e in images) or (module.check_mode and p["policy"] != "never" and any(
        not e["present_before"] for e in images))
    if failed and p["fail_on_error"]:
        module.fail_json(msg="; ".join(failed.values()), images=images, failed_images=failed)
    extra = {}
    if p["probe"] is not None:
        extra["probes"] = probe_images(module, docker, [e["image"] for e in images if e["id"]], p["probe"], inspected)
    module.exit_json(changed=changed, images=images, failed_images=failed, **extra)


if __name__ == "__main__":
    main()
