"""IP fragments from a hostile VM: namegate reassembles IPv4 and IPv6 fragments itself and
judges the whole datagram exactly as an unfragmented one (identity, DNS, admission,
ClientHello, QUIC), then cuts it to the output port's MTU again. Overlapping fragments are
dropped (fragment_invalid), a VM past dataplane.max_fragments_per_vm datagrams in
reassembly is refused (vm_limit) without touching another VM's, and incomplete datagrams
time out (fragment_timeout).

One lab on net_pcap (Lab(port_type="pcap")): the daemon sees every fragment as the VM sent
it, as from a NIC (net_af_packet would have the kernel reassemble IPv4 first). Frames are
built in the VMs with scapy; outcomes are asserted on the internet side (server events,
dnsmasq's log, a capture on the internet namespace's link) and on the VM's counters.
Every attack is paired with an allowed control sent as fragments the same way.

Scapy TCP handshakes use source ports 20100-20199, whose RSTs vm1's own kernel drops (as
in test_conntrue); UDP tests bind a real socket on their source port to read the answer.
"""
import json
import os
import secrets
import time

import pytest

import lab as labmod
import lab_services as svc
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import _HELPERS, inet_capture, queried, resolve, snis, unique

PYPI4, PYPI6 = "203.0.113.10", "2001:db8::10"
GITHUB = "203.0.113.12"
VM1_6 = "fd77::11"
DEFAULT_MAX_FRAGMENTS_PER_VM = 8
FRAG_INVALID = 'namegate_drops_total{reason="fragment_invalid"}'
FRAG_TIMEOUT = 'namegate_drops_total{reason="fragment_timeout"}'


@pytest.fixture(scope="module")
def fr(request):
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("NAMEGATE_BIN is not set to a built namegate (no DPDK?)")
    # fd77::1 is a resolver too, for the IPv6 DNS test; max_fragments_per_vm stays at its
    # default, so the quota test states the shipped behaviour
    lab = labmod.Lab(mode="namegate", namegate_cmd=[binary, "-c", "{config}"],
                     port_type="pcap", config={"resolvers": [svc.RESOLVER, svc.RESOLVER6]})
    request.addfinalizer(lab.teardown)
    lab.setup()
    lab.vm_exec("vm1", "nft add table inet ngfrag && nft add chain inet ngfrag out "
                "'{ type filter hook output priority 0; }' && nft add rule inet ngfrag out "
                "tcp sport 20100-20199 tcp flags rst drop", check=True)
    return lab


# Extra scapy helpers: DNS over a real socket, fragments sent in a burst.
_FRAG_HELPERS = r"""
import socket
def udp_socket(port, v6=False):
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('::' if v6 else '0.0.0.0', port))
    s.settimeout(20)            # a cap for an answer that is expected
    return s

def recv(s):
    try:
        return s.recv(65535)
    except socket.timeout:
        return None

def recv_pending(s):
    # a datagram already in s, without waiting for one
    s.setblocking(False)
    try:
        return s.recv(65535)
    except BlockingIOError:
        return None
    finally:
        s.settimeout(20)

def dns_answer(data):
    # (rcode, [A/AAAA addresses]) of an answer, or None if none came
    if data is None:
        return None
    a = DNS(data)
    return [a.rcode, [str(a.an[i].rdata) for i in range(a.ancount) if a.an[i].type in (1, 28)]]

def query(qid, name):
    return DNS(id=qid, rd=1, qd=DNSQR(qname=name))
"""


def scapy_in(lab, vm, code, timeout=120):
    """Scapy code in a VM with test_conntrue's helpers and ours; returns its result()."""
    cp = lab.scapy(vm, _HELPERS + _FRAG_HELPERS + labmod._dedent(code), timeout=timeout)
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"scapy in {vm} printed no result (rc {cp.returncode}): "
                         f"{cp.stdout[-500:]} {cp.stderr[-1500:]}")


def frames_with(cap, needle):
    """Captured frames (any family, fragments too) whose bytes contain needle."""
    return cap.frames_with(needle)


