"""The frames the golden test feeds and reads back (test_golden.py): pcap records, their
headers parsed, their checksums, and the DNS fields namegate rewrites (the query's ID and,
over UDP, its port; over TCP, the sequence numbers it shifts), read, zeroed to compare,
or patched into the answers the test feeds.
"""
import socket
import struct
from types import SimpleNamespace

TCP_SYN, TCP_RST, TCP_ACK, TCP_FIN = 0x02, 0x04, 0x10, 0x01

# ------------------------------------------------------------------------------- pcap


def read_pcap(path):
    """The frames of a pcap (microsecond or nanosecond), ignoring a half-written tail."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file")
    frames, off = [], 24
    while off + 16 <= len(data):
        caplen = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        if off + 16 + caplen > len(data):
            break
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return frames


# ----------------------------------------------------------------------------- frames


def parse(b):
    """Ethernet / 802.1Q / IPv4 | IPv6 / TCP | UDP | ICMP, as far as the frame goes."""
    f = SimpleNamespace(raw=b, dst_mac=b[0:6], src_mac=b[6:12], vlan=None, family=0,
                        proto=None, src=None, dst=None, l3=None, l4=None, end=len(b),
                        sport=None, dport=None, seq=None, ack=None, flags=0, payload=b"",
                        icmp_type=None)
    et, off = struct.unpack("!H", b[12:14])[0], 14
    if et == 0x8100:
        f.vlan = struct.unpack("!H", b[14:16])[0] & 0xfff
        et, off = struct.unpack("!H", b[16:18])[0], 18
    f.ethertype, f.l3 = et, off
    if et == 0x0800 and len(b) >= off + 20:
        ihl = (b[off] & 0xf) * 4
        f.family, f.proto = 4, b[off + 9]
        f.src, f.dst = b[off + 12:off + 16], b[off + 16:off + 20]
        f.l4, f.end = off + ihl, off + struct.unpack("!H", b[off + 2:off + 4])[0]
    elif et == 0x86dd and len(b) >= off + 40:
        f.family, f.proto = 6, b[off + 6]
        f.src, f.dst = b[off + 8:off + 24], b[off + 24:off + 40]
        f.l4, f.end = off + 40, off + 40 + struct.unpack("!H", b[off + 4:off + 6])[0]
    else:
        return f
    l4 = f.l4
    if f.proto == 6 and f.end >= l4 + 20:
        f.sport, f.dport, f.seq, f.ack = struct.unpack("!HHII", b[l4:l4 + 12])
        f.flags = b[l4 + 13]
        f.payload = b[l4 + (b[l4 + 12] >> 4) * 4:f.end]
    elif f.proto == 17 and f.end >= l4 + 8:
        f.sport, f.dport = struct.unpack("!HH", b[l4:l4 + 4])
        f.payload = b[l4 + 8:f.end]
    elif f.proto in (1, 58) and f.end >= l4 + 8:
        f.icmp_type = b[l4]
        f.payload = b[l4 + 8:f.end]
    return f


def tcp_seg_len(f):
    return len(f.payload) + bool(f.flags & TCP_SYN) + bool(f.flags & TCP_FIN)


def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def _pseudo(f, seg_len):
    if f.family == 4:
        return f.src + f.dst + bytes([0, f.proto]) + struct.pack("!H", seg_len)
    return f.src + f.dst + struct.pack("!I", seg_len) + bytes([0, 0, 0, f.proto])


def checksums_ok(f):
    b = f.raw
    if f.family == 4 and _csum(b[f.l3:f.l4]) != 0:
        return False
    if f.proto not in (1, 6, 17, 58):
        return True
    seg = b[f.l4:f.end]
    if f.proto == 1:
        return _csum(seg) == 0
    if f.proto == 17 and f.family == 4 and seg[6:8] == b"\0\0":
        return True                       # no checksum: legal for UDP over IPv4
    return _csum(_pseudo(f, len(seg)) + seg) == 0


def _csum_off(f):
    return f.l4 + (16 if f.proto == 6 else 6)


def dns_offset(f):
    """Where the (first) DNS message of a port-53 TCP/UDP frame starts, or None."""
    if f.proto not in (6, 17) or 53 not in (f.sport, f.dport):
        return None
    start = f.end - len(f.payload) + (2 if f.proto == 6 else 0)
    return start if start + 12 <= f.end else None


def _vm_port_off(f):
    """Where the VM-side port of a UDP DNS frame is (the one namegate draws for a query
    and restores in its answer), or None: over TCP the ports stay the VM's."""
    if f.proto != 17:
        return None
    return f.l4 + (0 if f.dport == 53 else 2)


def normalised(b):
    """b with the DNS ID, the L4 checksum and over UDP the VM-side port zeroed when it is
    DNS: namegate rewrites query IDs and UDP source ports on the way out and restores them
    on the way back (and, over TCP, shifts the sequence numbers: unshifted())."""
    f = parse(b)
    off = dns_offset(f)
    if off is None and not (f.proto == 6 and 53 in (f.sport, f.dport)):
        return b
    nb = bytearray(b)
    if off is not None:
        nb[off:off + 2] = b"\0\0"
    c = _csum_off(f)
    nb[c:c + 2] = b"\0\0"
    p = _vm_port_off(f)
    if p is not None:
        nb[p:p + 2] = b"\0\0"
    return bytes(nb)


