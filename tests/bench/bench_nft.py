#!/usr/bin/python3
"""The slow path's nftables feed (issue 14), in private network namespaces (needs root):

(a) a burst of 10 k elements through namegate's own nft code (tests/nft's nft_drv over
    control/nft/nft_*.c, in the daemon's batch size) against `nft -f` of the same elements;
(b) the real daemon (net_af_packet on veths, slow path on) learning one binding per
    millisecond from DNS answers for a few seconds: the p99 from DNS answer to nft element
    over every sample (the daemon's namegate_nft_bind_seconds histogram, before and after);
(c) a burst of answers binding more than 16 k addresses at once: every address an answer
    gave the VM must be in nft; answers refused by back-pressure are counted and asked
    again, as a resolver would;
(d) nft_bind() of one and of 64 new elements, timed call by call in nft_drv, against
    nft_check() (one netlink round trip that changes nothing) in the same run: the 5 ms
    p99 namegate keeps to is a figure here, not an assertion in tests/nft.

Namespaces and the daemon get a per-run prefix and are removed even on failure. Prints
RESULT lines; never fails on speed, only when (c) lost a binding (or an answer never came).
"""

import json
import os
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

NAMEGATE = os.environ.get("NAMEGATE_BIN", "build/dataplane/namegate")
NFT_DRV = os.environ.get("NFT_DRV", "build/tests/nft/nft_drv")
SELF = os.path.abspath(__file__)
PY = "/usr/bin/python3"

VM_MAC, VM_IP = "02:00:00:00:00:01", "10.77.0.11"
RES_MAC, RES_IP = "02:00:00:00:00:fe", "10.77.0.1"
METRICS_PORT = 9477
TABLE = "ngbench"
ZONE = "bench.test"
STREAM_SECONDS = float(os.environ.get("BENCH_NFT_STREAM_S", "3"))
BURST_ANSWERS, BURST_ADDRS = 640, 64          # 40,960 bindings: past the 16,384 ring
ROUNDS = 3
PARTS = os.environ.get("BENCH_NFT_PARTS", "abcd")     # a subset, when looking at one


def run(*argv, ns=None, check=True, input=None, timeout=120):
    if ns is not None:
        argv = ("ip", "netns", "exec", ns) + argv
    r = subprocess.run(argv, capture_output=True, text=True, input=input, timeout=timeout)
    if check and r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {r.returncode}: {r.stderr.strip()}")
    return r


# --- DNS wire form, both ends -------------------------------------------------------------

