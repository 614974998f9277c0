"""A forged UDP DNS answer from an accomplice on the internet (RFC 5452): namegate must
learn only the bindings the real resolver gave.

The VM sends an allowed query with IP TTL 1, so it dies at the first router (emulated by
an nft rule in the internet namespace) and the resolver never answers: the query waits in
namegate's table of queries in flight. The accomplice, told in advance the VM's source port
and the name, but off the path, sprays forged answers from the resolver's address, one per
query ID, each giving the name an address of its choosing. namegate draws the query's ID
and its source port, so the spray must guess 32 bits, not 16: no answer of it matches, and
the VM cannot reach the forged address. Controls: the spray reached namegate (its answers
counted unsolicited); an on-path forger that read the query as it left (namegate's port and
ID) is taken, so the spray's frames are ones namegate would take; and the real resolver's
answer still teaches the real binding. On 8251baa (the VM's port kept) the spray taught
pypi.org -> 203.0.113.20, and the VM's HTTPS to it went through.
"""
import json

import lab as labmod
import lab_services as svc
import ng_counters as nc
from test_conntrue import VM1, bindings, inet_capture, resolve
from test_forged_peer import first_router_drops_ttl1
from test_conntrue import ng  # noqa: F401 (a fixture)

EVIL = "203.0.113.20"           # the lab's evil.test server: not allowed to vm1 by address
FORGED_CONTROL = "198.51.100.66"
NAME = "pypi.org"
CONTROL_NAME = "www.pypi-mirror.test"
QUERIES = 6                     # the VM's queries in flight: more IDs for the spray to hit,
                                # and room for one more (below SAME_MAX)
SAME_MAX = 8                    # DP_PENDING_SAME_MAX: one question's queries in flight
VM_PORT = 999                   # below the range namegate draws from: never its own

# In the internet namespace: forged answers from the resolver to the VM's port, giving NAME
# the address argv[5]. "spray": one per query ID, to port argv[6]. "onpath": the answer to
# the first query for NAME seen leaving with TTL 1, as only the path could send it.
_FORGE = r"""
import socket, struct, sys, time
from scapy.all import DNS, DNSQR, DNSRR, IP, UDP, Ether, raw
mode, router_mac, vm_mac, resolver, vm, forged, port, name = sys.argv[1:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))

def frame(dport, qid):
    # UDP checksum 0 (none, RFC 768): the ID is patched in place for each answer
    return bytearray(raw(Ether(src=router_mac, dst=vm_mac) /
                         IP(src=resolver, dst=vm) / UDP(sport=53, dport=dport, chksum=0) /
                         DNS(id=qid, qr=1, aa=1, rd=1, ra=1, qd=DNSQR(qname=name),
                             an=DNSRR(rrname=name, type="A", ttl=300, rdata=forged))))

if mode == "spray":
    f = frame(int(port), 0)
    for qid in range(65536):
        f[42:44] = struct.pack(">H", qid)
        s.send(f)
        if qid % 64 == 63:
            time.sleep(0.001)   # paced: the gateway's ring is not the thing under test
    print("sprayed", flush=True)
else:
    wire = b"".join(bytes([len(label)]) + label.encode() for label in name.split("."))
    print("ready", flush=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        b = s.recv(65535)
        if len(b) < 44 or b[12:14] != b"\x08\x00" or b[23] != 17 or b[22] != 1:
            continue
        ihl = (b[14] & 15) * 4
        udp = 14 + ihl
        if struct.unpack(">H", b[udp + 2:udp + 4])[0] != 53 or wire not in b:
            continue
        sport = struct.unpack(">H", b[udp:udp + 2])[0]
        qid = struct.unpack(">H", b[udp + 8:udp + 10])[0]
        s.send(frame(sport, qid))
        print("answered", sport, qid, flush=True)
        break
"""

# In vm1: QUERIES queries for NAME from VM_PORT (+ argv) with TTL 1, the forger run in the
# internet namespace (argv[1:] its command line), and the addresses of the answers read.
_VICTIM = r"""
import json, socket, struct, subprocess, sys
port, n, name, resolver = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
forger = sys.argv[5:]

def query(qid):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)

def addresses(msg):
    # the A records of a plain answer to one question (names may be pointers)
    an = struct.unpack(">H", msg[6:8])[0]
    i = 12
    while msg[i]:
        i += 1 + msg[i]
    i += 5
    out = []
    for _ in range(an):
        i += 2 if msg[i] & 0xc0 == 0xc0 else len(name) + 2
        rtype, _, _, rdlen = struct.unpack(">HHIH", msg[i:i + 10])
        i += 10
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(msg[i:i + 4]))
        i += rdlen
    return out

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", port))
s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 1)
p = subprocess.Popen(forger, stdout=subprocess.PIPE, text=True)
if forger[forger.index("-c") + 2] == "onpath":
    assert p.stdout.readline().strip() == "ready"
for i in range(n):
    s.sendto(query(0x4000 + i), (resolver, 53))
said = p.communicate(timeout=60)[0].split()
got = []
s.settimeout(2)
try:
    while True:
        got += addresses(s.recv(4096))
except socket.timeout:
    pass
print("RESULT " + json.dumps({"forger": said, "addresses": got}))
"""


