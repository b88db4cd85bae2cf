#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fabric_facts
short_description: Discover the RDMA/RoCE fabric, its interface and address, and the NCCL environment
version_added: 0.1.0
description:
  - Reads the RDMA devices from sysfs (port state, link layer, netdevs, GIDs and their types) and
    the interfaces from C(ip -j addr).
  - Chooses the fabric interface by O(interface), O(fabric_address), O(fabric_subnet), or the
    netdev behind the active RDMA port - never the management port (C(enP7s7)), Wi-Fi, loopback
    or a bridge.
  - Picks the RoCE v2 GID index whose GID is the fabric address mapped into IPv6
    (C(::ffff) followed by the IPv4 address), and the HCAs behind the interface with their twins (a DGX Spark shows each
    port twice; NCCL wants both).
  - Derives the environment every engine container gets (NCCL/GLOO/TP/UCX/OMPI interfaces,
    NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_DISABLE, the node addresses for Ray and vLLM, memory and
    affinity settings) and returns it with the file content to write (it writes nothing - the
    fabric role writes the file with M(sparkops.inference.host_files)).
  - No RDMA at all is reported (sockets only) unless O(require_rdma=true).
  - A fabric interface that is down is reported (C(interface.up) false), not failed.
  - With O(peers), also checks that each peer answers on O(peer_port) over the fabric (a refused
    connection counts as reachable, since the peer answered).
  - With O(master_port) and O(head_address), a host other than the head also checks it reaches the
    head there - where the engine's ranks meet when they run without Ray (vLLM's master port, SGLang's
    dist-init port) - and which of its addresses the connection left from.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.facts
options:
  sysfs_root:
    description: Root of sysfs (tests point it at captured trees).
    type: path
    default: /sys
  interface:
    description: The fabric interface by name.
    type: str
  fabric_address:
    description: The host's fabric address.
    type: str
  fabric_subnet:
    description: The fabric subnet (CIDR); the host's one address in it is the fabric address.
    type: str
  require_rdma:
    description: Fail when the host has no RDMA device behind the fabric interface.
    type: bool
    default: false
  head_address:
    description: The head's fabric address (MASTER_ADDR). Defaults to this host's.
    type: str
  env_overrides:
    description: Variables that replace derived ones (a null value removes a variable).
    type: dict
    default: {}
  env_extra:
    description: Variables added to the environment (for example C(NCCL_DEBUG=INFO)).
    type: dict
    default: {}
  peers:
    description: Fabric addresses of the other hosts, to check they answer.
    type: list
    elements: str
    default: []
  peer_port:
    description: TCP port tried on each peer.
    type: int
    default: 22
  peer_timeout:
    description: Seconds to wait for each peer.
    type: float
    default: 3
  master_port:
    description:
      - The port on the head where the engine's ranks meet (the launch plan's C(meet_port)); checked from
        every other host like a peer (a refusal counts as reachable - nothing listens before the engine starts).
      - Left out, not checked.
    type: int
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: Discover the fabric of a DGX Spark
  sparkops.inference.fabric_facts:
    fabric_subnet: 192.168.100.0/24

- name: Show the NCCL HCAs and GID index
  ansible.builtin.debug:
    msg: "{{ ansible_facts['sparkops_fabric']['hcas'] }} gid {{ ansible_facts['sparkops_fabric']['gid_index'] }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    sparkops_fabric:
      description: The fabric of this host.
      type: dict
      contains:
        interface:
          description: The fabric interface (name, address, prefixlen, mtu, up).
          type: dict
          sample: {name: enp1s0f1np1, address: 192.168.100.10, prefixlen: 24, mtu: 9000, up: true}
        fabric_address:
          description: This host's fabric address.
          type: str
        rdma:
          description: Whether RDMA is used (false = sockets only).
          type: bool
        hcas:
          description: RDMA devices for NCCL_IB_HCA (the twins of the port).
          type: list
          elements: str
          sample: [rocep1s0f1, roceP2p1s0f1]
        gid_index:
          description: RoCE v2 GID index of the fabric address.
          type: int
          sample: 3
        devices:
          description: Every RDMA device with its ports (state, link layer, netdevs, GIDs).
          type: dict
        env:
          description: The environment every container gets.
          type: dict
        env_file_content:
          description: That environment as a file.
          type: str
        env_sha256:
          description: SHA-256 of the file content (containers are recreated when it changes).
          type: str
        peers:
          description: Each peer address -> whether it answered, and the error when not.
          type: dict
        master:
          description:
            - With O(master_port), on a host other than the head - the head's address and that port, whether
              it answered, the error when not, and C(source), the address this host's connection left from
              (not the fabric address when the route to the head leaves by another interface). Null otherwise.
          type: dict
          sample: {address: 192.168.77.11, port: 29501, reachable: false, error: timed out, source: 192.168.77.12}
