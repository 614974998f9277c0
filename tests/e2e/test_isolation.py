"""One VM cannot starve, impersonate or speak for another (SPEC s8 "Isolation": a per-VM
quota on every table a VM can fill, refused past it with reason=vm_limit charged to that
VM with an event; identity from the outermost VLAN tag; ND only in its RFC 4861 shape;
DNS names judged as the resolver will read them).

vm1 (policy python) attacks; vm2 (policy github) is the neighbour whose DNS, HTTPS and new
bindings must keep working during and after the attack. Each attack is asserted on what
reaches the internet side (server events, dnsmasq's query log, a capture in the inet
namespace) and on the counters of the right VM, and is paired with an allowed control.

Three labs: `iso` (no new config keys, so it also runs against daemons that predate the
quotas), `quota` (small max_holds/pending/bindings_per_vm) and `frag` (net_pcap ports, so
the daemon sees fragments as sent, and a small max_fragments_per_vm).
"""
import json
import os
import secrets
import socket
import struct

import pytest

import lab as labmod
import lab_namegate
import ng_counters as nc
import tls_start
from lab_net import wait_until
from test_conntrue import Capture, _namegatectl
from test_dataplane import _binary

VM1, VM2, VM3 = "10.77.0.11", "10.77.0.12", "10.77.0.13"
VM1_6 = "fd77::11"
PYPI, GITHUB = "203.0.113.10", "203.0.113.12"
PYPI6 = "2001:db8::10"
LITERAL = "198.51.100.7"                    # python policy: 198.51.100.0/24:443, no binding
VM4 = dict(name="vm4", mac="02:00:00:00:00:04", ipv4="10.77.0.14", vlan=7)   # tagged

HOLDS, PENDING, BINDINGS, FRAGMENTS = 4, 8, 5, 4


# ---------------------------------------------------------------- labs

def _start(request, vms, config=None, port_type="af_packet"):
    ctl = _namegatectl()
    if ctl:
        os.environ.setdefault("NAMEGATECTL_BIN", ctl)
    lab = labmod.Lab(mode="namegate", vms=vms, namegate_cmd=[_binary(), "-c", "{config}"],
                     config=config, port_type=port_type)
    request.addfinalizer(lab.teardown)      # registered first: runs even if setup fails
    return lab.setup()


def _two_vms():
    return labmod.default_vms(2)


@pytest.fixture(scope="module")
def iso(request):
    """vm1, vm2, vm3 (no IPv6), and vm4: a VM on VLAN 7 that exists only in the config;
    its frames are written by hand (scapy in vm1's namespace, vm4's MAC) with the tags a
    test wants."""
    vms = _two_vms() + [labmod.VM("vm3", "02:00:00:00:00:03", VM3, None, "python")]
    entries = [lab_namegate._vm_entry(v) for v in vms]
    entries.append(dict(name=VM4["name"], mac=VM4["mac"], ipv4=VM4["ipv4"],
                        vlan=VM4["vlan"], policy="python", mode="enforce"))
    return _start(request, vms, config={"vms": entries})


@pytest.fixture(scope="module")
def quota(request):
    return _start(request, _two_vms(), config={"dataplane": {
        "max_holds_per_vm": HOLDS, "max_pending_per_vm": PENDING,
        "max_bindings_per_vm": BINDINGS}})


@pytest.fixture(scope="module")
def frag(request):
    return _start(request, _two_vms(), port_type="pcap",
                  config={"dataplane": {"max_fragments_per_vm": FRAGMENTS}})


# ---------------------------------------------------------------- helpers

def token():
    return secrets.token_hex(5)


def moved(d, key):
    return d.after.get(key, 0) - d.before.get(key, 0)


def spoofed_moved(d):
    """spoofed blocks, whichever VM (or "unknown") they were charged to."""
    return sum(moved(d, k) for k in set(d.after) | set(d.before) if 'reason="spoofed"' in k)


def events(lab, **match):
    path = os.path.join(lab.tmpdir, "events.jsonl")
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if all(e.get(k) == v for k, v in match.items()):
                    out.append(e)
    except FileNotFoundError:
        pass
    return out


def queried_containing(lab, text):
    return [q for q in lab.resolver_queries() if text in q[1]]


def bound(lab, vm):
    """{address} namegatectl lists for vm (None without namegatectl)."""
    if not _namegatectl():
        return None
    cp = lab.namegatectl("bindings", vm)
    assert cp.returncode == 0, cp.stderr
    return {line.split()[1] for line in cp.stdout.splitlines()[1:] if len(line.split()) > 1}