def ipv4_frames(cap, src, dst, proto):
    """Captured IPv4 frames (fragments too) from src to dst of protocol proto."""
    key = bytes(map(int, src.split("."))) + bytes(map(int, dst.split(".")))
    return [f for f in frames_with(cap, key)
            if f[12:14] == b"\x08\x00" and f[23] == proto and f[26:34] == key]


def snis6(lab, client_port, sni=None):
    return [e["sni"] for e in lab.server_events(event="sni", client=VM1_6,
                                                client_port=client_port)
            if sni is None or e["sni"] == sni]


def udp_events(lab, client, port, addr=None):
    return [e for e in lab.server_events(event="udp", client=client, port=port)
            if addr is None or e["addr"] == addr]


# ---------------------------------------------------------------- 1-2. ClientHello

def denied_hello_in_fragments(fr, dst, port, cut, snis_of, min_frags):
    """A ClientHello for evil.test to dst:443 from port, as fragments (cut: scapy code that
    fragments the segment p), on an open flow: the server never reads the name (snis_of),
    none of its bytes leave, vm1 is reset. The control, an allowed hello cut the same way
    from port + 1, reaches the server."""
    with inet_capture(fr) as cap:
        r = scapy_in(fr, "vm1", f"""
            def cut(p):
                return {cut}
            ip, seq, ack = handshake({dst!r}, {port})
            s = listen({dst!r}, {port})
            frags = cut(seg(ip, {port}, seq, ack, client_hello('evil.test')))
            send(frags)
            reset = reset_seen(s)
            # control: an allowed hello, cut the same way
            ip, seq, ack = handshake({dst!r}, {port + 1})
            send(cut(seg(ip, {port + 1}, seq, ack, client_hello('pypi.org'))))
            result(reset=reset, frags=len(frags))
        """)
        assert wait_until(lambda: snis_of(fr, port + 1)) == ["pypi.org"], \
            "control: an allowed ClientHello sent as fragments did not reach the server"
        cap.sync()
    assert r["frags"] >= min_frags
    assert not snis_of(fr, port, "evil.test"), "the server read SNI evil.test from fragments"
    assert not frames_with(cap, b"evil.test"), "evil.test bytes reached the internet"
    assert r["reset"], "vm1 was not reset"


def test_denied_hello_in_ipv4_fragments_is_judged_whole(fr):
    """Attack 1: a ClientHello for evil.test as IPv4 fragments on an open flow to pypi.org."""
    assert resolve(fr, "pypi.org") == PYPI4
    denied_hello_in_fragments(fr, PYPI4, 20101, "fragment(p, fragsize=128)", snis, 4)


def test_denied_hello_in_ipv6_fragments_is_judged_whole(fr):
    """Attack 2: the same over IPv6 fragments (pypi.org's AAAA, from fd77::11)."""
    aaaa = fr.dig("vm1", "pypi.org", "AAAA").addresses
    assert aaaa == [PYPI6], aaaa
    denied_hello_in_fragments(
        fr, PYPI6, 20111, f"fragment6(IPv6(dst={PYPI6!r})/IPv6ExtHdrFragment()/p[TCP], 200)",
        snis6, 3)


# ---------------------------------------------------------------- 3. QUIC

