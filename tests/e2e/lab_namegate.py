"""namegate mode: the configuration file the lab writes for the daemon (SPEC section 3),
and starting, waiting for, and stopping the daemon inside the switch namespace."""

import copy
import os
import re
import shlex
import signal
import subprocess
import time

from lab_net import LabError, read_text
from lab_services import RESOLVER

METRICS = "127.0.0.1:9477"   # loopback of the switch namespace: private to this run

# The demo's policies: per-VM differences make the table show that one VM's allowlist
# opens nothing for another.
DEFAULT_POLICIES = {
    "python": {
        "allow": ["pypi.org", "files.pythonhosted.org", "*.githubusercontent.com",
                  "github.com:22", "198.51.100.0/24:443", "www.pypi-mirror.test"],
        "deny": ["upload.pypi.org"],
    },
    "github": {"allow": ["github.com", "*.githubusercontent.com"]},
    "offline": {"allow": []},
}


# How the daemon opens the two gateway ports (Lab(port_type=...)). net_af_packet is the
# default, but DPDK 22.11 opens its socket with PACKET_FANOUT_FLAG_DEFRAG, so the kernel
# hands it IPv4 fragments already reassembled; net_pcap reads the veth through libpcap (a
# plain packet socket) and sees every frame as it was sent, fragments too, as a NIC would.
# rx_iface_in: only frames coming in, so namegate never reads back what it transmitted.
PORT_TYPES = {
    "af_packet": lambda n, ifc: f"net_af_packet{n},iface={ifc}",
    "pcap": lambda n, ifc: f"net_pcap{n},rx_iface_in={ifc},tx_iface={ifc}",
}


def port_devargs(port_type, vm_if, up_if):
    """(vm_port, uplink_port) vdev strings for the gateway's two links."""
    if port_type not in PORT_TYPES:
        raise LabError(f"unknown port type {port_type!r} (one of {', '.join(PORT_TYPES)})")
    return PORT_TYPES[port_type](0, vm_if), PORT_TYPES[port_type](1, up_if)


def build_config(lab, policies=None, overrides=None):
    """The daemon's configuration as a dict. overrides is merged in depth; a None value
    removes a key, so a test can state exactly the file it wants."""
    tmp = lab.tmpdir
    vm_port, uplink_port = port_devargs(getattr(lab, "port_type", "af_packet"),
                                        lab.gw_vm_if, lab.gw_up_if)
    cfg = {
        "dataplane": {
            # one process per run: --file-prefix keeps DPDK's runtime dir apart; no hugepages
            "eal": ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", lab.prefix],
            "vm_port": vm_port,
            "uplink_port": uplink_port,
            "workers": 1,
            "max_flows": 65536,
            "max_flows_per_vm": 16384,
            "max_bindings": 65536,
        },
        "slow_path": {"enabled": True, "nft_table": "namegate"},
        "resolvers": [RESOLVER],
        "dns": {"min_ttl": 300, "max_ttl": 86400, "blocked_rcode": "refused"},
        "tls_ports": [443, 8443],
        "sni_binding": "strict",
        "quic": "block",
        "on_block": "reset",
        "metrics": METRICS,
        "control_socket": os.path.join(tmp, "namegate.sock"),
        "events": os.path.join(tmp, "events.jsonl"),
        # the lab's own, not the host's /var/lib/namegate: two runs never share grants
        "grants": {"state": os.path.join(tmp, "grants.json")},
        "policies": copy.deepcopy(policies if policies is not None else DEFAULT_POLICIES),
        "vms": [_vm_entry(vm) for vm in lab.vms],
    }
    _merge(cfg, overrides or {})
    return cfg


def _vm_entry(vm):
    e = {"name": vm.name, "mac": vm.mac, "ipv4": vm.ipv4}
    if vm.ipv6:
        e["ipv6"] = vm.ipv6
    e.update(policy=vm.policy, mode=vm.mode)
    return e


def _merge(dst, src):
    for k, v in src.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def _scalar(v):
    if v is True or v is False:
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    s = str(v)
    if _PLAIN.match(s) and s.lower() not in _YAML11_WORDS:
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_yaml(obj, indent=0):
    """Block-style YAML for dicts and lists of dicts, flow style for lists of scalars.
    Hand-written so the lab needs no YAML package; strings that are not plain words are
    double-quoted, so nothing can be read as a number, bool or mapping by accident."""
    pad = " " * indent
    out = []
    for k, v in obj.items():
        if isinstance(v, dict):
            out.append(f"{pad}{k}:" + (" {}" if not v else ""))
            if v:
                out.append(to_yaml(v, indent + 2))
        elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
            out.append(f"{pad}{k}:")
            for item in v:
                body = to_yaml(item, indent + 4).splitlines()
                out.append(f"{pad}  - " + body[0].lstrip())
                out.extend(body[1:])
        elif isinstance(v, list):
            out.append(f"{pad}{k}: [" + ", ".join(_scalar(x) for x in v) + "]")
        else:
            out.append(f"{pad}{k}: {_scalar(v)}")
    return "\n".join(out)


def write_config(lab, path, policies=None, overrides=None):
    cfg = build_config(lab, policies, overrides)
    with open(path, "w") as f:
        f.write(f"# written by tests/e2e/lab.py for lab {lab.prefix}\n")
        f.write(to_yaml(cfg) + "\n")
    return cfg


def daemon_argv(cmd, config_path):
    """cmd as a list or a shell-style string; "{config}" in it is replaced by the config
    path, otherwise "-c CONFIG" is appended. A relative program path is made absolute."""
    argv = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]
    if not argv:
        raise LabError("empty namegate command")
    if any("{config}" in a for a in argv):
        argv = [a.replace("{config}", config_path) for a in argv]
    else:
        argv += ["-c", config_path]
    if "/" in argv[0]:
        argv[0] = os.path.abspath(argv[0])
    return argv


# The real namegate daemons started: a case that runs while one is alive went through it
# (the test command counts those: tests/ng_strict.py).
LIVE_DAEMONS = []


class Daemon:
    """A process in a namespace with its stdout/stderr in files. `ip netns exec` execs the
    command, so the pid we hold is the daemon's own and our signals reach it directly."""

    def __init__(self, argv, ns, out_path, err_path):
        self.argv, self.ns = argv, ns
        self.out_path, self.err_path = out_path, err_path
        self.proc = None

    def start(self, env=None):
        if os.path.basename(self.argv[0]) == "namegate":
            LIVE_DAEMONS.append(self)
        with open(self.out_path, "ab") as out, open(self.err_path, "ab") as err:
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns] + self.argv,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         env=env, start_new_session=True)
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def stop(self, timeout=10.0):
        """SIGTERM, then SIGKILL after timeout; returns the exit status (negative: signal)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def output(self):
        return read_text(self.out_path), read_text(self.err_path)


def wait_ready(lab, daemon, check, timeout=30.0):
    """Poll check(lab) until it is true; fail at once, with the daemon's last words, if the
    daemon exits (it fails closed on a bad config, and that must not look like a hang)."""
    deadline = time.monotonic() + timeout
    while True:
        if not daemon.alive():
            out, err = daemon.output()
            tail = "\n".join((out + err).strip().splitlines()[-20:])
            raise LabError(f"namegate exited with status {daemon.proc.returncode} during "
                           f"startup: {' '.join(daemon.argv)}\n{tail}")
        if check(lab):
            return
        if time.monotonic() > deadline:
            raise LabError(f"namegate not ready after {timeout}s "
                           f"(readiness check never passed); see {daemon.err_path}")
        time.sleep(0.2)
