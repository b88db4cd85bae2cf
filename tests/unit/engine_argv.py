# -*- coding: utf-8 -*-
"""Every launch plan's engine command line and what each of its values must mean to the engine.

Shared by the two judges of our command lines:
- tests/parsers/build.py (`make engine-parsers`) parses them with the engines' own parsers, in a
  venv per engine release, and writes each parser's options to tests/unit/fixtures/engine-parsers/;
- tests/unit/test_engine_argv.py rebuilds a stdlib parser from each of those fixtures and parses
  them again in CI, so a flag an engine release lacks, a value its choices refuse or a value of the
  wrong type fails without the venvs.

The argv is what module_utils/_containers.engine_command() builds for a cluster of two hosts with
one GPU each (a Spark pair), for every engine and launcher the plans know.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os

from ansible_collections.sparkops.inference.plugins.module_utils._containers import engine_command
from ansible_collections.sparkops.inference.plugins.module_utils._plan import (
    SGLANG_DIST_PORT,
    VLLM_MASTER_PORT,
)
from ansible_collections.sparkops.inference.plugins.module_utils import _secrets

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "engine-parsers")
HEAD = "10.77.0.11"
MODEL = "/models/Qwen3.5-122B-A10B-FP8"
NAME = "qwen3.5-122b"
# a key YAML must quote: the config file carries it as a JSON string (roles/model_server)
API_KEY = 'k3y: with "quotes" # and a hash'

COMMON = {"model_path": MODEL, "host": "0.0.0.0", "port": 8000, "served_name": NAME,
          "gpu_memory_utilization": 0.85, "gpus_total": 2, "gpus_per_node": 1, "nodes": 2,
          "max_model_len": 32768, "head_address": HEAD}


def sglang_key_config(key):
    """The file roles/model_server writes for SGLang's --config (its `api-key` as a JSON string)."""
    return "api-key: %s\n" % json.dumps(key)


def _case(name, engine, launcher, meaning, files=None, from_files=(), **extra):
    inputs = dict(COMMON, engine=engine, launcher=launcher, **extra)
    dummy, args = engine_command(inputs)
    return {"name": name, "engine": engine, "argv": args, "meaning": meaning, "files": files or {},
            "from_files": list(from_files)}


def cases():
    """[{name, engine, argv, meaning: {dest: value the engine must parse}, files: {path: text} the
    engine reads (written where the engine's parser is run), from_files: the dests those supply}]."""
    found = []
    vllm = {"model_tag": MODEL, "host": "0.0.0.0", "port": 8000, "served_model_name": [NAME],
            "gpu_memory_utilization": 0.85, "max_model_len": 32768}
    found.append(_case("vllm over Ray, tensor parallel", "vllm", "ray", dict(
        vllm, distributed_executor_backend="ray", tensor_parallel_size=2, pipeline_parallel_size=1,
        nnodes=1, headless=False)))
    found.append(_case("vllm over Ray, pipeline parallel", "vllm", "ray", dict(
        vllm, distributed_executor_backend="ray", tensor_parallel_size=1, pipeline_parallel_size=2,
        nnodes=1), parallelism="pipeline"))
    for parallelism, tensor, pipeline in (("tensor", 2, 1), ("pipeline", 1, 2)):
        for rank in (0, 1):
            found.append(_case(
                "vllm native, %s parallel, rank %d" % (parallelism, rank), "vllm", "native", dict(
                    vllm, distributed_executor_backend="mp", tensor_parallel_size=tensor,
                    pipeline_parallel_size=pipeline, nnodes=2, node_rank=rank, master_addr=HEAD,
                    master_port=VLLM_MASTER_PORT, headless=bool(rank)),
                parallelism=parallelism, node_rank=rank))
    # SGLang 0.5.10 keeps --tp-size as tensor_parallel_size (from_cli_args renames it), 0.5.2x as tp_size
    sglang = {"model_path": MODEL, "host": "0.0.0.0", "port": 8000, "served_model_name": NAME,
              "tp_size|tensor_parallel_size": 2, "mem_fraction_static": 0.85, "nnodes": 2, "context_length": 32768,
              "dist_init_addr": "%s:%d" % (HEAD, SGLANG_DIST_PORT)}
    for rank in (0, 1):
        found.append(_case("sglang, rank %d" % rank, "sglang", "native", dict(sglang, node_rank=rank),
                           node_rank=rank))
    found.append(_case(
        "sglang, rank 0, API key from its --config file", "sglang", "native",
        dict(sglang, node_rank=0, api_key=API_KEY),
        files={"%s/%s" % (_secrets.IN_CONTAINER, _secrets.SGLANG_CONFIG_FILE): sglang_key_config(API_KEY)},
        from_files=["api_key"], node_rank=0, api_key=True))
    return found


