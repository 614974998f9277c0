"""The HA pair's lab (namegate(8), HA PAIR): two namegate boxes between a VM bridge and an
uplink bridge, each with its keepalived, speaking VRRPv3 unicast (advert_int 0.1) over an HA
link of their own; a VM on one bridge and a server on the other.

    [vm] --- br-vm ---+--- vm0 [box a: namegate + keepalived] up0 ---+--- br-up --- [srv]
                      +--- vm0 [box b: namegate + keepalived] up0 ---+
                                   a:ha0 ===== HA link ===== b:ha0

Every namespace is "<prefix>-<role>" with a prefix of its own per run ("nh" + 4 hex
digits), every process is started here and killed by close(), which also removes every
namespace: the fixture calls it on success and on failure alike. The e2e lab's plumbing
(tests/e2e/lab_net.py) runs the commands.

keepalived's configuration is the package's sample (dataplane/dist), its addresses, FIFO,
priority and namegatectl's path put in, so the lab runs what an operator starts from.
"""
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time

import lab_namegate
from lab_net import run as sh, wait_until  # noqa: F401 (test_ha.py's too)

ROLES = ("a", "b")
VM_MAC, VM_IP = "02:00:00:00:00:11", "10.77.0.11"
SRV_IP, SRV_PORT = "10.77.0.2", 9000
# the sync stream's checks: a resolver, and a server only a name resolved through it opens
DNS_IP, NAMED_IP, NAMED = "10.77.0.53", "10.77.0.3", "srv.sync.test"
SYNC_PORT = 7400
# the budget's and the grant's checks: a sink the VM uploads to through an egress budget of
# BUDGET bytes an hour, and a server the policy does not allow, reached only by a grant
SINK_IP, GRANT_IP, BUDGET = "10.77.0.4", "10.77.0.5", 100000
HA_IP = {"a": "169.254.77.1", "b": "169.254.77.2"}
PRIORITY = {"a": 100, "b": 90}          # a leads when both may
# VMs configured besides the real one, none of them present: a takeover announces each
# (more than the queue to the ports holds at once, so they go out over several turns)
EXTRA_VMS = 1500


def extra_vm(i):
    """(name, MAC, IPv4) of configured VM i, 0 <= i < EXTRA_VMS."""
    return f"x{i}", f"02:00:00:01:{i >> 8:02x}:{i & 0xff:02x}", f"10.78.{i >> 8}.{i & 0xff}"


# The server: a greeting to each connection, counted, so a connection is whole only when
# it crossed the forwarding box both ways.
SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(128)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    try:
        c.sendall(b"hello %d\n" % n)
    except OSError:
        pass
    c.close()
"""

# The named server's TLS echo (port 443, its certificate made for the run): each
# connection's bytes sent back as they come, for as long as the client keeps it open.
ECHO_PORT = 443
ECHO = r"""
import socket, ssl, sys, threading
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(128)
def serve(c):
    try:
        with ctx.wrap_socket(c, server_side=True) as t:
            while True:
                b = t.recv(65536)
                if not b:
                    break
                t.sendall(b)
    except (OSError, ssl.SSLError):
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# The sink: reads each connection to its end (or its cut) and appends the bytes it read.
SINK = r"""
import socket, sys, threading
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
def serve(c):
    n = 0
    c.settimeout(5)
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
    except OSError:
        pass
    with open(sys.argv[3], "a") as f:
        f.write(f"{n}\n")
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# The VM's long-lived TLS connections: N of them to the echo, by name (SNI), each sending
# 512 random bytes every 0.2 s and checking that every byte comes back, until one fails
# (an RST, a timeout, bytes that differ: the connection counts as lost from then on).
# Each line on stdin asks for the state: a JSON list of {rounds, last (monotonic time of
# the last round whole), error}.
CONNS = r"""
import json, os, socket, ssl, sys, threading, time
host, port, sni, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
state = [{"rounds": 0, "last": 0.0, "error": None} for _ in range(n)]
def run(st):
    try:
        c = ctx.wrap_socket(socket.create_connection((host, port), timeout=10),
                            server_hostname=sni)
        c.settimeout(30)
        while True:
            data = os.urandom(512)
            c.sendall(data)
            got = b""
            while len(got) < len(data):
                b = c.recv(len(data) - len(got))
                if not b:
                    raise OSError("closed by the peer")
                got += b
            if got != data:
                raise OSError("the echo differs")
            st["rounds"] += 1
            st["last"] = time.monotonic()
            time.sleep(0.2)
    except Exception as e:
        st["error"] = f"{type(e).__name__}: {e}"
