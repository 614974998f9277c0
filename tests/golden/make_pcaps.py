#!/usr/bin/python3
"""The input captures of the golden verdict test (test_golden.py, verdicts.txt).

    make_pcaps.py OUTDIR        write OUTDIR/vm.pcap, OUTDIR/up.pcap and OUTDIR/frames.json
    make_pcaps.py --list        print every frame: pcap:index, phase, what it is

vm.pcap holds the frames the VMs send (into namegate's vm port), up.pcap the frames from
the internet side (into the uplink port). Both are byte-for-byte deterministic: fixed
addresses, ports, sequence numbers, DNS IDs, TLS randoms and timestamps.

Every frame is unique, so it can be found again in namegate's output: IPv4 frames carry
their own IP ID (0x1000 + index in vm.pcap, 0x2000 + index in up.pcap), IPv6 frames the
same number as flow label, TCP segments distinct sequence/acknowledgement numbers, ARP
frames distinct addresses, DNS queries distinct IDs and source ports.

Phases. Flows and remembered DNS queries live in the daemon, so some frames only mean
something after others were processed on the other port (a SYN-ACK after its SYN, an
answer after its query). frames.json gives each frame a phase; the test feeds phase 1
(VM side), waits until namegate has processed all of it, then phase 2 (internet side),
and so on:

  1 (vm)  identity, DNS queries, admission, QUIC, flows to be answered later
  2 (up)  inbound: ARP/ND, SYN-ACKs, unsolicited traffic, DNS answers (real and forged)
  3 (vm)  what the answers opened: connections to bound addresses, TLS ClientHellos
  4 (up)  server traffic on allowed and on cut flows

DNS answers must carry the ID namegate put in the forwarded query, which is random, and
over UDP go to the port it sent it from, random too: the answer frames hold the VM's own
query ID and port as placeholders and a "patch" entry in frames.json (dns_id: "vm.pcap:N"
= use the ID and port namegate forwarded vm.pcap:N with; dns_id_not: "vm.pcap:N" = keep
the placeholders, but for an ID namegate happened to pick).
The test applies the patch just before it feeds the frame.
"""
import json
import os
import socket
import struct
import sys

from scapy.all import (ARP, Dot1Q, Ether, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,
                       ICMPv6NDOptSrcLLAddr, IP, IPOption_LSRR, IPv6, Raw, TCP, UDP, raw)

# ---------------------------------------------------------------------------- topology

ROUTER_MAC = "02:00:00:00:00:fe"
ROUTER_IP = "10.77.0.254"
ROUTER_LL = "fe80::fe"
RESOLVER4 = "10.77.0.1"
RESOLVER6 = "fd77::1"
RESOLVERS = [RESOLVER4, RESOLVER6]
BROADCAST = "ff:ff:ff:ff:ff:ff"

VMS = [
    {"name": "agent1", "mac": "02:00:00:00:00:01", "ipv4": "10.77.0.11", "ipv6": "fd77::11",
     "policy": "python", "mode": "enforce"},
    {"name": "agent2", "mac": "02:00:00:00:00:02", "ipv4": "10.77.0.12",
     "policy": "github", "mode": "enforce"},
    {"name": "audit3", "mac": "02:00:00:00:00:03", "ipv4": "10.77.0.13",
     "policy": "offline", "mode": "audit"},
]
POLICIES = {
    "python": {
        "allow": ["pypi.org", "files.pythonhosted.org", "*.githubusercontent.com",
                  "github.com:22", "198.51.100.0/24:443", "203.0.113.0/24:22"],
        "deny": ["upload.pypi.org"],
    },
    "github": {"allow": ["github.com", "*.githubusercontent.com"]},
    "offline": {"allow": []},
}
A1, A2, A3 = VMS
UNKNOWN_MAC = "02:00:00:00:00:99"

# addresses on the internet side (documentation ranges only)
PATTERN443 = "198.51.100.10"     # inside 198.51.100.0/24:443
PATTERN22 = "203.0.113.5"        # inside 203.0.113.0/24:22
UNBOUND = "192.0.2.99"           # nothing binds it
OTHER_DNS = "192.0.2.53"         # a DNS server that is not a configured resolver
PYPI = "192.0.2.10"              # pypi.org A (UDP answer)
FPH = "192.0.2.11"               # files.pythonhosted.org A (UDP answer)
PYPI_TCP = "192.0.2.12"          # pypi.org A (answer over TCP)
GITHUB = "192.0.2.22"            # github.com A (policy allows port 22 only)
CDN = "192.0.2.30"               # end of the CNAME chain of objects.githubusercontent.com
OFF_CHAIN = "192.0.2.31"         # an A record for a name off the chain
GLUE = "192.0.2.32"              # additional-section glue
FORGED = "192.0.2.77"            # only in a TCP answer to a question nobody asked
PYPI6 = "2001:db8::10"           # pypi.org AAAA
INTERNET = "192.0.2.200"         # a host that opens connections to VMs