def assert_vm2_works(lab, what):
    """The neighbour: DNS answered, a new binding learned, HTTPS through."""
    r = lab.dig("vm2", "github.com")
    assert r.rcode == "NOERROR" and r.addresses == [GITHUB], f"{what}: vm2's DNS: {r.raw}"
    c = lab.curl("vm2", "https://github.com/")
    assert c.ok and c.json()["server"] == "github", \
        f"{what}: vm2's curl https://github.com/: {c.outcome} {c.stderr}"


# ---------------------------------------------------------------- frames on the wire

def _walk(frame):
    """(vlan tags, ethertype, L3 bytes) of an Ethernet frame, through any in-band tags."""
    tags, off = [], 12
    et = struct.unpack(">H", frame[off:off + 2])[0]
    while et in (0x8100, 0x88a8) and len(frame) >= off + 6:
        tags.append(struct.unpack(">H", frame[off + 2:off + 4])[0] & 0xfff)
        off += 4
        et = struct.unpack(">H", frame[off:off + 2])[0]
    return tags, et, frame[off + 2:]


def parse(frame):
    """dict(tags, src_mac, family, src, dst, proto, ...) of an IPv4/IPv6 frame, or None."""
    if len(frame) < 14:
        return None
    tags, et, l3 = _walk(frame)
    p = dict(tags=tags, src_mac=frame[6:12].hex(":"), dst_mac=frame[0:6].hex(":"),
             sport=None, dport=None, flags=0, icmp6=None, hlim=None, payload=b"", frag=0)
    if et == 0x0800 and len(l3) >= 20:
        ihl = (l3[0] & 15) * 4
        p.update(family=4, src=socket.inet_ntop(socket.AF_INET, l3[12:16]),
                 dst=socket.inet_ntop(socket.AF_INET, l3[16:20]), proto=l3[9],
                 ipid=struct.unpack(">H", l3[4:6])[0],
                 frag=struct.unpack(">H", l3[6:8])[0] & 0x3fff)
        l4 = l3[ihl:]
    elif et == 0x86dd and len(l3) >= 40:
        p.update(family=6, src=socket.inet_ntop(socket.AF_INET6, l3[8:24]),
                 dst=socket.inet_ntop(socket.AF_INET6, l3[24:40]), proto=l3[6], hlim=l3[7])
        l4 = l3[40:]
    else:
        return None
    if p["proto"] in (6, 17) and len(l4) >= 8 and not p["frag"]:
        p["sport"], p["dport"] = struct.unpack(">HH", l4[:4])
        if p["proto"] == 6 and len(l4) >= 20:
            p["flags"] = l4[13]
            p["payload"] = l4[(l4[12] >> 4) * 4:]
        else:
            p["payload"] = l4[8:]
    elif p["proto"] == 58 and l4:
        p["icmp6"] = l4[0]
        p["payload"] = l4[4:]
    elif p["frag"]:
        p["payload"] = l4
    return p


def capture(lab, ns, name):
    """Every frame on ns's eth0, VLAN tags read too (AF_PACKET: the kernel has already
    taken the outermost tag off into metadata, so only inner tags are in `tags`)."""
    return Capture(lab, ns, name, parse=parse)


def inet_capture(lab, name="inet"):
    return capture(lab, lab.inet_ns, name)


def vm_scapy(lab, vm, code, timeout=120):
    cp = lab.scapy(vm, "def result(**kw):\n    print('RESULT ' + json.dumps(kw))\n" +
                   labmod._dedent(code), timeout=timeout)
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"scapy in {vm} printed no result (rc {cp.returncode}): "
                         f"{cp.stdout[-500:]} {cp.stderr[-1500:]}")


class Background:
    """A Python program in a VM that prints one JSON line when its attack is in place and
    keeps it there until its stdin is closed, then prints a second line and exits (a
    lab.Background: every read has a deadline)."""

    def __init__(self, lab, vm, code, args=()):
        self.bg = lab.background(vm, code, args)

    def first(self):
        return self.bg.json()

    def finish(self):
        lines = self.bg.finish()
        return json.loads(lines[-1]) if lines else None

    def kill(self):
        self.bg.kill()


# ---------------------------------------------------------------- 1. hold slots

