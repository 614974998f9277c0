"""A capture of the awkward cases the generated traffic does not stress: ClientHellos
fragmented over TLS records and TCP segments, reordered and retransmitted; DNS over TCP
with two messages in one segment and one message over two; CNAME chains in mixed case
with records off the chain. Built with scapy, so its bytes owe nothing to namegate."""
import struct

from scapy.all import DNS, DNSQR, DNSRR, IP, IPv6, TCP, UDP, Dot1Q, Ether, rdpcap, wrpcap

VM_MAC, GW_MAC = "52:54:00:10:00:00", "02:00:00:ee:ee:01"


def first_hello(hello_pcap):
    """The first ClientHello record stream of hello.pcap, whole (it may span segments)."""
    stream = b""
    for pkt in rdpcap(str(hello_pcap), count=8):
        if TCP in pkt and bytes(pkt[TCP].payload):
            stream += bytes(pkt[TCP].payload)
            if len(stream) >= 5 and len(stream) >= 5 + struct.unpack(">H", stream[3:5])[0]:
                return stream
    raise AssertionError("no whole ClientHello in the first frames of " + str(hello_pcap))


def refragment(record_stream, sizes):
    """Cut one handshake record's body into records of the given sizes (RFC 8446 s5.1)."""
    body = record_stream[5:5 + struct.unpack(">H", record_stream[3:5])[0]]
    out, off = b"", 0
    for n in list(sizes) + [len(body)]:
        chunk = body[off:off + n]
        if not chunk:
            break
        out += b"\x16\x03\x01" + struct.pack(">H", len(chunk)) + chunk
        off += len(chunk)
    return out


def tcp_flow(l3, sport, dport, isn, chunks, order, tag=None, syn="S"):
    """SYN, then the client's chunks sent in the given order of indexes (repeats allowed)."""
    eth = Ether(src=VM_MAC, dst=GW_MAC)
    if tag is not None:
        eth = eth / Dot1Q(vlan=tag)
    pkts = [eth / l3 / TCP(sport=sport, dport=dport, flags=syn, seq=isn)]
    offs = [sum(len(c) for c in chunks[:i]) for i in range(len(chunks))]
    for i in order:
        pkts.append(eth / l3 / TCP(sport=sport, dport=dport, flags="PA",
                                   seq=(isn + 1 + offs[i]) % (1 << 32), ack=1) / chunks[i])
    return pkts


def dns_response(qname, answers, qid, qtype="A"):
    an = None
    for owner, rtype, ttl, data in answers:
        rr = DNSRR(rrname=owner, type=rtype, ttl=ttl, rdata=data)
        an = rr if an is None else an / rr
    return DNS(id=qid, qr=1, rd=1, ra=1, qd=DNSQR(qname=qname, qtype=qtype), an=an,
               ancount=len(answers))


def tcp_dns_stream(msgs):
    return b"".join(struct.pack(">H", len(m)) + m for m in (bytes(x) for x in msgs))


def build(hello_pcap, path):
    hello = first_hello(hello_pcap)
    three_records = refragment(hello, [100, 700])
    cut1, cut2 = 50, len(three_records) - 40
    chunks = [three_records[:cut1], three_records[cut1:cut2], three_records[cut2:]]
    vm4 = IP(src="10.10.0.11", dst="192.0.2.10")
    vm6 = IPv6(src="fd00:10:10::11", dst="2001:db8::10")
    pkts = []
    # reordered, with an identical retransmission, sequence numbers wrapping past 2^32
    pkts += tcp_flow(vm4, 40001, 443, 0xffffff00, chunks, [2, 0, 0, 1])
    # one segment, IPv6, VLAN-tagged, the other TLS port
    pkts += tcp_flow(vm6, 40002, 8443, 1000, [hello], [0], tag=42)

    chain = [("www.Example.COM", "CNAME", 300, "edge.example.net"),
             ("EDGE.example.NET", "CNAME", 120, "node7.cdn.example.org"),
             ("evil.example", "A", 9999, "198.51.100.66"),          # off the chain: ignored
             ("node7.cdn.example.org", "A", 600, "192.0.2.7"),
             ("node7.cdn.example.org", "A", 30, "192.0.2.8")]
    resolver, vm = IP(src="10.10.0.1", dst="10.10.0.11"), IP(src="10.10.0.11", dst="10.10.0.1")
    eth_in, eth_out = Ether(src=GW_MAC, dst=VM_MAC), Ether(src=VM_MAC, dst=GW_MAC)
    pkts.append(eth_out / vm / UDP(sport=5300, dport=53) /
                DNS(id=0x1234, rd=1, qd=DNSQR(qname="www.example.com")))
    pkts.append(eth_in / resolver / UDP(sport=53, dport=5300) /
                dns_response("www.example.com", chain, 0x1234))
    pkts.append(eth_in / resolver / UDP(sport=53, dport=5301) /
                dns_response("v6.example.com", [("v6.example.com", "AAAA", 77, "2001:db8::77")],
                             0x2345, qtype="AAAA"))

    q1 = DNS(id=1, rd=1, qd=DNSQR(qname="pypi.org"))
    q2 = DNS(id=2, rd=1, qd=DNSQR(qname="files.pythonhosted.org", qtype="AAAA"))
    r1 = dns_response("pypi.org", [("pypi.org", "A", 60, "151.101.0.223"),
                                   ("pypi.org", "A", 60, "151.101.64.223")], 1)
    r2 = dns_response("files.pythonhosted.org",
                      [("files.pythonhosted.org", "CNAME", 50, "dualstack.python.map.fastly.net"),
                       ("dualstack.python.map.fastly.net", "AAAA", 40, "2a04:4e42::223")],
                      2, qtype="AAAA")
    queries = tcp_dns_stream([q1, q2])
    answers = tcp_dns_stream([r1, r2])
    # both queries in one segment; the responses cut in the middle of the second message
    pkts += tcp_flow(vm, 40100, 53, 5000, [queries], [0])
    cut = len(answers) - 20
    pkts += tcp_flow(resolver, 53, 40100, 9000, [answers[:cut], answers[cut:]], [0, 1],
                     syn="SA")
    # plaintext HTTP on a keep-alive connection: a head split in two segments; a POST whose
    # Content-Length body reads like a request for another host; a chunked POST with an
    # extension and a trailer; then two requests pipelined in one segment
    inner = b"GET /inside HTTP/1.1\r\nHost: inside-the-body.example\r\n\r\n"
    http = [b"GET /a HTTP/1.1\r\nUser-", b"Agent: t\r\nHost: Example.COM:80\r\n\r\n",
            b"POST /b HTTP/1.1\r\nHost: example.com\r\nContent-Length: %d\r\n\r\n" %
            len(inner) + inner,
            b"POST /c HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;x=y\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
            b"GET /d HTTP/1.1\r\nHost: one.example\r\n\r\n"
            b"GET /e HTTP/1.1\r\nHost: two.example.\r\n\r\n"]
    pkts += tcp_flow(IP(src="10.10.0.11", dst="192.0.2.80"), 40200, 80, 7000, http,
                     list(range(len(http))))
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i / 1000
    wrpcap(str(path), pkts)
    return path
