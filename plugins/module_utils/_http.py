# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Asking the engine over its OpenAI-compatible HTTP API: one request, its answer quoted for a
message, the models it lists, one short completion, its API key.

Plain http.client (the engine listens on plain HTTP on the cluster's own addresses): no proxy
is used (an HTTP(S)_PROXY in the environment must not carry a check to the engine) and no
redirect is followed (an engine does not send them: whatever answers with one is not the
engine). Shared by serve_check and deploy_record's compare; what each answer means is
_serving's (the judge the watchdog's agent uses too): this module asks and words it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket

try:
    from http.client import HTTPConnection, HTTPException
    from urllib.parse import urlsplit
except ImportError:  # Python 2 is not supported by the collection; the import must not fail in sanity
    HTTPConnection = HTTPException = urlsplit = None

from ansible_collections.sparkops.inference.plugins.module_utils._secrets import scrub
from ansible_collections.sparkops.inference.plugins.module_utils._serving import SERVES, completion_text, judge, model_ids

MAX_BODY = 1 << 20  # what is read of an answer: /v1/models and a completion are far smaller


def quoted(text, secrets=(), limit=200):
    """An answer's body as a message quotes it: without the secrets, cut, and in quotes, so it
    reads as the engine's words, not ours (a huge or hostile body cannot flood an error)."""
    text = scrub(text or "", secrets)
    cut = text[:limit]
    return json.dumps(cut) + (" (%d more characters cut)" % (len(text) - limit) if len(text) > limit else "")


def request(method, url, body=None, timeout=5, headers=None, secrets=()):
    """(status, body) of one request; (None, reason) when nothing answered."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    head = {"Content-Type": "application/json"}
    head.update(headers or {})
    data = json.dumps(body) if body is not None else None
    conn = HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=head)
        resp = conn.getresponse()
        text = resp.read(MAX_BODY).decode("utf-8", "replace")
        if 300 <= resp.status < 400:
            return resp.status, "a redirect to %s (not followed)" % quoted(resp.getheader("Location") or "", secrets)
        return resp.status, text
    except (HTTPException, socket.error, ValueError) as exc:
        reason = str(exc) or exc.__class__.__name__
        if isinstance(exc, socket.timeout):
            reason = "timed out after %s s" % timeout
        return None, reason
    finally:
        conn.close()


def connect_address(address):
    """Where a check reaches an engine bound to `address` (all interfaces: loopback)."""
    address = address or "127.0.0.1"
    address = {"0.0.0.0": "127.0.0.1", "::": "::1", "*": "127.0.0.1"}.get(address, address)
    return "[%s]" % address if ":" in address else address


def completion(base, model, prompt, timeout=120, headers=None, secrets=()):
    """(text, None) of one short completion, or (None, why not) with the engine's answer quoted."""
    code, text = request("POST", base + "/v1/completions", {
        "model": model, "prompt": prompt, "max_tokens": 8, "temperature": 0},
        timeout=timeout, headers=headers, secrets=secrets)
    if judge(model, completion=(code, text))[0] == SERVES:
        return completion_text(code, text), None
    return None, "a completion failed (HTTP %s): %s" % (code, quoted(text, secrets, 300))


def read_key(path):
    """The API key in its root-only file, or None (no path, no file, an empty file)."""
    if not path:
        return None
    try:
        with open(path) as f:
            return f.read().strip() or None
    except (IOError, OSError):
        return None


def look(base, served_name=None, timeout=5, headers=None, secrets=()):
    """One look at /health, then /v1/models, judged by _serving: (state, step, models, why) - the
    judge's state (SERVES, ALIVE or DOWN) and the step it stopped at (None when it serves), the
    model ids listed ([] when none were) and, unless it serves, what answered instead in words."""
    health = request("GET", base + "/health", timeout=timeout, headers=headers, secrets=secrets)
    state, step = judge(served_name, health=health)
    if step:
        code, text = health
        return state, step, [], "/health answered %s" % (
            ("%s: %s" % (code, quoted(text, secrets, 120))) if code else text)
    models = request("GET", base + "/v1/models", timeout=timeout, headers=headers, secrets=secrets)
    state, step = judge(served_name, health=health, models=models)
    if step == "models":
        return state, step, [], "/v1/models answered %s: %s" % (models[0], quoted(models[1], secrets))
    listed = model_ids(*models)
    if step == "name":
        return state, step, listed, "the engine serves %s, not %s" % (", ".join(listed) or "no model", served_name)
    return state, step, listed, None


def answers(base, served_model_name, prompt, timeout=10, key=None):
    """Does the engine serve now: (None, the completion) when /health answers, /v1/models lists
    the served name and one completion comes back; (why not, None) otherwise. One look, no wait."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    secrets = [key] if key else []
    dummy, dummy, models, why = look(base, served_model_name, timeout, headers, secrets)
    if why:
        return why, None
    said, why = completion(base, served_model_name or (models[0] if models else None), prompt,
                           timeout=timeout, headers=headers, secrets=secrets)
    return why, said
