#!/usr/bin/python3
"""The namegate lab: agent VMs, a switch with the gateway slot, and a fake internet, all
in network namespaces that carry a per-run prefix. Library for the e2e tests, and a CLI:

    lab.py up [--mode bridge|namegate --namegate CMD]   build, print the prefix, wait for
                                                        Ctrl-C/SIGTERM, tear down
    lab.py demo [--mode ... --namegate CMD]             scripted requests per VM, a table
    lab.py cleanup --prefix P | --all-stale             remove what a run left behind

Topology (SPEC section 2; namegate is a transparent L2 bump between two bridges):

  <p>-vm1 eth0 ─┐                        <p>-sw                          ┌─ eth0 <p>-inet
  <p>-vm2 eth0 ─┴─ <p>bv ─ <p>gvb═<p>gv [gateway] <p>gu═<p>gub ─ <p>bu ─┘  10.77.0.1 fd77::1
                  VM bridge         namegate or <p>bg      uplink bridge    resolver, servers

In bridge mode <p>gv and <p>gu are joined by the bridge <p>bg (a wire); in namegate mode
the daemon opens them with net_af_packet instead. In external mode they are TAPs enslaved
to <p>bv and <p>bu directly, for a gateway VM's two NICs.
"""

import argparse
import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lab_namegate  # noqa: E402
import lab_net  # noqa: E402
from lab_clients import PING_CODE, CurlResult, DigResult, curl_outcome, parse_kdig  # noqa
import lab_services as svc  # noqa: E402
from lab_net import WAIT, LabError, run, wait_until  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"     # Debian's, with scapy
# What runs in a lab namespace is another machine: it gets a plain environment of its own,
# not ours (no proxy variables, no CA bundles, no pyenv), and parseable C-locale output.
CLEAN_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME": "/root", "LC_ALL": "C", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class VM:
    name: str
    mac: str
    ipv4: str
    ipv6: str = None
    policy: str = "python"
    mode: str = "enforce"
    ns: str = ""                # set by the lab: "<prefix>-<name>"
    iface: str = "eth0"
    # A real VM's slot: a TAP on the VM bridge (in the switch namespace) for qemu to open,
    # instead of a namespace with a veth. Such a VM has no ns, so vm_exec cannot reach it.
    tap: bool = False


def default_vms(n=2):
    policies = ["python", "github"]
    return [VM(f"vm{i}", f"02:00:00:00:00:{i:02x}", f"10.77.0.{10 + i}", f"fd77::{10 + i}",
               policies[i - 1] if i <= len(policies) else "offline")
            for i in range(1, n + 1)]


