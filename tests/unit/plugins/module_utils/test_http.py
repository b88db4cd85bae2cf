# -*- coding: utf-8 -*-
"""_http against a real local engine-shaped server: one look says, in the judge's terms and in
words, whether the engine serves the name asked for - for the deploy's readiness wait
(serve_check) and the re-run check (deploy_record) alike."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils import _http
from ansible_collections.sparkops.inference.plugins.module_utils._serving import ALIVE, DOWN, SERVES

KEY = "sk-test-7f3a"


class Engine(BaseHTTPRequestHandler):
    """Answers as the test sets: each path's (status, body); the key, when set, is required on
    /v1/ (vLLM's /health wants none)."""
    answers = {}
    key = None
    hits = []

    def log_message(self, *args):
        pass

    def _answer(self):
        Engine.hits.append(self.path)
        code, body = Engine.answers.get(self.path, (404, "{}"))
        sent = self.headers.get("Authorization") or ""
        if Engine.key and self.path.startswith("/v1/") and sent != "Bearer " + Engine.key:
            # as a careless server might: the header it refused, echoed
            code, body = 401, json.dumps({"error": "Unauthorized: %s" % sent})
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


@pytest.fixture
def engine():
    srv = HTTPServer(("127.0.0.1", 0), Engine)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    Engine.answers = {"/health": (200, ""), "/v1/models": (200, json.dumps({"data": [{"id": "qwen3.5"}]})),
                      "/v1/completions": (200, json.dumps({"choices": [{"text": " Paris"}]}))}
    Engine.key = None
    Engine.hits[:] = []
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_one_look_serves_when_the_name_is_listed(engine):
    assert _http.look(engine, "qwen3.5") == (SERVES, None, ["qwen3.5"], None)
    assert _http.look(engine) == (SERVES, None, ["qwen3.5"], None)  # no name asked: any model
    assert _http.answers(engine, "qwen3.5", "hi") == (None, " Paris")


def test_another_name_is_alive_and_named_and_no_completion_is_sent(engine):
    assert _http.look(engine, "other") == (ALIVE, "name", ["qwen3.5"], "the engine serves qwen3.5, not other")
    del Engine.hits[:]
    assert _http.answers(engine, "other", "hi") == ("the engine serves qwen3.5, not other", None)
    assert Engine.hits == ["/health", "/v1/models"]


def test_health_that_fails_stops_the_look_before_the_models(engine):
    Engine.answers["/health"] = (503, "x" * 500)
    state, step, models, why = _http.look(engine, "qwen3.5")
    assert (state, step, models) == (DOWN, "health", [])
    assert why == "/health answered 503: %s (380 more characters cut)" % json.dumps("x" * 120)
    assert Engine.hits == ["/health"]


def test_a_refused_key_is_alive_and_never_quoted(engine):
    Engine.key = "sk-the-engines-own"
    state, step, models, why = _http.look(engine, "qwen3.5", headers={"Authorization": "Bearer " + KEY},
                                          secrets=[KEY])
    assert (state, step, models) == (ALIVE, "models", [])
    assert why.startswith("/v1/models answered 401: ") and "Unauthorized" in why and KEY not in why
    why, said = _http.answers(engine, "qwen3.5", "hi", key=KEY)
    assert said is None and why.startswith("/v1/models answered 401") and KEY not in why
    assert _http.answers(engine, "qwen3.5", "hi", key="sk-the-engines-own") == (None, " Paris")


def test_nothing_listening_is_down_in_words():
    state, step, models, why = _http.look("http://127.0.0.1:9", "qwen3.5", timeout=2)
    assert (state, step, models) == (DOWN, "health", []) and why.startswith("/health answered ")
