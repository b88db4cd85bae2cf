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


def serve(peers, opens, timeout=20):
    """A Sender on a free loopback port, serving in a thread: (sender, port, thread, result)."""
    s = _transfer.Sender("127.0.0.1", 0, TOKEN, peers, timeout, opens)
    port = s.listen()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("all", s.serve()))
    t.daemon = True
    t.start()
    return s, port, t, result


@pytest.fixture
def sender(monkeypatch):
    monkeypatch.setattr(_transfer, "HANDSHAKE_TIMEOUT", 1.0)

    def start(peers, timeout=20):
        return serve(peers, lambda: io.BytesIO(PAYLOAD), timeout)
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


class Opens(object):
    """open_stream for a Sender, counting the streams opened (one `docker save` each)."""

    def __init__(self, size=len(PAYLOAD)):
        self.count, self.size = 0, size

    def __call__(self):
        self.count += 1
        data = (PAYLOAD * (self.size // len(PAYLOAD) + 1))[:self.size]
        return io.BytesIO(data)


def together(port, n):
    got = []
    threads = [threading.Thread(target=lambda: got.append(receive(port))) for dummy in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return got


def test_receivers_that_join_together_share_one_stream(monkeypatch):
    monkeypatch.setattr(_transfer, "HANDSHAKE_TIMEOUT", 1.0)
    opens = Opens()
    s, port, thread, result = serve(3, opens)
    got = together(port, 3)
    thread.join(20)
    assert got == [PAYLOAD] * 3 and result["all"] is True
    assert opens.count == 1 and s.streams == 1 and s.bytes == 3 * len(PAYLOAD) and s.failed == []


def test_a_receiver_that_joins_after_the_stream_began_gets_one_of_its_own(monkeypatch):
    monkeypatch.setattr(_transfer.Sender, "GATHER", 0.3)
    opens = Opens()
    s, port, thread, result = serve(2, opens)
    first = receive(port)  # alone: its batch starts 0.3 s after it joined, and ends
    assert first == PAYLOAD and s.served == 1 and result == {}
    second = receive(port)
    thread.join(20)
    assert second == PAYLOAD and result["all"] is True and opens.count == 2 and s.streams == 2


def test_a_receiver_that_breaks_off_or_stops_reading_is_dropped_and_the_others_get_it_all(monkeypatch):
    monkeypatch.setattr(_transfer.Sender, "STALL", 0.5)
    size = 48 << 20  # more than the loopback's socket buffers hold: the sender meets the stalled one
    opens = Opens(size)
    s, port, thread, result = serve(3, opens, timeout=3)  # it waits out the time for the two
    hold = []

    def breaks_off():
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert _transfer.client_handshake(conn, TOKEN, False)
        conn.recv(1 << 16)
        conn.close()

    def stops_reading():
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert _transfer.client_handshake(conn, TOKEN, False)
        hold.append(conn)  # open, never read

    def reads_it_all():
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert _transfer.client_handshake(conn, TOKEN, False)
        got.append(sum(len(part) for part in iter(lambda: conn.recv(1 << 20), b"")))
        conn.close()

    got = []
    threads = [threading.Thread(target=breaks_off), threading.Thread(target=stops_reading),
               threading.Thread(target=reads_it_all)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    thread.join(15)
    for conn in hold:
        conn.close()
    assert got == [size] and opens.count == 1 and s.served == 1 and result["all"] is False
    why = sorted(w.split(" after ")[0] for dummy, w in s.failed)
    assert len(why) == 2 and why[1] == "stopped reading for 0.5 s", why
    assert all(w.endswith(" bytes") for dummy, w in s.failed), s.failed