def test_quic_in_ipv4_fragments_is_blocked(fr):
    """Attack 3: UDP to port 443 (QUIC, blocked) as IPv4 fragments to a bound address."""
    resolve(fr, "pypi.org")
    with inet_capture(fr) as cap, nc.Delta(fr) as d:
        r = scapy_in(fr, "vm1", f"""
            u = udp_socket(20130)
            icmp = conf.L2listen(iface=VM['iface'], filter='icmp and src host {PYPI4}')
            # a QUIC long header (Initial), padded as a client pads it
            dgram = IP(dst={PYPI4!r})/UDP(sport=20130, dport=443)/(b'\\xc3\\x00\\x00\\x00\\x01'
                                                                 + bytes(1195))
            frags = fragment(dgram, fragsize=400)
            send(frags)
            # the port unreachable is expected: the timeout is only a cap
            got = sniff(opened_socket=icmp, timeout=20,
                        stop_filter=lambda p: p.haslayer(ICMP) and p[ICMP].type == 3)
            unreach = [(p[ICMP].type, p[ICMP].code) for p in got if p.haslayer(ICMP)]
            sync()              # namegate has judged every fragment
            result(frags=len(frags), unreach=unreach, echoed=recv_pending(u) is not None)
        """)
        cap.sync()
    # The server can log (and echo) only a datagram that crossed the wire: once the capture
    # is synced, no fragment of it on the wire means none will reach the server (or vm1)
    assert r["frags"] == 4
    assert not ipv4_frames(cap, "10.77.0.11", PYPI4, 17), "QUIC fragments reached the internet"
    assert not udp_events(fr, "10.77.0.11", 443), "a QUIC datagram reached the server"
    assert not r["echoed"], "vm1 got the server's echo of its QUIC datagram"
    assert d[nc.blocked("vm1", "quic")] >= 1, "no quic block counted for vm1"
    assert [3, 3] in r["unreach"], f"vm1 got no ICMP port unreachable: {r['unreach']}"


# ---------------------------------------------------------------- 4-5. DNS

def test_denied_dns_query_in_ipv4_fragments_is_refused(fr):
    """Attack 4: a denied DNS query to the resolver as IPv4 fragments; an allowed one works."""
    denied = unique("collect.evil.test")
    with nc.Delta(fr) as d:
        r = scapy_in(fr, "vm1", f"""
            out = {{}}
            for sport, name in ((20140, {denied!r}), (20141, 'files.pythonhosted.org')):
                u = udp_socket(sport)
                frags = fragment(IP(dst=RESOLVER)/UDP(sport=sport, dport=53)/query(0x4141, name),
                                 fragsize=16)
                send(frags)
                out[name] = [dns_answer(recv(u)), len(frags)]
            result(**out)
        """)
    # The allowed query, sent after the denied one, was answered: the resolver (one
    # process, in order) logged the denied one first if it ever had it
    assert r["files.pythonhosted.org"][0] is not None, \
        f"control: the allowed query as fragments was not answered: {r}"
    assert not queried(fr, denied), f"the denied name reached the resolver: {queried(fr, denied)}"
    answer, frags = r[denied]
    assert frags >= 3 and answer is not None and answer[0] == 5, f"not REFUSED: {r[denied]}"
    assert d[nc.blocked("vm1", "dns_denied")] >= 1
    ok, _ = r["files.pythonhosted.org"]
    assert ok == [0, ["203.0.113.11"]], \
        f"control: the allowed query as fragments was not answered: {ok}"
    assert queried(fr, "files.pythonhosted.org")


def test_denied_dns_query_in_ipv6_atomic_fragment_is_refused(fr):
    """Attack 5: a denied DNS query in an IPv6 atomic fragment (offset 0, M=0) to fd77::1."""
    denied = unique("collect.evil.test")
    allowed = unique("githubusercontent.com")
    r = scapy_in(fr, "vm1", f"""
        out = {{}}
        for sport, name in ((20150, {denied!r}), (20151, {allowed!r})):
            u = udp_socket(sport, v6=True)
            send(IPv6(dst={svc.RESOLVER6!r})/IPv6ExtHdrFragment(offset=0, m=0, id=0x5150 + sport)/
                 UDP(sport=sport, dport=53)/query(0x5151, name))
            out[name] = dns_answer(recv(u))
        result(**out)
    """)
    # the allowed query, sent after the denied one, reached the resolver (one process, in
    # order): by the time it is in the log, the denied one would be there before it
    assert r[allowed] is not None and wait_until(lambda: queried(fr, allowed)), \
        f"control: the allowed query in an atomic fragment was not answered: {r[allowed]}"
    assert not queried(fr, denied), f"the denied name reached the resolver: {queried(fr, denied)}"
    assert r[denied] is not None and r[denied][0] == 5, f"not REFUSED: {r[denied]}"
    assert r[allowed] is not None and r[allowed][0] == 3 and queried(fr, allowed), \
        f"control: the allowed query in an atomic fragment was not answered (NXDOMAIN): " \
        f"{r[allowed]}"