_HOLDER = tls_start.SOURCE + r"""
import json, select, socket, ssl, struct, sys, time
addr, n, part = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hello = tls_start("pypi.org")[3]
socks, ports, errors = [], [], []
# all at once: the daemon gives a ClientHello a few seconds to be whole
pending = []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    s.connect_ex((addr, 443))
    pending.append(s)
end = time.monotonic() + 5
while pending and time.monotonic() < end:
    _, w, _ = select.select([], pending, [], 0.5)
    for s in w:
        pending.remove(s)
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            errors.append(err)
            s.close()
            continue
        s.send(hello[:part])            # the record header says more is coming
        socks.append(s)
        ports.append(s.getsockname()[1])
errors += ["timeout"] * len(pending)
print(json.dumps({"hello": len(hello), "ports": ports, "errors": errors}), flush=True)
# the test says go once namegate has cut what it will cut (its vm_limit counter). Namegate
# answers a query for the probe name itself, and the resets it sent before that answer
# left on the same port first: by the answer, the kernel has every socket's state
sys.stdin.readline()
q = struct.pack(">6H", 0x5959, 0x0100, 1, 0, 0, 0) + b"\x05probe\x03lab\x07invalid\x00\x00\x01\x00\x01"
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(20)
u.sendto(q, ("10.77.0.1", 53))
u.recv(4096)
def state(s):
    try:
        return "closed" if s.recv(100) == b"" else "data"
    except BlockingIOError:
        return "held"
    except ConnectionResetError:
        return "reset"
    except OSError as e:
        return type(e).__name__
print(json.dumps({"state": [state(s) for s in socks]}), flush=True)
sys.stdin.read()
print(json.dumps({"state": [state(s) for s in socks]}), flush=True)
for s in socks:
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()
"""


def _hold_attack(lab, n, quota, d, check=None):
    """vm1's n partial ClientHellos: (attacker, report). The report (hello, ports, errors,
    state) is taken once namegate has cut all but quota of them (vm_limit for vm1 has moved
    that far since Delta d began: the proof they were judged, where a fixed pause would
    only hope so) and vm1 has the resets. check(report) runs on the connects first."""
    assert lab.dig("vm1", "pypi.org").addresses == [PYPI]
    att = Background(lab, "vm1", _HOLDER, (PYPI, n, 100))
    try:
        r = att.first()
        if check:
            check(r)
        d.wait({nc.blocked("vm1", "vm_limit"): len(r["ports"]) - quota})
        att.bg.send()
        r.update(att.bg.json())
    except BaseException:
        att.kill()
        raise
    return att, r


def test_hold_slots_are_a_per_vm_share(quota):
    """Case 1: vm1 opens more than max_holds_per_vm connections with a partial ClientHello
    each: past the quota they are cut (RST to vm1, vm_limit for vm1, an event naming vm1),
    no byte of them reaches the server; vm2's DNS and HTTPS work meanwhile, and vm1's own
    whole-in-one-segment ClientHello takes no hold slot."""
    n = HOLDS + 6
    lab = quota
    def connected(r):
        assert not r["errors"] and len(r["ports"]) == n, f"connects failed: {r}"
    with nc.Delta(lab) as d:
        att, r = _hold_attack(lab, n, HOLDS, d, connected)
        try:
            # during the attack: the neighbour, vm1's own DNS, and vm1's whole hello
            assert_vm2_works(lab, "vm1 at its hold quota")
            dns1 = lab.dig("vm1", "files.pythonhosted.org")
            own = lab.curl("vm1", "https://pypi.org/")
        finally:
            att.finish()
    state = r["state"]
    held = [p for p, s in zip(r["ports"], state) if s == "held"]
    cut = [p for p, s in zip(r["ports"], state) if s == "reset"]
    assert held, f"control: no partial ClientHello was held at all: {state}"
    assert len(held) <= HOLDS and len(cut) >= n - HOLDS, \
        f"{len(held)} connections held for vm1 (quota {HOLDS}), {len(cut)} cut: {state}"
    leaked = [e for e in lab.server_events(event="hello", client=VM1) if e["client_port"] in cut]
    assert not leaked, f"bytes of connections past the quota reached the server: {leaked}"
    assert dns1.rcode == "NOERROR" and dns1.addresses == ["203.0.113.11"], dns1.raw
    assert own.ok and own.json()["client"] == VM1, \
        f"vm1's whole ClientHello ({r['hello']} bytes, one segment) was refused at its " \
        f"hold quota: {own.outcome} {own.stderr}"
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= n - HOLDS, \
        {k: v for k, v in d.after.items() if "vm_limit" in k}
    assert moved(d, nc.blocked("vm2", "vm_limit")) == 0
    wait_until(lambda: events(lab, vm="vm1", reason="vm_limit"),
               what="an event naming vm1 with reason vm_limit")
    assert not events(lab, vm="vm2", reason="vm_limit")


