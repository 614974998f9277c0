"""The VMs behind the gateway and their conversations on its VM-facing link: who they are
(MAC, addresses, VLAN), a VM talking to one remote address (Link), and a TCP connection
over it that keeps sequence numbers, timestamps and ACKs as a Linux client and a busy
server would."""
import struct

import wire

GW_MAC = "02:00:00:ee:ee:01"
GW_IP4 = "10.10.0.1"
GW_IP6 = "fd00:10:10::1"
MSS = 1460
SEGMENT = MSS - 12                  # payload per segment: MSS less the timestamp option
CLIENT_TTL = 64
EPHEMERAL = (40000, 60999)          # clear of ports Wireshark's heuristics claim (33434...)


class Vm:
    """One agent VM. VLAN VMs sit on their own subnet behind the gateway's VLAN address."""

    def __init__(self, idx, vlan, dual_stack):
        self.idx = idx
        self.mac = "52:54:00:4e:47:%02x" % idx
        self.vlan = vlan
        if vlan:
            self.ip4 = "10.20.%d.%d" % (vlan % 100, 100 + idx)
            self.gw_ip4 = "10.20.%d.1" % (vlan % 100)
        else:
            self.ip4 = "10.10.0.%d" % (100 + idx)
            self.gw_ip4 = GW_IP4
        self.ip6 = "fd00:10:10::%x" % (0x100 + idx) if dual_stack else None
        # EUI-64 from the MAC (RFC 4291 app. A): 52:54:00 -> 5054:00ff:fe..
        self.ll6 = "fe80::5054:ff:fe4e:47%02x" % idx
        self.next_port = EPHEMERAL[0] + 97 * idx

    def port(self):
        """A source port no earlier conversation of this VM used: captures never reuse one,
        so no reader has to tell two connections on one 5-tuple apart."""
        p = self.next_port
        self.next_port += 1
        if self.next_port > EPHEMERAL[1]:
            self.next_port = EPHEMERAL[0]
        return p

    def manifest(self):
        return {"idx": self.idx, "mac": self.mac, "ip4": self.ip4, "ip6": self.ip6,
                "vlan": self.vlan}


def make_vms(count=16, tagged=4):
    """count VMs: the last `tagged` on VLANs 101.., the first six and the first tagged one
    dual-stack."""
    vms = []
    for i in range(count):
        vlan = 101 + i - (count - tagged) if i >= count - tagged else 0
        vms.append(Vm(i, vlan, i < 6 or i == count - tagged))
    return vms


class Link:
    """Frames between a VM and one remote address, both ways, over IPv4 or IPv6."""

    def __init__(self, cap, vm, remote, remote_ttl, v6=None):
        v6 = ":" in remote if v6 is None else v6
        self.cap, self.vm = cap, vm
        self.local = wire.addr(vm.ip6 if v6 else vm.ip4)
        self.remote = wire.addr(remote)
        self.remote_ttl = remote_ttl
        self.ident = {True: 0, False: 0}

    def addresses(self, up):
        return (self.local, self.remote) if up else (self.remote, self.local)

    def send(self, t, up, proto, l4, ident=None, flow_label=0):
        """Add one frame; up: from the VM. IPv4 IDs count up per direction unless given."""
        src, dst = self.addresses(up)
        if ident is None:
            self.ident[up] = (self.ident[up] + 1) & 0xFFFF
            ident = self.ident[up]
        ethertype, packet = wire.ip_packet(src, dst, proto, l4, CLIENT_TTL if up else
                                           self.remote_ttl, ident, flow_label)
        eth_src, eth_dst = (self.vm.mac, GW_MAC) if up else (GW_MAC, self.vm.mac)
        return self.cap.add(t, wire.ethernet(eth_src, eth_dst, ethertype, packet, self.vm.vlan))

    def udp(self, t, up, local_port, remote_port, payload, **kw):
        src, dst = self.addresses(up)
        ports = (local_port, remote_port) if up else (remote_port, local_port)
        return self.send(t, up, wire.PROTO_UDP, wire.udp(src, dst, *ports, payload), **kw)