for st in state:
    threading.Thread(target=run, args=(st,), daemon=True).start()
for line in sys.stdin:
    print(json.dumps(state), flush=True)
"""

# Segments from the VM in the middle of no connection (ACK and data, on a port of its
# own), sent raw: nothing may open a flow for them. Then a SYN from the same port, which
# opens one as any SYN does: the server seeing it shows the segments' path was open.
MIDSTREAM = r"""
import sys, time
from scapy.all import Ether, IP, TCP, Raw, sendp
src_mac, src, dst_mac, dst, sport, dport = sys.argv[1:7]
head = Ether(src=src_mac, dst=dst_mac) / IP(src=src, dst=dst)
sendp(head / TCP(sport=int(sport), dport=int(dport), flags="PA", seq=123456, ack=654321) /
      Raw(b"midstream, no flow"), iface="eth0", count=3, verbose=False)
time.sleep(0.5)
sendp(head / TCP(sport=int(sport), dport=int(dport), flags="S", seq=999), iface="eth0",
      verbose=False)
"""

# The server's side of it: TCP segments from the VM's port sport, counted as SYNs, RSTs
# (the VM's kernel resets what the SYN's answer opened) and others, printed when stopped
# (SIGTERM).
SEGMENTS = r"""
import json, signal, socket, struct, sys
sport = int(sys.argv[1])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(("eth0", 0))
seen = {"syn": 0, "rst": 0, "other": 0}
def done(*_):
    print(json.dumps(seen), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    f = s.recv(2048)
    if len(f) >= 38 and f[23] == 6:
        ihl = (f[14] & 15) * 4
        if struct.unpack(">H", f[14 + ihl:16 + ihl])[0] == sport:
            flags = f[14 + ihl + 13]
            seen["syn" if flags & 2 else "rst" if flags & 4 else "other"] += 1
"""

# The VM's upload: N bytes to the sink, 1,000 at a time; prints what the kernel took.
UPLOAD = r"""
import socket, sys
sent = 0
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    c.settimeout(3)
    while sent < int(sys.argv[3]):
        sent += c.send(b"x" * min(1000, int(sys.argv[3]) - sent))
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
except OSError:
    pass
print(sent)
"""

# The resolver: nK.sync.test is 10.79.(K >> 8).(K & 255), srv.sync.test the named server,
# anything else NXDOMAIN; TTL 300.
DNS = r"""
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
while True:
    q, peer = s.recvfrom(512)
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace").lower())
        i += 1 + q[i]
    question = q[12:i + 5]
    name = ".".join(labels)
    addr = None
    if name == sys.argv[3]:
        addr = socket.inet_aton(sys.argv[2])
    elif len(labels) == 3 and labels[1:] == ["sync", "test"] and labels[0][1:].isdigit():
        k = int(labels[0][1:])
        addr = bytes([10, 79, (k >> 8) & 255, k & 255])
    head = q[:2] + struct.pack(">HHHHH", 0x8180 if addr else 0x8183, 1, 1 if addr else 0, 0,
                               0)
    ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + addr if addr else b""
    s.sendto(head + question + ans, peer)
"""

# The VM's resolver: queries the names given (comma-separated) and nK.sync.test for K in
# range(N), at RATE a second, each once, and prints {name: monotonic time of its answer}
# (names without one left out).
RESOLVE = r"""
import json, socket, struct, sys, time
server, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
names = [x for x in sys.argv[4].split(",") if x] + [f"n{k}.sync.test" for k in range(n)]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
got, start = {}, time.monotonic()
for k, name in enumerate(names):
    q = struct.pack(">HHHHHH", (k + 1) & 0xffff, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\0\0\1\0\1"
    for attempt in range(3):        # a resolver asks again
        s.sendto(q, (server, 53))
        try:
            while True:             # a late answer to an earlier query is not this one's
                r = s.recv(512)
                if r[:2] == q[:2]:
                    break
        except OSError:
            continue
        if r[3] & 15 == 0 and struct.unpack(">H", r[6:8])[0] > 0:
            got[name] = time.monotonic()
        break
    time.sleep(max(0.0, start + (k + 1) / rate - time.monotonic()))
print(json.dumps(got))
"""

# The server's side of a takeover: the gratuitous ARPs it sees (request, sender address
# the target's), each sender address once, printed when stopped (SIGTERM).
SNIFFER = r"""
import signal, socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)      # SO_RCVBUFFORCE: a burst of thousands
s.bind(("eth0", 0))
seen = set()
def done(*_):
    print(len(seen), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    f = s.recv(2048)
    if len(f) >= 42 and f[20:22] == b"\x00\x01" and f[28:32] == f[38:42]:
        seen.add(f[28:32])
"""

# The VM's probe: a new connection every STEP seconds for DURATION, each given TIMEOUT;
# writes the monotonic time of each that got its greeting to a file as it goes (so a test
# can wait for the first), and the count of all tried to stdout at the end.
PROBE = r"""
import socket, sys, time
host, port, duration, step, timeout = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6])
log, tried, end = open(sys.argv[6], "w"), 0, time.monotonic() + duration
while time.monotonic() < end:
    t = time.monotonic()
    tried += 1
    try:
        with socket.create_connection((host, port), timeout=timeout) as c:
            c.settimeout(timeout)
            if c.recv(64).startswith(b"hello"):
                log.write(f"{t}\n")
                log.flush()
    except OSError:
        pass
    time.sleep(max(0.0, step - (time.monotonic() - t)))
