"""DNS name budgets (SPEC s8, issue 15: `dns.max_names_per_suffix: {count, per}`): under a
wildcard, every new distinct name a VM asks for is data it chose, carried in the labels.
Past `count` new names under one allowed suffix in the window, further new names under it
are answered by namegate itself (REFUSED, never forwarded: the resolver's log shows none
of them) with reason=dns_budget, charged to that VM with an event; names it asked for
before keep resolving, exact names are not budgeted, over TCP the same holds, and a
neighbour VM under the same suffix has a budget of its own.

vm1 (policy python, `*.githubusercontent.com`) floods long hex labels, as a tunnel
would; vm2 (policy github, the same wildcard) is the neighbour. A second lab has a budget
larger than the worker's memory of a VM's names: filling it is vm_limit for vm1 alone.
"""
import json
import os
import re
import secrets

import pytest

import lab as labmod
import ng_counters as nc
import lab_net
from lab_net import wait_until
from test_conntrue import _namegatectl
from test_dataplane import _binary
from test_isolation import events

BUDGET = 5                      # new names per suffix and window (one worker: all of it)
SUFFIX = "githubusercontent.com"
RAW = "raw.githubusercontent.com"           # known to the lab's resolver
RAW_ADDR = "203.0.113.13"


def _start(request, count):
    ctl = _namegatectl()
    if ctl:
        os.environ.setdefault("NAMEGATECTL_BIN", ctl)
    lab = labmod.Lab(mode="namegate", vms=labmod.default_vms(2),
                     namegate_cmd=[_binary(), "-c", "{config}"],
                     config={"dns": {"max_names_per_suffix": {"count": count, "per": "1h"}}})
    request.addfinalizer(lab.teardown)      # registered first: runs even if setup fails
    return lab.setup()


@pytest.fixture(scope="module")
def lab(request):
    return _start(request, BUDGET)


@pytest.fixture(scope="module")
def roomy(request):
    """A budget larger than a worker's memory of one VM's names (DP_NAMES_PER_VM, 2048)."""
    return _start(request, 100000)


def forwarded(lab, names):
    """The names of `names` the real resolver was asked for."""
    asked = {q[1].rstrip(".").lower() for q in lab.resolver_queries()}
    return [n for n in names if n in asked]


# One UDP query at a time, each waiting for its answer, so the order namegate judged them
# in is the order written: prints the RCODE of each (None: no answer).
_FLOOD = r"""
import json, socket, struct, sys
names = json.load(sys.stdin)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect(("10.77.0.1", 53))
out = []
for i, name in enumerate(names):
    qid = (0x4000 + i) & 0xffff
    s.send(struct.pack(">6H", qid, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00\x00\x01\x00\x01")
    rcode = None
    try:
        while True:
            a = s.recv(4096)
            if a[:2] == struct.pack(">H", qid):
                rcode = a[3] & 15
                break
    except socket.timeout:
        pass
    out.append(rcode)
print(json.dumps(out))
"""

NOERROR, NXDOMAIN, REFUSED = 0, 3, 5


def flood(lab, vm, names):
    cp = lab.vm_exec(vm, [labmod.PYTHON, "-c", _FLOOD], timeout=120, input=json.dumps(names))
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout.strip().splitlines()[-1])


def spend(lab, vm):
    """However much of vm's budget earlier tests left, none included: spend it (the last
    name refused)."""
    assert flood(lab, vm, tunnel_names(BUDGET + 1, "spend"))[-1] == REFUSED


def tunnel_names(n, tag):
    """n distinct names whose first label is 60 hex digits of "data", as a DNS tunnel's."""
    return [f"{secrets.token_hex(30)}.{tag}{i}.{SUFFIX}" for i in range(n)]


def test_label_flood_refused_past_budget(lab):
    """vm1: one known name, then a flood of new ones; the first BUDGET - 1 new names are
    forwarded (NXDOMAIN from the resolver), every later one REFUSED by namegate and never
    forwarded; the counters and an event say dns_budget for vm1."""
    assert lab.dig("vm1", RAW).addresses == [RAW_ADDR], "control: vm1 resolves a name first"
    names = tunnel_names(4 * BUDGET, "v1")
    budget = nc.blocked("vm1", "dns_budget")
    with nc.Delta(lab) as d:
        rcodes = flood(lab, "vm1", names)
        d.wait({budget: len(names) - (BUDGET - 1)})
    assert rcodes == [NXDOMAIN] * (BUDGET - 1) + [REFUSED] * (len(names) - BUDGET + 1), \
        f"rcodes of vm1's flood with {BUDGET} new names per {SUFFIX} (one spent on {RAW})"
    lab.sync("vm1")
    assert forwarded(lab, names) == names[:BUDGET - 1], \
        "the refused names must never reach the resolver"
    assert d[budget] == len(names) - (BUDGET - 1)
    assert d[nc.blocked("vm1", "dns_denied")] == 0, "budget refusals are not dns_denied"
    assert d[nc.dns("vm1", "blocked")] >= len(names) - (BUDGET - 1)
    assert d[nc.blocked("vm2", "dns_budget")] == 0
    ev = wait_until(lambda: events(lab, vm="vm1", reason="dns_budget"),
                    what="an event naming vm1 with reason dns_budget")
    assert ev[0]["name"] in names[BUDGET - 1:], ev[0]
    assert not events(lab, vm="vm2", reason="dns_budget")


