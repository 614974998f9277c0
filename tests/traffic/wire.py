"""Frames byte by byte: Ethernet (optionally 802.1Q), IPv4/IPv6, TCP, UDP, ICMP, ARP, and
a pcap writer. Hand-built rather than through scapy: generation runs on every build of
the tests, and struct is some twenty times faster; tshark in tests/diff checks the result.
"""
import ipaddress
import struct

ETH_IPV4, ETH_ARP, ETH_VLAN, ETH_IPV6 = 0x0800, 0x0806, 0x8100, 0x86DD
PROTO_ICMP, PROTO_TCP, PROTO_UDP, PROTO_ICMPV6 = 1, 6, 17, 58
PCAP_EPOCH = 1717200000         # synthetic capture start: 2024-06-01 00:00 UTC

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def addr(text):
    """Packed bytes of an IPv4 or IPv6 address in text form."""
    return ipaddress.ip_address(text).packed


def mac(text):
    return bytes.fromhex(text.replace(":", ""))


def checksum(data):
    """RFC 1071 one's complement sum of data, folded and inverted."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def pseudo_header(src, dst, proto, length):
    """The addresses and length a TCP, UDP or ICMPv6 checksum covers (RFC 793, RFC 8200 8.1)."""
    if len(src) == 4:
        return src + dst + struct.pack("!BBH", 0, proto, length)
    return src + dst + struct.pack("!IxxxB", length, proto)


def ethernet(src, dst, ethertype, payload, vlan=0):
    if vlan:
        return mac(dst) + mac(src) + struct.pack("!HHH", ETH_VLAN, vlan, ethertype) + payload
    return mac(dst) + mac(src) + struct.pack("!H", ethertype) + payload


def ipv4(src, dst, proto, payload, ttl=64, ident=0, dont_fragment=True):
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident,
                       0x4000 if dont_fragment else 0, ttl, proto, 0, src, dst)
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:] + payload


def ipv6(src, dst, next_header, payload, hop_limit=64, flow_label=0):
    return struct.pack("!IHBB16s16s", 6 << 28 | flow_label, len(payload), next_header,
                       hop_limit, src, dst) + payload


def ip_packet(src, dst, proto, payload, ttl=64, ident=0, flow_label=0):
    """IPv4 or IPv6 by the addresses' length."""
    if len(src) == 4:
        return ETH_IPV4, ipv4(src, dst, proto, payload, ttl, ident)
    return ETH_IPV6, ipv6(src, dst, proto, payload, ttl, flow_label)


def tcp(src, dst, sport, dport, seq, ack, flags, window, options=b"", payload=b""):
    """A TCP segment with its checksum; options must already be padded to 4 bytes."""
    head = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (20 + len(options)) // 4 << 4,
                       flags, window, 0, 0) + options
    seg = head + payload
    csum = checksum(pseudo_header(src, dst, PROTO_TCP, len(seg)) + seg)
    return seg[:16] + struct.pack("!H", csum) + seg[18:]


def udp(src, dst, sport, dport, payload):
    length = 8 + len(payload)
    csum = checksum(pseudo_header(src, dst, PROTO_UDP, length) +
                    struct.pack("!HHHH", sport, dport, length, 0) + payload)
    return struct.pack("!HHHH", sport, dport, length, csum or 0xFFFF) + payload


def icmp4(icmp_type, code, rest, payload):
    """rest: the 4 bytes after the checksum (id and sequence, or unused and next-hop MTU)."""
    msg = struct.pack("!BBH", icmp_type, code, 0) + rest + payload
    return msg[:2] + struct.pack("!H", checksum(msg)) + msg[4:]


def icmp6(src, dst, icmp_type, code, body):
    msg = struct.pack("!BBH", icmp_type, code, 0) + body
    csum = checksum(pseudo_header(src, dst, PROTO_ICMPV6, len(msg)) + msg)
    return msg[:2] + struct.pack("!H", csum) + msg[4:]


def arp(op, sender_mac, sender_ip, target_mac, target_ip):
    return struct.pack("!HHBBH", 1, ETH_IPV4, 6, 4, op) + mac(sender_mac) + \
        addr(sender_ip) + mac(target_mac) + addr(target_ip)


class Capture:
    """Frames with synthetic times; written in time order, ties in the order added, so the
    file depends on nothing but what was added."""

    def __init__(self):
        self.frames = []

    def add(self, t, frame):
        self.frames.append((t, len(self.frames), frame))
        return len(self.frames) - 1

    def __len__(self):
        return len(self.frames)

    def write(self, path):
        """Little-endian microsecond pcap, Ethernet link type. Returns counts for the manifest;
        afterwards number[i] is the frame number (from 1) of the i-th frame added."""
        frames = sorted(self.frames, key=lambda x: (x[0], x[1]))
        self.number = [0] * len(frames)
        for k, (_, i, _) in enumerate(frames):
            self.number[i] = k + 1
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t, _, frame in frames:
                us = round(t * 1e6)
                f.write(struct.pack("<IIII", PCAP_EPOCH + us // 1000000, us % 1000000,
                                    len(frame), len(frame)))
                f.write(frame)
        total = sum(len(frame) for _, _, frame in frames)
        return {"packets": len(frames), "frame_bytes": total,
                "avg_frame_captured": round(total / max(1, len(frames)), 2)}
