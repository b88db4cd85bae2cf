# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The image transfer's wire protocol and its sender, on plain sockets (no Docker here: the
module hands in a function that opens the image stream).

    sender   -> {"v": 2, "nonce": <hex>}\\n                         challenge
    receiver -> {"cnonce": <hex>, "mac": <hex>, "skip": bool}\\n     proof
    sender   -> {"ok": true}\\n, then the image's tar stream         or {"error": ...}\\n, closed

The proof is HMAC-SHA256(token, "sparkops-image-transfer|" + nonce + "|" + cnonce): the token
itself never crosses the wire, and a fresh nonce per connection makes a recorded proof useless.
Every step has a deadline and a size limit: a client that connects and says nothing, sends a
malformed or oversized line, or a wrong proof, is answered (where it can hear) and dropped
without delaying anyone else (each handshake runs in its own thread). The receivers that pass
it share one image stream (see Sender).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import hashlib
import hmac
import json
import os
import socket
import threading
import time

VERSION = 2
MAX_LINE = 4096
HANDSHAKE_TIMEOUT = 10.0
CHUNK = 1 << 20


class ProtocolError(Exception):
    """A peer that did not follow the protocol (what it did, in words)."""


def nonce():
    return binascii.hexlify(os.urandom(32)).decode("ascii")