def test_seen_names_keep_resolving(lab):
    """With its budget spent, vm1's names seen in the window still go to the resolver (any
    case: names are compared canonically); an exact name has no budget; a new name is
    refused over TCP too."""
    assert lab.dig("vm1", RAW).rcode == "NOERROR"     # seen (or within the budget, alone)
    spend(lab, "vm1")
    with nc.Delta(lab) as d:
        r = lab.dig("vm1", RAW)
        assert r.rcode == "NOERROR" and r.addresses == [RAW_ADDR], r.raw
        r = lab.dig("vm1", "RAW.GitHubUserContent.COM")
        assert r.rcode == "NOERROR", r.raw
        assert lab.dig("vm1", "pypi.org").rcode == "NOERROR", "exact names: not budgeted"
        fresh = tunnel_names(1, "tcp")[0]
        r = lab.dig("vm1", fresh, tcp=True)
        assert r.rcode == "REFUSED", f"a new name over TCP: {r.raw}"
        d.wait({nc.blocked("vm1", "dns_budget"): 1})
    assert d[nc.blocked("vm1", "dns_budget")] == 1
    assert not forwarded(lab, [fresh])


# One question of the given type and class, raw: prints the RCODE (None: no answer).
_ASK = r"""
import socket, struct, sys
name, qtype, qclass = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect(("10.77.0.1", 53))
q = struct.pack(">6H", 0x5151, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00" + struct.pack(">2H", qtype, qclass)
s.send(q)
try:
    a = s.recv(4096)
    print(a[3] & 15 if a[:2] == q[:2] else "wrong id")
except socket.timeout:
    print(None)
"""


def ask(lab, vm, name, qtype, qclass=1):
    cp = lab.vm_exec(vm, [labmod.PYTHON, "-c", _ASK, name, str(qtype), str(qclass)],
                     timeout=30)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout.strip().splitlines()[-1].replace("None", "null"))


def test_each_question_counts_not_each_name(lab):
    """With vm1's budget spent, a name it asked for keeps resolving for the type it asked,
    but the same name under other types (16 bits a query chooses) is new: REFUSED with
    dns_budget and never forwarded; a class other than IN is refused as dns_denied."""
    assert lab.dig("vm1", RAW).rcode == "NOERROR"
    spend(lab, "vm1")
    types = [28, 16, 15, 200, 4242]                 # AAAA, TXT, MX and two of its choosing
    with nc.Delta(lab) as d:
        assert ask(lab, "vm1", RAW, 1) == NOERROR, "control: the question it asked before"
        rcodes = [ask(lab, "vm1", RAW, t) for t in types]
        chaos = ask(lab, "vm1", RAW, 16, qclass=3)
        d.wait({nc.blocked("vm1", "dns_budget"): len(types),
                nc.blocked("vm1", "dns_denied"): 1})
    assert rcodes == [REFUSED] * len(types)
    assert chaos == REFUSED
    lab.sync("vm1")
    asked = {(t, n.rstrip(".").lower()) for t, n, _ in lab.resolver_queries()}
    leaked = [t for t in asked if t[1] == RAW and t[0] not in ("A",)]
    assert not leaked, f"questions past the budget reached the resolver: {leaked}"


def test_neighbour_has_its_own_budget(lab):
    """vm2 (the same wildcard, its own budget) resolves new names under the suffix vm1
    spent, and a known one, while vm1 is still refused."""
    spend(lab, "vm1")
    names = tunnel_names(BUDGET - 1, "v2")
    with nc.Delta(lab) as d:
        rcodes = flood(lab, "vm2", names)
        r = lab.dig("vm2", "objects.githubusercontent.com")
        again = flood(lab, "vm1", tunnel_names(1, "again"))
    assert rcodes == [NXDOMAIN] * len(names), "vm2's new names under the suffix vm1 spent"
    assert r.rcode == "NOERROR" and r.addresses == [RAW_ADDR], r.raw
    assert again == [REFUSED], "vm1 is still past its budget"
    lab.sync("vm2")
    assert forwarded(lab, names) == names
    assert d[nc.blocked("vm2", "dns_budget")] == 0
    assert d[nc.blocked("vm2", "vm_limit")] == 0


