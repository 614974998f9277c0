"""Urgent data (RFC 9293 s3.8.5): the byte an urgent pointer names is taken out of the
stream by the receiver's TCP (Linux, unless the socket asked for SO_OOBINLINE), so the
application reads the stream without it. The pointer may ride on any segment, a bare ACK
too, and name a byte up to 64 KiB ahead of it, in a segment that carries no URG flag at
all. A VM that sets one ahead of its hello has the server read a hello namegate never
judged. The hello below says pypi.org to namegate and evil.test to OpenSSL with one byte
taken out (and one more read after it); each attack pairs with a control that the same
frames without the pointer reach the server as judged. The VM's helpers are
test_conntrue's.
"""
import struct

import pytest
from scapy.all import DNS, DNSQR

import lab as labmod
import lab_services as svc
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import VM1, queried, resolve, unique, vm_scapy
from test_conntrue import ng  # noqa: F401 (a fixture)

# the crafted hello, in the VM: (record, k), the byte at k being the one taken out
_URGENT_HELLO = r"""
def urgent_hello(allowed, denied):
    # namegate's view: the allowed SNI last, after E (a GREASE extension holding byte k),
    # F (an empty one) and G (one whose header, one byte on, begins a server_name of denied
    # and whose data holds the extension that covers the rest, the allowed SNI with it)
    rec = client_hello(allowed)
    body = rec[9:]
    at = 34
    at += 1 + body[at]
    at += 2 + struct.unpack('!H', body[at:at + 2])[0]
    at += 1 + body[at]
    head, at = body[:at], at + 2
    exts, sni = [], None
    while at < len(body):
        t, n = struct.unpack('!HH', body[at:at + 4])
        if t == 0:
            sni = body[at:at + 4 + n]
        elif t != 0x15:
            exts.append(body[at:at + 4 + n])
        at += 4 + n
    name = denied.encode()
    list_len = len(name) + 3
    e, f = b'\x0a\x0a\x00\x04\x00\x00\x00\x00', b'\xfa\x00\x00\x00'
    pre = b''.join(exts)
    g_start, g_len = len(pre) + len(e) + len(f), list_len * 256
    block_len = g_start + 4 + g_len + len(sni)
    last = g_start + 4 + 2 + len(name)
    g_data = struct.pack('!H', len(name)) + name + b'\x1a\x1a' + \
        struct.pack('!H', block_len - (last + 4) + 1)
    g = bytes([list_len + 2, 0]) + struct.pack('!H', g_len) + \
        g_data + b'\x00' * (g_len - len(g_data))
    block = pre + e + f + g + sni
    body = head + struct.pack('!H', len(block)) + block
    hs = b'\x01' + struct.pack('!I', len(body))[1:] + body
    return b'\x16\x03\x01' + struct.pack('!H', len(hs)) + hs, 5 + 4 + len(head) + 2 + len(pre) + 4
"""


def urgent_then_hello(lab, dst, sport, urgent, where):
    """In vm1: a handshake to dst:443, then (urgent) an urgent pointer at the crafted hello's
    byte k, carried by a bare ACK (where 'ack') or by the handshake's own ACK ('handshake'),
    then the hello in segments and one byte after it. What the VM saw: an RST (reset)."""
    return vm_scapy(lab, _URGENT_HELLO + labmod._dedent(f"""
        rec, k = urgent_hello('pypi.org', 'evil.test')
        dst, sport = {dst!r}, {sport}
        ip = IP(dst=dst)
        s = listen(dst, sport)
        sa = sr1(ip/TCP(sport=sport, dport=443, flags='S', seq=1000,
                        options=[('MSS', 1460)]), timeout=20)
        seq, ack = 1001, sa[TCP].seq + 1
        urg = {urgent}
        # tcp_stdurg off (Linux's default): the pointer names the byte before it
        send(ip/TCP(sport=sport, dport=443, flags='AU' if urg and {where!r} == 'handshake'
                    else 'A', seq=seq, ack=ack, urgptr=k + 1))
        if urg and {where!r} == 'ack':
            send(ip/TCP(sport=sport, dport=443, flags='AU', seq=seq, ack=ack, urgptr=k + 1))
        for off in range(0, len(rec), 1200):
            send(seg(ip, sport, seq + off, ack, rec[off:off + 1200]))
        send(seg(ip, sport, seq + len(rec), ack, b'\\x14'))
        result(reset=reset_seen(s, timeout=5))
    """))