def _forge(lab, mode, name, forged, vm_port, queries):
    vm = lab.vm("vm1")
    forger = ["ip", "netns", "exec", lab.inet_ns, labmod.PYTHON, "-c", _FORGE, mode,
              lab.router_mac, vm.mac, svc.RESOLVER, VM1, forged, str(vm_port), name]
    cp = lab.vm_exec("vm1", [labmod.PYTHON, "-c", _VICTIM, str(vm_port), str(queries), name,
                             svc.RESOLVER] + forger, timeout=90)
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"the victim printed no result (rc {cp.returncode}): "
                         f"{cp.stdout[-500:]} {cp.stderr[-1500:]}")


def bound(lab, name, addr):
    listed = bindings(lab, "vm1") or ""
    return [line for line in listed.splitlines()[1:]
            if line.split()[:2] == [name, addr]]


def test_sprayed_answers_for_every_query_id_teach_no_binding(ng):  # noqa: F811
    """The accomplice knows the VM's port and name, and tries every query ID."""
    with first_router_drops_ttl1(ng):
        with nc.Delta(ng) as d:
            attack = _forge(ng, "spray", NAME, EVIL, VM_PORT, QUERIES)
            # the spray reached namegate: nearly every answer of it was judged unsolicited
            d.wait({nc.blocked("vm1", "unsolicited"): 65536 * 9 // 10})
        # control: the path's forger, which read namegate's port and ID, is taken (for
        # another name: NAME's queries in flight are as many as one question may have)
        control = _forge(ng, "onpath", CONTROL_NAME, FORGED_CONTROL, VM_PORT - 1, 1)
    assert attack["forger"] == ["sprayed"], attack
    assert control["forger"][:1] == ["answered"], control
    assert control["addresses"] == [FORGED_CONTROL] and \
        bound(ng, CONTROL_NAME, FORGED_CONTROL), \
        f"control: an answer with the query's own port and ID was not taken: {control}"
    learned = bound(ng, NAME, EVIL)
    r = ng.curl("vm1", f"https://{NAME}/", insecure=True, timeout=5,
                resolve=f"{NAME}:443:{EVIL}")
    assert not learned, f"namegate learned {NAME} -> {EVIL} from a sprayed answer " \
        f"({learned}); the VM read {attack['addresses']}; https to {EVIL}: {r.outcome}"
    assert not attack["addresses"], \
        f"the VM read a sprayed answer (the query's port and ID guessed): {attack}"
    assert not r.ok and r.outcome == "connection refused", (r.outcome, r.stderr)
    # control: the real resolver's answer still teaches the real binding
    real = resolve(ng, NAME)    # pypi.org's sprayed queries may still be in flight
    assert real != EVIL and bound(ng, NAME, real), bindings(ng, "vm1")


# In vm1: argv[2] queries for argv[1] from port argv[3] with TTL 1, the rcodes read back.
_FLOOD = r"""
import json, socket, struct, sys
name, n, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", port))
s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 1)
for i in range(n):
    q = struct.pack(">HHHHHH", 0x5000 + i, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    s.sendto(q + b"\0" + struct.pack(">HH", 1, 1), (sys.argv[4], 53))
rcodes = []
s.settimeout(2)
try:
    while True:
        rcodes.append(s.recv(4096)[3] & 15)
except socket.timeout:
    pass
print(json.dumps(rcodes))
"""


def test_queries_of_one_question_in_flight_are_bounded(ng):  # noqa: F811
    """The birthday attack (RFC 5452 s5): each query in flight is one more key a sprayed
    answer may hit, so the VM keeps many of one question waiting. Past SAME_MAX of them
    namegate answers SERVFAIL itself and forwards nothing; another question still goes."""
    name, other, n = "files.pythonhosted.org", "github.com", 4 * SAME_MAX
    with first_router_drops_ttl1(ng), inet_capture(ng) as cap, nc.Delta(ng) as d:
        cp = ng.vm_exec("vm1", [labmod.PYTHON, "-c", _FLOOD, name, str(n), "997",
                                svc.RESOLVER], timeout=30)
        more = ng.vm_exec("vm1", [labmod.PYTHON, "-c", _FLOOD, other, "1", "996",
                                  svc.RESOLVER], timeout=30)
        cap.sync()
    rcodes = json.loads(cp.stdout)

    def left(label):
        return [p for p in cap.packets(src=VM1, proto=17, dport=53)
                if label.encode() in p["payload"]]
    assert len(left("pythonhosted")) == SAME_MAX, \
        f"{len(left('pythonhosted'))} of {n} queries of one question forwarded at once " \
        f"(rcodes back: {rcodes})"
    assert rcodes == [2] * (n - SAME_MAX), rcodes
    assert d[nc.blocked("vm1", "vm_limit")] >= n - SAME_MAX
    # control: another question, asked meanwhile, left
    assert json.loads(more.stdout) == [] and left("github"), more.stdout
