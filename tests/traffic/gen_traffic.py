#!/usr/bin/python3
"""Deterministic captures of what a gateway's VM-facing link sees, for namegate's tests and
benchmarks (see README.md beside this file).

Writes into --outdir: mix.pcap, hello.pcap, small64.pcap, hosts.txt, manifest.json and
mix-quic.txt (mix.pcap's client QUIC Initials and the name each completes). The same
arguments give byte-identical files: times are synthetic, every random choice comes from
generators seeded from --seed, and nothing iterates a set.

Needs python3-cryptography (QUIC Initial protection); nothing else outside the stdlib.
"""
import argparse
import json
import os
import random
import struct
import sys

import dnswire      # the modules beside this file: python puts its folder on sys.path
import flows
import names
import quicwire
import tlswire
import wire

RESOLVERS4 = ["1.1.1.1", "8.8.8.8", "9.9.9.9"]
RESOLVERS6 = ["2606:4700:4700::1111", "2620:fe::fe"]
RESOLVER_TTL = 57
HELLO_STYLES = (["openssl", "chrome", "go", "firefox"], [45, 30, 15, 10])
PQ_SHARE = 0.3                  # hellos with an X25519MLKEM768 key share
QUIC_FIRST_CHUNK = 1150         # ClientHello bytes in a browser's first Initial
MIX_PACKETS_PER_SECOND = 1700   # spreads the mix's sessions over a plausible time span


def rng_for(seed, purpose):
    """An independent generator per purpose, so that sizing one file changes no other."""
    return random.Random("%d/%s" % (seed, purpose))


class Counts:
    """What went into a capture, for the manifest; keys in a fixed order."""
    KEYS = ["sessions", "tls_hellos", "tls_hellos_pq", "tls_hellos_2seg", "sni_in_2nd_segment",
            "dns_queries", "dns_responses", "dns_nxdomain", "dns_nodata", "quic_initials",
            "quic_hellos_2dgram", "http_requests", "icmp", "arp_nd"]

    def __init__(self):
        self.n = dict.fromkeys(self.KEYS, 0)

    def add(self, key, k=1):
        self.n[key] += k


class Traffic:
    """The world the captures are drawn from: VMs, names, what DNS says of them."""

    def __init__(self, seed, host_count):
        self.seed = seed
        self.hosts = names.make_hosts(rng_for(seed, "hosts"), host_count)
        self.dns = names.dns_table(self.hosts, rng_for(seed, "dns"))
        self.vms = flows.make_vms()
        # popular names first: a Zipf-like weight over the list's order
        self.popularity = [1.0 / (1 + i) ** 0.8 for i in range(len(self.hosts))]

    def popular_host(self, rng):
        return rng.choices(self.hosts, self.popularity)[0]

    def server_address(self, rng, vm, host):
        """Where vm connects for host: over IPv6 when both ends have it, most of the time."""
        entry = self.dns[host]
        if vm.ip6 is not None and entry["aaaa"] and rng.random() < 0.6:
            return rng.choice(entry["aaaa"])
        return rng.choice(entry["a"])


def hello_style(rng):
    return rng.choices(*HELLO_STYLES)[0], rng.random() < PQ_SHARE


def emit_hello(tcp, rng, host, counts, dt):
    """One ClientHello record from the client: one segment, or two when the post-quantum key
    share takes it past the MSS (the name then sometimes lands in the second)."""
    style, pq = hello_style(rng)
    rec = tlswire.hello_record(tlswire.client_hello(rng, host, style, pq))
    counts.add("tls_hellos")
    counts.add("tls_hellos_pq", pq)
    if len(rec) > flows.SEGMENT:
        counts.add("tls_hellos_2seg")
        counts.add("sni_in_2nd_segment", host.encode() not in rec[:flows.SEGMENT])
    tcp.send(True, rec, dt, ack_every=0)
    return pq


