#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: image_transfer
short_description: Hand an image from one host to others over the fabric, without a registry
version_added: 0.1.0
description:
  - O(mode=send) (on the host that has the image, run with C(async)) listens on
    O(address):O(port) and, for each of O(peers) connections that present O(token), streams
    the saved image (the Docker API's C(docker save) stream, from the engine's unix socket) into
    it, then exits. Nothing is written to disk or held in memory.
  - O(mode=receive) (on each other host) connects to O(address):O(port) (retrying while the
    sender starts), presents O(token) and streams it into the Docker API's load; then checks that
    each image's content id equals O(expect_ids) - the same content, verified (the content id is
    the same in Docker's classic and containerd image stores, where the image ids differ).
  - Images already present with the expected id are not transferred (the receiver says so and
    the sender is told to skip).
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.docker
options:
  mode:
    description: Which side this host is.
    type: str
    choices: [send, receive]
    required: true
  images:
    description: Image references to hand over.
    type: list
    elements: str
    required: true
  address:
    description: The sender's (fabric) address - where it listens, where receivers connect.
    type: str
    required: true
  port:
    description: TCP port of the transfer.
    type: int
    default: 29876
  token:
    description: Shared secret a receiver presents (not logged).
    type: str
    required: true
  peers:
    description: Number of receivers the sender serves before it exits (mode send).
    type: int
    default: 1
  expect_ids:
    description: Content id each image must have after loading, by reference (mode receive); the
      C(content_id) of M(sparkops.inference.engine_probe) on the sending host.
    type: dict
    default: {}
  timeout:
    description: Seconds the whole transfer may take.
    type: int
    default: 3600
attributes:
  check_mode:
    support: full
    details: Reports what would be transferred; transfers nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Serve the selected image to the workers over the fabric (head)
  sparkops.inference.image_transfer:
    mode: send
    images: [lmsysorg/sglang:spark]
    address: 192.168.100.10
    token: "{{ transfer_token }}"
    peers: 1
  async: 7200
  poll: 0
"""

RETURN = r"""
bytes:
  description: Bytes streamed (sent in total, or received).
  returned: always
  type: int
seconds:
  description: Seconds the transfer took.
  returned: always
  type: float
ids:
  description: Content ids after the transfer, by reference.
  returned: always
  type: dict
skipped:
  description: Whether nothing had to be transferred (every image present with its id).
  returned: always
  type: bool
"""

import json
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker, DockerError

CHUNK = 1 << 20


def image_ids(docker, images):
    """Each image's content id on this host (None: not here)."""
    return dict((image, docker.content_id(image)) for image in images)


def send(module, docker, p):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind((p["address"], p["port"]))
    except socket.error as exc:
        module.fail_json(msg="cannot listen on %s:%d for the image transfer: %s (is the port in use? "
                             "set engine_image_transfer_port)" % (p["address"], p["port"], exc))
    srv.listen(16)
    srv.settimeout(p["timeout"])
    served, total, started, skipped = 0, 0, time.time(), 0
    while served < p["peers"]:
        try:
            conn, peer = srv.accept()
        except socket.timeout:
            module.fail_json(msg="only %d of %d hosts fetched the image within %d s"
                                 % (served, p["peers"], p["timeout"]), bytes=total)
        conn.settimeout(60)
        hello = b""
        while not hello.endswith(b"\n") and len(hello) < 4096:
            part = conn.recv(4096)
            if not part:
                break
            hello += part
        try:
            req = json.loads(hello.decode("utf-8"))
        except ValueError:
            req = {}
        if req.get("token") != p["token"]:
            conn.close()  # not one of ours: not counted
            continue
        served += 1
        if req.get("skip"):
            skipped += 1
            conn.close()
            continue
        # chunk by chunk: a slow receiver throttles the save, nothing is held in memory
        try:
            resp = docker.api.request("GET", "/images/get?" + urlencode([("names", i) for i in p["images"]]),
                                      timeout=p["timeout"])
            for chunk in iter(lambda: resp.read(CHUNK), b""):
                conn.sendall(chunk)
                total += len(chunk)
        except DockerError as exc:
            module.fail_json(msg="docker save of %s failed: %s" % (", ".join(p["images"]), exc), bytes=total)
        except socket.error as exc:
            module.fail_json(msg="the transfer to %s broke off: %s" % (peer[0], exc), bytes=total)
        finally:
            conn.close()
    srv.close()
    module.exit_json(changed=False, bytes=total, seconds=round(time.time() - started, 1),
                     ids=image_ids(docker, p["images"]), skipped=skipped == served)


def receive(module, docker, p):
    before = image_ids(docker, p["images"])
    have = all(before.get(i) and before[i] == p["expect_ids"].get(i) for i in p["images"])
    if module.check_mode:
        module.exit_json(changed=not have, bytes=0, seconds=0.0, ids=before, skipped=have)
    deadline = time.time() + p["timeout"]
    started = time.time()
    while True:
        try:
            conn = socket.create_connection((p["address"], p["port"]), timeout=5)
            break
        except socket.error as exc:
            if time.time() > deadline:
                module.fail_json(msg="cannot reach the image sender at %s:%d: %s"
                                     % (p["address"], p["port"], exc))
            time.sleep(0.2)
    conn.sendall((json.dumps({"token": p["token"], "skip": have}) + "\n").encode("utf-8"))
    if have:
        conn.close()
        module.exit_json(changed=False, bytes=0, seconds=0.0, ids=before, skipped=True)
    conn.settimeout(p["timeout"])
    counted = [0]

    def stream():
        for chunk in iter(lambda: conn.recv(CHUNK), b""):
            counted[0] += len(chunk)
            yield chunk

    try:
        resp = docker.api.request("POST", "/images/load?quiet=1", body=stream(), timeout=p["timeout"],
                                  headers={"Content-Type": "application/x-tar"})
        out = resp.read().decode("utf-8", "replace")
    except DockerError as exc:
        module.fail_json(msg="docker load failed after %d bytes: %s" % (counted[0], exc))
    except socket.error as exc:
        module.fail_json(msg="the image stream from %s broke off after %d bytes: %s" % (p["address"], counted[0], exc))
    finally:
        conn.close()
    if '"error"' in out:
        module.fail_json(msg="docker load failed after %d bytes: %s" % (counted[0], out[-500:]))
    total = counted[0]
    after = image_ids(docker, p["images"])
    wrong = ["%s is %s, expected %s" % (i, after.get(i), p["expect_ids"].get(i)) for i in p["images"]
             if p["expect_ids"].get(i) and after.get(i) != p["expect_ids"][i]]
    if wrong:
        module.fail_json(msg="the loaded image differs from the sender's: %s" % "; ".join(wrong), ids=after)
    module.exit_json(changed=True, bytes=total, seconds=round(time.time() - started, 1), ids=after,
                     skipped=False)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["send", "receive"], required=True),
            images=dict(type="list", elements="str", required=True),
            address=dict(type="str", required=True),
            port=dict(type="int", default=29876),
            token=dict(type="str", required=True, no_log=True),
            peers=dict(type="int", default=1),
            expect_ids=dict(type="dict", default={}),
            timeout=dict(type="int", default=3600),
            docker_cli=dict(type="str", default="docker"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    if p["mode"] == "send":
        if module.check_mode:
            module.exit_json(changed=False, bytes=0, seconds=0.0, ids=image_ids(docker, p["images"]),
                             skipped=True)
        send(module, docker, p)
    receive(module, docker, p)


if __name__ == "__main__":
    main()