def _conn(f):
    return (f.src, f.dst, f.sport, f.dport) if f.proto == 6 else None


def modulation(inputs, ups):
    """{a DNS over TCP connection (VM address, resolver, VM port, 53): the offset namegate
    added to the VM's sequence numbers on it}: its SYN as fed, and as it left among ups
    (frames out of the uplink port)."""
    syns = {_conn(i.f): i.f.seq for i in inputs if i.side == "vm" and i.f.proto == 6 and
            i.f.dport == 53 and (i.f.flags & (TCP_SYN | TCP_ACK)) == TCP_SYN}
    out = {}
    for b in ups:
        f = parse(b)
        if _conn(f) in syns and (f.flags & (TCP_SYN | TCP_ACK)) == TCP_SYN:
            out[_conn(f)] = (f.seq - syns[_conn(f)]) & 0xffffffff
    return out


def unshifted(b, deltas):
    """b, a frame out of the uplink port, with its sequence number as the VM sent it when
    it is of a connection namegate modulates (deltas: modulation()); the checksum then no
    longer holds, and normalised() zeroes it."""
    f = parse(b)
    d = deltas.get(_conn(f))
    if d is None:
        return b
    nb = bytearray(b)
    nb[f.l4 + 4:f.l4 + 8] = struct.pack("!I", (f.seq - d) & 0xffffffff)
    return bytes(nb)


def with_ack_shifted(b, deltas):
    """b, a resolver's segment as make_pcaps.py wrote it (acknowledging the VM's numbers),
    acknowledging them as namegate shifted them on the wire, its checksum made good."""
    f = parse(b)
    d = deltas.get((f.dst, f.src, f.dport, f.sport))
    assert d is not None, f"the SYN of {f.dst}:{f.dport} never left, so its offset is unknown"
    nb = bytearray(b)
    nb[f.l4 + 8:f.l4 + 12] = struct.pack("!I", (f.ack + d) & 0xffffffff)
    c = _csum_off(f)
    nb[c:c + 2] = b"\0\0"
    nb[c:c + 2] = struct.pack("!H", _csum(_pseudo(f, f.end - f.l4) + bytes(nb[f.l4:f.end])))
    return bytes(nb)


def vm_port(b):
    f = parse(b)
    p = _vm_port_off(f)
    return None if p is None or dns_offset(f) is None else struct.unpack("!H", b[p:p + 2])[0]


def with_dns_id(b, qid, port=None):
    """b with DNS ID qid and (port not None: UDP) the VM-side port port, summed again."""
    f = parse(b)
    off = dns_offset(f)
    nb = bytearray(b)
    nb[off:off + 2] = struct.pack("!H", qid)
    if port is not None:
        p = _vm_port_off(f)
        nb[p:p + 2] = struct.pack("!H", port)
    c = _csum_off(f)
    nb[c:c + 2] = b"\0\0"
    s = _csum(_pseudo(f, f.end - f.l4) + bytes(nb[f.l4:f.end]))
    nb[c:c + 2] = struct.pack("!H", s or (0xffff if f.proto == 17 else 0))
    return bytes(nb)


def dns_id(b):
    f = parse(b)
    off = dns_offset(f)
    return None if off is None else struct.unpack("!H", b[off:off + 2])[0]


def dns_msg(f):
    off = dns_offset(f)
    return None if off is None else f.raw[off:f.end]


def dns_parse(msg):
    """Header fields, the questions (raw), every A/AAAA address in the message (text, in
    order) and the EDE INFO-CODE of an OPT record."""
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    off = 12

    def skip_name(o):
        while True:
            n = msg[o]
            if n == 0:
                return o + 1
            if n & 0xc0 == 0xc0:
                return o + 2
            o += 1 + n

    questions = []
    for _ in range(qd):
        e = skip_name(off) + 4
        questions.append(msg[off:e])
        off = e
    ede, addrs = None, []
    for i in range(an + ns + ar):
        o = skip_name(off)
        rtype = struct.unpack("!H", msg[o:o + 2])[0]
        rdlen = struct.unpack("!H", msg[o + 8:o + 10])[0]
        rdata, off = msg[o + 10:o + 10 + rdlen], o + 10 + rdlen
        if (rtype, rdlen) in ((1, 4), (28, 16)):
            addrs.append(socket.inet_ntop(socket.AF_INET if rtype == 1 else socket.AF_INET6,
                                          rdata))
        while i >= an + ns and rtype == 41 and len(rdata) >= 4:
            code, olen = struct.unpack("!HH", rdata[:4])
            if code == 15 and olen >= 2:
                ede = struct.unpack("!H", rdata[4:6])[0]
            rdata = rdata[4 + olen:]
    return SimpleNamespace(id=qid, qr=flags >> 15, opcode=(flags >> 11) & 0xf,
                           rcode=flags & 0xf, questions=questions, ede=ede, addrs=addrs)