def test_hold_slots_come_back(quota):
    """Case 1, the VM's own share: right after the previous test's held connections were
    reset by vm1, and for more connections in a row than the quota, vm1's DNS over TCP
    (each query whole in one segment) and HTTPS keep working: a slot is given back when
    its connection is judged or ends, so a VM cannot lock itself out by being busy."""
    lab = quota
    results = []
    for i in range(2 * HOLDS + 2):
        r = lab.dig("vm1", "files.pythonhosted.org", tcp=True)
        results.append(r.rcode)
    assert results == ["NOERROR"] * len(results), \
        f"vm1's DNS over TCP, {len(results)} queries in a row: {results}"
    for i in range(HOLDS + 1):
        c = lab.curl("vm1", "https://pypi.org/")
        assert c.ok, f"vm1's HTTPS connection {i + 1} in a row: {c.outcome} {c.stderr}"


# ---------------------------------------------------------------- 2. bindings

def test_bindings_are_a_per_vm_share(quota):
    """Case 3: vm1 resolves a name with 30 addresses (over UDP with EDNS: one datagram); it keeps at most max_bindings_per_vm
    bindings (vm_limit for vm1); vm2 resolving github.com still gets its binding."""
    lab = quota
    with nc.Delta(lab) as d:
        r = lab.dig("vm1", "big.githubusercontent.com", edns=True)
    assert r.rcode is not None, "vm1 got no answer at all"
    count = nc.read(lab).get(nc.vm_key("namegate_vm_bindings", "vm1"))
    listed = bound(lab, "vm1")
    assert count is not None and count <= BINDINGS, \
        f"vm1 has {count} bindings (quota {BINDINGS})"
    if listed is not None:
        assert len(listed) <= BINDINGS, f"vm1 has {len(listed)} bindings: {sorted(listed)}"
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= 1
    wait_until(lambda: events(lab, vm="vm1", reason="vm_limit"),
               what="an event naming vm1 with reason vm_limit")
    with nc.Delta(lab) as d2:
        assert_vm2_works(lab, "vm1 at its binding quota")
    if bound(lab, "vm2") is not None:
        assert GITHUB in bound(lab, "vm2")
    assert moved(d2, nc.blocked("vm2", "vm_limit")) == 0


_QUERIES = r"""
import json, select, socket, struct, sys, time
suffix, n, pace = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
one = sys.argv[4:] == ["one"]          # one name asked n times, each its own pending query
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.connect(("10.77.0.1", 53))
def q(i):
    name = f"q{0 if one else i}-{suffix}"
    return struct.pack(">6H", i & 0xffff, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00\x00\x01\x00\x01"
for i in range(n):
    s.send(q(i))
    if pace and i % pace == pace - 1:
        time.sleep(0.01)        # a flood's pace (no event): bursts the rings can take
print(json.dumps({"sent": n}), flush=True)
rcodes = {}
# every answer until the test closes stdin (after it knows what namegate did), then the
# ones already in the socket
while True:
    r = select.select([s, sys.stdin], [], [])[0]
    if s in r:
        a = s.recv(4096)
        rcodes[a[3] & 15] = rcodes.get(a[3] & 15, 0) + 1
    elif sys.stdin.read() == "":
        break
print(json.dumps({"rcodes": rcodes}), flush=True)
"""


class _ResolverDropsAnswersTo:
    """nft in the internet namespace: the resolver's answers to one VM never leave, so
    its forwarded queries stay pending in namegate (dnsmasq still logs each query)."""

    def __init__(self, lab, addr):
        self.lab, self.addr = lab, addr

    def __enter__(self):
        self.lab.inet_exec("nft add table inet ngiso && nft add chain inet ngiso out "
                           "'{ type filter hook output priority 0; }' && nft add rule inet "
                           f"ngiso out ip daddr {self.addr} udp sport 53 drop", check=True)
        return self

    def __exit__(self, *exc):
        self.lab.inet_exec("nft delete table inet ngiso")