def qname_wire(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"


def query(qid, name):
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname_wire(name) + \
        struct.pack("!HH", 1, 1)


def name_addrs(name):
    """a<first>x<count>.bench.test answers count A records from 198.18.0.0 + first."""
    m = re.match(r"a(\d+)x(\d+)\.", name)
    first, count = int(m.group(1)), int(m.group(2))
    return [socket.inet_ntoa(struct.pack("!I", 0xc6120000 + first + i)) for i in range(count)]


def responder():
    """Answers every query on RES_IP:53 with the addresses its name asks for."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((RES_IP, 53))
    print("ready", flush=True)
    while True:
        msg, peer = s.recvfrom(2048)
        if len(msg) < 17:
            continue
        qid = struct.unpack("!H", msg[:2])[0]
        i, labels = 12, []
        while msg[i] != 0:
            labels.append(msg[i + 1:i + 1 + msg[i]].decode())
            i += 1 + msg[i]
        question = msg[12:i + 5]
        addrs = name_addrs(".".join(labels))
        body = b"".join(struct.pack("!HHHIH", 0xc00c, 1, 1, 300, 4) + socket.inet_aton(a)
                        for a in addrs)
        s.sendto(struct.pack("!HHHHHH", qid, 0x8180, 1, len(addrs), 0, 0) + question + body,
                 peer)


def answered_addrs(msg):
    """The A records of an answer (they follow the one question)."""
    an = struct.unpack("!H", msg[6:8])[0]
    i = 12
    while msg[i] != 0:
        i += 1 + msg[i]
    i += 5
    out = []
    for _ in range(an):
        i += 2 if msg[i] & 0xc0 == 0xc0 else 0
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[i:i + 10])
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(msg[i + 10:i + 14]))
        i += 10 + rdlen
    return out


def client(mode, count, per, first):
    """In the VM: stream (one query a millisecond) or burst (a window of queries, each
    asked again after a silence, as a stub resolver does). Prints a JSON summary."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((VM_IP, 0))
    s.setblocking(False)
    names = [f"a{first + k * per}x{per}.{ZONE}" for k in range(count)]
    by_id, sent_at, got, asked = {}, {}, {}, 0
    next_id = 1

    def send(k):
        nonlocal next_id, asked
        qid = next_id
        next_id = next_id % 65535 + 1
        by_id[qid] = k
        sent_at[k] = time.monotonic()
        asked += 1
        s.sendto(query(qid, names[k]), (RES_IP, 53))

    def receive(wait):
        r, _, _ = select.select([s], [], [], wait)
        while r:
            try:
                msg = s.recv(4096)
            except BlockingIOError:
                break
            k = by_id.pop(struct.unpack("!H", msg[:2])[0], None)
            if k is not None and k not in got:
                got[k] = answered_addrs(msg)

    start = time.monotonic()
    if mode == "stream":
        for k in range(count):
            due = start + k / 1000.0
            while (now := time.monotonic()) < due:
                receive(due - now)
            send(k)
            receive(0)
        end = time.monotonic() + 2
        while len(got) < count and time.monotonic() < end:
            receive(0.05)
    else:
        # all at once: the answers come faster than nftables takes their elements
        window, retry_after, deadline = count, 0.5, start + 120
        pending = list(range(count))
        while len(got) < count and time.monotonic() < deadline:
            now = time.monotonic()
            inflight = [k for k in sent_at if k not in got and now - sent_at[k] < retry_after]
            for k in pending[:max(0, window - len(inflight))]:
                send(k)
            pending = pending[max(0, window - len(inflight)):]
            receive(0.01)
            now = time.monotonic()
            pending += [k for k in sent_at if k not in got and now - sent_at[k] >= retry_after
                        and k not in pending]
            for k in pending:
                sent_at.pop(k, None)
    print(json.dumps({"asked": asked, "answered": len(got), "seconds": time.monotonic() - start,
                      "addrs": sorted({a for v in got.values() for a in v})}))


# --- the lab --------------------------------------------------------------------------------

class Lab:
    """VM - namegate - resolver namespaces; everything it made goes in close()."""

    def __init__(self):
        self.prefix = f"ngbn{os.getpid() % 100000}"
        self.vm, self.gw, self.res, self.nft = (f"{self.prefix}{r}" for r in "vgrn")
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix=self.prefix)
        for ns in (self.vm, self.gw, self.res, self.nft):
            run("ip", "netns", "add", ns)
            run("ip", "link", "set", "lo", "up", ns=ns)
        for ns, mac, ip, peer in ((self.vm, VM_MAC, VM_IP, "gvm"), (self.res, RES_MAC, RES_IP,
                                                                    "gup")):
            run("ip", "link", "add", "eth0", "netns", ns, "address", mac, "type", "veth",
                "peer", "name", peer, "netns", self.gw)
            run("ip", "addr", "add", ip + "/24", "dev", "eth0", ns=ns)
            run("ip", "link", "set", "eth0", "up", ns=ns)
            run("ip", "link", "set", peer, "up", ns=self.gw)
            for dev, where in (("eth0", ns), (peer, self.gw)):
                run("ethtool", "-K", dev, "tx", "off", ns=where, check=False)
        # static neighbours: the bench measures DNS, not ARP through the gateway
        run("ip", "neigh", "replace", RES_IP, "lladdr", RES_MAC, "dev", "eth0", ns=self.vm)
        run("ip", "neigh", "replace", VM_IP, "lladdr", VM_MAC, "dev", "eth0", ns=self.res)

    def spawn(self, ns, argv, out):
        p = subprocess.Popen(("ip", "netns", "exec", ns) + tuple(argv), stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for ns in (self.vm, self.gw, self.res, self.nft):
            run("ip", "netns", "del", ns, check=False)
        # the daemon's DPDK runtime directory (--file-prefix) and our scratch directory
        subprocess.run(["rm", "-rf", self.tmp, f"/run/dpdk/{self.prefix}"])


def daemon_config(lab):
    cfg = {
        "dataplane": {"eal": ["--no-huge", "-m", "512", "--no-pci", "--file-prefix",
                              lab.prefix], "vm_port": "net_af_packet0,iface=gvm",
                      "uplink_port": "net_af_packet1,iface=gup", "workers": 1,
                      "max_bindings": 65536},
        "slow_path": {"enabled": True, "nft_table": TABLE},
        "resolvers": [RES_IP],
        # every query is a new name under one wildcard: the name budget would refuse most
        "dns": {"min_ttl": 300, "max_ttl": 3600, "max_names_per_suffix": {"count": 0}},
        "metrics": f"127.0.0.1:{METRICS_PORT}",
        "control_socket": os.path.join(lab.tmp, "ng.sock"),
        "events": os.path.join(lab.tmp, "events.jsonl"),
        "policies": {"bench": {"allow": [f"*.{ZONE}"]}},
        "vms": [{"name": "agent1", "mac": VM_MAC, "ipv4": VM_IP, "policy": "bench"}],
    }
    path = os.path.join(lab.tmp, "namegate.json")
    with open(path, "w") as f:
        json.dump(cfg, f)               # JSON is YAML
    return path


def metrics(lab):
    out = run("curl", "-s", f"http://127.0.0.1:{METRICS_PORT}/metrics", ns=lab.gw).stdout
    return {k: float(v) for k, v in re.findall(r"^(\S+) (\S+)$", out, re.M)
            if not k.startswith("#")}


def wait_for(what, pred, timeout=30, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (v := pred()):
            return v
        time.sleep(step)
    raise SystemExit(f"timed out waiting for {what}")


def start_daemon(lab):
    log = open(os.path.join(lab.tmp, "namegate.log"), "w")
    p = lab.spawn(lab.gw, [NAMEGATE, "-c", daemon_config(lab)], log)
    wait_for("namegate ready", lambda: p.poll() is not None or "ready:" in
             open(log.name).read(), timeout=60)
    if p.poll() is not None:
        raise SystemExit("namegate exited:\n" + open(log.name).read()[-3000:])
    res = lab.spawn(lab.res, [PY, SELF, "--responder"], subprocess.PIPE)
    if res.stdout.readline().strip() != "ready":
        raise SystemExit("the responder did not start")
    return p


def in_vm(lab, mode, count, per, first):
    r = run(PY, SELF, "--client", mode, str(count), str(per), str(first), ns=lab.vm,
            timeout=300)
    return json.loads(r.stdout)


def nft_addrs(lab):
    r = run("nft", "-j", "list", "set", "bridge", TABLE, "agent1_v4addr", ns=lab.gw)
    out = set()
    for o in json.loads(r.stdout)["nftables"]:
        for e in o.get("set", {}).get("elem", []):
            v = e["elem"]["val"] if isinstance(e, dict) and "elem" in e else e
            out.add(v)
    return out


def hist_p99(before, after):
    """p99 over the samples between two scrapes of namegate_nft_bind_seconds: the upper
    bound of the bucket the 99th percentile falls in (None without the histogram)."""
    key = 'namegate_nft_bind_seconds_bucket{le="%s"}'
    les = sorted((float(m.group(1)), m.group(0)) for k in after
                 if (m := re.match(r'namegate_nft_bind_seconds_bucket\{le="([0-9.]+)"\}', k)))
    if not les:
        return None, 0
    n = after.get("namegate_nft_bind_seconds_count", 0) - \
        before.get("namegate_nft_bind_seconds_count", 0)
    for le, k in les:
        if after[k] - before.get(k, 0) >= 0.99 * n:
            return le, int(n)
    return float("inf"), int(n)


# --- the three parts ------------------------------------------------------------------------

def part_a(lab):
    """10 k elements: namegate's nft_bind() in its 512-element batches, against nft -f."""
    n = 10000
    els = [(f"10.1.{(k // 3) >> 8}.{(k // 3) & 255}", k % 3) for k in range(n)]
    path = os.path.join(lab.tmp, "burst.nft")
    with open(path, "w") as f:
        f.write(f"add element bridge drv vm1_v4addr {{ " + ", ".join(
            f"{a} timeout 300s" for a, p in els if p == 0) + " }\n")
        f.write(f"add element bridge drv vm1_v4 {{ " + ", ".join(
            f"{a} . {'tcp' if p == 1 else 'udp'} . 0 timeout 300s" for a, p in els if p)
            + " }\n")
    ours, theirs = [], []
    for _ in range(ROUNDS):
        cmds = (f"open drv vm1,{VM_MAC},0,{VM_IP},-\nbuild\nburst {n} 512\nquit\n")
        r = run(NFT_DRV, ns=lab.nft, input=cmds)
        m = re.search(r"RESULT nft_burst elements=\d+ batch=\d+ ms=([0-9.]+)", r.stdout)
        if not m:
            raise SystemExit(f"nft_drv: {r.stdout} {r.stderr}")
        ours.append(float(m.group(1)))
        run(NFT_DRV, ns=lab.nft, input=f"open drv vm1,{VM_MAC},0,{VM_IP},-\nbuild\nquit\n")
        t0 = time.monotonic()
        run("nft", "-f", path, ns=lab.nft)
        theirs.append((time.monotonic() - t0) * 1e3)
        got = run("nft", "list", "set", "bridge", "drv", "vm1_v4", ns=lab.nft).stdout
        if got.count(" . ") < 2 * n // 3 - 1:
            raise SystemExit("nft -f did not add the elements")
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"RESULT nft_burst10k_namegate_ms={a:.1f}")
    print(f"RESULT nft_burst10k_nft_f_ms={b:.1f}")
    print(f"RESULT nft_burst10k_vs_nft_f={a / b:.3f}")


def part_d(lab):
    """nft_bind() latency, 1 and 64 elements a batch, against nft_check() as the baseline."""
    cmds = (f"open drv vm1,{VM_MAC},0,{VM_IP},-\nbuild\nbench 1 2000\nbench 64 500\n"
            "benchcheck 2000\nquit\n")
    out = run(NFT_DRV, ns=lab.nft, input=cmds).stdout
    got = {}
    for m in re.finditer(r"RESULT (nft_bind batch=(\d+)|nft_check) .*?p50_us=(\d+) "
                         r"p99_us=(\d+)", out):
        got[f"bind{m.group(2)}" if m.group(2) else "check"] = (int(m.group(3)), int(m.group(4)))
    if set(got) != {"bind1", "bind64", "check"}:
        raise SystemExit(f"nft_drv printed no latencies: {out}")
    for k, (p50, p99) in sorted(got.items()):
        print(f"RESULT nft_{k}_p50_us={p50}")
        print(f"RESULT nft_{k}_p99_us={p99}")
    for k in ("bind1", "bind64"):
        print(f"RESULT nft_{k}_p99_vs_check={got[k][1] / max(got['check'][1], 1):.2f}")


def part_b(lab):
    """One answer (one address) a millisecond through the daemon."""
    count = int(STREAM_SECONDS * 1000)
    before = metrics(lab)
    r = in_vm(lab, "stream", count, 1, 0)
    wait_for("the stream's elements", lambda: metrics(lab).get(
        "namegate_nft_bind_seconds_count", 1e18) - before.get(
        "namegate_nft_bind_seconds_count", 0) >= 3 * r["answered"] or
        len(nft_addrs(lab) & set(r["addrs"])) == len(r["addrs"]), timeout=10)
    after = metrics(lab)
    p99, n = hist_p99(before, after)
    window = after.get('namegate_nft_bind_latency_seconds{quantile="0.99"}', 0)
    print(f"# stream: {r['asked']} asked, {r['answered']} answered in {r['seconds']:.2f} s")
    if p99 is None:     # a daemon without the histogram: its latest-1024 summary
        print(f"RESULT nft_p99_ms={window * 1e3:.3f}")
        print("# nft_p99_ms from the summary over the latest 1024 elements only")
    else:
        print(f"RESULT nft_p99_ms={p99 * 1e3:.3f}")
        print(f"# nft_p99_ms: bucket bound over all {n} samples of the stream")
    print("# histogram of the stream: " + " ".join(
        f"{m.group(1)}:{int(after[k] - before.get(k, 0))}" for k in after
        if (m := re.match(r'namegate_nft_bind_seconds_bucket\{le="(.*)"\}', k))))
    print(f"RESULT nft_p99_window_ms={window * 1e3:.3f}")
    print(f"RESULT nft_stream_answered={r['answered']}")


def part_c(lab):
    """More than 16 k bindings in one burst: each one the VM was given is in nft."""
    before = metrics(lab)
    r = in_vm(lab, "burst", BURST_ANSWERS, BURST_ADDRS, 100000)
    want = set(r["addrs"])

    def settled():
        have = nft_addrs(lab) & want
        settled.seen.append(len(have))
        return len(have) == len(want) or (len(settled.seen) > 20 and
                                          settled.seen[-1] == settled.seen[-20])
    settled.seen = []
    wait_for("the burst's elements", settled, timeout=60, step=0.1)
    lost = len(want - nft_addrs(lab))
    after = metrics(lab)

    def delta(k):
        return int(after.get(k, 0) - before.get(k, 0))
    refused_full = delta('namegate_drops_total{reason="bind_queue_full"}')
    refused_vm = delta('namegate_vm_blocked_total{vm="agent1",reason="vm_limit"}')
    print(f"# burst: {r['asked']} queries for {BURST_ANSWERS} answers of {BURST_ADDRS} "
          f"addresses, {r['answered']} answered in {r['seconds']:.2f} s")
    if len(want) <= 16384:
        raise SystemExit(f"the burst bound {len(want)} addresses, not more than 16 k: "
                         "it measured nothing")
    print(f"RESULT nft_burst_bindings={len(want)}")
    print(f"RESULT nft_burst_lost={lost}")
    print(f"RESULT nft_burst_refused={refused_full + refused_vm}")
    print(f"RESULT nft_burst_retries={r['asked'] - r['answered']}")
    print(f"RESULT nft_burst_seconds={r['seconds']:.2f}")
    print(f"RESULT nft_burst_events_dropped={delta('namegate_events_dropped_total')}")
    # refused answers were counted, and each was asked again (none got through unbound)
    return lost == 0 and r["answered"] == BURST_ANSWERS and \
        r["asked"] - r["answered"] >= refused_full + refused_vm


def main():
    if os.geteuid() != 0:
        print("bench_nft: needs root (network namespaces, nftables); skipped")
        return 77
    lab = Lab()
    ok = True
    try:
        if "a" in PARTS:
            part_a(lab)
        if "d" in PARTS:
            part_d(lab)
        sys.stdout.flush()
        start_daemon(lab)
        if "b" in PARTS:
            part_b(lab)
        sys.stdout.flush()
        if "c" in PARTS:
            ok = part_c(lab)
    finally:
        lab.close()
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--responder":
        responder()
    elif len(sys.argv) > 1 and sys.argv[1] == "--client":
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