@pytest.mark.parametrize("where", ["ack", "handshake"])
def test_urgent_pointer_ahead_of_a_hello_is_cut(ng, where):
    """A bare ACK (or the handshake's) whose urgent pointer names a byte of the hello to
    come: the server would read evil.test where namegate judged pypi.org."""
    addr = resolve(ng, "pypi.org")
    attack, control = (20101, 20102) if where == "ack" else (20103, 20104)

    def read(port):
        return [e["sni"] for e in ng.server_events(event="sni", client=VM1, client_port=port)]

    with nc.Delta(ng) as d:
        out = {port: urgent_then_hello(ng, addr, port, port == attack, where)
               for port in (control, attack)}
    # control: without the pointer the crafted hello is allowed, and read as judged
    assert wait_until(lambda: read(control)) == ["pypi.org"], \
        f"control: the crafted hello did not reach the server as judged: {out}"
    assert "evil.test" not in read(attack), \
        "the server read evil.test: an urgent pointer took a byte out of the judged hello"
    assert out[attack]["reset"], f"the urgent pointer was not cut: {out}"
    assert not read(attack), f"the server read a hello after the urgent pointer: {read(attack)}"
    assert d.refresh()[nc.blocked("vm1", "rewrite")] >= 1, "the cut was not counted"


def urgent_then_bytes(lab, dst, sport, dport, data, urgent, at):
    """In vm1: a handshake to dst:dport, then (urgent) a bare ACK whose urgent pointer
    names data's byte at, then data. What the VM saw: an RST (reset)."""
    return vm_scapy(lab, f"""
        ip, seq, ack = handshake({dst!r}, {sport}, dport={dport})
        s = listen({dst!r}, {sport}, dport={dport})
        if {urgent}:
            send(ip/TCP(sport={sport}, dport={dport}, flags='AU', seq=seq, ack=ack,
                        urgptr={at} + 1))
        send(seg(ip, {sport}, seq, ack, {data!r}, dport={dport}))
        result(reset=reset_seen(s, timeout=5))
    """)


def test_urgent_pointer_ahead_of_an_http_request_is_cut(ng):
    """Plaintext HTTP: the pointer names the p of Host: pypi.org, and http.server would
    read Host: ypi.org, a name namegate never judged."""
    addr = resolve(ng, "pypi.org")
    tag = unique("urg").split(".")[0]

    def data(port):
        return f"GET /{tag}{port} HTTP/1.1\r\nHost: pypi.org\r\nUser-Agent: lab\r\n\r\n".encode()

    def read(port):
        return [e["host"] for e in ng.server_events(event="request", client=VM1)
                if e["path"] == f"/{tag}{port}"]

    with nc.Delta(ng) as d:
        out = {port: urgent_then_bytes(ng, addr, port, 80, data(port), port == 20106,
                                       data(port).index(b"pypi.org"))
               for port in (20105, 20106)}
    assert wait_until(lambda: read(20105)) == ["pypi.org"], \
        f"control: the request did not reach the server as judged: {out}"
    assert not read(20106), f"the server read Host {read(20106)} after an urgent pointer"
    assert out[20106]["reset"], f"the urgent pointer was not cut: {out}"
    assert d.refresh()[nc.blocked("vm1", "rewrite")] >= 1, "the cut was not counted"


def test_urgent_pointer_ahead_of_a_dns_query_over_tcp_is_cut(ng):
    """DNS over TCP: the pointer names the query's first label length, and the resolver
    would read another name than the one namegate allowed (or none)."""
    names = {port: unique("githubusercontent.com") for port in (20107, 20108)}

    def data(port):
        q = bytes(DNS(id=0x3131, rd=1, qd=DNSQR(qname=names[port])))
        return struct.pack(">H", len(q)) + q

    with nc.Delta(ng) as d:
        out = {port: urgent_then_bytes(ng, svc.RESOLVER, port, 53, data(port), port == 20108,
                                       2 + 12)
               for port in (20107, 20108)}
    assert wait_until(lambda: queried(ng, names[20107])), \
        f"control: the query did not reach the resolver: {out}"
    assert out[20108]["reset"], f"the urgent pointer was not cut: {out}"
    assert d.refresh()[nc.blocked("vm1", "rewrite")] >= 1, "the cut was not counted"
    # a later query read is the marker the absences below are read after
    marker = unique("githubusercontent.com")
    ng.dig("vm1", marker, timeout=5)
    wait_until(lambda: queried(ng, marker), what="a later query to reach the resolver")
    assert not queried(ng, names[20108]), "the resolver read the query after an urgent pointer"
    assert not any(names[20108].split(".")[0] in q[1] for q in ng.resolver_queries()), \
        "the resolver read the query's label after an urgent pointer"
