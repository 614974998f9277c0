#!/usr/bin/python3
"""Dataplane benchmark: namegate against dpdk-testpmd --forward-mode=io on the same
virtual devices in one run, so the figures are a ratio on the same machine and moment.

Each capture the build generates (tests/traffic) is split by direction into a VM-side and
an uplink-side pcap (in the build dir); both ports are net_pcap with infinite_rx and no
tx_pcap, so the driver frees what is sent as net_null does (issue 14: writing to tx_pcap=/dev/null added
the same cost to both sides and pulled the ratio toward 1). namegate runs one worker with every VM of the capture configured, a policy
that allows every address (so established flows are forwarded, which is the common
case), and on_block: drop. small64 has no handshakes, so a SYN is put before each of its
1,024 flows. Also what the daemon costs idle (net_null ports that receive nothing), with
the default dataplane.idle_sleep_us and, as the baseline, polling without rest. Prints
RESULT name=value lines.

Run: meson test -C build --benchmark -v dataplane   (root; about a minute)
"""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from scapy.all import TCP, PcapReader, PcapWriter

from bench_traffic import traffic_file

NAMEGATE = os.environ.get("NAMEGATE_BIN", "build/dataplane/namegate")
WARMUP, MEASURE = 3.0, 6.0
TESTPMD_DEADLINE = 180.0    # startup on a loaded machine, then two stats periods
EAL = ["--no-huge", "-m", "2048", "--no-pci", "-l", "0-1", "--log-level", "*:error"]


def split(pcap, vm_macs, outdir, add_syns=False):
    """Write <name>.vm.pcap and <name>.up.pcap: frames from a VM MAC, and the rest."""
    base = os.path.join(outdir, os.path.basename(pcap)[:-5])
    vm_out, up_out = base + ".vm.pcap", base + ".up.pcap"
    vw, uw = PcapWriter(vm_out, sync=False), PcapWriter(up_out, sync=False)
    seen, n_up = set(), 0
    for p in PcapReader(pcap):
        if p.src.lower() in vm_macs:
            if add_syns and TCP in p:
                key = (p.src, p.sport, p.dport)
                if key not in seen:
                    seen.add(key)
                    syn = p.copy()
                    syn[TCP].flags = "S"
                    syn[TCP].remove_payload()
                    ip = syn[TCP].underlayer
                    del ip.len                  # lengths and checksums recomputed
                    if hasattr(ip, "chksum"):
                        del ip.chksum
                    del syn[TCP].chksum
                    vw.write(syn.__class__(bytes(syn)))
            vw.write(p)
        else:
            uw.write(p)
            n_up += 1
    vw.close()
    uw.close()
    return vm_out, up_out if n_up else None


def devices(vm_pcap, up_pcap):
    # infinite_rx without tx_pcap: the pcap driver drops (frees) what is transmitted
    d = [f"net_pcap0,rx_pcap={vm_pcap},infinite_rx=1"]
    if up_pcap:
        d.append(f"net_pcap1,rx_pcap={up_pcap},infinite_rx=1")
    else:
        d.append("net_null0,no-rx=1")
    return d