class Lab:
    """One run of the lab. setup() builds it (and tears down whatever it built if any step
    fails), teardown() removes it; both are safe to call from fixtures and atexit.

    mode          "bridge" (a wire in namegate's place), "namegate" (the daemon on
                  net_af_packet), or "external": the gateway ports are TAPs on the two
                  bridges, left for the caller to give to a gateway VM (the appliance)
    vms           [VM]; default vm1 (policy python) and vm2 (policy github)
    namegate_cmd  argv list or string; "{config}" is replaced by the config path, else
                  "-c CONFIG" is appended (namegate mode)
    policies      the config's policies: section (default lab_namegate.DEFAULT_POLICIES)
    config        overrides merged into the written config (None deletes a key)
    ready_check   callable(lab) -> bool polled until the daemon is ready; default: a VM's
                  DNS query through the gateway gets any answer
    keep_logs     directory to copy the run's logs into at teardown (or NAMEGATE_LAB_LOGS)
    port_type     how the daemon opens the gateway ports (namegate mode): "af_packet"
                  (default; the kernel reassembles IPv4 fragments for it) or "pcap" (every
                  frame as sent, fragments too, as from a NIC); see lab_namegate.PORT_TYPES
    """

    def __init__(self, mode="bridge", vms=None, namegate_cmd=None, policies=None,
                 config=None, ready_check=None, ready_timeout=30.0, keep_logs=None,
                 log=None, port_type="af_packet"):
        if mode not in ("bridge", "namegate", "external"):
            raise LabError(f"unknown lab mode {mode!r}")
        if port_type not in lab_namegate.PORT_TYPES:
            raise LabError(f"unknown port type {port_type!r}")
        if mode == "namegate" and not namegate_cmd:
            raise LabError("namegate mode needs the command that starts the daemon")
        self.mode = mode
        self.port_type = port_type
        self.vms = vms or default_vms()
        self.namegate_cmd = namegate_cmd
        self.policies = policies
        self.config_overrides = config
        self.ready_check = ready_check or (lambda lab: lab.probe())
        self.ready_timeout = ready_timeout
        self.keep_logs = keep_logs or os.environ.get("NAMEGATE_LAB_LOGS")
        self.log = log or (lambda msg: None)
        self.prefix = None
        self.daemon = None
        self.namegate_status = None
        self.namegate_env = {}      # added to the daemon's clean environment (test knobs)
        self._procs = []
        self._background = []
        # Held while building: a teardown from another thread (pytest's main thread on
        # Ctrl-C while a lab builds in a worker) waits, rather than racing the build.
        self._lock = threading.RLock()
        self._torn_down = False

    # ------------------------------------------------------------ names and paths
    @property
    def tmpdir(self):
        return lab_net.tmpdir_for(self.prefix)

    @property
    def sw_ns(self):
        return f"{self.prefix}-sw"

    @property
    def inet_ns(self):
        return f"{self.prefix}-inet"

    @property
    def namespaces(self):
        return [vm.ns for vm in self.vms if not vm.tap] + [self.sw_ns, self.inet_ns]

    def tap_name(self, which):
        """The switch-side link of a VM: its TAP for a real VM, else its veth's end."""
        return f"{self.prefix}v{self.vms.index(self.vm(which)) + 1}"

    @property
    def gw_vm_if(self):
        return f"{self.prefix}gv"

    @property
    def gw_up_if(self):
        return f"{self.prefix}gu"

    @property
    def ca_path(self):
        return os.path.join(self.tmpdir, "ca.pem")

    @property
    def config_path(self):
        return os.path.join(self.tmpdir, "namegate.yaml")

    def vm(self, which):
        if isinstance(which, VM):
            return which
        for vm in self.vms:
            if vm.name == which:
                return vm
        raise KeyError(which)

    # ------------------------------------------------------------ build and tear down
    def setup(self):
        if self.prefix:
            raise LabError("lab already set up")
        self._check_vms()
        with self._lock:
            if self._torn_down:
                raise LabError("lab was torn down before it was set up")
            self.prefix = lab_net.claim_prefix(self.mode)
            atexit.register(self.teardown)
            try:
                t0 = time.monotonic()
                self._build()
                self.log(f"lab {self.prefix} up in {time.monotonic() - t0:.2f}s "
                         f"({self.mode} mode)")
            except BaseException:
                self.teardown()
                raise
        return self

    def __enter__(self):
        return self.setup()

    def __exit__(self, *exc):
        self.teardown()

    def _check_vms(self):
        names = [vm.name for vm in self.vms]
        if len(set(names)) != len(names) or len(self.vms) > 99:
            raise LabError("VM names must be unique (and at most 99 VMs)")
        for vm in self.vms:
            if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", vm.name) or vm.name in ("sw", "inet"):
                raise LabError(f"VM name {vm.name!r}: 1-8 lower-case letters/digits")

    def _build(self):
        p = self.prefix
        os.mkdir(self.tmpdir, 0o700)
        for vm in self.vms:
            vm.ns = "" if vm.tap else f"{p}-{vm.name}"
        for ns in self.namespaces:
            run(["ip", "netns", "add", ns])
            self._write_etc(ns)
        # Each veth is born with its ends already in their namespaces: nothing in the root
        # namespace, so no name there can collide with another run or another program.
        # The switch ends get ifindexes of their own (100+): a veth whose peer has its
        # ifindex has its carrier handled lazily by the kernel, up to a second later.
        links = [f"link add {p}v{i} netns {self.sw_ns} index {100 + i} type veth "
                 f"peer name eth0 netns {vm.ns} address {vm.mac}"
                 for i, vm in enumerate(self.vms, 1) if not vm.tap]
        links.append(f"link add {p}i netns {self.sw_ns} index 100 type veth "
                     f"peer name eth0 netns {self.inet_ns}")
        lab_net.ip_batch(links)
        ca = threading.Thread(target=self._certs)     # openssl runs while links come up
        ca.start()
        scripts = [(vm.ns, self._vm_script(vm)) for vm in self.vms if not vm.tap]
        scripts += [(self.sw_ns, self._switch_script()), (self.inet_ns, self._inet_script())]
        try:
            self._run_scripts(scripts)
        finally:
            ca.join()
        if self._cert_error:
            raise self._cert_error
        services_ready = self._start_services()
        self._wait(self._links_up, 30, "the links to come up")
        self._wait(services_ready, 60, "the resolver and servers to come up")
        if self.mode == "bridge":
            self._wait(lambda: self.probe(), 30, "a DNS answer through the bridge")
        elif self.mode == "namegate":
            lab_namegate.write_config(self, self.config_path, self.policies,
                                      self.config_overrides)
            self.start_namegate()

    _cert_error = None

    def _certs(self):
        try:
            svc.make_certs(self.tmpdir, self.prefix)
        except BaseException as e:      # re-raised in the building thread
            self._cert_error = LabError(f"certificates: {e}")

    def _write_etc(self, ns):
        """ip netns exec bind-mounts these over /etc, so each namespace resolves through
        the lab's resolver only and never sees the host's resolver or hosts file."""
        d = os.path.join(lab_net.ETC_NETNS, ns)
        os.makedirs(d, exist_ok=True)
        files = {
            "resolv.conf": f"nameserver {svc.RESOLVER}\noptions timeout:2 attempts:1\n",
            "hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost\n",
            "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                             "networks: files\nprotocols: files\nservices: files\n",
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)

    def _vm_script(self, vm):
        cmds = [
            "sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 "
            f"net.ipv6.conf.{vm.iface}.accept_dad=0",
            "ip link set lo up",
            f"ethtool -K {vm.iface} tx off >/dev/null",
            f"ip addr add {vm.ipv4}/24 dev {vm.iface}",
            f"ip link set {vm.iface} up",
            f"ip route add default via {svc.ROUTER4}",
        ]
        if vm.ipv6:
            cmds += [f"ip addr add {vm.ipv6}/64 dev {vm.iface} nodad",
                     f"ip route add ::/0 via {svc.ROUTER6}"]
        return cmds

    def _switch_script(self):
        p = self.prefix
        ports = [self.tap_name(vm) for vm in self.vms]
        taps = self._taps()
        veths = [d for d in ports if d not in taps] + [f"{p}i"]
        vm_side, up_side = ports, [f"{p}i"]
        if self.mode == "external":
            vm_side, up_side = vm_side + [self.gw_vm_if], up_side + [self.gw_up_if]
        else:
            veths += [self.gw_vm_if, f"{p}gvb", self.gw_up_if, f"{p}gub"]
            vm_side, up_side = vm_side + [f"{p}gvb"], up_side + [f"{p}gub"]
        cmds = [
            # The switch is plain L2: no addresses, and no IPv6 so its bridges send no
            # router solicitations or MLD reports that namegate would see as strangers.
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
            "ip link set lo up",
            f"ip link add {p}bv type bridge mcast_snooping 0",
            f"ip link add {p}bu type bridge mcast_snooping 0",
        ]
        if self.mode != "external":
            cmds += [f"ip link add {self.gw_vm_if} type veth peer name {p}gvb",
                     f"ip link add {self.gw_up_if} type veth peer name {p}gub"]
        # persistent, so they can join the bridge now; carrier comes when qemu opens them
        cmds += [f"ip tuntap add dev {t} mode tap" for t in taps]
        cmds += [f"ip link set {d} master {p}bv" for d in vm_side]
        cmds += [f"ip link set {d} master {p}bu" for d in up_side]
        bridges = [f"{p}bv", f"{p}bu"]
        if self.mode == "bridge":
            # the wire in namegate's place: a third bridge joining the two gateway ports
            cmds += [f"ip link add {p}bg type bridge mcast_snooping 0",
                     f"ip link set {self.gw_vm_if} master {p}bg",
                     f"ip link set {self.gw_up_if} master {p}bg"]
            bridges.append(f"{p}bg")
        cmds += [f"ethtool -K {d} tx off >/dev/null" for d in veths]
        cmds += [f"ip link set {d} up" for d in veths + taps + bridges]
        return cmds

    def _inet_script(self):
        cmds = [
            "sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 "
            "net.ipv6.conf.eth0.accept_dad=0",
            # answer every probe at once: later tests count ICMP errors
            "sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0",
            "ip link set lo up",
        ]
        # The servers' addresses live on lo (this kernel has no dummy driver): local to
        # this namespace, reached by the VMs through their default route.
        for a in svc.service_addresses():
            cmds.append(f"ip addr add {a}/128 dev lo nodad" if ":" in a
                        else f"ip addr add {a}/32 dev lo")
        cmds += [
            "ethtool -K eth0 tx off >/dev/null",
            f"ip addr add {svc.ROUTER4}/24 dev eth0",
            f"ip addr add {svc.ROUTER6}/64 dev eth0 nodad",
            "ip link set eth0 up",
        ]
        return cmds

    def _taps(self):
        """The TAPs in the switch: real VMs' slots, and in external mode the gateway's."""
        taps = [self.tap_name(vm) for vm in self.vms if vm.tap]
        if self.mode == "external":
            taps += [self.gw_vm_if, self.gw_up_if]
        return taps

    def _links_up(self):
        """Every veth operational with its qdisc attached, every bridge port forwarding.
        The kernel finishes a link's bring-up from linkwatch, and drops frames until then.
        (A bridge's own operstate lags by up to a second but does not affect forwarding.)"""
        for ns in self.namespaces:
            for link in json.loads(run(["ip", "-j", "-n", ns, "link", "show", "type",
                                        "veth"]).stdout):
                if link.get("operstate") != "UP" or link.get("qdisc") == "noop":
                    return False
        # a TAP's port stays disabled until its VM boots: not part of the lab being up
        taps = set(self._taps())
        ports = json.loads(run(["bridge", "-j", "-n", self.sw_ns, "link", "show"]).stdout)
        ports = [pt for pt in ports if pt.get("ifname") not in taps]
        return bool(ports) and all(pt.get("state") == "forwarding" for pt in ports)

    def _run_scripts(self, scripts):
        procs = [(ns, subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-ec", "\n".join(c)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, env=CLEAN_ENV)) for ns, c in scripts]
        errors = []
        for ns, pr in procs:
            out, err = pr.communicate(timeout=30)
            if pr.returncode:
                errors.append(f"{ns}: {err.strip() or out.strip()}")
        if errors:
            raise LabError("namespace setup failed: " + "; ".join(errors))

    def spawn(self, name, argv, ns=None):
        """A process of the lab's (a VM's qemu, say), in ns or the switch namespace, with
        its output in the run's directory; stopped at teardown like the lab's services."""
        return self._spawn(name, argv, ns or self.sw_ns)

    def _spawn(self, name, argv, ns):
        d = lab_namegate.Daemon(argv, ns, os.path.join(self.tmpdir, f"{name}.out"),
                                os.path.join(self.tmpdir, f"{name}.err"))
        self._procs.append(d.start(CLEAN_ENV))
        return d

    def _start_services(self):
        dns = self._spawn("dnsmasq", svc.dnsmasq_argv(self.tmpdir), self.inet_ns)
        spec = svc.server_spec(self.tmpdir)
        spec_path = os.path.join(self.tmpdir, "servers.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        srv = self._spawn("servers", [PYTHON, os.path.join(HERE, "lab_services.py"), "serve",
                                      spec_path], self.inet_ns)

        def ready():
            for name, d in (("dnsmasq", dns), ("servers", srv)):
                if not d.alive():
                    raise LabError(f"{name} exited: {' '.join(d.output()).strip()[-800:]}")
            if not os.path.exists(spec["ready"]):
                return False
            cp = run(["kdig", f"@{svc.RESOLVER}", "+timeout=1", "+retry=0", "pypi.org"],
                     ns=self.inet_ns, check=False)
            return "status:" in cp.stdout
        return ready

    def _wait(self, cond, timeout, what):
        wait_until(cond, timeout, f"lab {self.prefix}: {what}", error=LabError)

    def start_namegate(self):
        argv = lab_namegate.daemon_argv(self.namegate_cmd, self.config_path)
        self.daemon = lab_namegate.Daemon(argv, self.sw_ns,
                                          os.path.join(self.tmpdir, "namegate.out"),
                                          os.path.join(self.tmpdir, "namegate.err"))
        self.daemon.start({**CLEAN_ENV, **self.namegate_env})
        lab_namegate.wait_ready(self, self.daemon, self.ready_check, self.ready_timeout)
        return self.daemon

    def stop_namegate(self, timeout=10.0):
        """SIGTERM (SIGKILL after timeout); returns and remembers the exit status."""
        if self.daemon:
            self.namegate_status = self.daemon.stop(timeout)
        return self.namegate_status

    def teardown(self):
        with self._lock:
            if self._torn_down:
                return
            self._torn_down = True
            if not self.prefix:
                return
            with _signals_deferred():
                try:
                    self.stop_namegate()
                finally:
                    for b in self._background:
                        b.kill()
                    for d in self._procs:
                        d.stop(3.0)
                    lab_net.destroy(self.prefix, keep_logs=self.keep_logs)
        atexit.unregister(self.teardown)
        self.log(f"lab {self.prefix} torn down")

    # ------------------------------------------------------------ helpers for tests
    def ns_exec(self, ns, cmd, timeout=10.0, check=False, input=None):
        """Run cmd (argv list, or a string for sh -c) in namespace ns; a timeout is an
        outcome (returncode 124, like timeout(1)), not an exception."""
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        full = ["ip", "netns", "exec", ns] + argv
        try:
            cp = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                                input=input, env=CLEAN_ENV)
        except subprocess.TimeoutExpired as e:
            cp = subprocess.CompletedProcess(full, 124, _text(e.stdout),
                                             _text(e.stderr) + "\n[lab: timed out]")
        if check and cp.returncode:
            raise LabError(f"{ns}: `{' '.join(argv)}` exited {cp.returncode}: {cp.stderr}")
        return cp

    def vm_exec(self, vm, cmd, timeout=10.0, check=False, input=None):
        return self.ns_exec(self.vm(vm).ns, cmd, timeout, check, input)

    def sw_exec(self, cmd, timeout=10.0, check=False):
        return self.ns_exec(self.sw_ns, cmd, timeout, check)

    def inet_exec(self, cmd, timeout=10.0, check=False):
        return self.ns_exec(self.inet_ns, cmd, timeout, check)

    # The clients' timeouts are caps for an answer that is expected (they return when it
    # comes), so they are generous; a test that expects no answer passes a short one and
    # has its own proof that nothing is coming (a counter that moved, a sync).
    def curl(self, vm, url, *, timeout=20.0, ip=None, resolve=None, connect_to=None,
             insecure=False, data=None, args=()):
        """curl from a VM, trusting only the lab CA. ip: 4 or 6; resolve/connect_to are
        curl's --resolve/--connect-to (host:port:addr) to pick the address by hand."""
        argv = ["curl", "-sS", "--noproxy", "*", "--cacert", self.ca_path,
                "--max-time", str(timeout), "-o", "-",
                "-w", "%{stderr}\nNGLAB %{http_code} %{time_total} %{remote_ip}\n"]
        if ip:
            argv.append(f"-{ip}")
        if resolve:
            argv += ["--resolve", resolve]
        if connect_to:
            argv += ["--connect-to", connect_to]
        if insecure:
            argv.append("-k")
        if data is not None:
            argv += ["--data-binary", "@-"]
        argv += list(args) + [url]
        cp = self.vm_exec(vm, argv, timeout=timeout + 5, input=data)
        m = re.search(r"NGLAB (\d+) ([\d.]+) (\S*)", cp.stderr)
        err = re.sub(r"\n?NGLAB .*\n?", "", cp.stderr).strip()
        return CurlResult(cp.returncode, cp.stdout, err, int(m.group(1)) if m else 0,
                          float(m.group(2)) if m else float(timeout), m.group(3) if m else "")

    def dig(self, vm, name, rtype="A", *, server=svc.RESOLVER, tcp=False, edns=False,
            timeout=10, args=()):
        """kdig from a VM; rcode None means no answer came back in time."""
        argv = ["kdig", f"@{server}", f"+timeout={max(1, int(timeout))}", "+retry=0"]
        argv += ["+tcp"] if tcp else []
        argv += ["+edns"] if edns else []
        argv += list(args) + [name, rtype]
        return parse_kdig(self.vm_exec(vm, argv, timeout=timeout + 5).stdout)

    def ping(self, vm, addr, count=1, timeout=10.0, size=0):
        """ICMP echo from a VM (IPv4 or IPv6) with a raw socket: Debian's base image has no
        ping(8). returncode 0 when every echo was answered; stdout says by whom and when.
        size: the echo's data after its 8-byte header, padded with zeros (at least 12)."""
        return self.vm_exec(vm, [PYTHON, "-c", PING_CODE, addr, str(count), str(timeout),
                                 str(size)], timeout=timeout * count + 5)

    def vm_python(self, vm, code, timeout=60.0):
        return self.vm_exec(vm, [PYTHON, "-c", code], timeout=timeout)

    def scapy(self, vm, code, timeout=120.0):
        """Run scapy code in a VM: conf.iface is the VM's interface and VM (a dict with
        name, mac, ipv4, ipv6, iface), ROUTER_MAC, ROUTER4/6 and RESOLVER are defined."""
        return self.vm_python(vm, self.scapy_code(vm, code), timeout)

    def scapy_code(self, vm, code):
        """The program Lab.scapy runs: code with its preamble (for a Background, say)."""
        vm = self.vm(vm)
        pre = (
            "import json, sys\n"
            "from scapy.all import *\n"
            "conf.verb = 0\n"
            f"conf.iface = {vm.iface!r}\n"
            f"VM = {dict(name=vm.name, mac=vm.mac, ipv4=vm.ipv4, ipv6=vm.ipv6, iface=vm.iface)!r}\n"
            f"ROUTER_MAC = {self.router_mac!r}\n"
            f"ROUTER4, ROUTER6, RESOLVER = {svc.ROUTER4!r}, {svc.ROUTER6!r}, {svc.RESOLVER!r}\n"
        )
        return pre + _dedent(code)

    def background(self, where, code, args=()):
        """A Background Python program in a VM (a name or VM) or a namespace."""
        ns = where if where in (self.sw_ns, self.inet_ns) else self.vm(where).ns
        return Background(self, ns, code, args)

    @property
    def router_mac(self):
        if not getattr(self, "_router_mac", None):
            cp = run(["ip", "-j", "-n", self.inet_ns, "link", "show", "eth0"])
            self._router_mac = json.loads(cp.stdout)[0]["address"]
        return self._router_mac

    PROBE_NAME = "probe.lab.invalid"

    def probe(self, vm=None, name=PROBE_NAME, timeout=1):
        """Does a VM's DNS query get any answer? The default name is never allowed, so
        namegate answers it itself (REFUSED) and learns no binding from it; through a
        bridge the resolver answers NXDOMAIN. Either way frames cross the gateway slot.
        (It does count as one blocked DNS query of the first VM.)"""
        if vm is None:
            vm = next((v for v in self.vms if not v.tap), None)
            if vm is None:
                raise LabError("probe needs a namespace VM; give the lab a ready_check")
        return self.dig(vm, name, timeout=timeout).rcode is not None

    def sync(self, vm=None, timeout=WAIT):
        """A marker that the gateway has read what vm sent before this call: one DNS query
        for the probe name, which the gateway answers itself (one worker, frames in
        order), so its answer comes back after everything sent earlier was judged, and
        after whatever the gateway sent the VM for it (a reset, an ICMP error): those left
        on the same port first. The kernel may reorder frames that a VM's processes sent
        from different CPUs before they reach the gateway, so this is the marker absences
        are read after; a frame a test needs judged for a positive check it waits for by
        its counter (Delta.wait). Exactly one frame (the query), counted as one blocked
        DNS query of the VM. Namegate mode."""
        vm = vm or next(v for v in self.vms if not v.tap)
        r = self.dig(vm, self.PROBE_NAME, timeout=max(1, int(timeout)))
        if r.rcode is None:
            raise AssertionError(f"the gateway did not answer {self.vm(vm).name}'s sync "
                                 f"query within {timeout:g}s")

    def resolver_queries(self):
        """[(qtype, name, client)] for every query the real resolver received."""
        text = lab_net.read_text(os.path.join(self.tmpdir, "dnsmasq.log"))
        return re.findall(r"query\[(\w+)\] (\S+) from (\S+)", text)

    def server_events(self, **match):
        """Events from the fake internet's servers whose fields equal the given ones (see
        lab_services: accept, hello, tls_error, request, udp)."""
        unknown = set(match) - svc.EVENT_FIELDS
        if unknown:     # a filter on a field no event has would match nothing, silently
            raise ValueError(f"server events have no field {sorted(unknown)}")
        out = []
        for line in lab_net.read_text(os.path.join(self.tmpdir, "servers.jsonl")).splitlines():
            e = json.loads(line)
            if all(e.get(k) == v for k, v in match.items()):
                out.append(e)
        return out

    def metrics(self, timeout=10):
        """namegate's Prometheus text from the switch namespace, or None."""
        cp = self.sw_exec(["curl", "-sS", "--noproxy", "*", "--max-time", str(timeout),
                           f"http://{lab_namegate.METRICS}/metrics"], timeout=timeout + 2)
        return cp.stdout if cp.returncode == 0 else None

    def nft_list(self, table=None):
        """`nft list table bridge <table>` in the switch namespace, where namegate runs."""
        t = table or lab_namegate.build_config(self, self.policies, self.config_overrides)[
            "slow_path"]["nft_table"]
        return self.sw_exec(["nft", "list", "table", "bridge", t])

    def namegatectl(self, *args, timeout=10.0):
        """namegatectl (NAMEGATECTL_BIN, else from PATH) on this run's control socket."""
        ctl = os.environ.get("NAMEGATECTL_BIN", "namegatectl")
        sock = lab_namegate.build_config(self, self.policies, self.config_overrides)[
            "control_socket"]
        return self.sw_exec([ctl, "-s", sock, *args], timeout=timeout)

    def namegate_output(self):
        return self.daemon.output() if self.daemon else ("", "")

    def info(self):
        return {"prefix": self.prefix, "mode": self.mode, "tmpdir": self.tmpdir,
                "ca": self.ca_path, "config": self.config_path if self.mode == "namegate"
                else None, "switch_ns": self.sw_ns, "internet_ns": self.inet_ns,
                "gateway_ports": [self.gw_vm_if, self.gw_up_if],
                "namegate_pid": self.daemon.pid if self.daemon else None,
                "vms": [dict(name=v.name, ns=v.ns, mac=v.mac, ipv4=v.ipv4, ipv6=v.ipv6,
                             policy=v.policy, tap=self.tap_name(v) if v.tap else None)
                        for v in self.vms]}


