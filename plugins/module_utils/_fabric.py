# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric: RDMA devices, the fabric interface and address, the NCCL/IB environment.

read_rdma() reads a sysfs tree (``<root>/class/infiniband``) into plain dicts; everything else
is pure decisions over those dicts and over ``ip -j addr`` output.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import os
import re

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
IPV4_MAPPED_PREFIX = "0000:0000:0000:0000:0000:ffff:"
# never the fabric: the management port and Wi-Fi of a DGX Spark, loopback, container bridges
NEVER_FABRIC_PREFIXES = ("lo", "wl", "docker", "br-", "veth", "virbr", "enP7s7")


class FabricError(ValueError):
    """Something about the fabric a person has to fix; the text says what and how."""


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def read_rdma(sysfs_root):
    """{device: {port: {state, active, link_layer, netdevs, gids: [{index, gid, type, ndev}]}}}."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    devices = {}
    if not os.path.isdir(base):
        return devices
    for dev in sorted(os.listdir(base)):
        netdevs = sorted(os.listdir(os.path.join(base, dev, "device", "net"))) \
            if os.path.isdir(os.path.join(base, dev, "device", "net")) else []
        ports = {}
        pdir = os.path.join(base, dev, "ports")
        for port in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            p = os.path.join(pdir, port)
            gids = []
            gdir = os.path.join(p, "gids")
            for name in sorted(os.listdir(gdir), key=int) if os.path.isdir(gdir) else []:
                gid = _read(os.path.join(gdir, name))
                gtype = _read(os.path.join(p, "gid_attrs", "types", name))
                if not gid or gid == ZERO_GID or not gtype:
                    continue  # an unused entry (its type reads as EINVAL on a real host)
                gids.append({"index": int(name), "gid": gid, "type": gtype,
                             "ndev": _read(os.path.join(p, "gid_attrs", "ndevs", name))})
            state = _read(os.path.join(p, "state")) or ""
            ports[port] = {"state": state.split(":")[-1].strip(), "active": state.startswith("4"),
                           "link_layer": _read(os.path.join(p, "link_layer")),
                           "netdevs": netdevs, "gids": gids}
        devices[dev] = ports
    return devices


def gid_ipv4(gid):
    """'0000:...:ffff:c0a8:640a' -> '192.168.100.10', or None for a GID that is not IPv4-mapped."""
    if not gid.startswith(IPV4_MAPPED_PREFIX):
        return None
    hexes = gid[len(IPV4_MAPPED_PREFIX):].replace(":", "")
    if len(hexes) != 8:
        return None
    return ".".join(str(int(hexes[i:i + 2], 16)) for i in range(0, 8, 2))


def roce_v2_ipv4_index(port, address=None):
    """The GID index NCCL wants: type RoCE v2 and IPv4-mapped (the fabric address's, if given)."""
    for g in port["gids"]:
        if g["type"].strip().lower() == "roce v2" and gid_ipv4(g["gid"]):
            if address is None or gid_ipv4(g["gid"]) == address:
                return g["index"]
    return None


def parse_ip_addr_json(text):
    """``ip -j addr show`` -> [{name, up, mtu, addresses: ['a.b.c.d/nn', ...]}]."""
    out = []
    for link in json.loads(text or "[]"):
        out.append({
            "name": link.get("ifname"),
            "up": link.get("operstate") == "UP"
            or (link.get("operstate") == "UNKNOWN" and "UP" in (link.get("flags") or [])),
            "operstate": link.get("operstate"),
            "mtu": link.get("mtu"),
            "addresses": ["%s/%s" % (a["local"], a["prefixlen"]) for a in link.get("addr_info", [])
                          if a.get("family") == "inet"],
        })
    return out


def _never_fabric(name):
    return any(name == p or name.startswith(p) for p in NEVER_FABRIC_PREFIXES)


def choose_interface(interfaces, rdma, fabric_address=None, fabric_subnet=None, interface=None):
    """Pick the fabric interface: by name, by address, by subnet, or the netdev behind the
    active RDMA port; never the management port, Wi-Fi, loopback or a bridge.

    Returns {name, address, prefixlen, mtu, up}; raises FabricError saying what was looked for.
    """
    by_name = dict((i["name"], i) for i in interfaces)
    if interface:
        if interface not in by_name:
            raise FabricError("fabric interface %s does not exist on this host; it has: %s"
                              % (interface, ", ".join(sorted(by_name))))
        return _described(by_name[interface], fabric_address)
    if fabric_address:
        for i in interfaces:
            for a in i["addresses"]:
                if a.split("/")[0] == fabric_address:
                    return _described(i, fabric_address)
        raise FabricError("no interface on this host has the fabric_address %s (its IPv4 addresses: "
                          "%s): fix fabric_address or configure the fabric interface (netplan)"
                          % (fabric_address, _all_addresses(interfaces)))
    if fabric_subnet:
        net = ipaddress.ip_network(u"%s" % fabric_subnet, strict=False)
        hits = [(i, a) for i in interfaces if not _never_fabric(i["name"])
                for a in i["addresses"] if ipaddress.ip_address(u"%s" % a.split("/")[0]) in net]
        if not hits:
            raise FabricError("no interface on this host has an address in fabric_subnet %s (its IPv4 "
                              "addresses: %s)" % (fabric_subnet, _all_addresses(interfaces)))
        if len(hits) > 1:
            raise FabricError("more than one address on this host is in fabric_subnet %s: %s; set "
                              "fabric_address to choose" % (fabric_subnet,
                                                            ", ".join("%s on %s" % (a, i["name"]) for i, a in hits)))
        return _described(hits[0][0], hits[0][1].split("/")[0])
    active = [nd for ports in rdma.values() for p in ports.values() if p["active"] for nd in p["netdevs"]]
    candidates = [by_name[n] for n in active if n in by_name and by_name[n]["addresses"]]
    if candidates:
        first = candidates[0]
        return _described(first, first["addresses"][0].split("/")[0])
    raise FabricError("cannot tell the fabric interface: set fabric_address or fabric_subnet (no "
                      "active RDMA port with an IPv4 address was found)")


def _all_addresses(interfaces):
    return ", ".join("%s on %s" % (a, i["name"]) for i in interfaces for a in i["addresses"]) or "none"


def _described(iface, address):
    prefix = None
    for a in iface["addresses"]:
        if a.split("/")[0] == address:
            prefix = int(a.split("/")[1])
    return {"name": iface["name"], "address": address, "prefixlen": prefix, "mtu": iface["mtu"],
            "up": iface["up"]}


def _twin_key(dev):
    """rocep1s0f1 and roceP2p1s0f1 are one physical port seen through two PCIe domains."""
    return re.sub(r"P\d+(?=p\d)", "", dev)


def hcas_for(rdma, netdev):
    """The RDMA devices for the fabric netdev: the one behind it, then its twins (a DGX Spark
    shows each port twice, e.g. rocep1s0f1 and roceP2p1s0f1 for enp1s0f1np1/enP2p1s0f1np1;
    NCCL wants both in NCCL_IB_HCA, or it runs at half the bandwidth)."""
    behind = [dev for dev, ports in sorted(rdma.items()) for p in ports.values() if netdev in p["netdevs"]]
    if not behind:
        return []
    twins = [dev for dev in sorted(rdma) if dev not in behind and _twin_key(dev) == _twin_key(behind[0])]
    return behind + twins


def fabric_plan(rdma, iface, require_rdma=False):
    """RDMA facts for the chosen interface: {rdma: bool, hcas, gid_index, port_state} or a FabricError."""
    if not rdma:
        if require_rdma:
            raise FabricError("this host has no RDMA device (/sys/class/infiniband is empty) and "
                              "fabric_require_rdma is set: install/enable the ConnectX driver, or "
                              "unset fabric_require_rdma to run over sockets")
        return {"rdma": False, "hcas": [], "gid_index": None, "port_state": None}
    hcas = hcas_for(rdma, iface["name"])
    if not hcas:
        if require_rdma:
            raise FabricError("no RDMA device is behind the fabric interface %s (devices: %s)"
                              % (iface["name"], ", ".join(sorted(rdma))))
        return {"rdma": False, "hcas": [], "gid_index": None, "port_state": None}
    port = list(rdma[hcas[0]].values())[0]
    if not port["active"]:
        raise FabricError("RDMA port %s/1 behind %s is %s: bring the link up (cable, switch, "
                          "ip link set %s up)" % (hcas[0], iface["name"], port["state"] or "down",
                                                  iface["name"]))
    index = roce_v2_ipv4_index(port, iface["address"])
    if index is None:
        raise FabricError("%s has no RoCE v2 GID for an IPv4 address (GIDs: %s): give %s its IPv4 "
                          "fabric address, then check show_gids" % (
                              hcas[0], ", ".join("%d %s %s" % (g["index"], g["type"], g["gid"]) for g in port["gids"]) or "none",
                              iface["name"]))
    return {"rdma": True, "hcas": hcas, "gid_index": index, "port_state": port["state"]}


def fabric_env(iface, plan, head_address, overrides=None, extra=None):
    """The environment every container gets (shared/REAL-WORLD.md), as an ordered list of pairs."""
    env = {
        "NCCL_SOCKET_IFNAME": iface["name"],
        "GLOO_SOCKET_IFNAME": iface["name"],
        "TP_SOCKET_IFNAME": iface["name"],
        "UCX_NET_DEVICES": iface["name"],
        "OMPI_MCA_btl_tcp_if_include": iface["name"],
        "NCCL_IB_DISABLE": "0" if plan["rdma"] else "1",
        "VLLM_HOST_IP": iface["address"],
        # SGLang's ZeroMQ queues bind this address; unset on a multi-NIC Spark they take the
        # Wi-Fi's and TP=2 across two hosts hangs (shared/REAL-WORLD.md, late 2026)
        "SGLANG_HOST_IP": iface["address"],
        "RAY_NODE_IP_ADDRESS": iface["address"],
        "RAY_OVERRIDE_NODE_IP_ADDRESS": iface["address"],
        "MASTER_ADDR": head_address,
        "RAY_memory_monitor_refresh_ms": "0",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }
    if plan["rdma"]:
        env["NCCL_IB_HCA"] = ",".join(plan["hcas"])
        env["NCCL_IB_GID_INDEX"] = str(plan["gid_index"])
    env.update(overrides or {})
    env.update(extra or {})
    return sorted((k, str(v)) for k, v in env.items() if v is not None and v != "")


def render_env_file(pairs):
    return "# written by sparkops.inference (fabric role); read by every engine container\n" + \
        "".join("%s=%s\n" % (k, v) for k, v in pairs)


_NET_USING = re.compile(r"NET/(IB|Socket)\s*:\s*Using\s+(.*)$")
_VIA = re.compile(r"via ((?:NET|P2P|SHM)/\S+)")
_VERSION = re.compile(r"NCCL version (\S+)")


def parse_nccl_log(text):
    """What an NCCL_DEBUG=INFO log says about the transport actually used.

    Returns {version, net: 'IB'|'Socket'|None, net_devices: [...], channel_transports: [...],
    transport: 'NET/IB'|'NET/Socket'|'P2P'|'SHM'|None, errors: [...]}.
    """
    out = {"version": None, "net": None, "net_devices": [], "channel_transports": [], "transport": None,
           "errors": []}
    for line in (text or "").splitlines():
        m = _VERSION.search(line)
        if m and not out["version"]:
            out["version"] = m.group(1).rstrip(",")
        m = _NET_USING.search(line)
        if m:
            out["net"] = m.group(1)
            out["net_devices"] = re.findall(r"\[\d+\](\S+)", m.group(2))
        m = _VIA.search(line)
        if m and m.group(1) not in out["channel_transports"]:
            out["channel_transports"].append(m.group(1))
        if "NCCL WARN" in line:
            msg = line.split("NCCL WARN", 1)[1].strip()
            if msg not in out["errors"]:
                out["errors"].append(msg)
    via = out["channel_transports"]
    if any(v.startswith("NET/IB") for v in via):
        out["transport"] = "NET/IB"
    elif any(v.startswith("NET/Socket") for v in via):
        out["transport"] = "NET/Socket"
    elif via:
        out["transport"] = via[0].split("/")[0]
    return out


def judge_transport(parsed, rdma_expected):
    """None when the transport is what the fabric should give, else a sentence saying why not."""
    if parsed["errors"] and not parsed["transport"]:
        return "NCCL failed before choosing a transport: %s" % "; ".join(parsed["errors"])
    if rdma_expected and parsed["transport"] != "NET/IB":
        return ("NCCL used %s although this fabric has RDMA: check NCCL_IB_HCA, NCCL_IB_GID_INDEX and "
                "that the containers get /dev/infiniband (or run privileged)" % (parsed["transport"] or "no network"))
    return None