T0 = 1_700_000_000               # capture timestamps: T0 + index ms

# ------------------------------------------------------------------------ DNS and TLS


def dns_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


TYPE = {"A": 1, "CNAME": 5, "AAAA": 28}


def dns_query(qid, questions, flags=0x0100, edns=False, trailing=b""):
    """questions: [(name, type)]; flags 0x0100 = a standard query with RD."""
    msg = struct.pack("!HHHHHH", qid, flags, len(questions), 0, 0, 1 if edns else 0)
    for name, qtype in questions:
        msg += dns_name(name) + struct.pack("!HH", TYPE[qtype], 1)
    if edns:   # OPT RR (RFC 6891): root, type 41, UDP size 1232, ttl 0, no options
        msg += b"\0" + struct.pack("!HHIH", 41, 1232, 0, 0)
    return msg + trailing


def dns_rr(name, rtype, ttl, data):
    if rtype == "A":
        rdata = socket.inet_pton(socket.AF_INET, data)
    elif rtype == "AAAA":
        rdata = socket.inet_pton(socket.AF_INET6, data)
    else:
        rdata = dns_name(data)
    return dns_name(name) + struct.pack("!HHIH", TYPE[rtype], 1, ttl, len(rdata)) + rdata


def dns_answer(qid, qname, qtype, answers, additional=()):
    """answers/additional: [(name, type, ttl, data)]; uncompressed names."""
    msg = struct.pack("!HHHHHH", qid, 0x8180, 1, len(answers), 0, len(additional))
    msg += dns_name(qname) + struct.pack("!HH", TYPE[qtype], 1)
    for rr in list(answers) + list(additional):
        msg += dns_rr(*rr)
    return msg


def tcp_dns(msg):
    return struct.pack("!H", len(msg)) + msg      # RFC 1035 s4.2.2 framing


def tls_ext(etype, data):
    return struct.pack("!HH", etype, len(data)) + data


def client_hello(sni=None, post_quantum=False):
    """A TLS 1.3 ClientHello in one record, deterministic. post_quantum adds an
    X25519MLKEM768 key share (1,216 bytes), so the hello needs two TCP segments."""
    exts = b""
    if sni is not None:
        host = sni.encode()
        entry = struct.pack("!BH", 0, len(host)) + host
        exts += tls_ext(0x0000, struct.pack("!H", len(entry)) + entry)
    exts += tls_ext(0x000a, struct.pack("!HHH", 4, 0x001d, 0x0017))        # groups
    exts += tls_ext(0x000d, struct.pack("!HHHH", 6, 0x0403, 0x0804, 0x0401))
    exts += tls_ext(0x002b, b"\x02\x03\x04")                                # TLS 1.3
    shares = struct.pack("!HH", 0x001d, 32) + bytes(range(0x40, 0x60))
    if post_quantum:
        shares = struct.pack("!HH", 0x11ec, 1216) + bytes(i & 0xff for i in range(1216)) \
            + shares
    exts += tls_ext(0x0033, struct.pack("!H", len(shares)) + shares)
    exts += tls_ext(0x0010, b"\x00\x03\x02h2")                              # ALPN
    body = b"\x03\x03" + bytes(range(32)) + b"\x20" + bytes(range(0x80, 0xa0))
    body += struct.pack("!HHHH", 6, 0x1301, 0x1302, 0x1303) + b"\x01\x00"
    body += struct.pack("!H", len(exts)) + exts
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


QUIC_INITIAL = (b"\xc3\x00\x00\x00\x01\x08" + bytes(range(8)) + b"\x00\x00\x44\xd0"
                + bytes(1180))      # long header, version 1, padded like a client Initial

SERVER_HELLO = b"\x16\x03\x03\x00\x10" + bytes(range(16))   # only its shape matters

# ---------------------------------------------------------------------------- frames


class Capture:
    """The frames of one pcap. Each gets its marker (IP ID or IPv6 flow label) here."""

    def __init__(self, name, marker_base):
        self.name, self.marker_base = name, marker_base
        self.frames = []     # (bytes, phase, note, patch)

    def add(self, pkt, phase, note, patch=None):
        idx = len(self.frames)
        marker = self.marker_base + idx
        if IP in pkt:
            pkt[IP].id = marker
        elif IPv6 in pkt:
            pkt[IPv6].fl = marker
        self.frames.append((raw(pkt), phase, note, patch))
        return f"{self.name}:{idx}"


VM = Capture("vm.pcap", 0x1000)
UP = Capture("up.pcap", 0x2000)