class Background:
    """A Python program in a lab namespace that talks to its test a line at a time: it
    prints a line when something is in place (and flushes), and reads a line from stdin
    when the test says go. Reads have a deadline, so a program that hangs fails the test
    instead of stalling it. Use it with `with`, or call finish() or kill(); the lab kills
    whatever is left at teardown. stderr goes to a file in the run's directory."""

    def __init__(self, lab, ns, code, args=()):
        # -u: every line it prints reaches the test at once, flushed or not
        self.argv = ["ip", "netns", "exec", ns, PYTHON, "-u", "-c", code, *map(str, args)]
        n = len(lab._background)
        self.err_path = os.path.join(lab.tmpdir, f"background-{n}.err")
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, env=CLEAN_ENV)
        lab._background.append(self)
        self._buf = b""
        self._eof = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def stderr(self):
        return lab_net.read_text(self.err_path)

    def _fail(self, why):
        self.kill()
        raise AssertionError(f"background program in {self.argv[3]}: {why}; "
                             f"stderr: {self.stderr()[-1500:]}")

    def _fill(self, deadline):
        """Read what the program printed, until deadline; False at EOF."""
        left = deadline - time.monotonic()
        if left > 0 and select.select([self.proc.stdout], [], [], left)[0]:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self._eof = True
                return False
            self._buf += chunk
        return True

    def line(self, timeout=WAIT):
        """The next line it prints (without the newline)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            if self._eof or not self._fill(deadline):
                self._fail(f"exited ({self.proc.wait()}) before printing a line")
            if time.monotonic() > deadline and b"\n" not in self._buf:
                self._fail(f"printed no line within {timeout:g}s")
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace")

    def json(self, timeout=WAIT):
        return json.loads(self.line(timeout))

    def send(self, text="go"):
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self, timeout=WAIT):
        """Close its stdin (its cue to finish), wait for it to exit; the lines it printed
        that were not read yet."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + timeout
        while not self._eof:
            if time.monotonic() > deadline:
                self._fail(f"did not exit within {timeout:g}s of its stdin closing")
            self._fill(deadline)
        self.proc.wait(max(1.0, deadline - time.monotonic()))
        rest, self._buf = self._buf, b""
        return rest.decode(errors="replace").splitlines()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _dedent(code):
    return textwrap.dedent(code).strip() + "\n"


