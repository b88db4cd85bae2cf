# -*- coding: utf-8 -*-
"""Fabric discovery over sysfs trees (written from public Spark output) and captured `ip -j addr`."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._fabric import (
    FabricError,
    choose_interface,
    fabric_env,
    fabric_plan,
    gid_ipv4,
    hcas_for,
    parse_ip_addr_json,
    read_rdma,
    render_env_file,
)

SYSFS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "fixtures", "sysfs")

SPARK_IFACES = [
    {"name": "lo", "up": False, "operstate": "UNKNOWN", "mtu": 65536, "addresses": ["127.0.0.1/8"]},
    {"name": "enP7s7", "up": True, "operstate": "UP", "mtu": 1500, "addresses": ["10.0.0.21/24"]},
    {"name": "wlP9s9", "up": True, "operstate": "UP", "mtu": 1500, "addresses": ["192.168.1.50/24"]},
    {"name": "enp1s0f1np1", "up": True, "operstate": "UP", "mtu": 9000, "addresses": ["192.168.100.10/24"]},
    {"name": "enP2p1s0f1np1", "up": True, "operstate": "UP", "mtu": 9000, "addresses": []},
]


def test_two_spark_sysfs_twins_and_gid_index():
    rdma = read_rdma(os.path.join(SYSFS, "two-spark-spark1"))
    assert sorted(rdma) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    assert rdma["rocep1s0f1"]["1"]["active"] is True and rdma["rocep1s0f0"]["1"]["active"] is False
    assert rdma["rocep1s0f1"]["1"]["link_layer"] == "Ethernet"
    assert hcas_for(rdma, "enp1s0f1np1") == ["rocep1s0f1", "roceP2p1s0f1"]
    iface = choose_interface(SPARK_IFACES, rdma, fabric_address="192.168.100.10")
    plan = fabric_plan(rdma, iface)
    assert plan == {"rdma": True, "hcas": ["rocep1s0f1", "roceP2p1s0f1"], "gid_index": 3, "port_state": "ACTIVE"}


def test_fabric_interface_found_from_the_active_rdma_port():
    rdma = read_rdma(os.path.join(SYSFS, "two-spark-spark1"))
    iface = choose_interface(SPARK_IFACES, rdma)
    assert (iface["name"], iface["address"], iface["mtu"]) == ("enp1s0f1np1", "192.168.100.10", 9000)


def test_gid_index_is_not_a_constant():
    rdma = read_rdma(os.path.join(SYSFS, "single-port-gid5"))
    ifaces = [{"name": "ens1f0np0", "up": True, "operstate": "UP", "mtu": 9000, "addresses": ["192.168.200.21/24"]}]
    plan = fabric_plan(rdma, choose_interface(ifaces, rdma, fabric_subnet="192.168.200.0/24"))
    assert plan["gid_index"] == 5 and plan["hcas"] == ["mlx5_0"]


def test_no_ipv4_roce_v2_gid_is_a_clear_error():
    rdma = read_rdma(os.path.join(SYSFS, "no-ipv4-gid"))
    ifaces = [{"name": "ens1f0np0", "up": True, "operstate": "UP", "mtu": 9000, "addresses": ["192.168.200.21/24"]}]
    with pytest.raises(FabricError, match="has no RoCE v2 GID for an IPv4 address"):
        fabric_plan(rdma, choose_interface(ifaces, rdma, interface="ens1f0np0"))


def test_rdma_port_down_is_named():
    rdma = read_rdma(os.path.join(SYSFS, "two-spark-spark1"))
    ifaces = [{"name": "enp1s0f0np0", "up": False, "operstate": "DOWN", "mtu": 9000, "addresses": ["192.168.101.10/24"]}]
    with pytest.raises(FabricError, match="RDMA port rocep1s0f0/1 behind enp1s0f0np0 is DOWN"):
        fabric_plan(rdma, choose_interface(ifaces, rdma, fabric_address="192.168.101.10"))


def test_lab_host_is_sockets_only(fixture_text):
    rdma = read_rdma(os.path.join(SYSFS, "no-rdma"))
    assert rdma == {}
    ifaces = parse_ip_addr_json(fixture_text("lab", "ip-j-addr-spark1.json"))
    iface = choose_interface(ifaces, rdma, fabric_subnet="192.168.77.0/24")
    assert (iface["name"], iface["address"], iface["mtu"], iface["up"]) == ("enp1s0f1np1", "192.168.77.11", 9000, True)
    plan = fabric_plan(rdma, iface)
    assert plan["rdma"] is False
    with pytest.raises(FabricError, match="fabric_require_rdma is set"):
        fabric_plan(rdma, iface, require_rdma=True)
    env = dict(fabric_env(iface, plan, "192.168.77.11"))
    assert env["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in env
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "enp1s0f1np1"


def test_management_and_wifi_are_never_the_fabric():
    ifaces = [i for i in SPARK_IFACES if i["name"] != "enp1s0f1np1"]
    with pytest.raises(FabricError, match="no interface on this host has an address in fabric_subnet"):
        choose_interface(ifaces, {}, fabric_subnet="192.168.1.0/24")  # only Wi-Fi is in it
    with pytest.raises(FabricError, match="cannot tell the fabric interface"):
        choose_interface(ifaces, {})


def test_subnet_matching_two_addresses_is_ambiguous():
    ifaces = [dict(SPARK_IFACES[3]), dict(SPARK_IFACES[4], addresses=["192.168.100.12/24"])]
    with pytest.raises(FabricError, match="more than one address on this host is in fabric_subnet"):
        choose_interface(ifaces, {}, fabric_subnet="192.168.100.0/24")


def test_named_interface_absent():
    with pytest.raises(FabricError, match="fabric interface eth9 does not exist on this host"):
        choose_interface(SPARK_IFACES, {}, interface="eth9")


def test_address_on_no_interface():
    with pytest.raises(FabricError, match="no interface on this host has the fabric_address 192.168.100.99"):
        choose_interface(SPARK_IFACES, {}, fabric_address="192.168.100.99")


def test_gid_ipv4():
    assert gid_ipv4("0000:0000:0000:0000:0000:ffff:c0a8:640a") == "192.168.100.10"
    assert gid_ipv4("fe80:0000:0000:0000:0ec1:2bff:fe3a:11c4") is None


def test_spark_environment_has_every_variable():
    rdma = read_rdma(os.path.join(SYSFS, "two-spark-spark1"))
    iface = choose_interface(SPARK_IFACES, rdma, fabric_address="192.168.100.10")
    env = dict(fabric_env(iface, fabric_plan(rdma, iface), "192.168.100.10",
                          overrides={"NCCL_IB_DISABLE": None}, extra={"NCCL_DEBUG": "INFO"}))
    for key in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "UCX_NET_DEVICES",
                "OMPI_MCA_btl_tcp_if_include", "VLLM_HOST_IP", "RAY_NODE_IP_ADDRESS",
                "RAY_OVERRIDE_NODE_IP_ADDRESS", "MASTER_ADDR", "RAY_memory_monitor_refresh_ms",
                "NCCL_IGNORE_CPU_AFFINITY", "PYTORCH_CUDA_ALLOC_CONF", "NCCL_DEBUG"):
        assert env[key], key
    assert env["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1" and env["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_IB_DISABLE" not in env  # an override of None removes a variable
    # both engines' own bind addresses are the fabric's (a multi-NIC Spark has Wi-Fi too)
    assert env["VLLM_HOST_IP"] == env["SGLANG_HOST_IP"] == "192.168.100.10"
    text = render_env_file(sorted(env.items()))
    assert "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\n" in text


from ansible_collections.sparkops.inference.plugins.module_utils._fabric import (  # noqa: E402
    judge_transport,
    parse_nccl_log,
)

# The lines shared/REAL-WORLD.md quotes from a healthy two-Spark all-reduce over RoCE.
SPARK_IB_LINES = """spark1:3311:3311 [0] NCCL INFO NCCL version 2.27.7+cuda13.0
spark1:3311:3311 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:192.168.100.10<0>
spark1:3311:3388 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v11/0
"""


def test_nccl_over_sockets_real_h200_log(fixture_text):
    parsed = parse_nccl_log(fixture_text("h200x2", "nccl-socket.log"))
    assert parsed["version"] == "2.28.9+cuda13.0"
    assert parsed["net"] == "Socket" and parsed["net_devices"] == ["lo:127.0.0.1<0>"]
    assert parsed["transport"] == "NET/Socket" and parsed["channel_transports"] == ["NET/Socket/0"]
    assert judge_transport(parsed, rdma_expected=False) is None
    assert "although this fabric has RDMA" in judge_transport(parsed, rdma_expected=True)


def test_nccl_wrong_interface_real_h200_log(fixture_text):
    parsed = parse_nccl_log(fixture_text("h200x2", "nccl-badif.log"))
    assert parsed["transport"] is None
    assert parsed["errors"] == ["Bootstrap : no socket interface found"]
    assert judge_transport(parsed, False) == "NCCL failed before choosing a transport: Bootstrap : no socket interface found"


def test_nccl_ray_actors_on_real_two_gpu_host(fixture_text):
    parsed = parse_nccl_log(fixture_text("h200x2-ray", "nccl-rank.log"))
    assert parsed["transport"] == "NET/Socket" and parsed["net_devices"] == ["lo:127.0.0.1<0>"]


def test_nccl_over_roce_on_sparks_public_lines():
    parsed = parse_nccl_log(SPARK_IB_LINES)
    assert parsed["net"] == "IB"
    assert parsed["net_devices"] == ["rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE"]
    assert parsed["transport"] == "NET/IB" and parsed["channel_transports"] == ["NET/IBext_v11/0"]
    assert judge_transport(parsed, rdma_expected=True) is None


def test_preflight_script_rank_log_from_real_h200(fixture_text):
    """The fabric preflight's own script, run with NCCL on a real 2x H200 host (docs/validation.md)."""
    text = fixture_text("h200x2-preflight", "rank0.log")
    result = [line for line in text.splitlines() if line.startswith("SPARKOPS_ALLREDUCE=")]
    assert len(result) == 1 and '"ok": true' in result[0] and '"value": 3.0' in result[0]
    parsed = parse_nccl_log(text)
    assert parsed["transport"] == "NET/Socket" and parsed["net_devices"] == ["lo:127.0.0.1<0>"]
    assert judge_transport(parsed, rdma_expected=False) is None
    assert judge_transport(parsed, rdma_expected=True).startswith("NCCL used NET/Socket although this fabric has RDMA")