def _pending_attack(lab, n, pace=0, all_logged=True, one_name=False):
    """vm1's n queries; all_logged: wait until the resolver has logged every one namegate
    forwarded (those it did not refuse with vm_limit), for a test that counts them.
    one_name: all for one name, so that no more than one is new under the wildcard."""
    suffix = f"{token()}.githubusercontent.com"
    vm_limit = nc.blocked("vm1", "vm_limit")
    with _ResolverDropsAnswersTo(lab, VM1), nc.Delta(lab) as d:
        att = Background(lab, "vm1", _QUERIES,
                         (suffix, n, pace) + (("one",) if one_name else ()))
        try:
            att.first()
            r2 = lab.dig("vm2", "github.com")
            c2 = lab.curl("vm2", "https://github.com/")
            # namegate has judged every query vm1 sent (counted as allowed, by policy), and
            # sent it what it sends (before the sync's answer)
            if all_logged:
                d.wait({nc.dns("vm1", "allowed"): n})
            lab.sync("vm1")
            if all_logged:
                forwarded = n - (nc.read(lab)[vm_limit] - d.before[vm_limit])
                wait_until(lambda: len(queried_containing(lab, suffix)) >= forwarded,
                           what=f"the resolver to log the {forwarded} queries forwarded")
        finally:
            rc = att.finish()
    return suffix, d, r2, c2, (rc or {}).get("rcodes", {})


def test_pending_queries_are_a_per_vm_share(quota):
    """Case 2: vm1's queries stay pending (the resolver's answers to vm1 are dropped);
    past max_pending_per_vm they are not forwarded (SERVFAIL or nothing back), vm_limit
    for vm1; vm2's queries meanwhile are answered."""
    n = PENDING + 12
    suffix, d, r2, c2, rcodes = _pending_attack(quota, n)
    forwarded = queried_containing(quota, suffix)
    assert forwarded, "control: none of vm1's allowed queries reached the resolver"
    assert r2.rcode == "NOERROR" and r2.addresses == [GITHUB], \
        f"vm2's query was not answered while vm1 filled the pending table: {r2.raw}"
    assert c2.ok, (c2.outcome, c2.stderr)
    assert len(forwarded) <= PENDING, \
        f"{len(forwarded)} of vm1's queries forwarded with {PENDING} allowed pending"
    assert set(rcodes) <= {"2"}, f"vm1 got answers other than SERVFAIL: {rcodes}"
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= n - PENDING
    assert moved(d, nc.blocked("vm2", "vm_limit")) == 0
    wait_until(lambda: events(quota, vm="vm1", reason="vm_limit"),
               what="an event naming vm1 with reason vm_limit")


# ---------------------------------------------------------------- 4. fragments

_FIRST_FRAGMENTS = """
for i in range({n}):
    send(IP(dst={dst!r}, id=0x5100 + i, flags='MF', frag=0) /
         UDP(sport=21500 + i, dport=7, len=3008) / Raw(bytes(1472)))
result(sent={n})
"""

_BIG_UDP = r"""
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)     # IP_MTU_DISCOVER: IP_PMTUDISC_DONT
s.settimeout(20)
s.connect((sys.argv[1], 7))
s.send(b"f" * 3000)
try:
    print(json.dumps({"echo": len(s.recv(65535))}))
except OSError as e:
    print(json.dumps({"echo": type(e).__name__}))
"""


def test_reassembly_is_a_per_vm_share(frag):
    """Case 4: vm1 sends first fragments of datagrams that never complete; past
    max_fragments_per_vm they are dropped with vm_limit for vm1, none reaches the internet,
    and vm2's 3000-byte UDP datagram (three fragments) still gets through and back."""
    lab = frag
    n = FRAGMENTS * 4
    assert lab.dig("vm1", "pypi.org").addresses == [PYPI]
    assert lab.dig("vm2", "github.com").addresses == [GITHUB]
    with inet_capture(lab) as cap, nc.Delta(lab) as d:
        vm_scapy(lab, "vm1", _FIRST_FRAGMENTS.format(n=n, dst=PYPI))
        out = lab.vm_exec("vm2", [labmod.PYTHON, "-c", _BIG_UDP, GITHUB], timeout=40)
        cap.sync()
    got = [e for e in lab.server_events(event="udp", client=VM2) if e["size"] == 3000]
    assert got, f"vm2's fragmented datagram never reached the echo server: {out.stdout} " \
        f"{out.stderr[-800:]}"
    assert json.loads(out.stdout)["echo"] == 3000, out.stdout
    # a fragment as sent (MF or an offset) or its datagram put together (to port 7); vm1's
    # sync query is neither, though its random IP ID can fall in the range (CI saw 0x5109)
    leaked = [(p["ipid"], p["frag"], p["dport"]) for p in cap.packets(src=VM1, proto=17)
              if 0x5100 <= p.get("ipid", 0) < 0x5100 + n and (p["frag"] or p["dport"] == 7)]
    assert not leaked, f"incomplete fragments of vm1 reached the internet: {leaked}"
    d.wait({nc.blocked("vm1", "vm_limit"): n - FRAGMENTS})     # (the sync is no proof)
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= n - FRAGMENTS
    assert moved(d, nc.blocked("vm2", "vm_limit")) == 0
    wait_until(lambda: events(lab, vm="vm1", reason="vm_limit"),
               what="an event naming vm1 with reason vm_limit")