def timestamp_option(value, echo):
    return struct.pack("!BBBBII", 1, 1, 8, 10, value & 0xFFFFFFFF, echo & 0xFFFFFFFF)


class Tcp:
    """One TCP connection from a VM port to a remote port. The clock `t` moves forward with
    each segment; the receiver ACKs every second full segment and the last one."""

    def __init__(self, link, rng, t, rtt, sport, dport, flow_label=0):
        self.link, self.rng, self.t, self.rtt = link, rng, t, rtt
        self.sport, self.dport = sport, dport
        self.seq = {True: rng.getrandbits(32), False: rng.getrandbits(32)}
        self.ts = {True: rng.getrandbits(32), False: rng.getrandbits(32)}
        self.t0 = t
        self.server_window = rng.choice([501, 1026, 2052, 8192])
        self.flow_label = flow_label

    def ts_now(self, up):
        return self.ts[up] + int((self.t - self.t0) * 1000)

    def segment(self, up, flags, payload=b"", dt=0.0, options=None):
        self.t += dt
        if options is None:
            options = timestamp_option(self.ts_now(up), self.ts_now(not up))
        src, dst = self.link.addresses(up)
        ports = (self.sport, self.dport) if up else (self.dport, self.sport)
        ack = self.seq[not up] if flags & wire.TCP_ACK else 0
        if flags & wire.TCP_SYN:        # unscaled in a SYN (RFC 7323 s2.2): the full 16 bits
            window = 64240 if up else 65535
        else:
            window = 502 if up else self.server_window
        seg = wire.tcp(src, dst, *ports, self.seq[up], ack, flags, window, options, payload)
        index = self.link.send(self.t, up, wire.PROTO_TCP, seg,
                               flow_label=self.flow_label if up else 0)
        grow = len(payload) + (1 if flags & (wire.TCP_SYN | wire.TCP_FIN) else 0)
        self.seq[up] = (self.seq[up] + grow) & 0xFFFFFFFF
        return index

    def handshake(self):
        syn_opts = struct.pack("!BBH", 2, 4, MSS) + b"\x04\x02" + \
            struct.pack("!BBII", 8, 10, self.ts[True], 0) + b"\x01" + b"\x03\x03\x07"
        self.segment(True, wire.TCP_SYN, options=syn_opts)
        synack_opts = struct.pack("!BBH", 2, 4, self.rng.choice([1460, 1440, 1400])) + \
            b"\x04\x02" + struct.pack("!BBII", 8, 10, self.ts[False], self.ts[True]) + \
            b"\x01" + bytes([3, 3, self.rng.choice([9, 10, 13])])
        self.segment(False, wire.TCP_SYN | wire.TCP_ACK, dt=self.rtt, options=synack_opts)
        self.segment(True, wire.TCP_ACK, dt=0.00004)

    def send(self, up, data, gap, ack_every=2):
        """data from one side in MSS-sized segments, PSH on the last, with the other side's
        ACKs. Returns the frame indexes of the data segments."""
        indexes = []
        for off in range(0, len(data), SEGMENT):
            last = off + SEGMENT >= len(data)
            flags = wire.TCP_ACK | (wire.TCP_PSH if last else 0)
            indexes.append(self.segment(up, flags, data[off:off + SEGMENT], dt=gap))
            if ack_every and (len(indexes) % ack_every == 0 or last):
                self.segment(not up, wire.TCP_ACK, dt=0.00002)
        return indexes

    def close(self):
        self.segment(True, wire.TCP_FIN | wire.TCP_ACK, dt=0.001)
        self.segment(False, wire.TCP_FIN | wire.TCP_ACK, dt=self.rtt)
        self.segment(True, wire.TCP_ACK, dt=0.00004)
