"""Golden verdicts: every frame of two deterministic captures goes through the real daemon
on net_pcap; what came out of its two ports says what happened to each frame; that list
must equal verdicts.txt, and the final counters must equal the reasons it names. The
frames' parsing and the DNS fields it patches are golden_frames.py's.

How a run goes
  make_pcaps.py builds vm.pcap (frames from the VMs) and up.pcap (from the internet) in a
  temporary directory. namegate runs with one worker and
      vm_port     net_pcap0,rx_pcap=<vm FIFO>,tx_pcap=vm_out.pcap
      uplink_port net_pcap1,rx_pcap=<up FIFO>,tx_pcap=up_out.pcap
  The rx "pcaps" are named pipes that this test writes vm.pcap's and up.pcap's records
  into, phase by phase (see make_pcaps.py): all of phase 1 (VM side), then, once the
  daemon's rx counters (SIGUSR1) show every frame of it processed and its output is on
  disk, phase 2 (internet side), and so on. That is the point of the pipes: flows and
  remembered DNS queries live in the daemon, and net_pcap reading two files gives no
  order between its ports, so a SYN-ACK could otherwise arrive before its SYN. With the
  pipes the order across ports is the test's, whatever the burst size or timing.

  libpcap reads a pipe like a file and blocks while it is empty, which would stall the
  single worker on one port. To let it go round its loop, the test writes "burst
  breakers" into both pipes: a record header whose capture length is above any snaplen.
  libpcap rejects it (PCAP_ERROR) without reading further, net_pcap ends that rx burst
  with what it has, and the next record is read normally the next time. A breaker only
  ever shortens a burst, so extra ones are harmless.

  DNS answers must carry the query ID namegate chose (randomly) for the forwarded query,
  and over UDP go to the source port it chose with it: the test reads both from
  up_out.pcap after phase 1 and patches the answers of phase 2 (make_pcaps.py's "patch"
  entries). That is what lets the test learn bindings and judge SNI on binding-admitted
  flows. Likewise a DNS over TCP connection's sequence numbers leave shifted by an offset
  namegate draws at its SYN: the test reads it off the SYN as it left, patches the
  resolver's ACKs of phase 2 with it, and shifts the VM's segments back before it compares
  them.

How a verdict is derived, for each input frame (see derive())
  forward          its bytes came out of the other port unchanged (DNS: all but the ID,
                   the UDP/TCP checksum and over UDP the VM's port; a forwarded answer
                   must carry the VM's own query ID and go to the VM's own port again)
  reply:<kinds>    namegate answered the sender itself, on the port the frame came in by:
                   rst (reversed addresses and ports; seq = its ack, or ack = its seq +
                   length; segments sharing an ack: the last one sent), icmp-unreachable
                   (quotes the frame), dns-refused (same ID, RCODE REFUSED),
                   dns-refused-ede (and EDE 15 Blocked), dns-nxdomain; rst-both = rst to
                   the VM and an RST for the same connection out of the other port, whose
                   sequence number is the first byte held back (the connection is cut
                   both ways; it counts for the first such frame at or after that byte)
  edit:<addresses> a DNS answer went on to the VM edited (SPEC s8: every address it gives
                   is bound, or removed): the VM's own ID, the same question, and only
                   these A/AAAA left (comma-separated, in order; "none" for none)
  drop             nothing
  Every output frame must be accounted for, and carry valid checksums; anything else
  shows up in the diff.

verdicts.txt lines: `<pcap>:<index> <verdict> [reason]... <what>`. The [reason] tokens
are the namegate_vm_blocked_total reasons the frame adds (for the VM that sent it, or
that it was sent to; "unknown" for no VM), or [drop:<r>] for namegate_drops_total. A
line may end in `{namegate: <verdict> [reason]...}` to record a known bug (SPEC section 4
says the first verdict, namegate does the second); test_verdicts and test_counters hold
namegate to what it does, so any change is noticed. None is recorded now: the two this
test found (TCP DNS answers learned without a matching query; denied DNS over TCP cut
instead of answered) are fixed.

Environment: NAMEGATE_BIN (default ../../build/dataplane/namegate), NAMEGATE_GOLDEN_KEEP=1
keeps the run directory. Needs root (DPDK EAL). About a second.
"""
import difflib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import make_pcaps as mp  # noqa: E402
from golden_frames import (TCP_ACK, TCP_RST, checksums_ok, dns_id, dns_msg,  # noqa: E402
                           dns_offset, dns_parse, modulation, normalised, parse, read_pcap,
                           tcp_seg_len, unshifted, vm_port, with_ack_shifted, with_dns_id)