# ---------------------------------------------------------------- 5. double VLAN tags

def test_double_tagged_frames_are_spoofed(iso):
    """Case 5: identity comes from the outermost tag and a frame with more tags than its
    VM's configuration is spoofed: vm1 (untagged) with two tags, and vm4 (VLAN 7) with
    its own tag inside another VLAN's or twice, are not forwarded; the same SYN with the
    VM's own tagging is (control)."""
    lab = iso
    assert lab.dig("vm1", "pypi.org").addresses == [PYPI]
    with inet_capture(lab) as cap, nc.Delta(lab) as d:
        vm_scapy(lab, "vm1", f"""
            def syn(sport, tags, mac=VM['mac'], src=VM['ipv4'], dst={PYPI!r}):
                f = Ether(src=mac, dst=ROUTER_MAC)
                for t in tags:
                    f = f / Dot1Q(vlan=t)
                sendp(f / IP(src=src, dst=dst) / TCP(sport=sport, dport=443, flags='S',
                                                     seq=1000))
            syn(21000, [])                # control: vm1 as configured (untagged)
            syn(21001, [7, 0])
            syn(21002, [0, 7])
            syn(21003, [0, 0])
            v4 = dict(mac={VM4['mac']!r}, src={VM4['ipv4']!r}, dst={LITERAL!r})
            syn(21010, [7], **v4)         # control: vm4 as configured (VLAN 7)
            syn(21011, [9, 7], **v4)      # vm4's tag inside VLAN 9
            syn(21012, [0, 7], **v4)
            syn(21013, [7, 7], **v4)
            result(sent=True)
        """)
        wait_until(lambda: cap.packets(src=VM1, sport=21000),
                   what="control: vm1's untagged SYN to reach the internet")
        wait_until(lambda: cap.packets(src=VM4["ipv4"], sport=21010),
                   what="control: vm4's SYN on its VLAN to reach the internet")
        cap.sync()
    leaked = sorted({p["sport"] for p in cap.packets(proto=6)
                     if p["sport"] in (21001, 21002, 21003, 21011, 21012, 21013)})
    assert not leaked, f"double-tagged SYNs reached the internet (source ports {leaked})"
    # polled: the sync above is a marker for the capture, not a proof the frames were counted
    try:
        wait_until(lambda: spoofed_moved(d.refresh()) >= 6, what="6 spoofed blocks")
    except AssertionError:
        pass                # the assertion below says what moved
    assert spoofed_moved(d) >= 6, {k: moved(d, k) for k in d.after if "spoofed" in k}


# ---------------------------------------------------------------- 6. ND as a channel

def _nd(cap, src_mac=None, **match):
    return [p for p in cap.packets(family=6, proto=58, **match)
            if p["icmp6"] in (133, 134, 135, 136, 137)
            and (src_mac is None or p["src_mac"] == src_mac)]


def test_nd_is_accepted_only_in_its_rfc4861_shape(iso):
    """Case 6 (a-d, outbound): an NS with hop limit 64 and a payload to a global address
    and an RA from vm1, and an NS from vm3 (no IPv6), never reach the internet; a
    well-formed NS from vm1 to the router's solicited-node address does, and vm1's IPv6
    keeps working."""
    lab = iso
    mark = token().encode()
    with inet_capture(lab) as cap:
        vm_scapy(lab, "vm1", f"""
            lla = 'fe80::ff:fe00:1'
            # (a) ND-typed message as a datagram to the internet, with data
            sendp(Ether(dst=ROUTER_MAC) / IPv6(src=VM['ipv6'], dst={PYPI6!r}, hlim=64) /
                  ICMPv6ND_NS(tgt={PYPI6!r}) / Raw(b'NGX' + {mark!r}))
            # (b) a router advertisement
            sendp(Ether(dst='33:33:00:00:00:01') / IPv6(src=lla, dst='ff02::1', hlim=255) /
                  ICMPv6ND_RA() / ICMPv6NDOptSrcLLAddr(lladdr=VM['mac']) /
                  ICMPv6NDOptPrefixInfo(prefix='2001:db8:bad::', prefixlen=64))
            # (c) control: a well-formed NS for the router
            sendp(Ether(dst='33:33:ff:00:00:01') /
                  IPv6(src=VM['ipv6'], dst='ff02::1:ff00:1', hlim=255) /
                  ICMPv6ND_NS(tgt=ROUTER6) / ICMPv6NDOptSrcLLAddr(lladdr=VM['mac']))
            result(sent=True)
        """)
        vm_scapy(lab, "vm3", """
            # (d) a VM without IPv6 soliciting from a link-local address
            sendp(Ether(dst='33:33:ff:00:00:01') /
                  IPv6(src='fe80::ff:fe00:3', dst='ff02::1:ff00:1', hlim=255) /
                  ICMPv6ND_NS(tgt=ROUTER6) / ICMPv6NDOptSrcLLAddr(lladdr=VM['mac']))
            result(sent=True)
        """)
        wait_until(lambda: _nd(cap, src=VM1_6, dst="ff02::1:ff00:1", icmp6=135),
                   what="control: vm1's well-formed NS for the router to reach the internet")
        cap.sync()
        cap.sync("vm3")
    r = lab.curl("vm1", "https://pypi.org/", ip=6)
    assert r.ok and r.json()["client"] == VM1_6, f"control: vm1's IPv6: {r.outcome} {r.stderr}"
    problems = []
    if [p for p in _nd(cap, dst=PYPI6) if mark in p["payload"]]:
        problems.append("(a) an NS with hop limit 64 and a payload reached 2001:db8::10")
    if _nd(cap, icmp6=134):
        problems.append("(b) vm1's router advertisement reached the internet")
    if _nd(cap, src_mac="02:00:00:00:00:03"):
        problems.append("(d) vm3 (no IPv6) got an NS from a link-local address through")
    assert not problems, "; ".join(problems)