"""

import hashlib
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._host import C_LOCALE
from ansible_collections.sparkops.inference.plugins.module_utils._fabric import (
    FabricError,
    choose_interface,
    fabric_env,
    fabric_plan,
    parse_ip_addr_json,
    read_rdma,
    render_env_file,
)


def peer_answers(address, port, timeout):
    """(answered, error, the local address the connection left from - None where none was bound)."""
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect((address, port))
            return True, None, sock.getsockname()[0]
        except ConnectionRefusedError:
            return True, None, _source(sock)
        except (IOError, OSError) as exc:
            return False, str(exc) or type(exc).__name__, _source(sock)
    finally:
        sock.close()


def _source(sock):
    try:
        address = sock.getsockname()[0]
    except OSError:
        return None
    return None if address in ("0.0.0.0", "::") else address


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            interface=dict(type="str"),
            fabric_address=dict(type="str"),
            fabric_subnet=dict(type="str"),
            require_rdma=dict(type="bool", default=False),
            head_address=dict(type="str"),
            env_overrides=dict(type="dict", default={}),
            env_extra=dict(type="dict", default={}),
            peers=dict(type="list", elements="str", default=[]),
            peer_port=dict(type="int", default=22),
            peer_timeout=dict(type="float", default=3),
            master_port=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ip = module.get_bin_path("ip", required=True)
    rc, out, err = module.run_command([ip, "-j", "addr", "show"], environ_update=C_LOCALE)
    if rc != 0:
        module.fail_json(msg="ip -j addr show failed (exit %d): %s" % (rc, err.strip()))
    try:
        interfaces = parse_ip_addr_json(out)
        rdma = read_rdma(p["sysfs_root"])
        iface = choose_interface(interfaces, rdma, p["fabric_address"] or None, p["fabric_subnet"] or None,
                                 p["interface"] or None)
        # a fabric interface that is down is reported (interface.up false), not failed here: the
        # fabric role's cluster-wide check names it together with the host pairs it cuts off
        plan = fabric_plan(rdma, iface, p["require_rdma"]) if iface["up"] else \
            {"rdma": False, "hcas": [], "gid_index": None, "port_state": None}
    except (FabricError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    pairs = fabric_env(iface, plan, p["head_address"] or iface["address"], p["env_overrides"], p["env_extra"])
    content = render_env_file(pairs)
    peers = {}
    for addr in p["peers"]:
        ok, error, dummy = peer_answers(addr, p["peer_port"], p["peer_timeout"])
        peers[addr] = {"reachable": ok, "error": error}
    master = None
    if p["master_port"] and p["head_address"] and p["head_address"] != iface["address"]:
        ok, error, source = peer_answers(p["head_address"], p["master_port"], p["peer_timeout"])
        master = {"address": p["head_address"], "port": p["master_port"], "reachable": ok, "error": error,
                  "source": source}
    facts = {
        "interface": iface, "fabric_address": iface["address"], "rdma": plan["rdma"],
        "hcas": plan["hcas"], "gid_index": plan["gid_index"], "port_state": plan["port_state"],
        "devices": rdma, "env": dict(pairs), "env_file_content": content,
        "env_sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(), "peers": peers,
        "master": master,
    }
    module.exit_json(changed=False, ansible_facts={"sparkops_fabric": facts})


if __name__ == "__main__":
    main()