NAMEGATE = os.environ.get("NAMEGATE_BIN") or os.path.join(HERE, "../../build/dataplane/namegate")
GOLDEN = os.path.join(HERE, "verdicts.txt")
START_TIMEOUT = 20.0
PHASE_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0

# caplen 0xffffff00 > any snaplen: libpcap fails this record, net_pcap ends the burst
BREAKER = struct.pack("<IIII", 0, 0, 0xFFFFFF00, 0xFFFFFF00)
RX = {"vm": 'namegate_port_packets_total{port="vm",dir="rx"}',
      "up": 'namegate_port_packets_total{port="uplink",dir="rx"}'}
TX = {"vm": 'namegate_port_packets_total{port="vm",dir="tx"}',
      "up": 'namegate_port_packets_total{port="uplink",dir="tx"}'}
SIDE = {"vm.pcap": "vm", "up.pcap": "up"}
OTHER = {"vm": "up", "up": "vm"}


# ------------------------------------------------------------------------------- verdicts


def _edited_answer(f, ups):
    """(input, kind) when output frame f (to a VM) is an uplink answer namegate edited: from
    the same resolver and port to the same VM and the VM's own port, with the VM's own ID
    (what the input carried before the test patched it) and the same question."""
    msg = dns_msg(f)
    if msg is None or f.sport != 53:
        return None, None
    out = dns_parse(msg)
    for inp in ups:
        m = dns_msg(inp.f)
        if (m is None or inp.f.src != f.src or inp.f.dst != f.dst or inp.f.sport != f.sport
                or parse(inp.orig).dport != f.dport or dns_id(inp.orig) != out.id):
            continue
        a = dns_parse(m)
        if a.qr and out.qr and a.questions == out.questions:
            return inp, "edit:" + (",".join(out.addrs) or "none")
    return None, None


def _reversed(f, c):
    return (f.src == c.dst and f.dst == c.src and f.sport == c.dport and f.dport == c.sport
            and f.proto == c.proto)


def _same_way(f, c):
    return (f.src == c.src and f.dst == c.dst and f.sport == c.sport and f.dport == c.dport
            and f.proto == c.proto)


def _reply_to(f, cands):
    """(input, kind) that output frame f answers, among the inputs of its port."""
    if f.proto == 6 and f.flags & TCP_RST:
        hits = [c for c in cands if c.f.proto == 6 and _reversed(f, c.f) and
                ((c.f.flags & TCP_ACK and f.seq == c.f.ack) or
                 (not c.f.flags & TCP_ACK and f.ack == (c.f.seq + tcp_seg_len(c.f)) & 0xffffffff))]
        # segments of one connection can share an ack: the RST goes to the last one sent,
        # the segment that made namegate decide (a ClientHello's second half, say)
        return (max(hits, key=lambda c: c.order), "rst") if hits else (None, None)
    if (f.proto == 1 and f.icmp_type == 3) or (f.proto == 58 and f.icmp_type == 1):
        quote = f.payload
        hits = [c for c in cands if c.f.family == f.family and c.f.src == f.dst and
                len(quote) >= 20 and c.raw[c.f.l3:c.f.l3 + len(quote)] == quote]
        return (hits[-1], "icmp-unreachable") if hits else (None, None)
    msg = dns_msg(f)
    if msg is not None and f.sport == 53:
        ans = dns_parse(msg)
        hits = [c for c in cands if _reversed(f, c.f) and dns_id(c.raw) == ans.id]
        if not ans.qr or not hits:
            return None, None
        kind = {5: "dns-refused", 3: "dns-nxdomain"}.get(ans.rcode, f"dns-rcode{ans.rcode}")
        if ans.ede is not None:
            kind += "-ede" if ans.ede == 15 else f"-ede{ans.ede}"
        return hits[-1], kind
    return None, None