class Lines:
    """A process's output lines as they come (a thread reads them), so the bench waits
    for the line it needs, however late the process prints it, up to a deadline."""

    def __init__(self, proc):
        self.lines, self.cond = [], threading.Condition()
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)         # end of output: nothing more will come
            self.cond.notify_all()

    def wait(self, pattern, count, timeout):
        """The text once `count` lines after the start match pattern; SystemExit with
        what came when the process ends or the deadline passes first."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [ln for ln in self.lines if ln is not None]
                if sum(1 for ln in got if re.search(pattern, ln)) >= count:
                    return "".join(got)
                left = deadline - time.monotonic()
                if None in self.lines or left <= 0:
                    raise SystemExit(f"testpmd: {count} lines matching {pattern!r} did not "
                                     f"come within {timeout:.0f} s:\n{''.join(got)[-2000:]}")
                self.cond.wait(left)


def testpmd_mpps(devs, prefix, mode="io"):
    """testpmd's forwarding rate (both ports' Rx-pps) over devs in forward mode `mode`."""
    # line-buffered: into a pipe, stdio would hold the stats until testpmd exits
    argv = ["stdbuf", "-oL", "dpdk-testpmd", *EAL, "--file-prefix", prefix, "--no-shconf"]
    for d in devs:
        argv += ["--vdev", d]
    argv += ["--", f"--forward-mode={mode}", "--total-num-mbufs=262144", "--nb-cores=1",
             f"--stats-period={int(MEASURE)}"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(p)
    try:
        # an Rx-pps line per port at each stats display: one (zeros) when forwarding
        # starts, one after the first period (the warm-up), one after the second (the
        # measurement); however long EAL and the ports take to come up, read until the
        # third display's lines are there
        text = out.wait(r"Rx-pps:\s+\d+", 3 * len(devs), TESTPMD_DEADLINE)
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    rates = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", text)]
    return sum(rates[2 * len(devs):3 * len(devs)]) / 1e6     # the second period, both ports


def free_port():
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def namegate_config(manifest, devs, prefix, path):
    vms = []
    for vm in manifest["vms"]:
        e = {"name": f"vm{vm['idx']}", "mac": vm["mac"], "ipv4": vm["ip4"],
             "policy": "all"}
        if vm.get("ip6"):
            e["ipv6"] = vm["ip6"]
        if vm.get("vlan"):
            e["vlan"] = vm["vlan"]
        vms.append(e)
    eal = EAL + ["--file-prefix", prefix]
    for d in devs:
        eal += ["--vdev", d]
    cfg = {
        "dataplane": {"eal": eal, "vm_port": devs[0].split(",")[0],
                      "uplink_port": devs[1].split(",")[0], "mbufs": 262144,
                      "max_flows": 262144, "max_bindings": 65536},
        "resolvers": sorted({"9.9.9.9", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111",
                             "2620:fe::fe"}),
        "on_block": "drop",
        "policies": {"all": {"allow": ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"]}},
        "vms": vms,
        # the run's own files and port, never the host's defaults, which an installed
        # namegate (or another run) may hold
        "control_socket": os.path.join(os.path.dirname(path), "ng.sock"),
        "events": os.path.join(os.path.dirname(path), "events.jsonl"),
        "grants": {"state": os.path.join(os.path.dirname(path), "grants.json")},
        "metrics": f"127.0.0.1:{free_port()}",
    }
    with open(path, "w") as f:
        json.dump(cfg, f)          # JSON is YAML
    return path


def counters(proc, out_path, timeout=5):
    before = os.path.getsize(out_path)
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(out_path) as f:
            f.seek(before)
            text = f.read()
        # the dump's last sample (its # HELP and # TYPE lines name it too)
        if re.search(r"^namegate_policy_generation \d+\n", text, re.M):
            return {k: int(v) for k, v in re.findall(r"^(\S+) (\d+)$", text, re.M)}
        time.sleep(0.05)
    raise SystemExit("namegate printed no counters")


def namegate_ready(p, out_path, timeout=120):
    """Wait for namegate's ready line (its signal handlers are in place then, and its ports
    up), however late a loaded machine brings it; fail if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(out_path) as f:
            if "namegate: ready:" in f.read():
                return
        if p.poll() is not None:
            raise SystemExit(f"namegate exited ({p.returncode}) before it was ready")
        time.sleep(0.05)
    raise SystemExit(f"namegate printed no ready line in {timeout} s")