@contextmanager
def _signals_deferred():
    """Hold SIGINT/SIGTERM/SIGHUP while tearing down (a second Ctrl-C must not leave half a
    lab), then deliver them. Signal handlers can only be set from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending, sigs = [], (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, lambda n, f: pending.append(n)) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for s in pending:
            signal.raise_signal(s)


# ---------------------------------------------------------------- CLI

def _parse_vm(text):
    f = text.split(",")
    if len(f) < 3:
        raise argparse.ArgumentTypeError("--vm NAME,MAC,IPV4[,IPV6[,POLICY]]")
    return VM(f[0], f[1], f[2], f[3] if len(f) > 3 and f[3] else None,
              f[4] if len(f) > 4 else "python")


def _lab_from_args(a):
    return Lab(mode=a.mode, vms=a.vm or None, namegate_cmd=a.namegate,
               log=lambda m: print(m, file=sys.stderr, flush=True),
               keep_logs=a.keep_logs)


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)      # unwinds through the finally that tears down


def main(argv=None):
    ap = argparse.ArgumentParser(prog="lab.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "demo"):
        p = sub.add_parser(name)
        p.add_argument("--mode", choices=["bridge", "namegate"], default="bridge")
        p.add_argument("--namegate", metavar="CMD",
                       help="command that starts the daemon; {config} is replaced by the "
                            "config path, else -c CONFIG is appended")
        p.add_argument("--vm", action="append", type=_parse_vm,
                       help="NAME,MAC,IPV4[,IPV6[,POLICY]] (repeat; default vm1 and vm2)")
        p.add_argument("--keep-logs", metavar="DIR", help="copy the run's logs here at teardown")
    c = sub.add_parser("cleanup")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--prefix", action="append")
    g.add_argument("--all-stale", action="store_true",
                   help="every registered run whose owner process is gone")
    a = ap.parse_args(argv)

    if os.geteuid() != 0:
        sys.exit("lab.py: needs root (network namespaces)")
    if a.cmd == "cleanup":
        if a.all_stale:
            removed = lab_net.cleanup_stale()
            print(f"removed {len(removed)} stale lab(s)" + (": " + " ".join(removed)
                                                            if removed else ""))
        for prefix in a.prefix or []:
            if not lab_net.PREFIX_RE.match(prefix):
                ap.error(f"not a lab prefix: {prefix!r} (ng + 4 hex digits)")
            lab_net.destroy(prefix)
            left = {k: v for k, v in lab_net.leftovers(prefix).items() if v}
            print(f"{prefix}: " + (f"LEFT OVER {left}" if left else "removed"))
            if left:
                return 1
        return 0
    if a.mode == "namegate" and not a.namegate:
        ap.error("--mode namegate needs --namegate CMD")

    # Ctrl-C raises KeyboardInterrupt even if our parent started us with SIGINT ignored
    # (a background job of a script): a lab left running is worse than a noisy exit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _exit_on_signal)
    lab = _lab_from_args(a)
    try:
        lab.setup()
        if a.cmd == "up":
            print(lab.prefix, flush=True)
            _print_info(lab)
            while True:
                signal.pause()
        else:
            import lab_demo
            return lab_demo.run_demo(lab)
    except KeyboardInterrupt:
        return 130
    except LabError as e:
        print(f"lab.py: {e}", file=sys.stderr)
        return 1
    finally:
        lab.teardown()


def _print_info(lab):
    i = lab.info()
    print(f"lab {i['prefix']} up, {i['mode']} mode; Ctrl-C or SIGTERM tears it down")
    for v in i["vms"]:
        print(f"  {v['name']:6} ip netns exec {v['ns']} ...   {v['mac']}  {v['ipv4']}  "
              f"{v['ipv6'] or ''}  policy {v['policy']}")
    print(f"  switch    {i['switch_ns']}  gateway ports {' / '.join(i['gateway_ports'])}")
    print(f"  internet  {i['internet_ns']}  resolver {svc.RESOLVER}")
    print(f"  CA        {i['ca']}")
    if i["config"]:
        print(f"  config    {i['config']}  (namegate pid {i['namegate_pid']})")
    print(f"  try: ip netns exec {i['vms'][0]['ns']} curl --cacert {i['ca']} https://pypi.org/",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