def fixtures():
    """{(engine, version): fixture} of every parser fixture on disk."""
    found = {}
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".json"):
            with open(os.path.join(FIXTURES, name)) as f:
                data = json.load(f)
            found[(data["engine"], data["version"])] = data
    return found


class ArgvError(Exception):
    """The rebuilt parser refused a command line (argparse's own message)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ArgvError(message)


TYPES = {"int": int, "float": float, "str": str, "human_readable_int": int}


def rebuild(fixture):
    """A stdlib ArgumentParser with the options an engine's parser had (flags, dest, nargs,
    choices, action; the type where it or the type it wraps is int, float or str - other types
    keep the text)."""
    parser = _Parser(prog=" ".join(fixture["program"]), add_help=False,
                     allow_abbrev=fixture.get("allow_abbrev", True))
    for opt in fixture["options"]:
        action, flags = opt["action"], list(opt["flags"])
        kwargs = {"dest": opt["dest"]} if flags else {}
        if action in ("help", "version"):
            continue
        if action == "BooleanOptionalAction":
            flags = [f for f in flags if "--no-" + f[2:] in flags] or flags
            kwargs.update(action=argparse.BooleanOptionalAction, default=opt.get("default"))
        elif action in ("store_true", "store_false", "count"):
            kwargs.update(action=action)
        elif action in ("store_const", "append_const"):
            kwargs.update(action=action, const=opt.get("const"))
        else:
            if opt.get("nargs") == 0:
                kwargs.update(action="store_const", const=opt.get("const"))
            else:
                typ = TYPES.get(opt.get("type")) or TYPES.get(opt.get("inner_type")) or str
                kwargs.update(action="append" if action == "append" else "store", type=typ)
                if opt.get("nargs") is not None:
                    kwargs["nargs"] = opt["nargs"]
                if opt.get("choices") is not None:
                    kwargs["choices"] = [typ(c) for c in opt["choices"]]
            kwargs["default"] = opt.get("default")
        if flags:
            parser.add_argument(*flags, **kwargs)
        else:
            parser.add_argument(opt["dest"], **kwargs)
    return parser


def mismatches(parsed, meaning, strict=True):
    """['dest: parsed X, meant Y'] where the parsed values do not mean what the plan intends (a
    meaning's key may name alternatives, 'a|b': the dest a release has); strict=False lets a value
    the rebuilt parser kept as text equal the number it spells."""
    wrong = []
    for names, want in sorted(meaning.items()):
        dest = next((n for n in names.split("|") if n in parsed), None)
        if dest is None:
            wrong.append("%s: not an option of this parser, meant %r" % (names, want))
            continue
        got = parsed[dest]
        same = got == want and type(got) is type(want)
        if not same and not strict and isinstance(got, str) and isinstance(want, (int, float)) \
                and not isinstance(want, bool):
            try:
                same = float(got) == float(want)
            except ValueError:
                same = False
        if not same:
            wrong.append("%s: parsed %r, meant %r" % (dest, got, want))
    return wrong
