# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker Engine API over its unix socket, for the few calls that stream an image's bytes
(export, save, load): streamed in chunks, never held in memory, no subprocess."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket

from ansible.module_utils.six.moves import http_client

DEFAULT_SOCKET = "/var/run/docker.sock"
API = "/v1.41"  # Docker 20.10; newer engines accept it


class DockerApiError(Exception):
    pass


class _UnixConnection(http_client.HTTPConnection):
    def __init__(self, path, timeout):
        http_client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def socket_path():
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        return host[len("unix://"):]
    if host:
        raise DockerApiError("DOCKER_HOST is %s: only a unix socket is supported for streaming images" % host)
    return DEFAULT_SOCKET


def request(method, path, body=None, timeout=3600, headers=None):
    """An open response (read it in chunks); DockerApiError on an HTTP error."""
    conn = _UnixConnection(socket_path(), timeout)
    try:
        conn.request(method, API + path, body=body, headers=headers or {},
                     encode_chunked=body is not None and not isinstance(body, (bytes, str)))
        resp = conn.getresponse()
    except (socket.error, IOError) as exc:
        raise DockerApiError("the Docker engine at %s did not answer %s %s: %s"
                             % (socket_path(), method, path, exc))
    if resp.status >= 300:
        raise DockerApiError("Docker answered %s %s with HTTP %d: %s"
                             % (method, path, resp.status, resp.read(2000).decode("utf-8", "replace")))
    return resp