# ---------------------------------------------------------------- 6. overlaps

def test_overlapping_ipv4_fragments_are_dropped(fr):
    """Attack 6: overlapping IPv4 fragments read as an allowed query, then as a denied one."""
    # Both names are 36 bytes on the wire, so the two readings are the same datagram but
    # for bytes [16, 56) of the UDP part (the end of the DNS header and the name). The UDP
    # checksum is 0 (none), so both readings are valid datagrams.
    allowed = f"{secrets.token_hex(6)}.githubusercontent.com"
    denied = f"{secrets.token_hex(8)}.collect.evil.test"
    control = f"{secrets.token_hex(6)}.githubusercontent.com"
    with nc.Delta(fr) as d:
        r = scapy_in(fr, "vm1", f"""
            def udp_bytes(name):
                return raw(UDP(sport=20160, dport=53, chksum=0)/query(0x6161, name))
            a, b = udp_bytes({allowed!r}), udp_bytes({denied!r})
            assert len(a) == len(b) == 60 and a[:16] == b[:16] and a[56:] == b[56:], (a, b)
            def frag(ipid, data, off, more):
                return IP(dst=RESOLVER, id=ipid, proto=17, frag=off // 8,
                          flags='MF' if more else 0)/Raw(data)
            u = udp_socket(20160)
            # first reading complete but for its end; the overlap rewrites [16, 56)
            send([frag(0x6600, a[:16], 0, True), frag(0x6600, a[16:56], 16, True),
                  frag(0x6600, b[16:56], 16, True), frag(0x6600, a[56:], 56, False)])
            # control: the same fragments without the overlap, right after: the resolver
            # answers in order, so an answer to the overlapping ones would come first
            c = udp_bytes({control!r})
            send([frag(0x6601, c[:16], 0, True), frag(0x6601, c[16:56], 16, True),
                  frag(0x6601, c[56:], 56, False)])
            answers = {{}}
            while {control!r} not in answers:
                data = recv(u)
                if data is None:
                    break
                answers[DNS(data).qd.qname.decode().rstrip('.')] = dns_answer(data)
            result(attack=answers.get({allowed!r}) or answers.get({denied!r}),
                   control=answers.get({control!r}), answers=sorted(answers))
        """)
    # the control reached the resolver after the overlapping fragments would have
    assert r["control"] is not None and wait_until(lambda: queried(fr, control)), \
        f"control: non-overlapping fragments of an allowed query were not answered: {r}"
    assert not queried(fr, denied), "the overlapped (denied) reading reached the resolver"
    assert not queried(fr, allowed), "a datagram of overlapping fragments reached the resolver"
    assert r["attack"] is None, f"vm1 got an answer to overlapping fragments: {r['attack']}"
    d.wait({FRAG_INVALID: 1})
    assert d[FRAG_INVALID] >= 1, "no fragment_invalid drop counted"


# ---------------------------------------------------------------- 8. refragmentation

def test_large_udp_datagram_in_fragments_comes_back_whole(fr):
    """Control 8: a 3000-byte UDP echo as fragments, reassembled, judged and cut again."""
    resolve(fr, "pypi.org")
    vm1 = fr.vm("vm1")
    with inet_capture(fr) as cap:
        r = scapy_in(fr, "vm1", f"""
            u = udp_socket(20180)
            data = bytes(range(256)) * 11 + bytes(184)
            frags = fragment(IP(dst={PYPI4!r}, id=0x8080)/UDP(sport=20180, dport=7)/data,
                             fragsize=1000)
            send(frags)
            back = recv(u)
            result(frags=len(frags), sent=len(data), back=len(back) if back else None,
                   same=back == data)
        """)
    assert r["frags"] == 4 and r["sent"] == 3000
    assert r["back"] == 3000 and r["same"], f"the echo did not come back whole: {r}"
    assert [e["size"] for e in udp_events(fr, vm1.ipv4, 7, PYPI4)][-1:] == [3000]
    # namegate cut the judged datagram to the uplink's MTU (1500), not as vm1 had (1000)
    sizes = sorted(len(f) for f in ipv4_frames(cap, vm1.ipv4, PYPI4, 17))
    assert len(sizes) == 3 and 1034 < max(sizes) <= 1514, f"frames at the internet: {sizes}"