def derive(inputs, outs):
    """{input name: verdict} and the output frames nothing explains.
    inputs: SimpleNamespace(name, side, raw (as fed), orig (before any patch), order, f);
    outs: {"vm": [frames namegate sent to the VMs], "up": [... to the internet]}."""
    forwarded = {}
    deltas = modulation(inputs, outs["up"])
    for inp in inputs:
        # toward the VM, a resolver's segment goes back to the ACK make_pcaps.py wrote
        fed = inp.orig if inp.side == "up" else inp.raw
        forwarded.setdefault((OTHER[inp.side], normalised(fed)), []).append(inp)
    kinds = {inp.name: [] for inp in inputs}
    flags = {inp.name: set() for inp in inputs}
    unexplained, upstream = [], []
    for port in ("vm", "up"):
        same_side = [i for i in inputs if i.side == port]
        for k, b in enumerate(outs[port]):
            f = parse(b)
            where = f"{port}_out.pcap:{k}"
            hits = forwarded.get((port, normalised(unshifted(b, deltas) if port == "up"
                                                      else b)))
            if hits:
                inp = hits[0]
                kinds[inp.name].append("forward")
                if not checksums_ok(f):
                    flags[inp.name].add("bad-checksum")
                if port == "vm" and dns_offset(f) is not None and dns_id(b) != dns_id(inp.orig):
                    flags[inp.name].add("id-not-restored")
                if port == "vm" and vm_port(b) != vm_port(inp.orig):
                    flags[inp.name].add("port-not-restored")
                continue
            inp, kind = _edited_answer(f, [i for i in inputs if i.side == "up"]) \
                if port == "vm" else (None, None)
            if inp is None:
                inp, kind = _reply_to(f, same_side)
            if inp is not None:
                kinds[inp.name].append(kind)
                if not checksums_ok(f):
                    flags[inp.name].add("bad-checksum")
            elif f.proto == 6 and f.flags & TCP_RST:
                # its sequence number as the VM's (DNS over TCP's shifted back)
                upstream.append((where, parse(unshifted(b, deltas)) if port == "up" else f, f))
            else:
                unexplained.append(f"{where} ({len(b)} bytes) {b[:64].hex()}")
    for where, f, sent in upstream:
        # an RST out of the other port for a connection namegate cut: it carries the
        # sequence number of the first byte namegate held back, and belongs to the frame
        # of that connection, at or after that byte, that got the RST (or, for DNS over
        # TCP, the refusal) to its sender
        hits = [i for i in inputs if i.f.proto == 6 and _same_way(f, i.f) and
                any(k == "rst" or k.startswith("dns-") for k in kinds[i.name]) and
                (i.f.seq - f.seq) & 0xffffffff < 1 << 31]
        if hits:
            inp = min(hits, key=lambda i: ((i.f.seq - f.seq) & 0xffffffff, i.order))
            kinds[inp.name].append("rst-upstream")
            if not checksums_ok(sent):
                flags[inp.name].add("bad-checksum")
        else:
            unexplained.append(f"{where} RST {f.raw[:64].hex()}")
    verdicts = {}
    for inp in inputs:
        ks = kinds[inp.name]
        fw = ks.count("forward")
        ed = [k for k in ks if k.startswith("edit:")]
        rp = sorted(k for k in ks if k != "forward" and not k.startswith("edit:"))
        if "rst" in rp and "rst-upstream" in rp:
            rp.remove("rst")
            rp.remove("rst-upstream")
            rp = sorted(rp + ["rst-both"])
        parts = []
        if fw:
            parts.append("forward" if fw == 1 else f"forward*{fw}")
        parts += ed
        if rp:
            parts.append("reply:" + "+".join(rp))
        v = "+".join(parts) or "drop"
        if flags[inp.name]:
            v += "(" + ",".join(sorted(flags[inp.name])) + ")"
        verdicts[inp.name] = v
    return verdicts, unexplained


# ------------------------------------------------------------------------------ golden