def test_full_name_memory_is_the_vms_own(roomy):
    """With a budget the name memory cannot hold, vm1's 2,500 new names fill its part of
    the table: past it new names are refused with vm_limit (never forwarded), while names
    it has keep resolving and vm2 resolves new names as before."""
    lab = roomy
    names = tunnel_names(2500, "m")
    with nc.Delta(lab) as d:
        rcodes = flood(lab, "vm1", names)
        limited = nc.blocked("vm1", "vm_limit")
        d.wait({limited: 1})
        again = flood(lab, "vm1", names[:3])
        other = tunnel_names(20, "n")
        rcodes2 = flood(lab, "vm2", other)
    refused = [n for n, r in zip(names, rcodes) if r == REFUSED]
    assert rcodes.count(NXDOMAIN) >= 2048 * 7 // 10, "most of the region fills first"
    assert rcodes.count(NXDOMAIN) <= 2048
    assert refused and rcodes.count(NXDOMAIN) + len(refused) == len(names), rcodes[:20]
    assert d[limited] == len(refused)
    assert d[nc.blocked("vm1", "dns_budget")] == 0
    assert again == [NXDOMAIN] * 3, "names vm1 has keep resolving"
    assert rcodes2 == [NXDOMAIN] * len(other), "vm2's part of the table is its own"
    assert d[nc.blocked("vm2", "vm_limit")] == 0
    lab.sync("vm1")
    assert not forwarded(lab, refused[:50])
    wait_until(lambda: events(lab, vm="vm1", reason="vm_limit"),
               what="an event naming vm1 with reason vm_limit")


# The spellings of one name, each asked once over UDP (or TCP) and answered before the
# next: prints, per spelling, the RCODE and whether the answer's question was the query's
# own bytes (None: no answer).
_SPELL = r"""
import json, socket, struct, sys
tcp = sys.argv[1] == "tcp"
out = []
for i, name in enumerate(json.load(sys.stdin)):
    qid = (0x6000 + i) & 0xffff
    question = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + \
        b"\x00\x00\x01\x00\x01"
    q = struct.pack(">6H", qid, 0x0100, 1, 0, 0, 0) + question
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM)
    s.settimeout(3)
    s.connect(("10.77.0.1", 53))
    a = b""
    try:
        if tcp:
            s.sendall(struct.pack(">H", len(q)) + q)
            while len(a) < 2 or len(a) < 2 + struct.unpack(">H", a[:2])[0]:
                chunk = s.recv(4096)
                if not chunk:
                    break
                a += chunk
            a = a[2:]
        else:
            s.send(q)
            while a[:2] != q[:2]:
                a = s.recv(4096)
    except socket.timeout:
        a = b""
    s.close()
    out.append([a[3] & 15, a[12:12 + len(question)] == question] if len(a) > 12 else None)
print(json.dumps(out))
"""


def spellings(name, n):
    """n distinct spellings of name, none all lower case."""
    out = set()
    while len(out) < n:
        s = "".join(c.upper() if c.isalpha() and secrets.randbits(1) else c for c in name)
        if s != name:
            out.add(s)
    return sorted(out)


def spell(lab, vm, names, tcp=False):
    cp = lab.vm_exec(vm, [labmod.PYTHON, "-c", _SPELL, "tcp" if tcp else "udp"], timeout=120,
                     input=json.dumps(names))
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_spellings_of_a_seen_name_are_one_question(lab, tcp):
    """With vm1's budget spent, 20 spellings of a name it has seen all resolve, each answer
    echoing the VM's own spelling in its question, and the resolver reads every one as
    the same lower-case question: the case of the letters carries nothing past namegate
    (on the code before, the resolver read the 20 spellings as the VM wrote them)."""
    assert lab.dig("vm1", RAW).rcode == "NOERROR"
    spend(lab, "vm1")
    names = spellings(RAW, 20)
    before = len(lab.resolver_queries())
    with nc.Delta(lab) as d:
        got = spell(lab, "vm1", names, tcp=tcp)
    assert got == [[NOERROR, True]] * len(names), \
        f"[rcode, question echoed as sent] per spelling: {got}"
    assert d[nc.blocked("vm1", "dns_budget")] == 0
    lab.sync("vm1")
    read = [n for _, n, _ in lab.resolver_queries()[before:] if n.lower() == RAW]
    assert len(read) == len(names), f"every spelling reached the resolver: {read}"
    assert set(read) == {RAW}, f"the names the resolver read: {sorted(set(read))}"
    # what namegate answers itself echoes the VM's spelling as well
    refused = spell(lab, "vm1", [spellings(tunnel_names(1, "sp")[0], 1)[0],
                                 "EvIl.ExAmPlE.CoM"], tcp=tcp)
    assert refused == [[REFUSED, True]] * 2, "a new name past the budget, a denied name"