print(tried)
"""


# The guard's lab (test_ha_guard.py): a sniffer on interfaces of the switches' namespace.
# "loop": on bridges, the frames each floods to itself (broadcast and multicast: the VM's
# ARP requests for MARK_IP, and any copy a loop makes), but for the beacons, which every
# box sends and none forwards; "sent": the time of each frame a box sent into the switch (its
# veth's incoming side) that is neither a beacon nor a takeover's announcement (RARP,
# gratuitous ARP). Prints JSON when stopped (SIGTERM).
MARK_IP = "10.77.0.250"
SW_SNIFF = r"""
import json, select, signal, socket, sys, time
mode, ifs = sys.argv[1], sys.argv[2:]
socks = []
for i in ifs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
    s.bind((i, 0))
    socks.append(s)
seen, start = [], time.time()
def done(*_):
    print(json.dumps({"frames": seen, "start": start, "end": time.time()}), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        f, addr = s.recvfrom(2048)
        t = time.time()
        arp = len(f) >= 42 and f[12:14] == b"\x08\x06"
        if mode == "loop":
            if f[12:14] != b"\x88\xb5":
                seen.append(t)
        elif addr[2] != 4 and f[12:14] not in (b"\x88\xb5", b"\x80\x35") and not (
                arp and f[28:32] == f[38:42]):
            seen.append(t)
"""

# From the VM: ARP requests for MARK_IP (broadcast, the VM's own addresses, so a box that
# forwards sends them on), COUNT of them STEP seconds apart.
ARP_FLOOD = r"""
import socket, sys, time
mac, ip, mark = bytes.fromhex(sys.argv[1].replace(":", "")), socket.inet_aton(sys.argv[2]), \
    socket.inet_aton(sys.argv[3])
count, step = int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
f = b"\xff" * 6 + mac + b"\x08\x06" + bytes.fromhex("0001080006040001") + mac + ip + \
    b"\x00" * 6 + mark
for _ in range(count):
    s.send(f + b"\x00" * 18)
    time.sleep(step)
"""

# In the VM: the first beacon of priority PRIO that says its sender forwards, in hex; or,
# with a frame, that frame sent COUNT times STEP seconds apart (a VM's replay).
BEACON = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b5))
s.bind(("eth0", 0x88b5))
if sys.argv[1] == "capture":
    s.settimeout(10)
    while True:
        f = s.recv(2048)
        if f[14:18] == b"NGHA" and f[19] & 1 and f[20] == int(sys.argv[2]):
            print(f.hex())
            break
else:
    f, count, step = bytes.fromhex(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    for _ in range(count):
        s.send(f)
        time.sleep(step)
"""


class HaLab:
    def __init__(self, build, src):
        self.build, self.src = build, src
        self.namegate = os.path.join(build, "dataplane", "namegate")
        self.ctl = os.path.join(build, "control", "namegatectl")
        self.sample = os.path.join(build, "dataplane", "dist", "keepalived-namegate.conf")
        self.prefix = "nh" + secrets.token_hex(2)
        self.tmp = f"/tmp/namegate-ha-{self.prefix}"
        self.procs = {}                 # name -> Popen
        self.ns = {r: f"{self.prefix}-{r}" for r in ("a", "b", "sw", "vm", "srv")}

    # ---- building -------------------------------------------------------------------
    def start(self):
        os.makedirs(self.tmp)
        fd = os.open(os.path.join(self.tmp, "ha.key"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.close(fd)
        for ns in self.ns.values():
            sh(["ip", "netns", "add", ns])
        for ns in self.ns.values():     # no router solicitations or DAD from any kernel
            sh(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
        p, sw = self.prefix, self.ns["sw"]
        cmds = [f"link add {p}-brv type bridge mcast_snooping 0",
                f"link add {p}-bru type bridge mcast_snooping 0",
                f"link add {p}-v type veth peer name eth0 netns {self.ns['vm']}",
                f"link add {p}-s type veth peer name eth0 netns {self.ns['srv']}",
                f"link set {p}-v master {p}-brv", f"link set {p}-s master {p}-bru"]
        for r in ROLES:
            cmds += [f"link add {p}-{r}v type veth peer name vm0 netns {self.ns[r]}",
                     f"link add {p}-{r}u type veth peer name up0 netns {self.ns[r]}",
                     f"link set {p}-{r}v master {p}-brv", f"link set {p}-{r}u master {p}-bru"]
        sh(["ip", "-n", sw, "-batch", "-"], input="\n".join(cmds) + "\n")
        sh(["ip", "-n", self.ns["a"], "link", "add", "ha0", "type", "veth", "peer", "name",
            "ha0", "netns", self.ns["b"]])
        links = {sw: [f"{p}-brv", f"{p}-bru", f"{p}-v", f"{p}-s"] + [f"{p}-{r}{s}" for r in ROLES
                                                                for s in "vu"],
                 self.ns["vm"]: ["eth0"], self.ns["srv"]: ["eth0"]}
        for r in ROLES:
            links[self.ns[r]] = ["vm0", "up0", "ha0"]
        for ns, ifs in links.items():
            for i in ifs:
                sh(["ip", "link", "set", i, "up"], ns=ns)
                sh(["ethtool", "-K", i, "tx", "off"], ns=ns, check=False)
            sh(["ip", "link", "set", "lo", "up"], ns=ns)
        sh(["ip", "link", "set", "eth0", "down"], ns=self.ns["vm"])
        sh(["ip", "link", "set", "eth0", "address", VM_MAC, "up"], ns=self.ns["vm"])
        sh(["ip", "addr", "add", f"{VM_IP}/24", "dev", "eth0"], ns=self.ns["vm"])
        for a in (SRV_IP, NAMED_IP, DNS_IP, SINK_IP, GRANT_IP):
            sh(["ip", "addr", "add", f"{a}/24", "dev", "eth0"], ns=self.ns["srv"])
        for r in ROLES:
            sh(["ip", "addr", "add", f"{HA_IP[r]}/30", "dev", "ha0"], ns=self.ns[r])
        self.spawn("srv", self.ns["srv"], ["/usr/bin/python3", "-c", SERVER, SRV_IP,
                                           str(SRV_PORT)])
        self.spawn("srv-named", self.ns["srv"], ["/usr/bin/python3", "-c", SERVER, NAMED_IP,
                                                 str(SRV_PORT)])
        self.spawn("srv-granted", self.ns["srv"], ["/usr/bin/python3", "-c", SERVER, GRANT_IP,
                                                   str(SRV_PORT)])
        self.spawn("sink", self.ns["srv"], ["/usr/bin/python3", "-c", SINK, SINK_IP,
                                            str(SRV_PORT), os.path.join(self.tmp, "sink")])
        self.spawn("dns", self.ns["srv"], ["/usr/bin/python3", "-c", DNS, DNS_IP, NAMED_IP,
                                           NAMED])
        cert, key = os.path.join(self.tmp, "echo.pem"), os.path.join(self.tmp, "echo.key")
        sh(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days",
            "2", "-subj", f"/CN={NAMED}", "-addext", f"subjectAltName=DNS:{NAMED}"])
        self.spawn("echo", self.ns["srv"], ["/usr/bin/python3", "-c", ECHO, NAMED_IP,
                                            str(ECHO_PORT), cert, key])
        for r in ROLES:
            self.start_namegate(r)
            self.start_watcher(r)
            self.start_keepalived(r)

    def spawn(self, name, ns, argv):
        log = open(os.path.join(self.tmp, f"{name}.log"), "ab")
        self.procs[name] = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdout=log,
                                            stderr=subprocess.STDOUT)
        log.close()
        return self.procs[name]

    def path(self, r, what):
        return os.path.join(self.tmp, f"{r}-{what}")

    def config(self, r):
        """namegate's configuration for box r: the server's address allowed to the VM."""
        return "\n".join([
            "dataplane:",
            f"  eal: [--no-huge, -m, '256', --no-pci, --file-prefix, {self.prefix}{r}]",
            "  vm_port: net_af_packet0,iface=vm0",
            "  uplink_port: net_af_packet1,iface=up0",
            "  max_flows: 4096", "  max_flows_per_vm: 1024", "  max_bindings: 4096",
            "  max_vms: 2048",
            "slow_path: {enabled: false}",
            f"resolvers: [{DNS_IP}]",
            "metrics: 127.0.0.1:9477",
            f"control_socket: {self.path(r, 'ng.sock')}",
            f"events: {self.path(r, 'events.jsonl')}",
            f"grants: {{state: {self.path(r, 'grants.json')}}}",
            f"ha: {{notify_fifo: {self.path(r, 'ha.fifo')}, instance: namegate, "
            f"track_file: {self.path(r, 'ha.state')}, "
            f"sync_peer: '{HA_IP['b' if r == 'a' else 'a']}:{SYNC_PORT}', "
            f"sync_listen: '{HA_IP[r]}:{SYNC_PORT}', "
            f"sync_key_file: {os.path.join(self.tmp, 'ha.key')}, priority: {PRIORITY[r]}}}",
            f"policies: {{srv: {{allow: ['{SRV_IP}:{SRV_PORT}', '*.sync.test', "
            f"'{SINK_IP}:{SRV_PORT}'], budgets: [{{host: '{SINK_IP}', upload: {BUDGET}, "
            "per: 1h}]}}",
            "vms:",
            f"  - {{name: vm1, mac: '{VM_MAC}', ipv4: {VM_IP}, policy: srv}}"]
            + [f"  - {{name: {n}, mac: '{m}', ipv4: {a}, policy: srv}}"
               for n, m, a in map(extra_vm, range(EXTRA_VMS))] + [
            ""])

    def start_namegate(self, r):
        cfg = self.path(r, "namegate.yaml")
        with open(cfg, "w") as f:
            f.write(self.config(r))
        p = self.spawn(f"namegate-{r}", self.ns[r], [self.namegate, "-c", cfg])

        class Live:             # the test command counts cases run through a real daemon
            def alive(_):
                return p.poll() is None
        lab_namegate.LIVE_DAEMONS.append(Live())

    def start_watcher(self, r):
        """namegatectl ha --watch, as namegate-ha-watch.service runs it: keepalived's
        track_file on a crash or a hang, at its default bound."""
        self.spawn(f"watch-{r}", self.ns[r], [self.ctl, "-s", self.path(r, "ng.sock"), "ha",
                                              "--watch", self.path(r, "ha.watch")])

    def keepalived_conf(self, r):
        """The package's sample for box r: only what differs per box and per run put in."""
        other = "b" if r == "a" else "a"
        with open(self.sample) as f:
            text = f.read()
        ctl = re.search(r'script "(\S+)/namegatectl ha', text).group(1) + "/namegatectl"
        subs = [("/run/namegate-ha.fifo", self.path(r, "ha.fifo")),
                ("/run/namegate-ha.state", self.path(r, "ha.state")),
                ("/run/namegate-ha.watch", self.path(r, "ha.watch")),
                (f'"{ctl} ha', f'"{self.ctl} -s {self.path(r, "ng.sock")} ha'),
                ("unicast_src_ip 169.254.77.1", f"unicast_src_ip {HA_IP[r]}"),
                ("\t\t169.254.77.2\n", f"\t\t{HA_IP[other]}\n"),
                ("priority 100", f"priority {PRIORITY[r]}"),
                # the lab shares two cores with whatever else runs: a worker may wait
                # longer than the sample's 300 ms for the CPU without being hung, and a
                # health check that fails then puts a healthy backup in FAULT
                ("ha --check --timeout 300", "ha --check --timeout 1500")]
        for old, new in subs:
            assert old in text, f"the sample no longer has {old!r}"
            text = text.replace(old, new)
        return text

    def start_keepalived(self, r):
        conf = self.path(r, "keepalived.conf")
        with open(conf, "w") as f:
            f.write(self.keepalived_conf(r))
        self.spawn(f"keepalived-{r}", self.ns[r], [
            "keepalived", "--dont-fork", "--log-console", "--vrrp", "-f", conf,
            "-p", self.path(r, "keepalived.pid"), "-r", self.path(r, "vrrp.pid")])

    # ---- looking --------------------------------------------------------------------
    def ha(self, r, timeout=2):
        cp = sh([self.ctl, "-s", self.path(r, "ng.sock"), "ha", "--json"], check=False,
                timeout=timeout + 5)
        return json.loads(cp.stdout) if cp.returncode == 0 else None

    def role(self, r):
        h = self.ha(r)
        return h["role"] if h else None

    def metrics(self, r):
        cp = sh(["curl", "-s", "-m", "2", "http://127.0.0.1:9477/metrics"], ns=self.ns[r],
                check=False)
        out = {}
        for line in cp.stdout.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def bindings(self, r):
        """The names box r has bindings of for the VM."""
        cp = sh([self.ctl, "-s", self.path(r, "ng.sock"), "bindings", "vm1", "--json"],
                check=False, timeout=10)
        if cp.returncode != 0:
            return set()
        return {b["name"] for b in json.loads(cp.stdout)["bindings"]}

    def resolve(self, n, rate, first=()):
        """The VM resolves the names first, then n of nK.sync.test, at rate a second:
        {name: monotonic time of its answer}."""
        cp = sh(["/usr/bin/python3", "-c", RESOLVE, DNS_IP, str(n), str(rate), ",".join(first)],
                ns=self.ns["vm"], timeout=n / rate + 60)
        return json.loads(cp.stdout)

    def greeted(self, ip, timeout=1.0):
        """Whether a new connection from the VM to ip got the server's greeting."""
        cp = sh(["/usr/bin/python3", "-c", "import socket, sys\n"
                 "try:\n c = socket.create_connection((sys.argv[1], int(sys.argv[2])), "
                 "timeout=float(sys.argv[3]))\n c.settimeout(float(sys.argv[3]))\n"
                 " print(c.recv(64).startswith(b'hello'))\n"
                 "except OSError:\n print(False)\n", ip, str(SRV_PORT), str(timeout)],
                ns=self.ns["vm"], check=False, timeout=timeout + 10)
        return cp.stdout.strip() == "True"

    def upload(self, n, opens=True):
        """The VM uploads n bytes to the sink: (bytes the VM's kernel took, bytes the sink
        read), once the sink logged the connection; with opens False, only the first (a
        connection refused never reaches the sink)."""
        log = os.path.join(self.tmp, "sink")
        before = self.sunk()
        cp = sh(["/usr/bin/python3", "-c", UPLOAD, SINK_IP, str(SRV_PORT), str(n)],
                ns=self.ns["vm"], timeout=60)
        if not opens:
            return int(cp.stdout), None
        wait_until(lambda: len(self.sunk()) > len(before), 30, f"{log} to log the upload",
                   step=0.2)
        return int(cp.stdout), self.sunk()[len(before)]

    def sunk(self):
        try:
            with open(os.path.join(self.tmp, "sink")) as f:
                return [int(x) for x in f.read().split()]
        except FileNotFoundError:
            return []

    def budget_used(self, r):
        """What box r's window of the VM's budget holds, in bytes."""
        return self.metrics(r).get(
            f'namegate_vm_budget_used_bytes{{vm="vm1",rule="{SINK_IP}"}}')

    def ctl_json(self, r, *args):
        cp = sh([self.ctl, "-s", self.path(r, "ng.sock"), *args, "--json"], check=False,
                timeout=10)
        assert cp.returncode == 0, cp.stderr
        return json.loads(cp.stdout)

    def forwarded(self, r):
        """Frames box r sent out of its two ports, less its own (the beacons, a takeover's
        announcements: they go out through the exception path's queue): what it
        forwarded. A worker counts its own frame in (slow rx) before it counts it out
        (port tx, at its burst's flush), so a read between the two is short by that frame:
        read until two reads agree."""
        def once():
            m = self.metrics(r)
            return sum(m.get(f'namegate_port_packets_total{{port="{p}",dir="tx"}}', 0)
                       for p in ("vm", "uplink")) - m.get(
                           'namegate_port_packets_total{port="slow",dir="rx"}', 0)
        last = once()
        for _ in range(10):
            now = once()
            if now == last:
                break
            last = now
        return last

    def vrrp_cut(self, cut):
        """Drops VRRP (IP protocol 112) on each box's HA link, both ways, or no longer:
        the sync stream on the same link goes on."""
        for r in ROLES:
            if cut:
                sh(["nft", "-f", "-"], ns=self.ns[r], input=(
                    "table inet ngcut {\n"
                    " chain in { type filter hook input priority 0; iifname ha0 ip protocol "
                    "112 drop; }\n"
                    " chain out { type filter hook output priority 0; oifname ha0 ip protocol "
                    "112 drop; }\n}\n"))
            else:
                sh(["nft", "delete", "table", "inet", "ngcut"], ns=self.ns[r], check=False)

    def sw_sniff(self, mode, ifs):
        """Starts SW_SNIFF on the switches' interfaces ifs; .stop() returns its JSON."""
        return self.sniffer("sw", [SW_SNIFF, mode] + list(ifs), json.loads)

    def arp_flood(self, count, step):
        """Starts the VM's ARP requests for MARK_IP (ARP_FLOOD); .wait() ends them."""
        p = self.spawn(f"arp-{secrets.token_hex(4)}", self.ns["vm"], [
            "/usr/bin/python3", "-c", ARP_FLOOD, VM_MAC, VM_IP, MARK_IP, str(count),
            str(step)])
        return p

    def capture_beacon(self, r):
        """A beacon of box r saying it forwards, as the VM's port saw it (bytes)."""
        cp = sh(["/usr/bin/python3", "-c", BEACON, "capture", str(PRIORITY[r])],
                ns=self.ns["vm"], timeout=30)
        return bytes.fromhex(cp.stdout.strip())

    def replay_beacon(self, frame, count, step):
        """Starts the VM's replay of frame, count times step seconds apart."""
        return self.spawn(f"replay-{secrets.token_hex(4)}", self.ns["vm"], [
            "/usr/bin/python3", "-c", BEACON, "replay", frame.hex(), str(count), str(step)])

    def events(self, r):
        try:
            with open(self.path(r, "events.jsonl")) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def role_changes(self, r):
        """Box r's role changes so far, from its event log: [(from, to), ...]."""
        return [(e["from"], e["role"]) for e in self.events(r) if e["event"] == "ha_role"]

    def probe(self, duration, step=0.02, timeout=0.2):
        """Runs the VM's probe in the background and returns once a first connection got
        its greeting; .result() waits for the end: {"ok": [times], "tried": N}."""
        log = os.path.join(self.tmp, f"probe-{secrets.token_hex(4)}")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns["vm"], "/usr/bin/python3", "-c",
                              PROBE, SRV_IP, str(SRV_PORT), str(duration), str(step),
                              str(timeout), log], stdout=subprocess.PIPE, text=True)
        self.procs[f"probe-{p.pid}"] = p

        def times():
            try:
                with open(log) as f:
                    return [float(x) for x in f.read().split()]
            except FileNotFoundError:
                return []

        class Probe:
            def result(_):
                out, _ = p.communicate(timeout=duration + 30)
                return {"ok": times(), "tried": int(out)}
        wait_until(lambda: times() or p.poll() is not None, duration + 30,
                   "the probe's first connection")
        return Probe()

    def open_conns(self, n):
        """The VM opens n long-lived TLS connections to the named echo (by its name); the
        object's .state() is their state now (CONNS)."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns["vm"], "/usr/bin/python3", "-c",
                              CONNS, NAMED_IP, str(ECHO_PORT), NAMED, str(n)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs[f"conns-{p.pid}"] = p

        class Conns:
            def state(_):
                p.stdin.write("?\n")
                p.stdin.flush()
                return json.loads(p.stdout.readline())

            def stop(_):
                p.stdin.close()
                p.wait(timeout=10)
        return Conns()

    def midstream(self, sport, dst, dport):
        """The VM sends raw mid-stream segments from port sport to dst:dport, then a SYN
        (MIDSTREAM); returns what the server saw of them: {"syn": N, "rst": N, "other": N}."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns["srv"], "/usr/bin/python3", "-c",
                              SEGMENTS, str(sport)], stdout=subprocess.PIPE, text=True)
        self.procs[f"segments-{p.pid}"] = p
        assert p.stdout.readline().strip() == "ready"
        mac = sh(["cat", "/sys/class/net/eth0/address"], ns=self.ns["srv"]).stdout.strip()
        sh(["/usr/bin/python3", "-c", MIDSTREAM, VM_MAC, VM_IP, mac, dst, str(sport),
            str(dport)], ns=self.ns["vm"], timeout=60)
        time.sleep(1.0)         # a cap for the frames to cross, not a measure
        p.terminate()
        out, _ = p.communicate(timeout=30)
        return json.loads(out)

    def sniff(self):
        """Starts the server's sniffer; .stop() returns how many VMs' gratuitous ARPs it saw."""
        return self.sniffer("srv", [SNIFFER], int)

    def sniffer(self, ns, args, parse):
        """Starts python3 -c args in namespace ns, which says "ready" once it listens and
        prints what it saw when stopped: .stop() returns that, through parse."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[ns], "/usr/bin/python3", "-c"] +
                             args, stdout=subprocess.PIPE, text=True)
        self.procs[f"sniff-{p.pid}"] = p
        assert p.stdout.readline().strip() == "ready"

        class Sniffer:
            def stop(_):
                p.terminate()
                out, _ = p.communicate(timeout=30)
                return parse(out)
        return Sniffer()

    def settled(self):
        """(master, backup) once keepalived made one of each, else None."""
        roles = {r: self.role(r) for r in ROLES}
        for m, o in (("a", "b"), ("b", "a")):
            if roles[m] == "master" and roles[o] == "backup":
                return m, o
        return None

    def pid(self, name):
        """The pid of the program ip netns exec became (it execs, so the same)."""
        return self.procs[name].pid

    # ---- tearing down ---------------------------------------------------------------
    def close(self):
        for name, p in self.procs.items():
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.terminate()
                    p.wait(timeout=10)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    p.kill()
                    p.wait()
        for ns in self.ns.values():
            sh(["ip", "netns", "del", ns], check=False)
        for r in ROLES:                 # DPDK's runtime directory of each --file-prefix
            shutil.rmtree(f"/var/run/dpdk/{self.prefix}{r}", ignore_errors=True)
        if not os.environ.get("HA_LAB_KEEP"):     # the logs, to read after a failure
            shutil.rmtree(self.tmp, ignore_errors=True)