def test_inbound_nd_with_a_routed_hop_limit_does_not_reach_the_vm(iso):
    """Case 6e: from the internet side, an NA (type 136) with hop limit 64 and a payload to
    vm1's global address, and an NS with hop limit 255 whose trailing bytes are not ND
    options, never reach vm1; a well-formed NA from the router does."""
    lab = iso
    mark = token().encode()
    vm1 = lab.vm("vm1")
    code = labmod._dedent(f"""
        from scapy.all import *
        conf.verb = 0
        me = get_if_hwaddr('eth0')
        sendp(Ether(src=me, dst={vm1.mac!r}) / IPv6(src={PYPI6!r}, dst={VM1_6!r}, hlim=64) /
              ICMPv6ND_NA(tgt={PYPI6!r}, R=0, S=0, O=0) / Raw(b'NGX' + {mark!r}), iface='eth0')
        sendp(Ether(src=me, dst={vm1.mac!r}) / IPv6(src='fd77::1', dst={VM1_6!r}, hlim=255) /
              ICMPv6ND_NS(tgt={VM1_6!r}) / Raw(b'\\x00NGX' + {mark!r}), iface='eth0')
        sendp(Ether(src=me, dst={vm1.mac!r}) / IPv6(src='fd77::1', dst={VM1_6!r}, hlim=255) /
              ICMPv6ND_NA(tgt='fd77::1', R=1, S=0, O=0) /
              ICMPv6NDOptDstLLAddr(lladdr=me), iface='eth0')
        print('sent')
    """)
    with capture(lab, vm1.ns, "vm1") as cap, nc.Delta(lab) as d:
        cp = lab.inet_exec([labmod.PYTHON, "-c", code], timeout=60)
        assert "sent" in cp.stdout, cp.stderr
        control = wait_until(lambda: [p for p in _nd(cap, icmp6=136, src="fd77::1", hlim=255)
                                      if p["payload"][:1] == b"\x80"],
                             what="control: the router's well-formed NA to reach vm1")
        # and the bad one dropped (counted as such): it will not reach vm1 later
        d.wait({'namegate_drops_total{reason="nd_invalid"}': 2})
    assert control, "control: the router's well-formed NA never reached vm1"
    leaked = [p for p in _nd(cap) if mark in p["payload"]]
    assert not leaked, f"an ND message with bytes that are not options reached vm1: {leaked}"


# ---------------------------------------------------------------- 7. DNS label bytes

_RAW_DNS = r"""
import json, socket, struct, sys
out = []
for i, hexlabels in enumerate(json.loads(sys.argv[1])):
    labels = [bytes.fromhex(l) for l in hexlabels]
    q = struct.pack(">6H", 0x6100 + i, 0x0100, 1, 0, 0, 0) + \
        b"".join(bytes([len(l)]) + l for l in labels) + b"\x00\x00\x01\x00\x01"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(20)             # a cap: every query is answered
    s.sendto(q, ("10.77.0.1", 53))
    try:
        a = s.recv(4096)
        out.append(a[3] & 15 if a[:2] == q[:2] else "wrong id")
    except socket.timeout:
        out.append(None)
print(json.dumps(out))
"""