def from_vm(vm, dst4=None, dst6=None, src=None, mac=None, vlan=None):
    l2 = Ether(src=mac or vm["mac"], dst=ROUTER_MAC)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    if dst6 is not None:
        return l2 / IPv6(src=src or vm["ipv6"], dst=dst6, hlim=64)
    return l2 / IP(src=src or vm["ipv4"], dst=dst4, ttl=64)


def to_vm(vm, src4=None, src6=None):
    l2 = Ether(src=ROUTER_MAC, dst=vm["mac"])
    if src6 is not None:
        return l2 / IPv6(src=src6, dst=vm["ipv6"], hlim=60)
    return l2 / IP(src=src4, dst=vm["ipv4"], ttl=60)


class Conn:
    """One TCP connection from a VM; sequence numbers advance as segments are added."""
    isn = 0x10000000

    def __init__(self, vm, dst, dport, sport, v6=False):
        self.vm, self.dst, self.dport, self.sport, self.v6 = vm, dst, dport, sport, v6
        Conn.isn += 0x01000000
        self.cseq, self.sseq = Conn.isn, Conn.isn + 0x00800000
        self.cnext, self.snext = self.cseq, self.sseq

    def _out(self):
        return from_vm(self.vm, dst6=self.dst) if self.v6 else from_vm(self.vm, self.dst)

    def _in(self):
        return to_vm(self.vm, src6=self.dst) if self.v6 else to_vm(self.vm, self.dst)

    def syn(self, phase, note, payload=b""):
        p = self._out() / TCP(sport=self.sport, dport=self.dport, flags="S", seq=self.cseq,
                              window=64240)
        if payload:
            p = p / Raw(payload)
        self.cnext = self.cseq + 1 + len(payload)
        return VM.add(p, phase, note)

    def _patch(self, patch=None):
        """A resolver acknowledges the VM's numbers as namegate shifted them (sequence
        number modulation of DNS over TCP): the test patches its ACK in."""
        return dict(patch or {}, tcp_ack=1) if self.dport == 53 else patch

    def synack(self, phase, note):
        p = self._in() / TCP(sport=self.dport, dport=self.sport, flags="SA", seq=self.sseq,
                             ack=self.cseq + 1, window=65160)
        self.snext = self.sseq + 1
        return UP.add(p, phase, note, self._patch())

    def send(self, payload, phase, note, ack_extra=0):
        """Client data; ack_extra moves the acknowledgement on (a later segment)."""
        p = self._out() / TCP(sport=self.sport, dport=self.dport, flags="PA", seq=self.cnext,
                              ack=(self.sseq + 1 + ack_extra) & 0xffffffff,
                              window=502) / Raw(payload)
        self.cnext += len(payload)
        return VM.add(p, phase, note)

    def recv(self, payload, phase, note, patch=None):
        p = self._in() / TCP(sport=self.dport, dport=self.sport, flags="PA", seq=self.snext,
                             ack=self.cnext, window=509) / Raw(payload)
        self.snext += len(payload)
        return UP.add(p, phase, note, self._patch(patch))


def udp_out(vm, dst, sport, dport, payload, phase, note, v6=False, **kw):
    l3 = from_vm(vm, dst6=dst, **kw) if v6 else from_vm(vm, dst, **kw)
    return VM.add(l3 / UDP(sport=sport, dport=dport) / Raw(payload), phase, note)


def udp_in(vm, src, sport, dport, payload, phase, note, patch=None, v6=False):
    l3 = to_vm(vm, src6=src) if v6 else to_vm(vm, src)
    return UP.add(l3 / UDP(sport=sport, dport=dport) / Raw(payload), phase, note, patch)


