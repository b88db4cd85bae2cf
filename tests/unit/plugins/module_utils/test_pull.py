# -*- coding: utf-8 -*-
"""How far a pull is, from `docker pull` as the lab's Docker 20.10 printed it without a terminal
(fixtures/lab/docker-pull-20.10.txt: two layers on the host already, three fetched)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.sparkops.inference.plugins.module_utils._pull import (
    PullProgress,
    disk_full_reason,
    manifest_size,
    repository_of,
)


def feed(lines):
    p = PullProgress("img")
    for line in lines:
        p.feed(line)
    return p


def test_a_whole_pull(fixture_text):
    p = feed(fixture_text("lab", "docker-pull-20.10.txt").splitlines())
    assert p.counts() == {"layers": 5, "done": 5, "downloaded": 5, "already_present": 2}
    assert p.summary() == "5 of 5 layers done (2 on the host already)"


def test_a_pull_half_way(fixture_text):
    lines = fixture_text("lab", "docker-pull-20.10.txt").splitlines()
    cut = lines[:lines.index("12223c3cd6c7: Download complete")]  # as a timeout would cut it
    p = feed(cut)
    assert p.counts() == {"layers": 5, "done": 2, "downloaded": 5, "already_present": 2}
    assert p.summary() == "2 of 5 layers done (2 on the host already)"


def test_nothing_yet_and_lines_that_are_not_layers():
    p = feed(["0.17.0: Pulling from sparkops/lab-vllm", "Digest: sha256:865e", "Status: Downloaded newer image"])
    assert p.summary() == "waiting for the registry" and p.counts()["layers"] == 0


def test_manifest_size_of_one_image_and_of_a_list(fixture_text):
    """`docker manifest inspect` as the lab's Docker 20.10 printed it for a lab image (one
    manifest), then an OCI index of two platforms (the shape multi-arch images have)."""
    one = json.loads(fixture_text("lab", "docker-manifest-inspect-20.10.json"))
    size, digest = manifest_size(one)
    assert digest is None
    assert size == sum(x["size"] for x in one["layers"]) + one["config"]["size"] and size > 1 << 20
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"digest": "sha256:" + "a" * 64, "size": 1000, "platform": {"os": "linux", "architecture": "amd64"}},
        {"digest": "sha256:" + "b" * 64, "size": 1000, "platform": {"os": "linux", "architecture": "arm64"}}]}
    assert manifest_size(index, "linux", "arm64") == (None, "sha256:" + "b" * 64)
    assert manifest_size(index, "linux", "riscv64") == (None, None)
    assert manifest_size("nonsense") == (None, None)


def test_repository_of_an_image_reference():
    assert repository_of("10.77.0.5:5000/sparkops/lab-vllm:0.17.0") == "10.77.0.5:5000/sparkops/lab-vllm"
    assert repository_of("nvcr.io/nvidia/vllm@sha256:" + "c" * 64) == "nvcr.io/nvidia/vllm"
    assert repository_of("localhost:5000/vllm") == "localhost:5000/vllm"


def test_a_full_disk_names_the_root_the_free_space_and_the_size():
    text = disk_full_reason("reg/vllm:1", 1, 4, "/var/lib/docker", 40 << 20, 21 << 30)
    assert "pulling reg/vllm:1 ran out of disk space (no space left on device in attempt 1 of 4; a full " \
           "disk is not retried)" in text
    assert "/var/lib/docker has 40 MiB free, the image is 21.00 GiB compressed" in text
    unknown = disk_full_reason("reg/vllm:1", 1, 1, None, None, None, "docker manifest inspect: unauthorized")
    assert "the free space of Docker's data root (docker info gave none) could not be read" in unknown
    assert "unknown (docker manifest inspect: unauthorized)" in unknown