def proof(token, server_nonce, client_nonce):
    msg = ("sparkops-image-transfer|%s|%s" % (server_nonce, client_nonce)).encode("utf-8")
    return hmac.new(token.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def valid(token, server_nonce, answer):
    """Whether a receiver's answer proves it holds the token."""
    cnonce, mac = answer.get("cnonce"), answer.get("mac")
    if not isinstance(cnonce, str) or not isinstance(mac, str) or len(cnonce) < 32:
        return False
    return hmac.compare_digest(proof(token, server_nonce, cnonce), mac)


def send_line(conn, obj):
    conn.sendall((json.dumps(obj, sort_keys=True) + "\n").encode("utf-8"))


def read_line(conn, deadline):
    """One JSON object line, read before `deadline` (time.time()) and within MAX_LINE bytes."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.time()
        if left <= 0:
            raise ProtocolError("said nothing within %d s" % HANDSHAKE_TIMEOUT)
        conn.settimeout(left)
        try:
            # take the line only, never a byte past it (the image stream follows the sender's "ok")
            peeked = conn.recv(MAX_LINE + 1 - len(data), socket.MSG_PEEK)
            end = peeked.find(b"\n")
            part = conn.recv(end + 1 if end >= 0 else len(peeked)) if peeked else b""
        except socket.timeout:
            raise ProtocolError("said nothing within %d s" % HANDSHAKE_TIMEOUT)
        if not part:
            raise ProtocolError("closed the connection during the handshake")
        data += part
        if len(data) > MAX_LINE:
            raise ProtocolError("sent a line longer than %d bytes" % MAX_LINE)
    try:
        obj = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError("sent a line that is not JSON")
    if not isinstance(obj, dict):
        raise ProtocolError("sent JSON that is not an object")
    return obj


def client_handshake(conn, token, skip, timeout=HANDSHAKE_TIMEOUT):
    """The receiver's side: answer the challenge; True when the sender will stream."""
    deadline = time.time() + timeout
    hello = read_line(conn, deadline)
    if hello.get("v") != VERSION or not isinstance(hello.get("nonce"), str):
        raise ProtocolError("the sender speaks another protocol (%s): use the same collection version "
                            "on every host" % json.dumps(hello)[:120])
    cnonce = nonce()
    send_line(conn, {"cnonce": cnonce, "mac": proof(token, hello["nonce"], cnonce), "skip": bool(skip)})
    if skip:
        return False
    answer = read_line(conn, deadline)
    if not answer.get("ok"):
        raise ProtocolError("the sender refused this host: %s" % answer.get("error", "no reason given"))
    conn.settimeout(None)
    return True


class Sender(object):
    """Serve `peers` receivers that prove they hold `token` within `timeout` seconds.

    Each client's handshake runs in its own thread. The receivers that passed it wait for a
    batch: one image stream (`open_stream()`, a fresh file-like stream) fans out to every
    receiver of the batch, so N receivers cost the sender one `docker save`, not N. A batch
    starts when every expected receiver has joined, or GATHER seconds after the first of it
    joined (at most a quarter of `timeout`); a receiver that joins after that gets a batch of
    its own. A receiver that stops reading for STALL seconds, or whose connection breaks, is
    dropped from its batch and the others go on."""

    GATHER = 10.0
    STALL = 120.0

    def __init__(self, address, port, token, peers, timeout, open_stream):
        self.address, self.port, self.token = address, port, token
        self.peers, self.timeout, self.open_stream = peers, timeout, open_stream
        self.lock = threading.Condition()
        self.done = threading.Event()
        self.served, self.skipped, self.bytes, self.streams = 0, 0, 0, 0
        self.refused = []  # (peer address, why): not counted
        self.failed = []  # (peer address, why): a stream that broke off
        self.waiting = []  # (conn, peer address) that passed the handshake, no batch yet
        self.since = None  # when the first of them joined
        self.busy = 0  # receivers in a batch now
        self.sock = None

    def listen(self):
        self.sock = socket.socket(socket.AF_INET6 if ":" in self.address else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.address, self.port))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        return self.sock.getsockname()[1]

    def serve(self):
        """Accept until every peer is served or the time is up; True when all were."""
        deadline = time.time() + self.timeout
        gather = min(self.GATHER, self.timeout / 4.0)
        threads = []
        try:
            while not self.done.is_set() and time.time() < deadline:
                batch = self._batch(gather)
                if batch:
                    threads.append(self._start(self._stream, batch))
                try:
                    conn, peer = self.sock.accept()
                except socket.timeout:
                    continue
                threads.append(self._start(self._peer, conn, peer[0]))
        finally:
            self.sock.close()
        for t in threads:
            t.join(max(0.0, deadline - time.time()) + 1)
        with self.lock:
            for conn, peer in self.waiting:  # joined, and the time ran out before a batch
                self.failed.append((peer, "no stream began within %d s" % self.timeout))
                conn.close()
            self.waiting = []
        return self.done.is_set()

    @staticmethod
    def _start(target, *args):
        t = threading.Thread(target=target, args=args)
        t.daemon = True
        t.start()
        return t

    def _batch(self, gather):
        """The receivers waiting, when their batch should start (else None)."""
        with self.lock:
            if not self.waiting:
                return None
            expected = self.peers - self.served - self.busy
            if len(self.waiting) < expected and time.time() - self.since < gather:
                return None
            batch, self.waiting, self.since = self.waiting, [], None
            self.busy += len(batch)
            return batch

    def _count(self, attr, nbytes=0):
        with self.lock:
            setattr(self, attr, getattr(self, attr) + 1)
            self.bytes += nbytes
            if self.served >= self.peers:
                self.done.set()

    def _peer(self, conn, peer):
        """The handshake; a receiver that passes it waits for a batch (its connection kept)."""
        server_nonce = nonce()
        try:
            send_line(conn, {"v": VERSION, "nonce": server_nonce})
            answer = read_line(conn, time.time() + HANDSHAKE_TIMEOUT)
        except (ProtocolError, socket.error) as exc:
            self._refuse(conn, peer, str(exc))
            return
        if not valid(self.token, server_nonce, answer):
            self._refuse(conn, peer, "did not prove it holds the transfer's token")
            return
        if answer.get("skip"):
            with self.lock:
                self.skipped += 1
            self._count("served")
            conn.close()
            return
        try:
            send_line(conn, {"ok": True})
        except socket.error as exc:
            with self.lock:
                self.failed.append((peer, "%s before the stream" % exc))
            conn.close()
            return
        with self.lock:
            self.waiting.append((conn, peer))
            if self.since is None:
                self.since = time.time()

    def _stream(self, batch):
        """One image stream, every chunk to every receiver of the batch still reading."""
        sent = dict((id(conn), 0) for conn, dummy in batch)  # two receivers may share an address
        live = list(batch)
        for conn, dummy in live:
            conn.settimeout(self.STALL)
        try:
            with self.lock:
                self.streams += 1
            stream = self.open_stream()
            for chunk in iter(lambda: stream.read(CHUNK), b""):
                for conn, peer in list(live):
                    try:
                        conn.sendall(chunk)
                        sent[id(conn)] += len(chunk)
                    except Exception as exc:  # pylint: disable=broad-except
                        self._drop(live, conn, peer, "%s after %d bytes" % (
                            "stopped reading for %g s" % self.STALL if isinstance(exc, socket.timeout) else exc,
                            sent[id(conn)]), sent[id(conn)])
                if not live:
                    return
        except Exception as exc:  # pylint: disable=broad-except
            # the image stream itself broke: every receiver of the batch is dropped
            for conn, peer in list(live):
                self._drop(live, conn, peer, "%s after %d bytes" % (exc, sent[id(conn)]), sent[id(conn)])
            return
        for conn, peer in live:
            with self.lock:
                self.busy -= 1
            self._count("served", sent[id(conn)])
            self._close(conn)

    def _drop(self, live, conn, peer, why, nbytes):
        live.remove((conn, peer))
        with self.lock:
            self.failed.append((peer, why))
            self.bytes += nbytes
            self.busy -= 1
        self._close(conn)

    @staticmethod
    def _close(conn):
        try:
            conn.close()
        except socket.error:
            pass

    def _refuse(self, conn, peer, why):
        with self.lock:
            self.refused.append((peer, why))
        try:
            conn.settimeout(1)
            send_line(conn, {"error": "refused: %s" % why})
            # let the answer arrive: closing with unread input would reset the connection
            conn.shutdown(socket.SHUT_WR)
            for dummy in range(16):
                if not conn.recv(MAX_LINE):
                    break
        except socket.error:
            pass
        self._close(conn)