def build_frames():
    """Fill VM and UP. The order here is the order of the pcaps and of verdicts.txt."""
    Conn.isn = 0x10000000
    VM.frames.clear()
    UP.frames.clear()

    # ---- phase 1, VM side: identity --------------------------------------------------
    p = 1
    VM.add(from_vm(A1, PATTERN443, mac=UNKNOWN_MAC, src="10.77.0.99") /
           TCP(sport=40900, dport=443, flags="S", seq=0x0a000001), p, "unknown source MAC")
    VM.add(from_vm(A1, PATTERN443, src="10.77.0.66") /
           TCP(sport=40901, dport=443, flags="S", seq=0x0a000002), p,
           "agent1's MAC, spoofed IPv4 source")
    VM.add(from_vm(A1, PATTERN443, src=A2["ipv4"]) /
           TCP(sport=40902, dport=443, flags="S", seq=0x0a000003), p,
           "agent1's MAC with agent2's IPv4 (borrowing agent2's allowlist)")
    VM.add(from_vm(A1, PATTERN443, vlan=7) /
           TCP(sport=40903, dport=443, flags="S", seq=0x0a000004), p,
           "agent1's MAC and IP on VLAN 7 (agent1 is untagged)")
    VM.add(from_vm(A1, dst6=PYPI6, src="fd77::66") /
           TCP(sport=40904, dport=443, flags="S", seq=0x0a000005), p,
           "agent1's MAC, spoofed IPv6 source")
    VM.add(Ether(src=A1["mac"], dst=BROADCAST) /
           ARP(op=1, hwsrc=A1["mac"], psrc=A1["ipv4"], pdst=ROUTER_IP), p,
           "ARP request from agent1's own address for the router")
    VM.add(Ether(src=A1["mac"], dst=BROADCAST) /
           ARP(op=1, hwsrc=A1["mac"], psrc="0.0.0.0", pdst=A1["ipv4"]), p,
           "ARP probe (sender 0.0.0.0) for agent1's own address")
    VM.add(Ether(src=A1["mac"], dst=BROADCAST) /
           ARP(op=2, hwsrc=A1["mac"], psrc=A2["ipv4"], hwdst=BROADCAST, pdst=A2["ipv4"]), p,
           "gratuitous ARP from agent1 claiming agent2's address")
    VM.add(Ether(src=A1["mac"], dst=ROUTER_MAC) /
           ARP(op=2, hwsrc=A1["mac"], psrc=PATTERN443, hwdst=ROUTER_MAC, pdst=ROUTER_IP), p,
           "ARP reply from agent1 for an address not its own")
    VM.add(Ether(src=A1["mac"], dst="33:33:ff:00:00:fe") /
           IPv6(src="fe80::1", dst="ff02::1:ff00:fe", hlim=255) /
           ICMPv6ND_NS(tgt=ROUTER_LL) / ICMPv6NDOptSrcLLAddr(lladdr=A1["mac"]), p,
           "IPv6 neighbour solicitation from agent1's link-local address")

    # ---- phase 1: DNS over UDP ------------------------------------------------------
    q = {}
    q["pypi"] = udp_out(A1, RESOLVER4, 33001, 53, dns_query(0x1101, [("pypi.org", "A")]), p,
                        "query pypi.org A (allowed)")
    q["fph"] = udp_out(A1, RESOLVER4, 33002, 53,
                       dns_query(0x1102, [("files.pythonhosted.org", "A")]), p,
                       "query files.pythonhosted.org A (allowed)")
    q["gh"] = udp_out(A1, RESOLVER4, 33003, 53, dns_query(0x1103, [("github.com", "A")]), p,
                      "query github.com A (allowed, port 22 only)")
    q["obj"] = udp_out(A1, RESOLVER4, 33004, 53,
                       dns_query(0x1104, [("objects.githubusercontent.com", "A")], edns=True),
                       p, "query objects.githubusercontent.com A with EDNS (allowed)")
    q["pypi6"] = udp_out(A1, RESOLVER6, 33005, 53, dns_query(0x1105, [("pypi.org", "AAAA")]),
                         p, "query pypi.org AAAA over IPv6 (allowed)", v6=True)
    udp_out(A1, RESOLVER4, 33006, 53, dns_query(0x1106, [("upload.pypi.org", "A")]), p,
            "query upload.pypi.org (denied), no EDNS")
    udp_out(A1, RESOLVER4, 33007, 53,
            dns_query(0x1107, [("c2VjcmV0.exfil.example", "A")], edns=True), p,
            "query for a name not allowed, with EDNS")
    udp_out(A1, RESOLVER4, 33008, 53,
            dns_query(0x1108, [("pypi.org", "A"), ("c2VjcmV0.exfil.example", "A")]), p,
            "query with two questions (allowed + not allowed)")
    udp_out(A1, RESOLVER4, 33009, 53,
            dns_query(0x1109, [("pypi.org", "A")], trailing=b"c2VjcmV0"), p,
            "query pypi.org with 8 bytes after the message")
    udp_out(A1, OTHER_DNS, 33010, 53, dns_query(0x110a, [("pypi.org", "A")]), p,
            "query pypi.org to a server that is not a resolver")
    udp_out(A1, RESOLVER4, 33011, 53,
            dns_answer(0x110b, "pypi.org", "A", [("pypi.org", "A", 60, PYPI)]), p,
            "a DNS response (QR set) sent by the VM to the resolver")
    udp_out(A1, RESOLVER4, 33012, 53, b"\x00\x01not dns at all", p,
            "UDP 53 to the resolver that is not DNS")
    udp_out(A1, RESOLVER4, 33013, 53,
            dns_query(0x110d, [("pypi.org", "A")], flags=0x2800), p,
            "UPDATE (opcode 5) for pypi.org")
    udp_out(A2, RESOLVER4, 33014, 53, dns_query(0x110e, [("pypi.org", "A")]), p,
            "agent2 queries pypi.org (allowed for agent1 only)")
    udp_out(A3, RESOLVER4, 33015, 53, dns_query(0x110f, [("pypi.org", "A")]), p,
            "audit3 (audit mode, offline policy) queries pypi.org")

    # ---- phase 1: DNS over TCP ------------------------------------------------------
    dns_a = Conn(A1, RESOLVER4, 53, 40100)
    dns_a.syn(p, "TCP SYN to the resolver port 53")
    q["tcp"] = dns_a.send(tcp_dns(dns_query(0x1201, [("pypi.org", "A")])), p,
                          "DNS over TCP: query pypi.org (allowed)")
    dns_b = Conn(A1, RESOLVER4, 53, 40101)
    dns_b.syn(p, "second TCP SYN to the resolver port 53")
    dns_b.send(tcp_dns(dns_query(0x1202, [("upload.pypi.org", "A")], edns=True)), p,
               "DNS over TCP: query upload.pypi.org (denied) with EDNS")
    Conn(A1, OTHER_DNS, 53, 40102).syn(p, "TCP SYN to port 53 of a non-resolver")
    Conn(A1, "9.9.9.9", 853, 40103).syn(p, "DNS over TLS: SYN to 9.9.9.9:853 (not bound)")

    # ---- phase 1: admission ---------------------------------------------------------
    pat443 = Conn(A1, PATTERN443, 443, 40001)
    pat443.syn(p, "SYN to 198.51.100.10:443 (pattern 198.51.100.0/24:443)")
    pat443b = Conn(A1, "198.51.100.11", 443, 40002)
    pat443b.syn(p, "SYN to 198.51.100.11:443 (same pattern)")
    Conn(A1, PATTERN22, 22, 40003).syn(p, "SYN to 203.0.113.5:22 (pattern 203.0.113.0/24:22)")
    Conn(A1, UNBOUND, 443, 40004).syn(p, "SYN to 192.0.2.99:443 (not bound)")
    Conn(A1, PATTERN443, 80, 40005).syn(p, "SYN to 198.51.100.10:80 (pattern, other port)")
    Conn(A1, PATTERN22, 443, 40006).syn(p, "SYN to 203.0.113.5:443 (pattern, other port)")
    udp_out(A1, PATTERN22, 50001, 22, b"udp to a pattern", p,
            "UDP to 203.0.113.5:22 (pattern allows port 22, any protocol)")
    udp_out(A1, UNBOUND, 50002, 5000, b"udp to nowhere", p, "UDP to 192.0.2.99:5000 (not bound)")
    udp_out(A1, PATTERN443, 50003, 8080, b"udp other port", p,
            "UDP to 198.51.100.10:8080 (pattern, other port)")
    VM.add(from_vm(A1, UNBOUND) / TCP(sport=40007, dport=443, flags="A", seq=0x0b000001,
                                      ack=0x0b100001), p,
           "TCP ACK of no known flow (no SYN seen)")
    VM.add(from_vm(A1, PATTERN443) / TCP(sport=40008, dport=443, flags="PA", seq=0x0b000002,
                                         ack=0x0b100002) / Raw(b"mid-stream"), p,
           "TCP data of no known flow, to a pattern address")
    VM.add(from_vm(A1, PATTERN443) / TCP(sport=40009, dport=443, flags="SA", seq=0x0b000003,
                                         ack=0x0b100003), p,
           "SYN-ACK from a VM (not an opening SYN) to a pattern address")
    Conn(A2, PATTERN443, 443, 40010).syn(p, "agent2 SYN to 198.51.100.10:443 (agent1's pattern)")
    Conn(A3, UNBOUND, 443, 40011).syn(p, "audit3 SYN to 192.0.2.99:443 (not bound)")

    # ---- phase 1: QUIC --------------------------------------------------------------
    udp_out(A1, PATTERN443, 50004, 443, QUIC_INITIAL, p,
            "QUIC Initial to 198.51.100.10:443 (pattern allows 443)")
    udp_out(A1, UNBOUND, 50005, 443, QUIC_INITIAL, p, "QUIC Initial to 192.0.2.99:443")
    udp_out(A3, UNBOUND, 50006, 443, QUIC_INITIAL, p, "audit3 QUIC Initial to 192.0.2.99:443")

    # ---- phase 2, internet side -----------------------------------------------------
    p = 2
    UP.add(Ether(src=ROUTER_MAC, dst=BROADCAST) /
           ARP(op=1, hwsrc=ROUTER_MAC, psrc=ROUTER_IP, pdst=A1["ipv4"]), p,
           "ARP request from the router (broadcast) for agent1")
    UP.add(Ether(src=ROUTER_MAC, dst=A1["mac"]) /
           ARP(op=2, hwsrc=ROUTER_MAC, psrc=ROUTER_IP, hwdst=A1["mac"], pdst=A1["ipv4"]), p,
           "ARP reply from the router to agent1")
    UP.add(Ether(src=ROUTER_MAC, dst=A1["mac"]) /
           IPv6(src=ROUTER_LL, dst="fe80::1", hlim=255) /
           ICMPv6ND_NA(tgt=ROUTER_LL, R=1, S=1, O=1) /
           ICMPv6NDOptDstLLAddr(lladdr=ROUTER_MAC), p,
           "IPv6 neighbour advertisement from the router to agent1")
    pat443.synack(p, "SYN-ACK from 198.51.100.10:443 (open flow)")
    pat443b.synack(p, "SYN-ACK from 198.51.100.11:443 (open flow)")
    udp_in(A1, PATTERN22, 22, 50001, b"udp reply", p, "UDP reply from 203.0.113.5:22 (open flow)")
    UP.add(to_vm(A1, INTERNET) / TCP(sport=51000, dport=22, flags="S", seq=0x0c000001), p,
           "unsolicited SYN from the internet to agent1:22")
    udp_in(A1, INTERNET, 51001, 50002, b"unsolicited udp", p,
           "UDP to agent1 from a host it never contacted")
    UP.add(Ether(src=ROUTER_MAC, dst=UNKNOWN_MAC) / IP(src=INTERNET, dst="10.77.0.99") /
           TCP(sport=51002, dport=443, flags="SA", seq=0x0c000002, ack=0x0c100002), p,
           "frame to a MAC that is no VM's")
    pypi_ans = dns_answer(0x1101, "pypi.org", "A", [("pypi.org", "A", 60, PYPI)])
    udp_in(A1, RESOLVER4, 53, 33001, pypi_ans, p,
           "forged answer for pypi.org with the VM's own query ID", {"dns_id_not": q["pypi"]})
    udp_in(A1, RESOLVER4, 53, 33002,
           dns_answer(0x1102, "evil.example", "A", [("evil.example", "A", 60, UNBOUND)]), p,
           "answer with namegate's ID for files.pythonhosted.org but another question",
           {"dns_id": q["fph"]})
    udp_in(A1, RESOLVER4, 53, 33001, pypi_ans, p, "answer pypi.org A 192.0.2.10",
           {"dns_id": q["pypi"]})
    udp_in(A1, RESOLVER4, 53, 33001, pypi_ans, p, "the same answer again (replay)",
           {"dns_id": q["pypi"]})
    udp_in(A1, RESOLVER4, 53, 33002,
           dns_answer(0x1102, "files.pythonhosted.org", "A",
                      [("files.pythonhosted.org", "A", 60, FPH)]), p,
           "answer files.pythonhosted.org A 192.0.2.11", {"dns_id": q["fph"]})
    udp_in(A1, RESOLVER4, 53, 33003,
           dns_answer(0x1103, "github.com", "A", [("github.com", "A", 5, GITHUB)]), p,
           "answer github.com A 192.0.2.22", {"dns_id": q["gh"]})
    udp_in(A1, RESOLVER4, 53, 33004,
           dns_answer(0x1104, "objects.githubusercontent.com", "A",
                      [("objects.githubusercontent.com", "CNAME", 60, "edge.cdn.example"),
                       ("edge.cdn.example", "A", 60, CDN),
                       ("edge.cdn.example", "A", 60, "127.0.0.1"),
                       ("edge.cdn.example", "A", 60, A2["ipv4"]),
                       ("unrelated.example", "A", 60, OFF_CHAIN)],
                      [("ns.cdn.example", "A", 60, GLUE)]), p,
           "answer objects.githubusercontent.com: CNAME chain to 192.0.2.30, 127.0.0.1 and "
           "agent2's address, an off-chain A and glue", {"dns_id": q["obj"]})
    udp_in(A1, RESOLVER6, 53, 33005,
           dns_answer(0x1105, "pypi.org", "AAAA", [("pypi.org", "AAAA", 60, PYPI6)]), p,
           "answer pypi.org AAAA 2001:db8::10 over IPv6", {"dns_id": q["pypi6"]}, v6=True)
    udp_in(A1, OTHER_DNS, 53, 33010, pypi_ans, p, "answer from the non-resolver")
    dns_a.synack(p, "SYN-ACK from the resolver port 53")
    dns_a.recv(tcp_dns(dns_answer(0x1201, "pypi.org", "A", [("pypi.org", "A", 60, PYPI_TCP)])),
               p, "DNS over TCP: answer pypi.org A 192.0.2.12", {"dns_id": q["tcp"]})
    dns_a.recv(tcp_dns(dns_answer(0x1299, "files.pythonhosted.org", "A",
                                  [("files.pythonhosted.org", "A", 60, FORGED)])), p,
               "DNS over TCP: answer to a question never asked (files.pythonhosted.org A "
               "192.0.2.77)")

    # ---- phase 3, VM side: what the answers opened -----------------------------------
    p = 3
    pat443.send(client_hello("collect.example.invalid"), p,
                "ClientHello SNI collect.example.invalid on the 198.51.100.10:443 pattern flow")
    pat443b.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", p,
                 "plain HTTP on the 198.51.100.11:443 pattern flow")
    ok = Conn(A1, PYPI, 443, 41001)
    ok.syn(p, "SYN to 192.0.2.10:443 (pypi.org bound)")
    hello = client_hello("pypi.org", post_quantum=True)
    ok.send(hello[:1000], p, "ClientHello SNI pypi.org, first of two segments")
    ok.send(hello[1000:], p, "ClientHello SNI pypi.org, second segment")
    c = Conn(A1, PYPI, 443, 41002)
    c.syn(p, "SYN to 192.0.2.10:443")
    c.send(client_hello("upload.pypi.org"), p, "ClientHello SNI upload.pypi.org (denied)")
    cut = c
    c = Conn(A1, PYPI, 443, 41003)
    c.syn(p, "SYN to 192.0.2.10:443")
    c.send(client_hello("files.pythonhosted.org"), p,
           "ClientHello SNI files.pythonhosted.org (allowed, but resolved to 192.0.2.11)")
    c = Conn(A1, PYPI, 443, 41004)
    c.syn(p, "SYN to 192.0.2.10:443")
    c.send(client_hello(None), p, "ClientHello without SNI")
    c = Conn(A1, PYPI, 443, 41005)
    c.syn(p, "SYN to 192.0.2.10:443")
    c.send(b"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", p, "plain HTTP to a TLS port")
    c = Conn(A1, PYPI, 443, 41006)
    c.syn(p, "SYN to 192.0.2.10:443")
    hello = client_hello("evil.example", post_quantum=True)
    c.send(hello[:1000], p, "ClientHello SNI evil.example (not allowed), first segment")
    c.send(hello[1000:], p, "ClientHello SNI evil.example, second segment")
    Conn(A1, PYPI, 443, 41007).syn(p, "SYN with data to 192.0.2.10:443",
                                   payload=client_hello("pypi.org"))
    cut.send(b"more", p, "agent1 keeps sending on the flow namegate cut", ack_extra=100)
    Conn(A1, GITHUB, 22, 41008).syn(p, "SYN to 192.0.2.22:22 (github.com:22)")
    Conn(A1, GITHUB, 443, 41009).syn(p, "SYN to 192.0.2.22:443 (github.com bound for 22 only)")
    Conn(A2, PYPI, 443, 41010).syn(p, "agent2 SYN to 192.0.2.10:443 (bound for agent1)")
    cdn = Conn(A1, CDN, 443, 41011)
    cdn.syn(p, "SYN to 192.0.2.30:443 (end of the CNAME chain)")
    cdn.send(client_hello("objects.githubusercontent.com"), p,
             "ClientHello SNI objects.githubusercontent.com to 192.0.2.30")
    Conn(A1, OFF_CHAIN, 443, 41012).syn(p, "SYN to 192.0.2.31:443 (off-chain record)")
    Conn(A1, GLUE, 443, 41013).syn(p, "SYN to 192.0.2.32:443 (additional-section glue)")
    Conn(A1, A2["ipv4"], 443, 41014).syn(p, "SYN to agent2's address (answered in DNS)")
    Conn(A1, PYPI_TCP, 443, 41015).syn(p, "SYN to 192.0.2.12:443 (answered over TCP)")
    Conn(A1, FORGED, 443, 41016).syn(p, "SYN to 192.0.2.77:443 (only in the unasked TCP answer)")
    v6 = Conn(A1, PYPI6, 443, 41017, v6=True)
    v6.syn(p, "SYN to [2001:db8::10]:443 (pypi.org AAAA)")
    v6.send(client_hello("pypi.org"), p, "ClientHello SNI pypi.org over IPv6")
    Conn(A3, PYPI, 443, 41018).syn(p, "audit3 SYN to 192.0.2.10:443 (not bound for audit3)")

    # ---- phase 3: one connection, one verdict; only what the server reads is judged --
    bad = Conn(A1, PYPI, 443, 41020)
    bad.syn(p, "SYN to 192.0.2.10:443")
    seg = bad._out() / TCP(sport=41020, dport=443, flags="PA", seq=bad.cnext,
                           ack=bad.sseq + 1, window=502, chksum=0xbad0) / \
        Raw(client_hello("pypi.org"))
    VM.add(seg, p, "ClientHello SNI pypi.org with a bad TCP checksum (the server drops it)")
    seg = bad._out() / TCP(sport=41020, dport=443, flags="PA", seq=bad.cnext,
                           ack=bad.sseq + 1, window=502) / Raw(client_hello("evil.example"))
    VM.add(seg, p, "the real ClientHello at the same sequence: SNI evil.example")
    seg = bad._out() / TCP(sport=41020, dport=443, flags="S", seq=0x0b000001)
    seg[IP].chksum = 0xbad0
    VM.add(seg, p, "SYN with a bad IPv4 header checksum")
    VM.add(bad._out() / TCP(sport=41024, dport=443, flags="S", seq=0x0b000002), p,
           "SYN to 192.0.2.10:443 (a control for the next frame)")
    lsrr = from_vm(A1, PYPI)
    lsrr[IP].options = [IPOption_LSRR(routers=[UNBOUND])]
    VM.add(lsrr / TCP(sport=41025, dport=443, flags="S", seq=0x0b000003), p,
           "SYN to 192.0.2.10:443 with a loose source route through 192.0.2.99")
    first = Conn(A1, PYPI, 443, 41021)
    first.syn(p, "SYN to 192.0.2.10:443 from port 41021")
    first.send(client_hello("pypi.org"), p, "ClientHello SNI pypi.org")
    VM.add(first._out() / TCP(sport=41021, dport=443, flags="R", seq=first.cnext), p,
           "agent1 resets the connection")
    again = Conn(A1, PYPI, 443, 41021)
    again.syn(p, "a new SYN on the same 4-tuple, another ISN")
    again.send(client_hello("evil.example"), p,
               "ClientHello SNI evil.example on the new connection")
    Conn(A1, PYPI, 443, 41022).syn(p, "SYN with data: a whole ClientHello SNI evil.example",
                                   payload=client_hello("evil.example"))
    redo = Conn(A1, PYPI, 443, 41023)
    redo.syn(p, "SYN to 192.0.2.10:443 from port 41023")
    hello = client_hello("pypi.org")
    redo.send(hello, p, "ClientHello SNI pypi.org")
    again_seg = redo._out() / TCP(sport=41023, dport=443, flags="PA", seq=redo.cseq + 1,
                                  ack=redo.sseq + 1, window=502)
    VM.add(again_seg / Raw(hello), p, "the same ClientHello again (a retransmission)")
    evil = client_hello("evil.example")
    VM.add(again_seg / Raw(evil), p,
           "the judged bytes rewritten: a ClientHello SNI evil.example at the same sequence")

    # ---- phase 4, internet side: servers on allowed and cut flows -------------------
    p = 4
    ok.synack(p, "SYN-ACK from 192.0.2.10:443 on the allowed TLS flow")
    ok.recv(SERVER_HELLO, p, "server data on the allowed TLS flow")
    cut.recv(SERVER_HELLO, p, "server data on the flow namegate cut")
    cdn.synack(p, "SYN-ACK from 192.0.2.30:443")


