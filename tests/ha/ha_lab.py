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

import lab_namegate
from lab_net import run as sh, wait_until  # noqa: F401 (test_ha.py's too)

ROLES = ("a", "b")
VM_MAC, VM_IP = "02:00:00:00:00:11", "10.77.0.11"
SRV_IP, SRV_PORT = "10.77.0.2", 9000
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
        sh(["ip", "addr", "add", f"{SRV_IP}/24", "dev", "eth0"], ns=self.ns["srv"])
        for r in ROLES:
            sh(["ip", "addr", "add", f"{HA_IP[r]}/30", "dev", "ha0"], ns=self.ns[r])
        self.spawn("srv", self.ns["srv"], ["/usr/bin/python3", "-c", SERVER, SRV_IP,
                                           str(SRV_PORT)])
        for r in ROLES:
            self.start_namegate(r)
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
            "resolvers: [10.77.0.53]",
            "metrics: 127.0.0.1:9477",
            f"control_socket: {self.path(r, 'ng.sock')}",
            f"events: {self.path(r, 'events.jsonl')}",
            f"grants: {{state: {self.path(r, 'grants.json')}}}",
            f"ha: {{notify_fifo: {self.path(r, 'ha.fifo')}, instance: namegate, "
            f"track_file: {self.path(r, 'ha.state')}}}",
            f"policies: {{srv: {{allow: ['{SRV_IP}:{SRV_PORT}']}}}}",
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

    def keepalived_conf(self, r):
        """The package's sample for box r: only what differs per box and per run put in."""
        other = "b" if r == "a" else "a"
        with open(self.sample) as f:
            text = f.read()
        ctl = re.search(r'script "(\S+)/namegatectl ha', text).group(1) + "/namegatectl"
        subs = [("/run/namegate-ha.fifo", self.path(r, "ha.fifo")),
                ("/run/namegate-ha.state", self.path(r, "ha.state")),
                (f'"{ctl} ha', f'"{self.ctl} -s {self.path(r, "ng.sock")} ha'),
                ("unicast_src_ip 169.254.77.1", f"unicast_src_ip {HA_IP[r]}"),
                ("\t\t169.254.77.2\n", f"\t\t{HA_IP[other]}\n"),
                ("priority 100", f"priority {PRIORITY[r]}")]
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

    def forwarded(self, r):
        """Frames box r sent out of its two ports: what it forwarded."""
        m = self.metrics(r)
        return sum(m.get(f'namegate_port_packets_total{{port="{p}",dir="tx"}}', 0)
                   for p in ("vm", "uplink"))

    def events(self, r):
        try:
            with open(self.path(r, "events.jsonl")) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

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

    def sniff(self):
        """Starts the server's sniffer; .stop() returns how many VMs' gratuitous ARPs it saw."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns["srv"], "/usr/bin/python3", "-c",
                              SNIFFER], stdout=subprocess.PIPE, text=True)
        self.procs[f"sniff-{p.pid}"] = p
        assert p.stdout.readline().strip() == "ready"

        class Sniffer:
            def stop(_):
                p.terminate()
                out, _ = p.communicate(timeout=30)
                return int(out)
        return Sniffer()

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