_LINE = re.compile(r"^(\S+:\d+)\s+(\S+)\s+((?:\[[a-z_:]+\]\s*)*)(.*?)"
                   r"(?:\s*\{namegate:\s*(\S+)\s*((?:\[[a-z_:]+\]\s*)*)\})?\s*$")
_TOKEN = re.compile(r"\[([a-z_:]+)\]")


def load_golden(path=GOLDEN):
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = _LINE.match(line)
            assert m, f"{path}:{n}: not `<pcap>:<index> <verdict> [reason]... <what>`"
            name, verdict, reasons, what, ng_verdict, ng_reasons = m.groups()
            entries.append(SimpleNamespace(
                name=name, spec=verdict, spec_reasons=_TOKEN.findall(reasons), what=what,
                bug=ng_verdict is not None,
                now=ng_verdict or verdict,
                now_reasons=_TOKEN.findall(ng_reasons or "") if ng_verdict else
                _TOKEN.findall(reasons), line=n))
    return entries


def vm_of(inp):
    """The VM whose counters a frame moves: by source MAC on the VM side (untagged: all
    the test's VMs are), by destination MAC on the internet side."""
    if inp.side == "vm":
        mac = inp.raw[6:12] if inp.f.vlan is None else None
    else:
        mac = inp.raw[0:6]
    for vm in mp.VMS:
        if mac == bytes.fromhex(vm["mac"].replace(":", "")):
            return vm["name"]
    return "unknown"


def expected_counters(golden, by_name, spec):
    blocked, drops = {}, {}
    for e in golden:
        for r in (e.spec_reasons if spec else e.now_reasons):
            if r.startswith("drop:"):
                drops[r[5:]] = drops.get(r[5:], 0) + 1
            else:
                key = (vm_of(by_name[e.name]), r)
                blocked[key] = blocked.get(key, 0) + 1
    return blocked, drops


def counter_mismatches(counters, golden, by_name, spec):
    blocked, drops = expected_counters(golden, by_name, spec)
    bad = []
    pat = re.compile(r'^namegate_vm_blocked_total\{vm="([^"]+)",reason="([^"]+)"\}$')
    seen = set()
    for key, value in sorted(counters.items()):
        m = pat.match(key)
        if m:
            seen.add((m.group(1), m.group(2)))
            want = blocked.get((m.group(1), m.group(2)), 0)
        elif key.startswith('namegate_drops_total{reason="'):
            reason = key[len('namegate_drops_total{reason="'):-2]
            seen.add(("drop", reason))
            want = drops.get(reason, 0)
        else:
            continue
        if value != want:
            bad.append(f"{key} = {value}, verdicts.txt says {want}")
    for (vm, r), n in sorted(blocked.items()):
        if (vm, r) not in seen:
            bad.append(f"no counter for vm={vm} reason={r} (verdicts.txt says {n})")
    for r, n in sorted(drops.items()):
        if ("drop", r) not in seen:
            bad.append(f"no counter namegate_drops_total reason={r} (verdicts.txt says {n})")
    return bad


# ------------------------------------------------------------------------------ daemon

_COUNTER = re.compile(r"^(namegate_\w+(?:\{[^}]*\})?) (\d+)$", re.M)
# The sample that ends a dump; the family's # HELP and # TYPE lines name it too.
_DUMP_END = re.compile(r"^namegate_policy_generation \d+\n", re.M)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lcore_args():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        return ["-l", f"{cpus[-2]},{cpus[-1]}"]
    return ["--lcores", f"0@{cpus[0]},1@{cpus[0]}"]


