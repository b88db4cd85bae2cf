# -*- coding: utf-8 -*-
"""serve_check's HTTP against a real local server: redirects are not followed, bodies in
messages are cut and quoted."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.sparkops.inference.plugins.modules import serve_check


class Handler(BaseHTTPRequestHandler):
    hits = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.hits.append(self.path)
        if self.path == "/health":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
            return
        body = ("x" * 5000).encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    Handler.hits[:] = []
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_a_redirect_is_named_and_not_followed(server):
    code, text = serve_check.http("GET", server + "/health")
    assert code == 302
    assert text == 'a redirect to "http://169.254.169.254/latest/meta-data/" (not followed)'
    assert Handler.hits == ["/health"]  # nothing else was asked for


def test_a_long_body_is_cut_and_quoted(server):
    code, text = serve_check.http("GET", server + "/v1/models")
    assert code == 500 and len(text) == 5000
    said = serve_check.quoted(text)
    assert said == json.dumps("x" * 200) + " (4800 more characters cut)"
    assert serve_check.quoted('a "b"') == '"a \\"b\\""'
