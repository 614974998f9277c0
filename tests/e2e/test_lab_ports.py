"""The lab's port types (Lab(port_type=...)): what the daemon's vm port receives when a VM
sends IPv4 fragments. net_af_packet (the default) gets them reassembled by the kernel
(DPDK 22.11 opens its socket with PACKET_FANOUT_FLAG_DEFRAG); net_pcap gets each fragment
as it was sent, as from a NIC, which is what a test of namegate's own reassembly needs.

Asserted on namegate_port_packets_total{port="vm",dir="rx"}: frames the port handed the
daemon, whatever the daemon then decides about them."""
import json
import os

import pytest

import lab as labmod
import ng_counters as nc

DATAGRAMS = 4
FRAGS = 3               # 3000 bytes of UDP payload over 1480-byte fragments
RX = 'namegate_port_packets_total{port="vm",dir="rx"}'

SEND = r"""
import sys
from scapy.all import Ether, IP, UDP, Raw, conf, fragment, sendp
conf.verb = 0
src_mac, dst_mac, src = sys.argv[1:4]
frames = []
for i in range(%d):
    dgram = IP(src=src, dst="203.0.113.99", id=0x4200 + i) / UDP(sport=40000 + i, dport=9999) \
        / Raw(bytes(3000))
    frames += [Ether(src=src_mac, dst=dst_mac) / f for f in fragment(dgram, fragsize=1480)]
assert len(frames) == %d, len(frames)
sendp(frames, iface="eth0")
""" % (DATAGRAMS, DATAGRAMS * FRAGS)


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("NAMEGATE_BIN is not set to a built namegate (no DPDK?)")
    return binary


def _rx_for_fragments(request, port_type, at_least):
    lab = labmod.Lab(mode="namegate", namegate_cmd=[_binary(), "-c", "{config}"],
                     port_type=port_type)
    request.addfinalizer(lab.teardown)
    lab.setup()
    assert f"net_{port_type}0," in open(lab.config_path).read()
    router = json.loads(lab.inet_exec(["ip", "-j", "link", "show", "eth0"], check=True)
                        .stdout)[0]["address"]
    vm = lab.vm("vm1")
    with nc.Delta(lab) as d:
        cp = lab.vm_exec(vm, [labmod.PYTHON, "-c", SEND, vm.mac, router, vm.ipv4], timeout=60)
        assert cp.returncode == 0, cp.stderr
        d.wait({RX: at_least})      # what the test expects at least, however slowly
        # and nothing more is coming: the port has handed the daemon what was sent before
        # the sync query (one frame of its own, taken off below)
        lab.sync(vm)
    rx = d[RX] - 1
    print(f"{port_type}: vm port rx {rx} frames for {DATAGRAMS} datagrams of {FRAGS} fragments")
    return rx


def test_af_packet_gets_fragments_reassembled(request):
    rx = _rx_for_fragments(request, "af_packet", DATAGRAMS)
    # one frame per datagram (a VM's stray ND or DNS retry may add one or two)
    assert DATAGRAMS <= rx < DATAGRAMS * FRAGS, rx


def test_pcap_gets_fragments_as_sent(request):
    rx = _rx_for_fragments(request, "pcap", DATAGRAMS * FRAGS)
    assert rx >= DATAGRAMS * FRAGS, rx


def test_unknown_port_type_refused():
    with pytest.raises(labmod.LabError):
        labmod.Lab(mode="namegate", namegate_cmd=["true"], port_type="net_ring")
