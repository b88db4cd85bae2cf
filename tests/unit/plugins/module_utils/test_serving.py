# -*- coding: utf-8 -*-
"""The one judge of serving: what each answer means, for the deploy, the re-run check, status
and the watchdog alike."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._serving import (
    ALIVE, DOWN, SERVES, completion_text, judge, meaning, model_ids)

MODELS = (200, json.dumps({"object": "list", "data": [{"id": "qwen3.5"}]}))
DONE = (200, json.dumps({"choices": [{"text": " Paris", "index": 0}]}))


@pytest.mark.parametrize("code, said", [(200, SERVES), (204, SERVES), (301, DOWN), (400, ALIVE), (401, ALIVE),
                                        (404, ALIVE), (500, DOWN), (503, DOWN), (None, DOWN)])
def test_what_a_status_says_of_the_engine(code, said):
    assert meaning(code) == said


def test_every_answer_asked_decides_in_order():
    assert judge("qwen3.5", health=(200, ""), models=MODELS, completion=DONE) == (SERVES, None)
    assert judge("qwen3.5", health=(None, "connection refused"), models=MODELS) == (DOWN, "health")
    # a wrong key: alive, refused - what a restart would not mend
    assert judge("qwen3.5", health=(200, ""), models=(401, '{"error": "Unauthorized"}')) == (ALIVE, "models")
    assert judge("other", health=(200, ""), models=MODELS) == (ALIVE, "name")
    assert judge(None, models=MODELS) == (SERVES, None)  # no name asked: any listed model
    assert judge("qwen3.5", completion=(500, "{}")) == (DOWN, "completion")  # vLLM's dead engine
    assert judge("qwen3.5", completion=(200, '{"choices": []}')) == (DOWN, "completion")
    assert judge("qwen3.5", completion=(200, "not json")) == (DOWN, "completion")
    assert judge("qwen3.5", completion=(404, "{}")) == (ALIVE, "completion")


def test_what_an_answer_holds():
    assert model_ids(*MODELS) == ["qwen3.5"] and model_ids(401, MODELS[1]) == [] and model_ids(200, "[]") == []
    assert completion_text(*DONE) == " Paris" and completion_text(200, '{"choices": [{"text": ""}]}') == ""
    assert completion_text(500, DONE[1]) is None