class Mix:
    """mix.pcap: sessions of every kind started at random times, then merged by time."""

    def __init__(self, world, rng, counts, max_download):
        self.w, self.r, self.counts = world, rng, counts
        self.cap = wire.Capture()
        self.max_download = max_download
        self.quic_initials = []          # (frame index, name or "" when the hello goes on)

    # --- DNS -------------------------------------------------------------------------------
    def lookup(self, vm, t, qname, entry, want_aaaa=False):
        """A stub resolver's lookup: A, AAAA when asked for and often otherwise, sometimes
        HTTPS, from one port, each answered. entry None: the name does not exist. Returns
        when the answers are in."""
        r = self.r
        over6 = vm.ip6 is not None and r.random() < 0.3
        resolver = r.choice(RESOLVERS6 if over6 else RESOLVERS4)
        link = flows.Link(self.cap, vm, resolver, RESOLVER_TTL, over6)
        port, edns, rtt = vm.port(), r.random() < 0.5, r.uniform(0.001, 0.03)
        qtypes = [dnswire.TYPE_A] + \
            ([dnswire.TYPE_AAAA] if want_aaaa or r.random() < 0.7 else []) + \
            ([dnswire.TYPE_HTTPS] if r.random() < 0.15 else [])
        for i, qtype in enumerate(qtypes):
            qid = r.getrandbits(16)
            link.udp(t + i * 0.00003, True, port, 53, dnswire.query(qid, qname, qtype, edns),
                     ident=r.getrandbits(16))
            msg, nodata = dnswire.response(qid, qname, qtype, edns, entry,
                                           r.randrange(1, 1 << 31))
            link.udp(t + rtt + i * 0.0002, False, port, 53, msg, ident=r.getrandbits(16))
            self.counts.add("dns_queries")
            self.counts.add("dns_responses")
            self.counts.add("dns_nxdomain", entry is None)
            self.counts.add("dns_nodata", nodata)
        return t + rtt + 0.001

    def lookup_only(self, t):
        """A name looked up and not (yet) connected to."""
        host = self.w.popular_host(self.r)
        self.lookup(self.r.choice(self.w.vms), t, host, self.w.dns[host])

    def nxdomain(self, t):
        self.lookup(self.r.choice(self.w.vms), t, names.unknown_name(self.r, self.w.hosts), None)

    # --- TCP: TLS and plain HTTP ----------------------------------------------------------
    def connect(self, vm, t, host, dport, rtt, lookup_share):
        """A TCP connection to one of host's addresses, after a lookup of host (asking for
        AAAA when that is the family used) in lookup_share of the cases."""
        r = self.r
        addr = self.w.server_address(r, vm, host)
        if r.random() < lookup_share:
            t = self.lookup(vm, t, host, self.w.dns[host], want_aaaa=":" in addr)
        link = flows.Link(self.cap, vm, addr, r.randrange(46, 60))
        return flows.Tcp(link, r, t, rtt, vm.port(), dport, r.getrandbits(20))

    def download_size(self):
        return min(self.max_download, int(self.r.lognormvariate(9.3, 1.2)))

    def tls_exchange(self, tcp, kind):
        """What follows the handshake: an API call or two, a token stream, a download..."""
        r, rtt = self.r, tcp.rtt
        if kind == "api":
            for _ in range(r.choice([1, 1, 2, 3])):
                tcp.send(True, tlswire.opaque_records(r, r.randrange(120, 2400)), 0.02)
                tcp.send(False, tlswire.opaque_records(r, r.randrange(200, 9000)), rtt)
        elif kind == "stream":          # server-sent events: many small records
            tcp.send(True, tlswire.opaque_records(r, r.randrange(300, 1800)), 0.001)
            for i in range(r.randrange(15, 90)):
                tcp.segment(False, wire.TCP_ACK | wire.TCP_PSH,
                            tlswire.opaque_records(r, r.randrange(30, 380)),
                            dt=r.uniform(0.01, 0.05))
                if i % 2:
                    tcp.segment(True, wire.TCP_ACK, dt=0.00003)
        elif kind == "download":
            tcp.send(True, tlswire.opaque_records(r, r.randrange(100, 600)), 0.001)
            tcp.send(False, tlswire.opaque_records(r, self.download_size()),
                     r.uniform(0.00002, 0.0002))
        elif kind == "upload":
            tcp.send(True, tlswire.opaque_records(r, self.download_size()), 0.0001)
            tcp.send(False, tlswire.opaque_records(r, r.randrange(100, 600)), rtt)
        else:
            tcp.send(True, tlswire.opaque_records(r, r.randrange(90, 900)), 0.001)
            tcp.send(False, tlswire.opaque_records(r, r.randrange(60, 1400)), rtt)

    def tls_session(self, t):
        r = self.r
        vm, host = r.choice(self.w.vms), self.w.popular_host(r)
        tcp = self.connect(vm, t, host, 443, r.uniform(0.004, 0.12), 0.55)
        tcp.handshake()
        pq = emit_hello(tcp, r, host, self.counts, 0.0001)
        tcp.segment(False, wire.TCP_ACK, dt=tcp.rtt * 0.9)
        tcp.send(False, tlswire.server_flight(r, pq), 0.00003)
        # the client's CCS and Finished, then the exchange
        tcp.send(True, tlswire.record(tlswire.CHANGE_CIPHER_SPEC, b"\x01") +
                 tlswire.record(tlswire.APPLICATION_DATA, r.randbytes(53)), 0.0002, ack_every=0)
        self.tls_exchange(tcp, r.choices(["api", "stream", "short", "download", "upload"],
                                         [38, 20, 28, 10, 4])[0])
        if r.random() < 0.6:
            tcp.segment(True, wire.TCP_ACK | wire.TCP_PSH,
                        tlswire.record(tlswire.ALERT, r.randbytes(19)), dt=0.01)
            tcp.close()
        self.counts.add("sessions")

    def http_request(self, host, rng):
        """An apt or apk request head for one file of host's mirror."""
        pkg = names.word(rng)
        if host in names.APK_MIRRORS:
            path = rng.choice(["/alpine/v3.20/main/x86_64/APKINDEX.tar.gz",
                               "/alpine/v3.20/community/x86_64/%s-%d.%d-r%d.apk" %
                               (pkg, rng.randrange(1, 9), rng.randrange(20), rng.randrange(4))])
            agent = "apk-tools/2.14.4, compiled for x86_64."
        else:
            dist = "ubuntu" if "ubuntu" in host else "debian"
            path = rng.choice(["/%s/dists/stable/InRelease" % dist,
                               "/%s/pool/main/%s/%s/%s_%d.%d-%d_amd64.deb" %
                               (dist, pkg[0], pkg, pkg, rng.randrange(1, 9), rng.randrange(30),
                                rng.randrange(1, 5))])
            agent = "Debian APT-HTTP/1.3 (2.6.1)"
        return ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: */*\r\n\r\n" %
                (path, host, agent)).encode()

    def http_response(self):
        size = self.download_size()
        head = ("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: "
                "application/octet-stream\r\nConnection: keep-alive\r\n\r\n" % size).encode()
        return head + self.r.randbytes(size)

    def http_session(self, t):
        """Plain HTTP to a package mirror: several requests on one keep-alive connection,
        one after another or (as apt does) pipelined."""
        r = self.r
        vm = r.choice(self.w.vms)
        host = r.choice(names.APT_MIRRORS + names.APK_MIRRORS)
        tcp = self.connect(vm, t, host, 80, r.uniform(0.005, 0.05), 0.5)
        tcp.handshake()
        requests = [self.http_request(host, r) for _ in range(r.randrange(1, 5))]
        if r.random() < 0.4:
            for req in requests:
                tcp.segment(True, wire.TCP_ACK | wire.TCP_PSH, req, dt=0.0002)
            for _ in requests:
                tcp.send(False, self.http_response(), r.uniform(0.00002, 0.0002))
        else:
            for req in requests:
                tcp.segment(True, wire.TCP_ACK | wire.TCP_PSH, req, dt=0.001)
                tcp.send(False, self.http_response(), r.uniform(0.00002, 0.0002))
        self.counts.add("http_requests", len(requests))
        tcp.close()
        self.counts.add("sessions")

    def running_download(self, t, segments):
        """A download already under way when the capture starts: no handshake, no hello."""
        r = self.r
        vm = r.choice([v for v in self.w.vms if not v.vlan])
        tcp = self.connect(vm, t, self.w.popular_host(r), 443, 0.03, 0)
        tcp.send(False, r.randbytes(flows.SEGMENT * segments), 0.00005)

    # --- QUIC ------------------------------------------------------------------------------
    def quic_session(self, t):
        r = self.r
        vm, host = r.choice(self.w.vms), self.w.popular_host(r)
        addr = self.w.server_address(r, vm, host)
        if r.random() < 0.5:
            t = self.lookup(vm, t, host, self.w.dns[host], want_aaaa=":" in addr)
        link = flows.Link(self.cap, vm, addr, r.randrange(46, 60))
        port, dcid, server_cid = vm.port(), r.randbytes(8), r.randbytes(8)
        pq = r.random() < PQ_SHARE
        hello = tlswire.client_hello(r, host, "chrome", pq, quic=True)
        datagrams = quicwire.client_initials(dcid, hello, QUIC_FIRST_CHUNK)
        for i, dgram in enumerate(datagrams):
            index = link.udp(t, True, port, 443, dgram, ident=0)
            self.quic_initials.append((index, host if i == len(datagrams) - 1 else ""))
            t += 0.00002
        self.counts.add("quic_initials", len(datagrams))
        self.counts.add("quic_hellos_2dgram", len(datagrams) > 1)
        t += r.uniform(0.005, 0.1)
        self.quic_server_reply(link, port, t, dcid, server_cid, pq)
        self.counts.add("sessions")

    def quic_server_reply(self, link, port, t, dcid, server_cid, pq):
        """The server's Initial and Handshake packets, the client's Handshake, then 1-RTT
        data both ways (the client's short headers carry the server's CID)."""
        r = self.r
        link.udp(t, False, port, 443, quicwire.server_initial(dcid, server_cid,
                                                               tlswire.server_hello(r, pq)),
                 ident=0)
        for _ in range(r.randrange(1, 3)):
            t += 0.0001
            link.udp(t, False, port, 443,
                     quicwire.opaque_handshake(r, b"", server_cid, r.randrange(900, 1150)),
                     ident=0)
        t += 0.001
        link.udp(t, True, port, 443,
                 quicwire.opaque_handshake(r, server_cid, b"", r.randrange(40, 90)), ident=0)
        for i in range(r.randrange(4, 30)):
            t += 0.0003
            link.udp(t, False, port, 443, quicwire.short_packet(r, b"", r.randrange(40, 1200)),
                     ident=0)
            if i % 2:
                link.udp(t + 0.00002, True, port, 443,
                         quicwire.short_packet(r, server_cid, r.randrange(24, 48)), ident=0)

    # --- ICMP, ARP, NDP --------------------------------------------------------------------
    def ping(self, vm, t, over6):
        r = self.r
        target = r.choice(RESOLVERS6) if over6 else r.choice(RESOLVERS4)
        link = flows.Link(self.cap, vm, target, RESOLVER_TTL, over6)
        src, dst = link.addresses(True)
        ident = r.getrandbits(16)
        for seq in range(1, r.randrange(3, 6)):
            data = struct.pack("!Q", seq) + bytes(range(0x10, 0x38))
            if over6:
                link.send(t, True, wire.PROTO_ICMPV6, wire.icmp6(
                    src, dst, 128, 0, struct.pack("!HH", ident, seq) + data))
                link.send(t + 0.012, False, wire.PROTO_ICMPV6, wire.icmp6(
                    dst, src, 129, 0, struct.pack("!HH", ident, seq) + data))
            else:
                link.send(t, True, wire.PROTO_ICMP,
                          wire.icmp4(8, 0, struct.pack("!HH", ident, seq), data))
                link.send(t + 0.012, False, wire.PROTO_ICMP,
                          wire.icmp4(0, 0, struct.pack("!HH", ident, seq), data))
            self.counts.add("icmp", 2)
            t += 1.0

    def too_big(self, vm, t, over6):
        """A router on the path says a VM's full-size segment does not fit (RFC 1191,
        RFC 8201), quoting as much of it as the error may carry."""
        r = self.r
        host = self.w.popular_host(r)
        entry = self.w.dns[host]
        over6 = over6 and bool(entry["aaaa"])
        server = wire.addr(r.choice(entry["aaaa"] if over6 else entry["a"]))
        local = wire.addr(vm.ip6 if over6 else vm.ip4)
        payload = tlswire.record(tlswire.APPLICATION_DATA, r.randbytes(flows.SEGMENT - 5))
        seg = wire.tcp(local, server, vm.port(), 443, r.getrandbits(32), r.getrandbits(32),
                       wire.TCP_ACK, 502, b"", payload)
        router = "2001:db8:ffff::%x" % r.randrange(1, 0xFFFF) if over6 else \
            "198.18.%d.%d" % (r.randrange(256), r.randrange(1, 255))
        link = flows.Link(self.cap, vm, router, 250, over6)
        if over6:
            orig = wire.ipv6(local, server, wire.PROTO_TCP, seg, 63)
            body = struct.pack("!I", 1280) + orig[:1280 - 40 - 8]
            link.send(t, False, wire.PROTO_ICMPV6,
                      wire.icmp6(wire.addr(router), local, 2, 0, body))
        else:
            orig = wire.ipv4(local, server, wire.PROTO_TCP, seg, 63, r.getrandbits(16))
            link.send(t, False, wire.PROTO_ICMP,
                      wire.icmp4(3, 4, struct.pack("!HH", 0, 1400), orig[:576 - 20 - 8]))
        self.counts.add("icmp")

    def arp(self, vm, t):
        ask = wire.arp(1, vm.mac, vm.ip4, "00:00:00:00:00:00", vm.gw_ip4)
        self.cap.add(t, wire.ethernet(vm.mac, "ff:ff:ff:ff:ff:ff", wire.ETH_ARP, ask, vm.vlan))
        tell = wire.arp(2, flows.GW_MAC, vm.gw_ip4, vm.mac, vm.ip4)
        self.cap.add(t + 0.0001, wire.ethernet(flows.GW_MAC, vm.mac, wire.ETH_ARP, tell, vm.vlan))
        self.counts.add("arp_nd", 2)

    def neighbour(self, vm, t):
        """NS for the gateway's address from the VM's link-local one, and the gateway's NA."""
        gw, ll = wire.addr(flows.GW_IP6), wire.addr(vm.ll6)
        group = wire.addr("ff02::1:ff00:1")         # solicited-node group of ...::1
        ns = wire.icmp6(ll, group, 135, 0, bytes(4) + gw + b"\x01\x01" + wire.mac(vm.mac))
        self.cap.add(t, wire.ethernet(vm.mac, "33:33:ff:00:00:01", wire.ETH_IPV6,
                                      wire.ipv6(ll, group, wire.PROTO_ICMPV6, ns, 255), vm.vlan))
        na = wire.icmp6(gw, ll, 136, 0, struct.pack("!I", 0xE0000000) + gw + b"\x02\x01" +
                        wire.mac(flows.GW_MAC))
        self.cap.add(t + 0.0001, wire.ethernet(flows.GW_MAC, vm.mac, wire.ETH_IPV6,
                                               wire.ipv6(gw, ll, wire.PROTO_ICMPV6, na, 255),
                                               vm.vlan))
        self.counts.add("arp_nd", 2)

    def housekeeping(self, t):
        r = self.r
        vm = r.choice(self.w.vms)
        kind = r.choices(["ping", "ping6", "too_big", "too_big6", "arp", "nd"],
                         [35, 10, 12, 5, 25, 13])[0]
        if vm.ip6 is None:
            kind = {"ping6": "ping", "too_big6": "too_big", "nd": "arp"}.get(kind, kind)
        if kind.startswith("ping"):
            self.ping(vm, t, kind == "ping6")
        elif kind.startswith("too_big"):
            self.too_big(vm, t, kind == "too_big6")
        elif kind == "arp":
            self.arp(vm, t)
        else:
            self.neighbour(vm, t)

    # --- the whole capture -----------------------------------------------------------------
    def build(self, target):
        r = self.r
        duration = max(5.0, target / MIX_PACKETS_PER_SECOND)
        for _ in range(2):
            self.running_download(r.uniform(0, 0.5), r.randrange(200, 400) * target // 100000 + 40)
        kinds = [(60, self.tls_session), (16, self.lookup_only), (3, self.nxdomain),
                 (7, self.quic_session), (3, self.http_session), (8, self.housekeeping)]
        weights, makers = [w for w, _ in kinds], [m for _, m in kinds]
        while len(self.cap) < target:
            r.choices(makers, weights)[0](r.uniform(0, duration))
        return self.cap


def build_hello(world, rng, count, counts):
    """hello.pcap: ClientHellos only, each on its own flow, its segments back to back; every
    name of hosts.txt in turn, every other hello a popular one."""
    cap = wire.Capture()
    t = 0.0
    for i in range(count):
        vm = rng.choice(world.vms)
        host = world.hosts[i // 2 % len(world.hosts)] if i % 2 else world.popular_host(rng)
        link = flows.Link(cap, vm, world.server_address(rng, vm, host), 64)
        tcp = flows.Tcp(link, rng, t, 0.01, vm.port(), 443, rng.getrandbits(20))
        emit_hello(tcp, rng, host, counts, 0.00001)
        t += 0.0001
    return cap


def build_small64(world, rng, count, nb_flows=1024):
    """small64.pcap: 60-byte frames (64 on the wire with the FCS), PSH|ACK with 6 bytes of
    data and no TCP options, on nb_flows established flows of the untagged IPv4 VMs."""
    cap = wire.Capture()
    plain = [vm for vm in world.vms if not vm.vlan]
    state = []
    for i in range(nb_flows):
        vm = plain[i % len(plain)]
        host = world.hosts[rng.randrange(len(world.hosts))]
        state.append([flows.Link(cap, vm, rng.choice(world.dns[host]["a"]), 64), vm.port(),
                      443, rng.getrandbits(32), rng.getrandbits(32)])
    for i in range(count):
        f = state[rng.randrange(nb_flows)]
        link, sport, dport, seq, ack = f
        src, dst = link.addresses(True)
        seg = wire.tcp(src, dst, sport, dport, seq, ack, wire.TCP_ACK | wire.TCP_PSH, 502, b"",
                       rng.randbytes(6))
        link.send(i * 0.0000005, True, wire.PROTO_TCP, seg)
        f[3] = (seq + 6) & 0xFFFFFFFF
    return cap


def write_quic_oracle(path, cap, initials):
    """mix.pcap's client Initials by frame number, with the name of the ClientHello each
    one completes or "-" where the hello goes on in the next datagram. tests/diff checks it
    against tshark; test_dp_quic judges namegate's QUIC reader by it."""
    rows = sorted((cap.number[i], name or "-") for i, name in initials)
    with open(path, "w") as f:
        f.write("# frame name: mix.pcap's client QUIC Initials (gen_traffic.py)\n")
        f.writelines("%d %s\n" % row for row in rows)


def generate(args):
    os.makedirs(args.outdir, exist_ok=True)
    world = Traffic(args.seed, args.hosts)

    def out(name):
        return os.path.join(args.outdir, name)

    with open(out("hosts.txt"), "w") as f:
        f.writelines(h + "\n" for h in world.hosts)
    manifest = {"seed": args.seed, "hosts": len(world.hosts),
                "gateway": {"mac": flows.GW_MAC, "ip4": flows.GW_IP4, "ip6": flows.GW_IP6},
                "gateway_mac": flows.GW_MAC, "vms": [vm.manifest() for vm in world.vms]}

    counts = Counts()
    mix = Mix(world, rng_for(args.seed, "mix"), counts, args.max_download)
    cap = mix.build(args.mix_packets)
    manifest["mix.pcap"] = dict(cap.write(out("mix.pcap")), contents=counts.n)
    write_quic_oracle(out("mix-quic.txt"), cap, mix.quic_initials)

    counts = Counts()
    cap = build_hello(world, rng_for(args.seed, "hello"), args.hellos, counts)
    manifest["hello.pcap"] = dict(cap.write(out("hello.pcap")), contents=counts.n)

    cap = build_small64(world, rng_for(args.seed, "small64"), args.small_packets)
    manifest["small64.pcap"] = cap.write(out("small64.pcap"))

    with open(out("manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return manifest


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", required=True, help="where the files go (created if missing)")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--mix-packets", type=int, default=25000,
                    help="frames in mix.pcap, at least (the last session completes)")
    ap.add_argument("--hellos", type=int, default=5000, help="ClientHellos in hello.pcap")
    ap.add_argument("--small-packets", type=int, default=65536, help="frames in small64.pcap")
    ap.add_argument("--hosts", type=int, default=2000, help="names in hosts.txt")
    ap.add_argument("--max-download", type=int, default=400000,
                    help="bytes of the largest download or upload in mix.pcap")
    ap.add_argument("--stamp", help="touch this file when done (for meson)")
    args = ap.parse_args(argv)
    if args.hosts < 200 or min(args.mix_packets, args.hellos, args.small_packets) < 1:
        ap.error("--hosts must be at least 200 and every count positive")
    return args


def main(argv):
    args = parse_args(argv)
    manifest = generate(args)
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("done\n")
    print("gen_traffic: %s: mix.pcap %d frames, hello.pcap %d, small64.pcap %d" % (
        args.outdir, manifest["mix.pcap"]["packets"], manifest["hello.pcap"]["packets"],
        manifest["small64.pcap"]["packets"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