@contextlib.contextmanager
def warm_namegate(cfg, out_path):
    """namegate on cfg, its output to out_path, ready and warmed up; stopped on the way out."""
    with open(out_path, "w") as out:
        p = subprocess.Popen([NAMEGATE, "-c", cfg], stdout=out, stderr=subprocess.STDOUT)
    try:
        namegate_ready(p, out_path)
        time.sleep(WARMUP)
        yield p
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def namegate_mpps(cfg, workdir):
    out_path = os.path.join(workdir, "namegate.out")
    rx = ('namegate_port_packets_total{port="vm",dir="rx"}',
          'namegate_port_packets_total{port="uplink",dir="rx"}')
    with warm_namegate(cfg, out_path) as p:
        c0, t0 = counters(p, out_path), time.monotonic()
        time.sleep(MEASURE)
        c1, t1 = counters(p, out_path), time.monotonic()
    mpps = sum(c1[k] - c0[k] for k in rx) / (t1 - t0) / 1e6
    allowed = sum(v for k, v in c1.items() if 'verdict="allowed"' in k and "packets" in k)
    blocked = {k: v for k, v in c1.items() if k.startswith(("namegate_vm_blocked_total",
                                                            "namegate_drops_total")) and v}
    return mpps, allowed, blocked


def cpu_seconds(pid):
    """User and system time the process has used, all its threads together."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_pct(manifest, workdir, idle_sleep_us=None):
    """Percent of one core the whole daemon uses with no frame arriving (net_null ports
    that receive nothing): what a lab gateway costs while its VMs are quiet. None: the
    default dataplane.idle_sleep_us."""
    devs = ["net_null0,no-rx=1", "net_null1,no-rx=1"]
    cfg = namegate_config(manifest, devs, f"ngidle{os.getpid()}_{idle_sleep_us}",
                          os.path.join(workdir, f"idle{idle_sleep_us}.json"))
    if idle_sleep_us is not None:
        with open(cfg) as f:
            c = json.load(f)
        c["dataplane"]["idle_sleep_us"] = idle_sleep_us
        with open(cfg, "w") as f:
            json.dump(c, f)
    with warm_namegate(cfg, os.path.join(workdir, "idle.out")) as p:
        c0, t0 = cpu_seconds(p.pid), time.monotonic()
        time.sleep(MEASURE)
        c1, t1 = cpu_seconds(p.pid), time.monotonic()
    return 100 * (c1 - c0) / (t1 - t0)


def main():
    with open(traffic_file("manifest.json")) as f:
        manifest = json.load(f)
    with tempfile.TemporaryDirectory(prefix="ngidle") as work:
        # the baseline in the same run: the same daemon polling without rest
        busy = idle_cpu_pct(manifest, work, 0)
        idle = idle_cpu_pct(manifest, work)
        print(f"RESULT idle_cpu_pct={idle:.1f}")
        print(f"RESULT idle_cpu_pct_busy_poll={busy:.1f}")
        print(f"RESULT idle_vs_busy_poll={idle / busy:.3f}")
        sys.stdout.flush()
    vm_macs = {vm["mac"].lower() for vm in manifest["vms"]}
    with tempfile.TemporaryDirectory(prefix="ngbench") as work:
        for name, syns in (("small64", True), ("mix", False)):
            vm_pcap, up_pcap = split(traffic_file(f"{name}.pcap"), vm_macs, work,
                                     add_syns=syns)
            devs = devices(vm_pcap, up_pcap)
            prefix = f"ngbench{os.getpid()}"
            base = testpmd_mpps(devs, prefix + "t")
            cfg = namegate_config(manifest, devs, prefix + "n",
                                  os.path.join(work, f"{name}.json"))
            try:
                ng, allowed, blocked = namegate_mpps(cfg, work)
            finally:    # DPDK's runtime directories of both: no files left behind
                for d in (prefix + "t", prefix + "n"):
                    shutil.rmtree(os.path.join("/run/dpdk", d), ignore_errors=True)
            print(f"RESULT testpmd_{name}_mpps={base:.2f}")
            print(f"RESULT namegate_{name}_mpps={ng:.2f}")
            print(f"RESULT namegate_{name}_vs_testpmd={ng / base:.3f}")
            print(f"RESULT namegate_{name}_allowed_packets={allowed}")
            top = sorted(blocked.items(), key=lambda kv: -kv[1])[:3]
            print(f"# namegate {name}: most blocked/dropped: {top}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