class Run:
    """One daemon fed phase by phase through two FIFOs. Owns every process and file it
    makes; cleanup() undoes all of it, whatever state the run is in."""

    def __init__(self, work):
        self.work = work
        self.prefix = f"nggolden{os.getpid()}_{os.urandom(3).hex()}"
        self.path = {n: os.path.join(work, n) for n in (
            "vm.fifo", "up.fifo", "vm_out.pcap", "up_out.pcap", "namegate.json",
            "namegate.out", "namegate.err", "namegate.sock", "events.jsonl")}
        self.fd = {}
        self.proc = None

    # -- lifecycle
    def config(self):
        return {
            "dataplane": {
                "eal": ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", self.prefix,
                        "--log-level", "*:error"] + _lcore_args(),
                "vm_port": f"net_pcap0,rx_pcap={self.path['vm.fifo']},"
                           f"tx_pcap={self.path['vm_out.pcap']}",
                "uplink_port": f"net_pcap1,rx_pcap={self.path['up.fifo']},"
                               f"tx_pcap={self.path['up_out.pcap']}",
                "workers": 1,
                "mbufs": 16384,
                "max_flows": 65536,
                "max_flows_per_vm": 16384,
                "max_bindings": 65536,
            },
            "slow_path": {"enabled": False, "nft_table": self.prefix},
            "resolvers": mp.RESOLVERS,
            "dns": {"min_ttl": 300, "max_ttl": 86400, "blocked_rcode": "refused"},
            "tls_ports": [443, 8443],
            "sni_binding": "strict",
            "quic": "block",
            "on_block": "reset",
            "metrics": f"127.0.0.1:{_free_port()}",
            "control_socket": self.path["namegate.sock"],
            "events": self.path["events.jsonl"],
            "policies": mp.POLICIES,
            "vms": mp.VMS,
        }

    def start(self, attempts=3):
        """Start the daemon on fresh pipes. The metrics port is picked free but could be
        taken before the daemon binds it: then start again with another."""
        for attempt in range(attempts):
            for side in ("vm", "up"):
                if side in self.fd:
                    os.close(self.fd.pop(side))
                fifo = self.path[f"{side}.fifo"]
                if os.path.exists(fifo):
                    os.unlink(fifo)
                os.mkfifo(fifo, 0o600)
                # O_RDWR: opening does not wait for a reader, and the pipe sees no EOF
                # until we close it
                self.fd[side] = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
                self._write(side, mp.PCAP_HEADER)
            with open(self.path["namegate.json"], "w") as f:
                json.dump(self.config(), f, indent=1)    # JSON is YAML
            with open(self.path["namegate.out"], "wb") as out, \
                    open(self.path["namegate.err"], "wb") as err:
                self.proc = subprocess.Popen([NAMEGATE, "-c", self.path["namegate.json"]],
                                             stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            deadline = time.monotonic() + START_TIMEOUT
            while "namegate: ready" not in self._stdout():
                if self.proc.poll() is not None:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"namegate not ready after {START_TIMEOUT} s" +
                                         self.tail())
                time.sleep(0.02)
            else:
                return
            with open(self.path["namegate.err"], errors="replace") as f:
                busy = "namegate: metrics" in f.read()
            if not busy or attempt == attempts - 1:
                self._alive("startup")

    def stop(self):
        """EOF on both pipes, SIGTERM, and the final counters it prints."""
        self._close_fds()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("namegate did not stop on SIGTERM" + self.tail())
        assert rc == 0, f"namegate exited with {rc}" + self.tail()
        text = self._stdout()
        ends = list(_DUMP_END.finditer(text))
        assert ends, "namegate printed no final counters" + self.tail()
        start = ends[-2].end() if len(ends) > 1 else 0
        return {k: int(v) for k, v in _COUNTER.findall(text[start:ends[-1].end()])}

    def cleanup(self):
        self._close_fds()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(os.path.join("/var/run/dpdk", self.prefix), ignore_errors=True)

    # -- feeding
    def feed(self, side, frames):
        for ts, b in frames:
            self._write(side, mp.pcap_record(b, ts))

    def settle(self, want_rx):
        """Until the daemon has read want_rx frames per port, everything it sent is in the
        output files, and two counter snapshots agree. Returns the counters."""
        deadline = time.monotonic() + PHASE_TIMEOUT
        prev = None
        while True:
            for side in ("vm", "up"):
                self._write(side, BREAKER)
            c = self.counters()
            rx = {s: c[RX[s]] for s in ("vm", "up")}
            tx = {s: c[TX[s]] for s in ("vm", "up")}
            assert all(rx[s] <= want_rx[s] for s in rx), \
                f"namegate read {rx} frames, only {want_rx} were written" + self.tail()
            if rx == want_rx and prev == (rx, tx) and all(
                    len(read_pcap(self.path[f"{s}_out.pcap"])) == tx[s] for s in tx):
                return c
            prev = (rx, tx)
            if time.monotonic() > deadline:
                raise AssertionError(f"after {PHASE_TIMEOUT} s namegate has read {rx} of "
                                     f"{want_rx} frames" + self.tail())
            time.sleep(0.005)

    def counters(self, timeout=5.0):
        start = len(self._stdout())
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while True:
            text = self._stdout()[start:]
            end = _DUMP_END.search(text)
            if end:
                return {k: int(v) for k, v in _COUNTER.findall(text[:end.end()])}
            self._alive("a counter dump")
            if time.monotonic() > deadline:
                raise AssertionError("no counters after SIGUSR1" + self.tail())
            time.sleep(0.005)

    # -- helpers
    def _write(self, side, data):
        deadline = time.monotonic() + PHASE_TIMEOUT
        while True:
            try:
                n = os.write(self.fd[side], data)     # records are < PIPE_BUF: all or none
                assert n == len(data)
                return
            except BlockingIOError:
                # the pipe is full while the worker waits on the other one: let it go round
                os.write(self.fd[OTHER[side]], BREAKER)
                self._alive("feeding")
                if time.monotonic() > deadline:
                    raise AssertionError(f"the {side} pipe stays full" + self.tail())
                time.sleep(0.001)

    def _close_fds(self):
        for side in list(self.fd):
            os.close(self.fd.pop(side))

    def _alive(self, what):
        if self.proc.poll() is not None:
            raise AssertionError(f"namegate exited with {self.proc.returncode} during {what}"
                                 + self.tail())

    def _stdout(self):
        with open(self.path["namegate.out"], errors="replace") as f:
            return f.read()

    def tail(self):
        out = []
        for n in ("namegate.err", "namegate.out"):
            try:
                with open(self.path[n], errors="replace") as f:
                    lines = [ln for ln in f.read().splitlines()
                             if not ln.startswith("namegate_")]
                out += [f"  {n}: {ln}" for ln in lines[-15:]]
            except FileNotFoundError:
                pass
        return "\n" + "\n".join(out) if out else ""


