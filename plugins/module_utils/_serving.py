# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine's HTTP answers mean: the one judge of "does it serve".

Used by the deploy's readiness wait and its completion (serve_check, through _http), the re-run
check (deploy_record, through _http.answers), status.yml (serve_check's status) and the
watchdog's agent (_watchdog.probe). Standard library only, no Ansible import: the watchdog's
agent runs on the hosts with the image's python3, and this file is mounted beside it.

An answer is (HTTP status, body), the status None when nothing answered. What a status means:
- 2xx: the engine did what was asked;
- 4xx: the engine is alive and refuses *this* request - the API key, the model name - which
  restarting it would not mend (ALIVE);
- 5xx, a redirect, no answer: the engine is not serving (vLLM answers 500 once its engine
  process died; whatever redirects is not the engine) (DOWN).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

SERVES = "serves"
ALIVE = "alive"  # answers, but not what was asked: a 4xx, or another model than ours
DOWN = "down"


def meaning(code):
    """SERVES, ALIVE or DOWN for one HTTP status (None: nothing answered)."""
    if code is None:
        return DOWN
    if 200 <= code < 300:
        return SERVES
    if 400 <= code < 500:
        return ALIVE
    return DOWN


def model_ids(code, text):
    """The model ids a /v1/models answer lists ([] unless it is a 2xx with a data list)."""
    if meaning(code) != SERVES:
        return []
    try:
        return [m.get("id") for m in json.loads(text).get("data", [])]
    except (ValueError, AttributeError):
        return []


def completion_text(code, text):
    """The first choice's text of a completion answer, or None when it holds none."""
    if meaning(code) != SERVES:
        return None
    try:
        return json.loads(text)["choices"][0]["text"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def judge(served_name, health=None, models=None, completion=None):
    """(state, step) from the answers asked so far - each (status, body), None when not asked:
    SERVES with step None when every one asked was a 2xx, /v1/models lists `served_name` (when
    given) and the completion holds a choice; else the first step that did not ('health',
    'models', 'name' - the engine lists other models - or 'completion') and what it says of the
    engine (ALIVE or DOWN)."""
    for step, answer in (("health", health), ("models", models)):
        if answer is not None and meaning(answer[0]) != SERVES:
            return meaning(answer[0]), step
    if models is not None and served_name and served_name not in model_ids(*models):
        return ALIVE, "name"
    if completion is not None:
        if meaning(completion[0]) != SERVES:
            return meaning(completion[0]), "completion"
        if completion_text(*completion) is None:
            return DOWN, "completion"
    return SERVES, None