# A forwarding resolver that randomises the case of every name it sends (0x20) and drops
# an answer whose question does not echo it byte for byte: Debian's unbound, as a VM might
# run it. verbosity 3 logs each mismatch ("wrong 0x20-ID in reply qname") and the fallback.
_UNBOUND_CONF = """server:
    interface: 127.0.0.1
    port: 53
    do-ip6: no
    do-not-query-localhost: no
    use-caps-for-id: yes
    chroot: ""
    username: ""
    directory: "{tmp}"
    pidfile: "{tmp}/unbound-vm1.pid"
    logfile: "{tmp}/unbound-vm1.log"
    use-syslog: no
    verbosity: 3
    num-threads: 1
    module-config: "iterator"
    cache-max-ttl: 0
    access-control: 127.0.0.0/8 allow
remote-control:
    control-enable: no
forward-zone:
    name: "."
    forward-addr: {resolver}
"""


@pytest.fixture
def unbound(lab, request):
    """unbound in vm1's namespace on 127.0.0.1:53, stopped when the test ends."""
    conf = os.path.join(lab.tmpdir, "unbound-vm1.conf")
    with open(conf, "w") as f:
        f.write(_UNBOUND_CONF.format(tmp=lab.tmpdir, resolver="10.77.0.1"))
    d = lab.spawn("unbound-vm1", ["unbound", "-d", "-c", conf], ns=lab.vm("vm1").ns)
    request.addfinalizer(lambda: d.stop(5))
    wait_until(lambda: lab.dig("vm1", "pypi.org", server="127.0.0.1", timeout=2).rcode or
               not d.alive(), what="unbound in vm1 answering on 127.0.0.1")
    assert d.alive(), d.output()
    return os.path.join(lab.tmpdir, "unbound-vm1.log")


def test_case_randomising_stub_resolves(lab, unbound):
    """A 0x20 stub (unbound, use-caps-for-id) in vm1, forwarding to the resolver through
    namegate, gets its answers: namegate sends its mixed-case questions in lower case and
    gives each answer the stub's spelling back, so unbound never sees a mismatch (it would
    log "wrong 0x20-ID" and fall back, or fail, if the answer came back lower case)."""
    lab.dig("vm1", RAW)
    for name, addr in (("pypi.org", None), (RAW, RAW_ADDR)):
        r = lab.dig("vm1", name, server="127.0.0.1")
        assert r.rcode == "NOERROR" and r.addresses, f"{name} through unbound: {r.raw}"
        assert addr is None or r.addresses == [addr], r.raw
    log = lab_net.read_text(unbound)
    assert "reply from <.> 10.77.0.1#53" in log, "unbound's own record of the answers"
    assert "0x20" not in log and "Capsforid" not in log, \
        [line for line in log.splitlines() if "0x20" in line or "Capsforid" in line]


@pytest.fixture
def lossy(lab, request):
    """The resolver's host drops every other DNS-over-TCP segment that carries data (PSH),
    the first included, as a lossy path past namegate would, so the VM's kernel sends it
    again. Returns a function giving how many it dropped."""
    table = "ng_lossy"
    lab.inet_exec(["nft", "add", "table", "inet", table], check=True)
    request.addfinalizer(lambda: lab.inet_exec(["nft", "delete", "table", "inet", table]))
    lab.inet_exec(["nft", "add", "chain", "inet", table, "in",
                   "{ type filter hook input priority -10; }"], check=True)
    lab.inet_exec(["nft", "add", "rule", "inet", table, "in", "tcp", "dport", "53", "tcp",
                   "flags", "&", "psh", "==", "psh", "numgen", "inc", "mod", "2", "==", "0",
                   "counter", "drop"], check=True)

    def dropped():
        text = lab.inet_exec(["nft", "list", "table", "inet", table], check=True).stdout
        return int(re.search(r"counter packets (\d+)", text).group(1))
    return dropped


def test_retransmitted_tcp_query_is_lower_case(lab, lossy):
    """Over TCP the resolver loses the first copy of vm1's mixed-case query (namegate sent
    it in lower case); the VM's kernel sends it again, and namegate, which judged those
    bytes already, sends the copy on in lower case too: the resolver reads one lower-case
    question, and vm1 gets its answer in its own spelling (on the code before, the copy
    went on as the VM spelled it and the resolver read that)."""
    name = spellings(RAW, 1)[0]
    assert lab.dig("vm1", RAW).rcode == "NOERROR"
    before = len(lab.resolver_queries())
    assert spell(lab, "vm1", [name], tcp=True) == [[NOERROR, True]]
    assert lossy() == 1, "the first copy of the query was lost past namegate"
    lab.sync("vm1")
    read = [n for _, n, _ in lab.resolver_queries()[before:] if n.lower() == RAW]
    assert read == [RAW], f"the names the resolver read: {read}"