def run_golden(work):
    """Everything a test needs: the inputs as fed, the outputs, the final counters."""
    entries = mp.write(work)
    manifest = json.load(open(os.path.join(work, "frames.json")))
    order = {e["frame"]: k for k, e in enumerate(manifest)}
    patches = {e["frame"]: e.get("patch") for e in manifest}
    phases = sorted({e["phase"] for e in manifest})
    by_phase = {p: [e for e in entries if e[3] == p] for p in phases}
    # each phase comes from one pcap, and a pcap's phases follow its order
    for p, es in by_phase.items():
        assert len({pcap for pcap, *_ in es}) == 1, f"phase {p} mixes pcaps"
    for pcap in SIDE:
        seq = [(e[3], e[1]) for e in entries if e[0] == pcap]
        assert seq == sorted(seq), f"{pcap}: phases out of order"

    run = Run(work)
    inputs, fed = [], {"vm": 0, "up": 0}
    t0 = time.monotonic()
    try:
        run.start()
        started = time.monotonic()
        for p in phases:
            es = by_phase[p]
            side = SIDE[es[0][0]]
            batch = []
            queries, deltas = forwarded_queries(run, inputs) if any(
                patches[f"{e[0]}:{e[1]}"] for e in es) else ({}, {})
            for pcap, idx, b, _phase, _note, _patch in es:
                name = f"{pcap}:{idx}"
                raw = apply_patch(b, patches[name], queries, deltas)
                inputs.append(SimpleNamespace(name=name, side=side, raw=raw, orig=b,
                                              order=order[name], f=parse(raw)))
                batch.append((mp.T0 * 1_000_000 + idx * 1000, raw))
            run.feed(side, batch)
            fed[side] += len(batch)
            run.settle(dict(fed))
        counters = run.stop()
        stopped = time.monotonic()
        outs = {s: read_pcap(run.path[f"{s}_out.pcap"]) for s in ("vm", "up")}
        return SimpleNamespace(inputs=inputs, outs=outs, counters=counters,
                               seconds=stopped - t0, fed_seconds=stopped - started,
                               tail=run.tail())
    finally:
        run.cleanup()


