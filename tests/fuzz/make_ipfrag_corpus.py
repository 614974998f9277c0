#!/usr/bin/python3
"""Seeds for fuzz_ipfrag (see the input format at the top of fuzz_ipfrag.c), made with
scapy: real fragment trains in order, reversed, duplicated and overlapping, and whole
datagrams for the cut and round-trip ops. Usage: make_ipfrag_corpus.py OUTDIR"""
import hashlib
import os
import struct
import sys

from scapy.all import IP, IPv6, UDP, TCP, Raw, IPOption_RR, IPOption_Security, \
    IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, IPv6ExtHdrFragment, \
    fragment, fragment6


def raw_op(pkt, who=0, prefix=b''):
    """who: owner in bits 0-1, link prefix length (7 * bits 2-3), time step in bits 4-7"""
    b = prefix + bytes(pkt)
    return bytes([0, who]) + struct.pack('>H', len(b)) + b


def age_op(budget):
    return bytes([1, budget])


def cut_op(pkt, mtu, order=0, k=0, rt=False):
    b = bytes(pkt)
    return bytes([3 if rt else 2]) + struct.pack('>H', len(b)) + b + \
        struct.pack('>HBB', mtu, order, k)


def v4(size=3000, proto=UDP, ident=7, **kw):
    return IP(src='10.0.0.2', dst='192.0.2.1', id=ident, **kw) / proto(sport=1234, dport=53) / \
        Raw((bytes(range(256)) * (size // 256 + 1))[:size])


def v4_frags(size=3000, mtu=1500, **kw):
    return fragment(v4(size, **kw), fragsize=mtu - 20)


def v6(size=3000, ext=()):
    p = IPv6(src='fd00::2', dst='2001:db8::1')
    for e in ext:
        p = p / e
    return p / UDP(sport=1234, dport=53) / Raw((bytes(range(256)) * (size // 256 + 1))[:size])


def v6_frags(size=3000, ext=(), mtu=1280):
    # fragment6 needs a fragment header in place, after the unfragmentable part
    layers = [IPv6(src='fd00::2', dst='2001:db8::1')]
    for e in ext:
        layers.append(e)
    q = layers[0]
    for e in layers[1:]:
        q = q / e
    q = q / IPv6ExtHdrFragment(id=0x1234) / UDP(sport=1234, dport=53) / \
        Raw((bytes(range(256)) * (size // 256 + 1))[:size])
    return fragment6(q, mtu)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = []
    f = v4_frags()
    seeds.append(b'\x00' + b''.join(raw_op(x) for x in f))
    seeds.append(b'\x00' + b''.join(raw_op(x) for x in reversed(f)))
    seeds.append(b'\x00' + b''.join(raw_op(x) for x in f[:1] + f))  # duplicate
    seeds.append(b'\x00' + raw_op(f[0]) + age_op(0xff) + age_op(0xff) + raw_op(f[1]))
    seeds.append(b'\x00' + b''.join(raw_op(x, who=0x08, prefix=bytes(range(14))) for x in f))
    seeds.append(b'\x1e' + b''.join(raw_op(x, who=1) for x in f[:2]) +
                 b''.join(raw_op(x, who=2) for x in f))
    t = fragment(v4(2000, proto=TCP), fragsize=600)
    seeds.append(b'\x00' + b''.join(raw_op(x) for x in t))
    o = v4(2500, options=[IPOption_RR(routers=['1.2.3.4']), IPOption_Security()])
    seeds.append(b'\x00' + cut_op(o, 1000) + cut_op(o, 700, rt=True))
    seeds.append(b'\x00' + cut_op(v4(4000), 1500, order=1) + cut_op(v4(4000), 576, order=2))
    hbh = IPv6ExtHdrHopByHop()
    dst = IPv6ExtHdrDestOpt()
    rt = IPv6ExtHdrRouting(addresses=['2001:db8::9'])
    for ext in [(), (hbh, dst), (hbh, dst, rt)]:
        f6 = v6_frags(3000, ext)
        seeds.append(b'\x00' + b''.join(raw_op(x) for x in f6))
        seeds.append(b'\x00' + b''.join(raw_op(x) for x in reversed(f6)))
        seeds.append(b'\x00' + cut_op(v6(3000, ext), 1280, rt=True) +
                     cut_op(v6(3000, ext), 1280, order=5, k=1))
    # overlap: the second fragment shifted back by 8 bytes
    f = v4_frags(2000, mtu=1000)
    g = f[1].copy()
    g.frag -= 1
    del g.chksum
    seeds.append(b'\x00' + raw_op(f[0]) + raw_op(g) + raw_op(f[1]))
    for s in seeds:
        name = hashlib.sha1(s).hexdigest()
        with open(os.path.join(out, name), 'wb') as fh:
            fh.write(s)
    print(len(seeds), 'seeds in', out)


if __name__ == '__main__':
    main()