def test_dns_label_bytes_are_judged_as_the_resolver_reads_them(iso):
    """Case 7: `foo.githubusercontent` as ONE label, then `com`, is a name directly under
    com to the resolver: refused (REFUSED to vm1, never forwarded, dns_denied for vm1);
    likewise a label with a NUL byte. Control: the same name in normal labels is
    forwarded."""
    lab = iso
    t_dot, t_nul, t_ok = token(), token(), token()
    names = [[f"{t_dot}.githubusercontent", "com"],
             [f"x\0{t_nul}", "githubusercontent", "com"],
             [t_ok, "githubusercontent", "com"]]
    arg = json.dumps([[l.encode().hex() for l in n] for n in names])
    unprintable = _unprintable_queries(lab)
    with inet_capture(lab) as cap, nc.Delta(lab) as d:
        cp = lab.vm_exec("vm1", [labmod.PYTHON, "-c", _RAW_DNS, arg], timeout=90)
        rcodes = json.loads(cp.stdout)
        cap.sync()
    sent = lambda t: [p for p in cap.packets(src=VM1, proto=17, dport=53)
                      if t.encode() in p["payload"]]
    # the control, sent last, in dnsmasq's log is the marker its log is read after
    assert sent(t_ok) and wait_until(lambda: queried_containing(lab, t_ok)) \
        and rcodes[2] == 3, \
        f"control: x.githubusercontent.com was not forwarded and answered: {rcodes}"
    problems = []
    if sent(t_dot):
        problems.append("a query with a '.' inside a label reached the internet")
    if sent(t_nul):
        problems.append("a query with a NUL byte in a label reached the internet")
    if _unprintable_queries(lab) != unprintable:     # how dnsmasq logs such names
        problems.append("dnsmasq logged an unprintable name")
    if rcodes[:2] != [5, 5]:
        problems.append(f"vm1 was not answered REFUSED: rcodes {rcodes[:2]}")
    assert not problems, "; ".join(problems)
    assert moved(d, nc.blocked("vm1", "dns_denied")) >= 2


def _unprintable_queries(lab):
    with open(os.path.join(lab.tmpdir, "dnsmasq.log"), errors="replace") as f:
        return sum(1 for line in f if "] <name unprintable> from " in line)


# ---------------------------------------------------------------- 1 and 3, scaled up
# Last in the file: they fill vm1's shares (and, in a daemon with shared tables, everyone's)
# for the few seconds a hold or a pending query lives.

def test_hold_slots_default_share_protects_the_neighbour(iso):
    """Case 1, at the default quota (32) and past the old shared table (256 per worker):
    300 idle partial ClientHellos from vm1; vm2's curl https://github.com/ still works."""
    n = 300
    lab = iso
    def connected(r):
        assert len(r["ports"]) >= 257, f"connects failed: {r['errors'][:5]}"
    with nc.Delta(lab) as d:
        att, r = _hold_attack(lab, n, 32, d, connected)
        try:
            assert_vm2_works(lab, f"vm1 holding {len(r['ports'])} partial ClientHellos")
        finally:
            att.finish()
    assert r["state"].count("held") <= 32, f"{r['state'].count('held')} held for vm1"
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= 1


def test_pending_queries_default_share_protects_the_neighbour(iso):
    """Case 2 at the default quota (1024) and past the old shared table (16,384 per
    worker): 16,500 pending queries from vm1; vm2's DNS and HTTPS keep working."""
    n = 16500
    # a daemon that let the previous test's holds starve vm2 needs them to time out first
    wait_until(lambda: iso.curl("vm2", "https://github.com/", timeout=5).ok,
               what="vm2's https://github.com/ to work again", step=0.5)
    # "a few lost on the way": not every query reaches the resolver, so none is waited for.
    # One name asked n times: n new names under one wildcard would meet the default
    # dns.max_names_per_suffix (1000 an hour, reason dns_budget) before the pending share.
    suffix, d, r2, c2, rcodes = _pending_attack(iso, n, pace=500, all_logged=False,
                                                one_name=True)
    assert r2.rcode == "NOERROR" and r2.addresses == [GITHUB], \
        f"vm2's query was not answered while vm1 had {n} queries pending: {r2.raw}"
    assert c2.ok, (c2.outcome, c2.stderr)
    assert moved(d, nc.blocked("vm1", "vm_limit")) >= n // 2     # a few lost on the way
    assert moved(d, nc.blocked("vm2", "vm_limit")) == 0