def apply_patch(b, patch, queries, deltas):
    """Give a DNS answer the ID namegate chose for its query, and over UDP the port it sent
    it from, and a resolver's segment over TCP the ACK of the VM's numbers as namegate
    shifted them (make_pcaps.py's patches). queries: {VM-side input name: (the DNS ID it
    left the uplink port with, its VM-side port there)}; deltas: modulation()."""
    for how, ref in (patch or {}).items():
        if how == "tcp_ack":
            b = with_ack_shifted(b, deltas)
            continue
        assert ref in queries, f"{ref} was not forwarded, so {how} cannot be patched"
        (want, port), own = queries[ref], dns_id(b)
        if how == "dns_id":
            b = with_dns_id(b, want, port)
        elif how == "dns_id_not":
            b = b if own != want else with_dns_id(b, own ^ 0x8000)
        else:
            raise AssertionError(f"unknown patch {how}")
    return b


def forwarded_queries(run, inputs):
    """{input name: (DNS ID, UDP source port or None) as forwarded} for the VM-side DNS
    frames in up_out.pcap, and the DNS over TCP connections' offsets (modulation())."""
    by_norm = {normalised(i.raw): i.name for i in inputs
               if i.side == "vm" and dns_offset(i.f) is not None}
    out = {}
    ups = read_pcap(run.path["up_out.pcap"])
    deltas = modulation(inputs, ups)
    for b in ups:
        name = by_norm.get(normalised(unshifted(b, deltas)))
        if name is not None:
            out[name] = (dns_id(b), vm_port(b))
    return out, deltas


# ------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def golden():
    return load_golden()


@pytest.fixture(scope="module")
def result():
    if os.geteuid() != 0:
        pytest.skip("the golden test runs DPDK's EAL: needs root")
    if not os.access(NAMEGATE, os.X_OK):
        pytest.skip(f"no namegate binary at {NAMEGATE} (set NAMEGATE_BIN)")
    work = tempfile.mkdtemp(prefix="nggolden.")
    try:
        res = run_golden(work)
        res.verdicts, res.unexplained = derive(res.inputs, res.outs)
        res.by_name = {i.name: i for i in res.inputs}
        yield res
    finally:
        if os.environ.get("NAMEGATE_GOLDEN_KEEP"):
            print(f"\ngolden: run directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _table(golden, verdict_of):
    return [f"{e.name} {verdict_of(e)}  # {e.what}" for e in golden]


def test_pcaps_are_deterministic(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    mp.write(str(tmp_path / "a"))
    mp.write(str(tmp_path / "b"))
    for name in ("vm.pcap", "up.pcap", "frames.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), \
            f"{name} differs between two builds"


def test_golden_lists_every_frame(golden):
    names = [f"{pcap}:{i}" for pcap, i, *_ in mp.frames()]
    assert [e.name for e in golden] == names, \
        "verdicts.txt must have one line per input frame, in pcap order (vm.pcap, then up.pcap)"


def test_verdicts(golden, result):
    want = _table(golden, lambda e: e.now)
    got = _table(golden, lambda e: result.verdicts[e.name])
    problems = []
    if want != got:
        problems.append("verdicts differ from verdicts.txt (- golden, + namegate):\n" +
                        "\n".join(difflib.unified_diff(want, got, "verdicts.txt", "namegate",
                                                       lineterm="", n=0)))
    if result.unexplained:
        problems.append("output frames no input explains:\n  " +
                        "\n  ".join(result.unexplained))
    assert not problems, "\n\n".join(problems)


def test_counters(golden, result):
    bad = counter_mismatches(result.counters, golden, result.by_name, spec=False)
    for side in ("vm", "up"):
        n = sum(1 for i in result.inputs if i.side == side)
        if result.counters[RX[side]] != n:
            bad.append(f"{RX[side]} = {result.counters[RX[side]]}, {n} frames were fed")
    assert not bad, "final counters differ from verdicts.txt's reasons:\n  " + "\n  ".join(bad)


def test_run_time(result):
    # the whole daemon run, start to exit; the brief is a fast test
    assert result.seconds < 20, f"the run took {result.seconds:.1f} s"
