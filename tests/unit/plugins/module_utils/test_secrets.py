# -*- coding: utf-8 -*-
"""Where a secret may not go, and text kept free of them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

from ansible_collections.sparkops.inference.plugins.module_utils._secrets import (
    API_KEY_FILE,
    IN_CONTAINER,
    VLLM_WRAPPER,
    leaks,
    scrub,
    sources,
)


def test_a_key_in_the_extra_args_is_named_with_the_variable_to_use():
    problems = leaks({"model_server_extra_args": ["--max-num-seqs", "8", "--api-key=sk-123"],
                      "model_server_env": {"HF_TOKEN": "hf_x", "NCCL_DEBUG": "INFO"},
                      "ray_cluster_extra_args": ["--num-cpus", "8"]})
    assert problems == [
        "model_server_env sets HF_TOKEN: a secret there lands in the container's environment (docker inspect) "
        "or the env file. Set sparkops_hf_token (or sparkops_hf_token_file) instead - vault it",
        "model_server_extra_args holds --api-key: a secret there lands in the container's command line "
        "(docker inspect, ps on the host). Set sparkops_engine_api_key (or sparkops_engine_api_key_file) "
        "instead - vault it"]
    assert not any("sk-123" in p or "hf_x" in p for p in problems)  # the message never repeats it
    assert leaks({"fabric_env_extra": {"NCCL_IB_HCA": "mlx5"}, "model_server_extra_args": []}) == []


def test_two_sources_of_one_secret_or_an_unreadable_file_are_named():
    assert sources("sparkops_engine_api_key", True, "/k", True) == [
        "both sparkops_engine_api_key and sparkops_engine_api_key_file are set: set one"]
    assert sources("sparkops_hf_token", False, "/nope", False) == [
        "sparkops_hf_token_file is /nope: no readable file there on the controller"]
    assert sources("sparkops_hf_token", False, "", False) == [] == sources("sparkops_hf_token", True, "", False)


def test_scrub_cuts_every_secret_out():
    assert scrub("key sk-abcdef and sk-abcdef again", ["sk-abcdef", ""]) == "key (secret) and (secret) again"
    assert scrub("a b", ["a"]) == "a b"  # too short to be a key: never turns text into nonsense
    assert scrub(None, ["sk-abcdef"]) == ""


def test_the_vllm_wrapper_sets_the_key_from_the_file_and_runs_the_engine(tmp_path):
    """Run by a real /bin/sh, as in the container: the key is in the engine's environment, the
    command line holds the file's path only; no file, no variable."""
    wrapper = VLLM_WRAPPER.replace(IN_CONTAINER, str(tmp_path))
    (tmp_path / API_KEY_FILE).write_text("sk-canary-1")
    probe = ["python3", "-c", "import os, sys; print(os.environ.get('VLLM_API_KEY'), sys.argv[1:])", "serve", "/m"]
    env = dict(os.environ)
    env.pop("VLLM_API_KEY", None)
    out = subprocess.run(["/bin/sh", "-c", wrapper, "sparkops-engine"] + probe, env=env,
                         stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    assert out.strip() == "sk-canary-1 ['serve', '/m']"
    (tmp_path / API_KEY_FILE).unlink()
    out = subprocess.run(["/bin/sh", "-c", wrapper, "sparkops-engine"] + probe, env=env,
                         stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    assert out.strip() == "None ['serve', '/m']"
