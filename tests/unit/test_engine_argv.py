# -*- coding: utf-8 -*-
"""Every launch plan's command line, parsed by a stdlib rebuild of each engine release's own parser
(tests/unit/fixtures/engine-parsers/, written by `make engine-parsers` from the engines' real
parsers): a flag a release lacks, a value its choices refuse, a number it would not take, or a
value that would mean something else than the plan intends fails here, without the engines' venvs."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import engine_argv  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.sparkops.inference.plugins.module_utils._plan import ENGINES  # noqa: E402

FIXTURES = engine_argv.fixtures()
PAIRS = [(release, case) for release in sorted(FIXTURES) for case in engine_argv.cases()
         if case["engine"] == release[0]]


def test_every_engine_of_the_plans_has_two_judged_releases():
    for engine in ENGINES:
        releases = [v for e, v in FIXTURES if e == engine]
        assert len(releases) >= 2, "%s: parser fixtures for %s; run make engine-parsers" % (engine, releases)


@pytest.mark.parametrize("release,case", PAIRS, ids=["%s-%s: %s" % (r[0], r[1], c["name"]) for r, c in PAIRS])
def test_the_plan_parses_as_meant(release, case):
    parser = engine_argv.rebuild(FIXTURES[release])
    try:
        parsed = vars(parser.parse_args(case["argv"]))
    except engine_argv.ArgvError as exc:
        pytest.fail("%s %s refuses the plan '%s': %s\nargv: %s" % (release + (case["name"], exc, case["argv"])))
    meaning = dict((k, v) for k, v in case["meaning"].items() if k not in case["from_files"])
    assert engine_argv.mismatches(parsed, meaning, strict=False) == []


@pytest.mark.parametrize("release", sorted(FIXTURES), ids=["%s-%s" % r for r in sorted(FIXTURES)])
def test_the_real_parser_parsed_every_plan_as_meant_when_the_fixture_was_made(release):
    """The fixture's own record: what the engine's parser gave for the plans of that day (a
    fixture written by a failing `make engine-parsers` fails here)."""
    recorded = FIXTURES[release]["cases"]
    assert recorded, "no plan was parsed"
    for result in recorded:
        assert "error" not in result, (result["name"], result["error"])
        assert engine_argv.mismatches(result["parsed"], result["meaning"]) == [], result["name"]


def test_a_flag_the_engine_lacks_fails():
    release = sorted(r for r in FIXTURES if r[0] == "vllm")[0]
    parser = engine_argv.rebuild(FIXTURES[release])
    case = engine_argv.cases()[0]
    with pytest.raises(engine_argv.ArgvError, match="unrecognized arguments: --nodes"):
        parser.parse_args(case["argv"] + ["--nodes", "2"])


def test_a_value_that_is_no_number_fails():
    release = sorted(r for r in FIXTURES if r[0] == "sglang")[0]
    parser = engine_argv.rebuild(FIXTURES[release])
    argv = list(engine_argv.cases()[-1]["argv"])
    argv[argv.index("--node-rank") + 1] = "head"
    with pytest.raises(engine_argv.ArgvError, match="--node-rank: invalid int value: 'head'"):
        parser.parse_args(argv)


def test_a_value_meaning_something_else_is_named():
    parsed = {"tensor_parallel_size": 1, "nnodes": "2"}
    assert engine_argv.mismatches(parsed, {"tp_size|tensor_parallel_size": 2, "nnodes": 2}, strict=False) == [
        "tensor_parallel_size: parsed 1, meant 2"]
    assert engine_argv.mismatches(parsed, {"nnodes": 2}) == ["nnodes: parsed '2', meant 2"]
