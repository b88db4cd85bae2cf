# -*- coding: utf-8 -*-
"""The deploy record and drift: real `docker container inspect` shapes (Docker 26.1 in the lab,
the fields Docker 29 prints alike), env files as the fabric role writes them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import os

from ansible_collections.sparkops.inference.plugins.module_utils._record import (
    container_state,
    describe,
    differences,
    env_pairs,
    file_state,
    _hash_all,
    launch_line,
    model_manifest,
    model_summary,
    read_model,
)

WORKER = {
    "Id": "5b1d0c6e4f0e",
    "Name": "/sparkops-ray-worker",
    "Image": "sha256:3634848",
    "State": {"Status": "running", "Running": True, "StartedAt": "2026-12-02T00:38:01.1Z"},
    "Config": {"Image": "10.77.0.5:5000/sparkops/lab-vllm:0.17.0",
               "Entrypoint": ["ray", "start"], "Cmd": ["--address", "192.168.77.11:6379", "--block"],
               "Env": ["NCCL_SOCKET_IFNAME=enp1s0f1np1", "RAY_AUTH_TOKEN=s3cr3t-token", "PATH=/usr/bin"],
               "Labels": {"sparkops.spec": "ab12", "org.opencontainers.image.version": "24.04"}},
    "HostConfig": {"RestartPolicy": {"Name": "unless-stopped"}},
}
ENV = "# written by sparkops.inference (fabric role)\nNCCL_SOCKET_IFNAME=enp1s0f1np1\nNCCL_IB_DISABLE=1\n"


class Stat(object):
    st_mode = 0o100644


def record(worker="as deployed", env=ENV, token="t0ken", model=None):
    worker = WORKER if worker == "as deployed" else worker
    return {"containers": {"sparkops-ray-worker": container_state(worker), "sparkops-model-server": None},
            "files": {"/etc/sparkops/fabric.env": file_state("/etc/sparkops/fabric.env", env, Stat, True),
                      "/etc/sparkops/ray-token": file_state("/etc/sparkops/ray-token", token, Stat, False)},
            "model": model}


def test_a_host_as_it_was_left_has_no_drift():
    assert differences(record(), record()) == []


def test_a_changed_env_file_variable_is_named_by_key_alone():
    moved = differences(record(), record(env=ENV.replace("=enp1s0f1np1", "=eth9")))
    assert moved == [{"what": "file /etc/sparkops/fabric.env", "key": "env NCCL_SOCKET_IFNAME",
                      "recorded": "enp1s0f1np1", "now": "eth9"}]
    assert describe(moved[0]) == "file /etc/sparkops/fabric.env: env NCCL_SOCKET_IFNAME was enp1s0f1np1, now eth9"
    # a comment only: the digest says the file moved
    assert [d["key"] for d in differences(record(), record(env=ENV.replace("fabric role", "by hand")))] == ["sha256"]


def test_secrets_never_enter_the_record_or_the_drift():
    rec = record()
    assert "env" not in rec["files"]["/etc/sparkops/ray-token"]
    assert "t0ken" not in str(rec) and "s3cr3t-token" not in str(rec)
    assert rec["containers"]["sparkops-ray-worker"]["env"]["RAY_AUTH_TOKEN"].startswith("sha256:")
    moved = differences(rec, record(token="another"))
    assert [(d["what"], d["key"]) for d in moved] == [("file /etc/sparkops/ray-token", "sha256")]
    assert "another" not in str(moved)


def test_a_container_recreated_restarted_or_gone_is_named():
    again = copy.deepcopy(WORKER)
    again.update(Id="9f00")
    again["State"]["StartedAt"] = "2026-12-02T01:00:00Z"
    again["Config"]["Env"] = ["NCCL_SOCKET_IFNAME=enp1s0f1np1", "RAY_AUTH_TOKEN=s3cr3t-token", "PATH=/usr/bin",
                              "NCCL_DEBUG=INFO"]
    moved = dict((d["key"], d) for d in differences(record(), record(worker=again)))
    assert set(moved) == {"id", "started_at", "env NCCL_DEBUG"}
    assert moved["env NCCL_DEBUG"]["recorded"] is None and moved["env NCCL_DEBUG"]["now"] == "INFO"
    assert describe(moved["env NCCL_DEBUG"]) == "container sparkops-ray-worker: env NCCL_DEBUG was absent, now INFO"
    gone = differences(record(), record(worker=None))
    assert gone == [{"what": "container sparkops-ray-worker", "key": "present", "recorded": True, "now": False}]
    assert describe(gone[0]) == "container sparkops-ray-worker: absent, recorded present"
    # only our labels are kept: an image's own label moving is not the deploy's business
    assert container_state(WORKER)["labels"] == {"sparkops.spec": "ab12"}


def test_a_model_directory_that_changed_is_named(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model-00001.safetensors").write_bytes(b"x" * 10)
    before = model_manifest(str(tmp_path))
    (tmp_path / "model-00001.safetensors").write_bytes(b"x" * 11)
    after = model_manifest(str(tmp_path))
    assert before[:2] == (2, 12) and after[:2] == (2, 13) and before[2] != after[2]

    def model(m):
        return {"path": str(tmp_path), "files": m[0], "size_bytes": m[1], "manifest": m[2]}
    moved = differences(record(model=model(before)), record(model=model(after)))
    assert [(d["what"], d["key"]) for d in moved] == [("model directory", "manifest"), ("model directory", "size_bytes")]
    assert os.path.isdir(str(tmp_path))


def test_env_pairs_skips_comments_and_keeps_equals_in_values():
    assert env_pairs(["# x", "", "A=b=c", "NOPE"]) == {"A": "b=c"}


def test_checksums_hashed_in_parallel_are_the_ones_read_one_by_one(tmp_path):
    """The shards are hashed a few at a time; the manifest is the same whatever the number of
    threads, and it is the documented one: sorted lines of name, size and SHA-256."""
    shards = {"model-%05d.safetensors" % i: bytes([i]) * (3 << 20) for i in range(1, 7)}
    shards["config.json"] = b"{}"
    (tmp_path / "sub").mkdir()
    shards["sub/tokenizer.json"] = b"tok"
    for name, data in shards.items():
        (tmp_path / name).write_bytes(data)
    lines = ["%s\t%d\t%s" % (name, len(data), hashlib.sha256(data).hexdigest()) for name, data in sorted(shards.items())]
    expected = (len(shards), sum(len(d) for d in shards.values()),
                hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest())
    assert model_manifest(str(tmp_path), checksum=True, workers=1) == expected
    assert model_manifest(str(tmp_path), checksum=True, workers=8) == expected
    # a byte changed, the size kept: only the checksums see it
    (tmp_path / "model-00003.safetensors").write_bytes(b"\7" + bytes([3]) * ((3 << 20) - 1))
    assert model_manifest(str(tmp_path), checksum=True, workers=4)[2] != expected[2]
    assert model_manifest(str(tmp_path))[2] == model_manifest(str(tmp_path))[2]


def test_a_shard_that_cannot_be_read_is_named_not_hashed(tmp_path):
    """A shard gone between the listing and its hashing (or unreadable) comes back as its error,
    which model_manifest raises, as it did when the shards were read one by one."""
    (tmp_path / "a").write_bytes(b"x" * 10)
    got = _hash_all([str(tmp_path / "a"), str(tmp_path / "gone")], 4)
    assert got[str(tmp_path / "a")] == hashlib.sha256(b"x" * 10).hexdigest()
    assert isinstance(got[str(tmp_path / "gone")], OSError)


def test_model_summary_says_whether_the_directory_is_there(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    here = model_summary(str(tmp_path))
    assert here == {"path": str(tmp_path), "exists": True, "files": 1, "size_bytes": 2,
                    "manifest": model_manifest(str(tmp_path))[2]}
    gone = model_summary(str(tmp_path / "absent"), checksum=True)
    assert gone == {"path": str(tmp_path / "absent"), "exists": False, "files": 0, "size_bytes": 0, "manifest": None}


def test_read_model_gives_the_architectures_or_why_the_config_cannot_be_used(tmp_path):
    """What model_info returns (and host_prereqs keeps as the head's sparkops_model fact): a
    config.json that cannot be used is a reason, not an exception - the phase that needs the
    architectures fails with it."""
    (tmp_path / "config.json").write_text('{"architectures": ["Qwen3_5MoeForConditionalGeneration"], '
                                          '"model_type": "qwen3_5_moe"}')
    model, error = read_model(str(tmp_path))
    assert error is None and model["exists"] and model["files"] == 1
    assert (model["architectures"], model["model_type"]) == (["Qwen3_5MoeForConditionalGeneration"], "qwen3_5_moe")
    (tmp_path / "config.json").write_text("{not json")
    model, error = read_model(str(tmp_path))
    assert "config.json is not JSON" in error and "architectures" not in model
    model, error = read_model(str(tmp_path / "absent"))
    assert "absent/config.json does not exist: set model_path (sparkops_model_path)" in error
    assert model["exists"] is False
    assert read_model(str(tmp_path / "absent"), read_config=False) == (model_summary(str(tmp_path / "absent")), None)


def test_the_rerun_check_names_other_inputs_and_moved_images_drift_does_not_ask():
    """The deploy's re-run check adds the inputs' digest and the candidates' image IDs to what it
    compares; drift.yml (neither given) compares the host alone, whatever the record holds."""
    old = dict(record(), inputs_digest="a" * 64,
               images={"reg/vllm:0.17.0": "sha256:4261", "reg/sglang:0.5.10": None})
    assert differences(old, record()) == []  # drift.yml: not asked
    same = dict(record(), inputs_digest="a" * 64, images={"reg/vllm:0.17.0": "sha256:4261", "reg/sglang:0.5.10": None})
    assert differences(old, same) == []
    now = dict(record(), inputs_digest="b" * 64,
               images={"reg/vllm:0.17.0": "sha256:9999", "reg/sglang:0.5.10": None, "reg/new:1": "sha256:1"})
    moved = differences(old, now)
    assert [(d["what"], d["key"]) for d in moved] == [
        ("inputs", "digest"), ("image reg/new:1", "recorded"), ("image reg/vllm:0.17.0", "id")]
    assert [describe(d) for d in moved] == [
        "inputs: the deploy's variables or this collection's build differ from those of the recorded deploy "
        "(digest aaaaaaaaaaaa... now bbbbbbbbbbbb...)",
        "image reg/new:1: not in the record (a candidate the recorded deploy did not have)",
        "image reg/vllm:0.17.0: id was sha256:4261, now sha256:9999"]
    # a record written before the digest was kept: never taken as unchanged
    older = differences(record(), dict(record(), inputs_digest="b" * 64))
    assert [describe(d) for d in older] == [
        "inputs: the record holds no digest of the deploy's variables (written before they were recorded)"]


def test_drift_names_how_the_recorded_deploy_launched_its_engine():
    """The record's `deployed` as the deploy role writes it (the probe's versions: `engine`, `ray`,
    ...): each launch in words, the hosts of its
    engine ranks; an old record or one of a failed serve (no engine) gives no line."""
    image = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"
    assert launch_line({"engine": "vllm", "launcher": "ray", "ranks": ["spark1"], "image": image,
                        "versions": {"engine": "0.17.0", "ray": "2.60.0", "torch": None}}) == (
        "vllm 0.17.0 over Ray from %s: engine rank on spark1" % image)
    assert launch_line({"engine": "vllm", "launcher": "native", "ranks": ["spark1", "spark2"],
                        "image": image + "-noray", "versions": {"engine": "0.17.0", "ray": None}}) == (
        "vllm 0.17.0 without Ray from %s-noray: engine ranks on spark1, spark2" % image)
    assert launch_line({"engine": "sglang", "launcher": "ray", "ranks": ["spark1", "spark2"]}) == (
        "sglang beside Ray: engine ranks on spark1, spark2")
    assert launch_line({"engine": "tgi", "launcher": "native"}) == "tgi launched by native"
    assert launch_line({"engine": None, "image": image}) == ""
    assert launch_line(None) == ""
