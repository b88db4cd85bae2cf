# -*- coding: utf-8 -*-
"""Run inside an engine release's venv (tests/parsers/build.py makes it): parse command lines with
the engine's own parser, as the engine's entry point builds it, and describe that parser.

    python judge.py IN.json OUT.json

IN: {"engine": "vllm" | "sglang", "cases": [{"name", "argv", "files": {path: text}}]}
OUT: {"engine", "version", "program", "parser", "allow_abbrev", "options": [...],
      "cases": [{"name", "argv", "parsed": {dest: value}} or {"name", "argv", "error"}]}

vLLM: `vllm serve`'s parser as vllm/entrypoints/cli/main.py builds it (a FlexibleArgumentParser
with the serve subcommand), the CPU platform selected first as `vllm bench` does, then the
subcommand's own validate() and AsyncEngineArgs.from_cli_args() - what `vllm serve` runs before it
needs a GPU. SGLang: sglang.srt.server_args.prepare_server_args() itself (its --config merge
included), stopped where it hands the parsed arguments to ServerArgs.from_cli_args(), whose
post-parse setup wants an accelerator.

Only the standard library and the engine: this file is not part of the collection.
"""
import argparse
import json
import os
import sys
import tempfile
from importlib.metadata import version


def describe(parser):
    options = []
    for action in parser._actions:  # pylint: disable=protected-access
        kind = type(action).__name__
        kind = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
                "_StoreConstAction": "store_const", "_AppendAction": "append",
                "_AppendConstAction": "append_const", "_CountAction": "count", "_HelpAction": "help",
                "_VersionAction": "version"}.get(kind, kind)
        typ = action.type
        name = getattr(typ, "__name__", None) if typ is not None else None
        entry = {"flags": list(action.option_strings), "dest": action.dest, "action": kind,
                 "nargs": action.nargs, "type": name, "required": bool(action.required)}
        # a wrapper's own type (vLLM's optional_type(int)): the first type or function it closes over
        cells = [c.cell_contents for c in getattr(typ, "__closure__", None) or ()]
        inner = [getattr(c, "__name__", None) for c in cells if callable(c)]
        if inner and inner[0]:
            entry["inner_type"] = inner[0]
        if action.choices is not None:
            choices = [c if isinstance(c, (int, float, str)) else str(c) for c in action.choices]
            # a set's order changes from run to run: sorted, so a fixture made again is the same
            entry["choices"] = sorted(choices, key=str) if isinstance(action.choices, (set, frozenset)) else choices
        for key in ("default", "const"):
            value = getattr(action, key, None)
            if value is None or isinstance(value, (bool, int, float, str)):
                entry[key] = value
            else:
                entry[key] = None
                entry[key + "_was"] = type(value).__name__
        options.append(entry)
    return options


def plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return repr(value)


class Parsed(Exception):
    pass


def vllm_judge():
    from vllm import platforms
    try:  # where vllm/entrypoints/cli/main.py takes it from: 0.3x, then 0.1x
        from vllm.entrypoints.common.startup import cli_env_setup
    except ImportError:
        from vllm.entrypoints.utils import cli_env_setup
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    import vllm
    from vllm.entrypoints.cli import serve

    cli_env_setup()
    if platforms.current_platform.is_unspecified():
        from vllm.platforms.cpu import CpuPlatform
        platforms.current_platform = CpuPlatform()
    top = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    command = serve.cmd_init()[0]
    sub = command.subparser_init(subparsers)

    def parse(argv):
        args = top.parse_args(["serve"] + argv)
        command.validate(args)
        vllm.AsyncEngineArgs.from_cli_args(args)
        return vars(args)
    return ["vllm", "serve"], "vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init", sub, parse


def sglang_judge():
    from sglang.srt import server_args

    captured = {}

    def stop(cls, raw_args):
        captured["args"] = raw_args
        raise Parsed()
    server_args.ServerArgs.from_cli_args = classmethod(stop)
    parser = argparse.ArgumentParser(prog="sglang serve")
    server_args.ServerArgs.add_cli_args(parser)

    def parse(argv):
        try:
            server_args.prepare_server_args(list(argv))
        except Parsed:
            return vars(captured.pop("args"))
        raise RuntimeError("prepare_server_args returned without ServerArgs.from_cli_args")
    return (["python3", "-m", "sglang.launch_server"],
            "sglang.srt.server_args.prepare_server_args (ServerArgs.add_cli_args)", parser, parse)


def main():
    with open(sys.argv[1]) as f:
        request = json.load(f)
    engine = request["engine"]
    program, origin, parser, parse = {"vllm": vllm_judge, "sglang": sglang_judge}[engine]()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in request["cases"]:
            argv = list(case["argv"])
            for number, (path, text) in enumerate(sorted(case.get("files", {}).items())):
                here = os.path.join(tmp, "%d-%s" % (number, os.path.basename(path)))
                with open(here, "w") as f:
                    f.write(text)
                argv = [here if a == path else a for a in argv]
            entry = {"name": case["name"], "argv": case["argv"]}
            try:
                entry["parsed"] = dict((k, plain(v)) for k, v in parse(argv).items()
                                       if not callable(v))
            except SystemExit as exc:
                entry["error"] = "the parser exited (%s): see stderr" % exc.code
            except Exception as exc:  # pylint: disable=broad-except
                entry["error"] = "%s: %s" % (type(exc).__name__, exc)
            results.append(entry)
    out = {"engine": engine, "version": version(engine), "program": program, "parser": origin,
           "allow_abbrev": parser.allow_abbrev, "options": describe(parser), "cases": results}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
