# -*- coding: utf-8 -*-
"""engine_pull's figures for a full disk: the data root and architecture come from the daemon
(`docker info`), the size from the registry's manifest for that architecture. The Docker CLI is
answered with what a real daemon prints (fixtures/lab/docker-info.json, an arm64 daemon's
Architecture 'aarch64')."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.sparkops.inference.plugins.modules.engine_pull import disk_facts


class Cli(object):
    """Answers `docker ...` argv as a daemon would: a Go template over docker info, manifests by ref."""

    def __init__(self, info, manifests):
        self.info, self.manifests, self.calls = info, manifests, []

    def run(self, argv):
        self.calls.append(argv)
        if argv[0] == "info":
            fields = {"{{.DockerRootDir}}": self.info["DockerRootDir"], "{{.Architecture}}": self.info["Architecture"]}
            return 0, " ".join(fields[f] for f in argv[2].split()) + "\n", ""
        ref = argv[-1]
        if ref in self.manifests:
            return 0, json.dumps(self.manifests[ref]), ""
        return 1, "", "no such manifest: %s" % ref


def test_a_full_disk_on_an_arm64_daemon_sizes_the_arm64_image(fixture_text, tmp_path):
    info = json.loads(fixture_text("lab", "docker-info.json"))
    info.update(Architecture="aarch64", DockerRootDir=str(tmp_path))
    one = json.loads(fixture_text("lab", "docker-manifest-inspect-20.10.json"))
    arm = "sha256:" + "b" * 64
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"digest": "sha256:" + "a" * 64, "size": 1, "platform": {"os": "linux", "architecture": "amd64"}},
        {"digest": arm, "size": 1, "platform": {"os": "linux", "architecture": "arm64"}}]}
    cli = Cli(info, {"reg:5000/vllm:1": index, "reg:5000/vllm@" + arm: one})
    root, free, size, note = disk_facts(cli, "reg:5000/vllm:1")
    assert root == str(tmp_path) and free > 0 and note == ""
    assert size == sum(x["size"] for x in one["layers"]) + one["config"]["size"]
    assert cli.calls[-1][-1] == "reg:5000/vllm@" + arm


def test_a_daemon_that_does_not_answer_leaves_the_root_unknown(fixture_text):
    class Down(Cli):
        def run(self, argv):
            return (1, "", "Cannot connect to the Docker daemon") if argv[0] == "info" else Cli.run(self, argv)
    root, free, size, note = disk_facts(Down({}, {}), "reg:5000/vllm:1")
    assert (root, free, size) == (None, None, None) and "no such manifest" in note
