# -*- coding: utf-8 -*-
"""The image transfer's sender on real sockets: receivers prove they hold the token without
sending it; a silent client, a malformed or oversized line, a wrong proof and a replayed proof
are answered and dropped while the real receivers get the whole stream, in parallel."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import socket
import threading
import time

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils import _transfer

TOKEN = "one-time-transfer-token-0123456789abcdef"
PAYLOAD = os.urandom(3 * (1 << 20) + 17)


@pytest.fixture
def sender(monkeypatch):
    monkeypatch.setattr(_transfer, "HANDSHAKE_TIMEOUT", 1.0)

    def start(peers, timeout=20):
        s = _transfer.Sender("127.0.0.1", 0, TOKEN, peers, timeout, lambda: io.BytesIO(PAYLOAD))
        port = s.listen()
        result = {}
        t = threading.Thread(target=lambda: result.setdefault("all", s.serve()))
        t.daemon = True
        t.start()
        return s, port, t, result
    return start


class Tap(object):
    """A socket that keeps what it sends."""

    def __init__(self, conn, sent):
        self.conn, self.sent = conn, sent

    def sendall(self, data):
        self.sent.append(data)
        self.conn.sendall(data)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def receive(port, token=TOKEN, skip=False, sent=None):
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    if sent is not None:  # keep what this receiver puts on the wire
        conn = Tap(conn, sent)
    try:
        if not _transfer.client_handshake(conn, token, skip):
            return b""
        data = b""
        while True:
            part = conn.recv(1 << 16)
            if not part:
                return data
            data += part
    finally:
        conn.close()


def raw(port, line=None):
    """A client that sends `line` (or nothing) and returns what the sender answered."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if line is not None:
            conn.sendall(line)
        data = b""
        while True:
            part = conn.recv(4096)
            if not part:
                return data
            data += part
    finally:
        conn.close()


def test_bad_clients_are_dropped_while_the_receivers_get_the_whole_image(sender):
    s, port, thread, result = sender(peers=2)
    silent = threading.Thread(target=raw, args=(port,))
    silent.start()
    time.sleep(0.1)  # connected first, and says nothing
    answers = {"malformed": raw(port, b"GET / HTTP/1.0\r\n\r\n"),
               "oversized": raw(port, b"{" + b" " * 5000),
               "wrong token": None}
    with pytest.raises(_transfer.ProtocolError) as refused:
        receive(port, token="not-the-token")
    answers["wrong token"] = str(refused.value)
    got = []
    receivers = [threading.Thread(target=lambda: got.append(receive(port))) for dummy in range(2)]
    for t in receivers:
        t.start()
    for t in receivers:
        t.join(20)
    thread.join(20)
    silent.join(5)
    assert got == [PAYLOAD, PAYLOAD] and result["all"] is True
    assert s.served == 2 and s.bytes == 2 * len(PAYLOAD) and s.failed == []
    why = sorted(w for dummy, w in s.refused)
    assert why == ["did not prove it holds the transfer's token", "said nothing within 1 s",
                   "sent a line longer than 4096 bytes", "sent a line that is not JSON"], why
    for name in ("malformed", "oversized"):
        lines = answers[name].decode().splitlines()
        assert json.loads(lines[0])["v"] == 2 and json.loads(lines[-1])["error"].startswith("refused: "), name
    assert answers["wrong token"] == ("the sender refused this host: refused: did not prove it holds the "
                                      "transfer's token")


def test_the_token_never_crosses_the_wire_and_a_replayed_proof_is_refused(sender):
    s, port, thread, result = sender(peers=1)
    sent = []
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    hello = _transfer.read_line(conn, time.time() + 5)
    cnonce = _transfer.nonce()
    recorded = {"cnonce": cnonce, "mac": _transfer.proof(TOKEN, "another-nonce", cnonce), "skip": False}
    _transfer.send_line(conn, recorded)  # a proof made for another challenge (recorded earlier)
    answer = _transfer.read_line(conn, time.time() + 5)
    conn.close()
    assert hello["v"] == 2 and answer["error"] == "refused: did not prove it holds the transfer's token"
    assert receive(port, sent=sent) == PAYLOAD
    thread.join(20)
    assert TOKEN.encode() not in b"".join(sent) and result["all"] is True


def test_a_receiver_that_has_the_image_is_counted_without_a_stream(sender):
    s, port, thread, result = sender(peers=1)
    assert receive(port, skip=True) == b""
    thread.join(20)
    assert result["all"] is True and s.skipped == 1 and s.bytes == 0


def test_too_few_receivers_within_the_time_is_reported(sender):
    s, port, thread, result = sender(peers=2, timeout=2)
    assert receive(port) == PAYLOAD
    thread.join(20)
    assert result["all"] is False and s.served == 1
