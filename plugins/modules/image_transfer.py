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
    O(address):O(port) and serves O(peers) receivers, then exits. The receivers that have joined
    share one stream of the saved image (the Docker API's C(docker save), from the engine's unix
    socket) - every chunk goes to each of them, so the sender reads and saves the image once
    whatever the number of receivers. A stream starts when every expected receiver has joined, or
    10 s after the first joined; one that joins later gets a stream of its own. A receiver that
    breaks off, or stops reading for 120 s, is dropped and the others go on. Nothing is written
    to disk by this module or held in memory beyond one 1 MiB chunk.
  - Before any byte of the image is sent, a receiver proves it holds O(token) - an HMAC of a
    fresh challenge, so the token never crosses the wire. A client that says nothing (10 s),
    sends a malformed or oversized line, or a wrong proof is answered and dropped, and not
    counted; the others are served meanwhile.
  - O(mode=receive) (on each other host) connects to O(address):O(port) (retrying while the
    sender starts), answers the challenge and streams the image into the Docker API's load; then
    checks that each image's content id equals O(expect_ids) - the same content, verified (the
    content id is the same in Docker's classic and containerd image stores, where the image ids
    differ). An image that loaded with other content is removed, and its reference given back
    to the image it named before.
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
    description: Shared secret a receiver proves it holds (never sent, never logged).
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
streams:
  description: Image streams the sender opened (one C(docker save) each); receivers that joined
    together share one.
  returned: when O(mode=send)
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
refused:
  description: Clients the sender answered and dropped (address and why) - not counted as peers.
  returned: when O(mode=send)
  type: list
  elements: str
failed:
  description: Receivers whose stream broke off (address and why).
  returned: when O(mode=send)
  type: list
  elements: str
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker, DockerError
from ansible_collections.sparkops.inference.plugins.module_utils._transfer import (
    CHUNK,
    ProtocolError,
    Sender,
    client_handshake,
)


def image_ids(docker, images):
    """Each image's content id on this host (None: not here)."""
    return dict((image, docker.content_id(image)) for image in images)


def send(module, docker, p):
    def open_stream():  # one `docker save` per batch of receivers, chunk by chunk: nothing held in memory
        return docker.api.request("GET", "/images/get?" + urlencode([("names", i) for i in p["images"]]),
                                  timeout=p["timeout"])
    sender = Sender(p["address"], p["port"], p["token"], p["peers"], p["timeout"], open_stream)
    try:
        sender.listen()
    except socket.error as exc:
        module.fail_json(msg="cannot listen on %s:%d for the image transfer: %s (is the port in use? "
                             "set engine_image_transfer_port)" % (p["address"], p["port"], exc))
    started = time.time()
    all_served = sender.serve()
    res = dict(bytes=sender.bytes, streams=sender.streams, seconds=round(time.time() - started, 1),
               ids=image_ids(docker, p["images"]),
               skipped=sender.skipped == sender.served, refused=["%s: %s" % r for r in sender.refused],
               failed=["%s: %s" % f for f in sender.failed])
    if not all_served:
        module.fail_json(msg="only %d of %d hosts fetched the image within %d s%s" % (
            sender.served, p["peers"], p["timeout"],
            "; broke off: " + "; ".join(res["failed"]) if res["failed"] else ""), **res)
    module.exit_json(changed=False, **res)


def put_back(docker, wrong, before_ids):
    """Remove the images that loaded with the wrong content, and give each reference back the
    image it named before the load (if any). What was done, in words."""
    done = []
    for ref in wrong:
        rc, out, err = docker.run(["rmi", ref])
        if rc != 0:
            done.append("could not remove %s (%s)" % (ref, (err or out).strip()[-200:]))
            continue
        done.append("removed %s" % ref)
        old = before_ids.get(ref)
        if old:
            rc, out, err = docker.run(["tag", old, ref])
            done.append("%s names its previous image again" % ref if rc == 0 else
                        "could not tag the previous image as %s (%s)" % (ref, (err or out).strip()[-200:]))
    return done


def connect(module, p, deadline):
    while True:
        try:
            return socket.create_connection((p["address"], p["port"]), timeout=5)
        except socket.error as exc:
            if time.time() > deadline:
                module.fail_json(msg="cannot reach the image sender at %s:%d: %s" % (p["address"], p["port"], exc))
            time.sleep(0.2)


def receive(module, docker, p):
    before = image_ids(docker, p["images"])
    have = all(before.get(i) and before[i] == p["expect_ids"].get(i) for i in p["images"])
    if module.check_mode:
        module.exit_json(changed=not have, bytes=0, seconds=0.0, ids=before, skipped=have)
    deadline = time.time() + p["timeout"]
    started = time.time()
    conn = connect(module, p, deadline)
    try:
        streams = client_handshake(conn, p["token"], have)
    except (ProtocolError, socket.error) as exc:
        conn.close()
        module.fail_json(msg="the image sender at %s:%d: %s" % (p["address"], p["port"], exc))
    if not streams:
        conn.close()
        module.exit_json(changed=False, bytes=0, seconds=0.0, ids=before, skipped=True)
    conn.settimeout(p["timeout"])
    counted = [0]
    before_ids = dict((i, docker.image_id(i)) for i in p["images"])

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
    after = image_ids(docker, p["images"])
    wrong = [i for i in p["images"] if p["expect_ids"].get(i) and after.get(i) != p["expect_ids"][i]]
    if wrong:
        undone = put_back(docker, wrong, before_ids)
        module.fail_json(msg="the loaded image differs from the sender's: %s. Not kept: %s" % (
            "; ".join("%s is %s, expected %s" % (i, after.get(i), p["expect_ids"][i]) for i in wrong),
            "; ".join(undone)), ids=image_ids(docker, p["images"]))
    module.exit_json(changed=True, bytes=counted[0], seconds=round(time.time() - started, 1), ids=after,
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
