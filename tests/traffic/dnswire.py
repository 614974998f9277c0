"""DNS messages (RFC 1035) as resolvers really send them: names compressed against every
earlier name in the message, including names inside RDATA (CNAME targets, SOA), EDNS0
(RFC 6891), HTTPS records (RFC 9460), NXDOMAIN and NODATA with the zone's SOA."""
import struct

from wire import addr

TYPE_A, TYPE_CNAME, TYPE_SOA, TYPE_AAAA, TYPE_OPT, TYPE_HTTPS = 1, 5, 6, 28, 41, 65
CLASS_IN = 1
RCODE_NXDOMAIN = 3
EDNS_UDP_SIZE = 1232            # the DNS flag day 2020 default
SOA_TTL = 900


class Message:
    """One message under construction; suffixes remember where each name was written."""

    def __init__(self):
        self.buf = bytearray(12)
        self.suffixes = {}
        self.counts = [0, 0, 0, 0]         # question, answer, authority, additional

    def name(self, name):
        """The wire form of name at the current end of the message, compressed (s4.1.4)."""
        labels = name.split(".")
        out = bytearray()
        for i in range(len(labels)):
            suffix = ".".join(labels[i:]).lower()
            if suffix in self.suffixes:
                return bytes(out + struct.pack("!H", 0xC000 | self.suffixes[suffix]))
            where = len(self.buf) + len(out)
            if where < 0x4000:
                self.suffixes[suffix] = where
            out += bytes([len(labels[i])]) + labels[i].encode()
        return bytes(out + b"\x00")

    def question(self, qname, qtype):
        self.buf += self.name(qname) + struct.pack("!HH", qtype, CLASS_IN)
        self.counts[0] += 1

    def record(self, section, owner, rtype, ttl, rdata):
        """rdata: bytes, or a function of the message giving them, for names inside RDATA,
        which compress against what precedes them."""
        self.buf += self.name(owner) + struct.pack("!HHIH", rtype, CLASS_IN, ttl, 0)
        length_at = len(self.buf) - 2
        self.buf += rdata(self) if callable(rdata) else rdata
        struct.pack_into("!H", self.buf, length_at, len(self.buf) - length_at - 2)
        self.counts[section] += 1

    def edns(self):
        self.buf += b"\x00" + struct.pack("!HHIH", TYPE_OPT, EDNS_UDP_SIZE, 0, 0)
        self.counts[3] += 1

    def finish(self, qid, flags):
        struct.pack_into("!HH4H", self.buf, 0, qid, flags, *self.counts)
        return bytes(self.buf)


def query(qid, qname, qtype, edns):
    m = Message()
    m.question(qname, qtype)
    if edns:
        m.edns()
    return m.finish(qid, 0x0100)           # RD


def zone_of(name):
    labels = name.split(".")
    keep = 3 if len(labels) > 2 and labels[-2] in ("co", "com") and len(labels[-1]) == 2 else 2
    return ".".join(labels[-keep:])


def soa(zone, serial):
    def rdata(m):
        return m.name("ns1." + zone) + m.name("hostmaster." + zone) + \
            struct.pack("!5I", serial, 7200, 3600, 1209600, 300)
    return rdata


def https_rdata(entry):
    """HTTPS 1 . alpn=h3,h2 ipv4hint=... [ipv6hint=...]: keys in ascending order (s2.2)."""
    params = [(1, b"\x02h3\x02h2"), (4, b"".join(addr(a) for a in entry["a"]))]
    if entry["aaaa"]:
        params.append((6, b"".join(addr(a) for a in entry["aaaa"])))
    body = b"".join(struct.pack("!HH", key, len(value)) + value for key, value in params)
    return struct.pack("!H", 1) + b"\x00" + body


def answer(m, qname, qtype, entry):
    """The answer section for qname: the CNAME chain, then the records of the type asked
    at its end. True if anything of that type was there (else it is NODATA)."""
    owner, ttl = qname, entry["ttl"]
    for target in entry["chain"]:
        m.record(1, owner, TYPE_CNAME, max(ttl, 300), lambda m, t=target: m.name(t))
        owner = target
    if qtype == TYPE_A:
        for a in entry["a"]:
            m.record(1, owner, TYPE_A, ttl, addr(a))
        return bool(entry["a"])
    if qtype == TYPE_AAAA:
        for a in entry["aaaa"]:
            m.record(1, owner, TYPE_AAAA, ttl, addr(a))
        return bool(entry["aaaa"])
    if qtype == TYPE_HTTPS and entry["provider"] == "cloudflare":
        m.record(1, owner, TYPE_HTTPS, 300, https_rdata(entry))
        return True
    return False


def response(qid, qname, qtype, edns, entry, serial):
    """entry None: NXDOMAIN. Returns the message, and whether it is NODATA (the name exists,
    nothing of the type asked: the SOA in the authority section, RFC 2308 s2.2)."""
    m = Message()
    m.question(qname, qtype)
    nodata = False
    if entry is None:
        m.record(2, zone_of(qname), TYPE_SOA, SOA_TTL, soa(zone_of(qname), serial))
    elif not answer(m, qname, qtype, entry):
        end = entry["chain"][-1] if entry["chain"] else qname
        m.record(2, zone_of(end), TYPE_SOA, SOA_TTL, soa(zone_of(end), serial))
        nodata = True
    if edns:
        m.edns()
    rcode = RCODE_NXDOMAIN if entry is None else 0
    return m.finish(qid, 0x8180 | rcode), nodata     # QR RD RA