# ---------------------------------------------------------------- 7. quota (runs last)

def test_fragment_quota_is_per_vm(fr):
    """Attack 7: vm1 holds more incomplete datagrams than its share; vm2 is unaffected."""
    n = DEFAULT_MAX_FRAGMENTS_PER_VM + 4
    vm_limit = nc.blocked("vm1", "vm_limit")
    assert resolve(fr, "github.com", vm="vm2") == GITHUB
    # Both programs start (scapy takes a while to load) before either sends, so vm2's echo
    # follows vm1's datagrams by milliseconds, well inside their 5 s reassembly timeout.
    helpers = _HELPERS + _FRAG_HELPERS
    vm1 = fr.background("vm1", fr.scapy_code("vm1", helpers + labmod._dedent(f"""
        import sys
        def first(i):
            return fragment(IP(dst={PYPI4!r}, id=0x7000 + i)/UDP(sport=20170, dport=9)/
                            bytes(2000), fragsize=1000)[0]
        firsts = [first(i) for i in range({n})]
        print('ready', flush=True)
        sys.stdin.readline()
        send(firsts)
        sync()              # namegate has judged them all
        result(sent=len(firsts))
    """)))
    vm2 = fr.background("vm2", fr.scapy_code("vm2", helpers + labmod._dedent(f"""
        import sys
        u = udp_socket(20171)
        data = b'vm2 echo ' * 133
        frags = fragment(IP(dst={GITHUB!r})/UDP(sport=20171, dport=7)/data, fragsize=400)
        print('ready', flush=True)
        sys.stdin.readline()
        send(frags)
        back = recv(u)
        result(same=back == data, back=len(back) if back else None)
    """)))

    def result(bg):
        line = bg.line()
        assert line.startswith("RESULT "), (line, bg.stderr())
        return json.loads(line[7:])
    with vm1, vm2, nc.Delta(fr) as d:
        assert vm1.line() == "ready" and vm2.line() == "ready"
        vm1.send()
        r1 = result(vm1)
        d.wait({vm_limit: n - DEFAULT_MAX_FRAGMENTS_PER_VM})     # judged, past the share
        t0 = time.monotonic()
        vm2.send()
        r2 = result(vm2)
        took = time.monotonic() - t0
        vm1.finish()
        vm2.finish()
    refused = d[vm_limit]
    assert r1["sent"] == n
    assert refused >= n - DEFAULT_MAX_FRAGMENTS_PER_VM, f"vm_limit for vm1 moved by {refused}"
    assert d[nc.blocked("vm2", "vm_limit")] == 0
    assert r2["same"], f"vm2's fragmented echo did not come back: {r2}"
    # from vm1's datagrams judged to vm2's echo back (no interpreter start in between)
    assert took < 4.5, f"vm2's echo came {took:.1f}s later: vm1's datagrams may have expired"
    # the datagrams vm1 got held time out (5 s; one fragment each), giving its share back;
    # a killed datagram (test 6's) holds a slot as a tombstone until then, so count by what
    # was held rather than by the default. That timeout is what is tested: no sleep for it,
    # but a poll (counted from before vm1 sent, so none is missed however long it took).
    held = n - refused
    wait_until(lambda: nc.read(fr).get(FRAG_TIMEOUT, 0) - d.before.get(FRAG_TIMEOUT, 0)
               >= held, what=f"the {held} held datagrams to time out")
