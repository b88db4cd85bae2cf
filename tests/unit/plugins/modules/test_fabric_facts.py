# -*- coding: utf-8 -*-
"""fabric_facts' dial of a peer or of the head's meeting port, against real sockets on loopback:
a listener and a refusal both count as reached, and the address the connection left from is kept
(the fabric role names it when the route to the head leaves by another interface)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

from ansible_collections.sparkops.inference.plugins.modules.fabric_facts import peer_answers


def test_a_listener_answers_and_the_source_address_is_kept():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        assert peer_answers("127.0.0.1", server.getsockname()[1], 2) == (True, None, "127.0.0.1")
    finally:
        server.close()


def test_a_refusal_counts_as_reached_nothing_listens_before_the_engine_starts():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # a port nobody listens on
    ok, error, source = peer_answers("127.0.0.1", port, 2)
    assert (ok, error) == (True, None)
    assert source in ("127.0.0.1", None)