def frames():
    """[(pcap, index, bytes, phase, note, patch)] in pcap order, VM side first."""
    build_frames()
    out = []
    for cap in (VM, UP):
        for i, (b, phase, note, patch) in enumerate(cap.frames):
            out.append((cap.name, i, b, phase, note, patch))
    return out


PCAP_HEADER = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)   # usec, Ethernet


def pcap_record(frame, ts_usec):
    return struct.pack("<IIII", ts_usec // 1_000_000, ts_usec % 1_000_000, len(frame),
                       len(frame)) + frame


def write(outdir):
    """The frames' bytes go to the files as built: nothing is dissected and rebuilt."""
    entries = frames()
    for cap in (VM, UP):
        with open(os.path.join(outdir, cap.name), "wb") as f:
            f.write(PCAP_HEADER)
            for i, (b, _phase, _note, _patch) in enumerate(cap.frames):
                f.write(pcap_record(b, T0 * 1_000_000 + i * 1000))
    manifest = [{"frame": f"{pcap}:{i}", "phase": phase, "what": note,
                 **({"patch": patch} if patch else {})}
                for pcap, i, _b, phase, note, patch in entries]
    with open(os.path.join(outdir, "frames.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return entries


def main(argv):
    if argv[1:] == ["--list"]:
        for pcap, i, b, phase, note, patch in frames():
            print(f"{pcap}:{i} phase={phase} len={len(b)} {note}"
                  + (f" patch={patch}" if patch else ""))
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    write(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
