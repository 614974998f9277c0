"""The etcd client (control/fleet/ctl_etcd) against a real etcd 3.4 with auth on, driven by
etcd_probe and checked against etcdctl: what one writes the other reads. etcd runs on
loopback ports picked for the run, in a temporary data directory, and is killed and removed
even when a test fails. Timings are printed as RESULT lines, never asserted.
"""
import os
import queue
import signal
import subprocess
import threading
import time
import uuid

import pytest

from etcd_lab import GATEWAY, OPERATOR, PREFIX, TOKEN_TTL, Etcd, free_port

PROBE = os.environ.get("ETCD_PROBE_BIN", "build/tests/fleet/etcd_probe")


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"


def fields(line):
    """"a=1 b=x" -> {"a": "1", "b": "x"}; value= and err= run to the end of the line."""
    out = {}
    rest = line
    while rest:
        word, _, after = rest.partition(" ")
        key, eq, val = word.partition("=")
        if eq and key in ("value", "err"):
            out[key] = rest.partition("=")[2]
            break
        out[key] = val if eq else True
        rest = after
    return out


@pytest.fixture(scope="module")
def etcd():
    e = Etcd()
    try:
        e.start()
        e.setup_auth()
        yield e
    finally:
        e.remove()


def probe(etcd, *args, user=GATEWAY, endpoints=None, timeout=30, opts=()):
    auth = ["-u", ":".join(user)] if user else []
    r = subprocess.run([PROBE, "-e", endpoints or etcd.client, *auth, *opts, *args],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.splitlines()
    return r.returncode, lines


def ok(etcd, *args, **kw):
    rc, lines = probe(etcd, *args, **kw)
    assert rc == 0, lines
    return lines


def test_put_get_range_delete(etcd):
    g = PREFIX + "/grants/"
    put = fields(ok(etcd, "put", g + "a", "v1", user=OPERATOR)[0])
    assert etcd.ctl("get", g + "a", "--print-value-only").strip() == "v1"
    rev = etcd.ctl("get", g + "a", "-w", "fields")
    assert f'"ModRevision" : {put["rev"]}' in rev

    etcd.ctl("put", g + "b", "v2")
    etcd.ctl("put", PREFIX + "/grants0", "outside")  # the byte after '/': past range_end
    got = fields(ok(etcd, "get", g + "b")[0])
    assert got["value"] == "v2" and got["len"] == "2"
    assert fields(probe(etcd, "get", g + "none")[1][0])["rc"] == "ENOENT"

    etcd.ctl("put", g + "c", "v3")
    lines = ok(etcd, "range", g, opts=("-p", "1"))          # a page a key: three pages
    head = fields(lines[0])
    assert lines[1:] == [g + "a=v1", g + "b=v2", g + "c=v3"]
    assert int(head["rev"]) == etcd.revision()

    d = fields(ok(etcd, "del", g + "a", user=OPERATOR)[0])
    assert d["deleted"] == "1" and int(d["rev"]) == etcd.revision()
    assert etcd.ctl("get", g + "a").strip() == ""
    d = fields(ok(etcd, "del", g, "prefix", user=OPERATOR)[0])
    assert d["deleted"] == "2"
    assert etcd.ctl("get", PREFIX + "/grants0", "--print-value-only").strip() == "outside"
    puts = fields(ok(etcd, "puts", PREFIX + "/grants/p", "101", user=OPERATOR)[0])
    assert etcd.ctl("get", PREFIX + "/grants/p", "--print-value-only").strip() == "101"
    print(f"RESULT etcd_put_ms={put['ms']}")
    print(f"RESULT etcd_put_kept_alive_p50_ms={int(puts['p50_us']) / 1000:.2f}")
    print(f"RESULT etcd_get_ms={got['ms']}")
    print(f"RESULT etcd_range_ms={head['ms']}")


def test_gateway_cannot_write_grants(etcd):
    rc, lines = probe(etcd, "put", PREFIX + "/grants/forged", "x")
    f = fields(lines[0])
    assert rc == 1 and f["rc"] == "EACCES", lines
    assert "permission denied" in f["err"], f["err"]
    assert etcd.ctl("get", PREFIX + "/grants/forged").strip() == ""
    ok(etcd, "put", PREFIX + "/status/gw1", "alive")
    assert etcd.ctl("get", PREFIX + "/status/gw1", "--print-value-only").strip() == "alive"
    rc, lines = probe(etcd, "put", PREFIX + "/status/x", "x", user=(GATEWAY[0], "wrong"))
    assert rc == 1 and fields(lines[0])["rc"] == "EACCES", lines


def test_leases(etcd):
    key = PREFIX + "/pending/lease"
    f = fields(ok(etcd, "expiry", key, "2", timeout=60)[0])
    assert "expired_ms" in f
    assert etcd.ctl("get", key).strip() == ""
    print(f"RESULT etcd_lease_2s_expired_ms={f['expired_ms']}")

    lease = fields(ok(etcd, "grant", "30")[0])["lease"]
    ok(etcd, "put", key, "held", lease)
    assert int(etcd.ctl("get", key, "-w", "fields").split('"Lease" : ')[1].split()[0]) == \
        int(lease)
    assert fields(ok(etcd, "keepalive", lease)[0])["ttl"] == "30"
    ok(etcd, "revoke", lease)
    assert etcd.ctl("get", key).strip() == ""
    assert fields(probe(etcd, "keepalive", lease)[1][0])["rc"] == "ENOENT"


def test_reauth_after_token_expiry(etcd):
    f = fields(ok(etcd, "reauth", PREFIX + "/status/reauth", str(TOKEN_TTL + 2))[0])
    assert f["auths"] == "2"
    assert etcd.ctl("get", PREFIX + "/status/reauth", "--print-value-only").strip() == "2"


class Watch:
    """etcd_probe watch in the background, its lines read by a thread as they come."""

    def __init__(self, etcd, prefix, rev, count, *extra, user=GATEWAY, endpoints=None):
        auth = ["-u", ":".join(user)] if user else []
        self.p = subprocess.Popen([PROBE, "-e", endpoints or etcd.client, *auth, "watch",
                                   prefix, str(rev), str(count), *extra],
                                  stdout=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put((line.rstrip("\n"), time.monotonic()))
        self.q.put((None, time.monotonic()))

    def line(self, timeout=20):
        try:
            line, t = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("watch printed nothing") from None
        assert line is not None, "watch ended"
        return line, t

    def until(self, word, timeout=20):
        """The next line starting with word, skipping others, within timeout in all."""
        end = time.monotonic() + timeout
        while True:
            line, t = self.line(max(0.1, end - time.monotonic()))
            if line.startswith(word):
                return line, t

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        self.p.stdout.close()


def test_watch_in_order_across_chunks(etcd, tmp_path):
    base = PREFIX + "/status/w/"
    big = os.urandom(300 * 1024)            # many libcurl chunks in one response
    (tmp_path / "big").write_bytes(big)
    dead = f"http://127.0.0.1:{free_port()}"       # refused: the watch goes on to the next
    w = Watch(etcd, base, etcd.revision() + 1, 4, endpoints=f"{dead},{etcd.client}")
    try:
        w.until("created")
        lat = []
        expect = [("PUT", base + "1", b"one"), ("PUT", base + "2", big),
                  ("PUT", base + "3", b"three"), ("DELETE", base + "1", b"")]
        seen = []
        for typ, key, val in expect:
            if typ == "PUT":
                etcd.ctl("put", key, stdin=val)
            else:
                etcd.ctl("del", key)
            done = time.monotonic()
            line, t = w.until("ev")
            lat.append((t - done) * 1000)
            seen.append(line)
        revs = []
        for line, (typ, key, val) in zip(seen, expect):
            parts = line.split()
            f = fields(" ".join(parts[3:]))
            assert parts[1:3] == [typ, key], line
            assert f["len"] == str(len(val)) and f["fnv"] == fnv1a(val), line
            revs.append(int(f["rev"]))
        assert revs == sorted(revs) and len(set(revs)) == 4
        assert w.until("done")[0] == f"done next_rev={revs[-1] + 1}"
        print(f"RESULT etcd_watch_event_ms={max(lat):.1f}")
    finally:
        w.close()


def test_watch_compacted_lists_again(etcd):
    base = PREFIX + "/status/c/"
    etcd.ctl("put", base + "old", "x")
    start = etcd.revision()
    etcd.ctl("put", base + "old", "y")
    etcd.ctl("compaction", str(etcd.revision()))
    w = Watch(etcd, base, start, 1)
    try:
        line, _ = w.until("compacted")
        assert "compacted" in line
        relist = fields(w.until("relist")[0])
        assert relist["n"] == "1" and int(relist["rev"]) == etcd.revision()
        etcd.ctl("put", base + "new", "z")
        line, _ = w.until("ev")
        assert line.split()[1:3] == ["PUT", base + "new"]
    finally:
        w.close()


def test_watch_cancel(etcd):
    w = Watch(etcd, PREFIX + "/status/none/", etcd.revision() + 1, 1000, "300")
    try:
        w.until("created")
        f = fields(w.until("cancelled")[0])
        assert w.p.wait(10) == 0
        print(f"RESULT etcd_watch_cancel_ms={f['after_cancel_ms']}")
    finally:
        w.close()


def test_unreachable_fails_within_timeout(etcd):
    dead = f"http://127.0.0.1:{free_port()}"
    f = fields(ok(etcd, "put", PREFIX + "/status/fo", "v", endpoints=f"{dead},{etcd.client}")[0])
    assert etcd.ctl("get", PREFIX + "/status/fo", "--print-value-only").strip() == "v"
    print(f"RESULT etcd_failover_put_ms={f['ms']}")

    # a member that takes the connection and never answers, as one without quorum
    etcd.proc.send_signal(signal.SIGSTOP)
    try:
        rc, lines = probe(etcd, "put", PREFIX + "/status/hung", "v")
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
    f = fields(lines[0])
    assert rc == 1 and f["rc"] == "ETIMEDOUT", lines
    print(f"RESULT etcd_timeout_ms={f['ms']}")

    etcd.stop()
    try:
        rc, lines = probe(etcd, "put", PREFIX + "/status/down", "v")
    finally:
        etcd.start()
    f = fields(lines[0])
    assert rc == 1 and f["rc"] == "ECONNREFUSED", lines
    print(f"RESULT etcd_refused_ms={f['ms']}")


def test_watch_resumes_after_restart(etcd):
    base = PREFIX + "/status/r/"
    w = Watch(etcd, base, etcd.revision() + 1, 4)
    try:
        w.until("created")
        etcd.ctl("put", base + "1", "a")
        etcd.ctl("put", base + "2", "b")
        got = [w.until("ev")[0], w.until("ev")[0]]
        etcd.stop()
        down = fields(w.until("down")[0])
        etcd.start()
        # put while the watch waits to retry: these must come from its resumed revision
        etcd.ctl("put", base + "3", "c")
        etcd.ctl("put", base + "4", "d")
        got += [w.until("ev", 30)[0], w.until("ev", 30)[0]]
        keys = [line.split()[2] for line in got]
        revs = [int(fields(line.split()[3])["rev"]) for line in got]
        assert keys == [base + str(i) for i in range(1, 5)]
        assert revs == list(range(revs[0], revs[0] + 4))
        assert int(down["next_rev"]) == revs[1] + 1
        assert w.until("done")[0] == f"done next_rev={revs[-1] + 1}"
    finally:
        w.close()


def test_member_without_quorum():
    """Three members, two frozen: the third, cut off from quorum, must fail a put at its
    timeout, refuse the next at once when it knows it has no leader, and end the watch
    (hasleader) instead of leaving it silent. etcd's default election timeout (1 s): the
    first put starts well before the member gives up on its leader."""
    members = [Etcd(f"m{i}") for i in range(3)]
    cluster = ",".join(f"{m.name}={m.peer}" for m in members)
    token = "ng-" + uuid.uuid4().hex[:8]
    w = None
    try:
        for m in members:
            m.launch(cluster, ["--initial-cluster-state", "new", "--initial-cluster-token",
                               token, "--heartbeat-interval", "100",
                               "--election-timeout", "1000"])
        for m in members:
            m.wait_ready()
        a = members[0]
        w = Watch(a, "/q/", 1, 1000, user=None)
        w.until("created")
        a.ctl("put", "/q/1", "x", user=None)
        assert w.until("ev")[0].split()[1:3] == ["PUT", "/q/1"]
        for m in members[1:]:
            m.proc.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        rc, lines = probe(a, "put", "/q/2", "y", user=None)
        f = fields(lines[0])
        assert rc == 1 and f["rc"] == "ETIMEDOUT", lines
        down, t = w.until("down", 60)
        assert fields(down)["rc"] == "ENOTCONN" and "no leader" in down, down
        # now that it knows it has no leader, it refuses at once (hasleader on requests too)
        rc, lines = probe(a, "put", "/q/3", "z", user=None)
        f2 = fields(lines[0])
        assert rc == 1 and f2["rc"] == "ENOTCONN" and "no leader" in f2["err"], lines
        print(f"RESULT etcd_noquorum_put_ms={f['ms']}")
        print(f"RESULT etcd_noleader_put_ms={f2['ms']}")
        print(f"RESULT etcd_watch_noleader_ms={(t - frozen) * 1000:.0f}")
    finally:
        if w is not None:
            w.close()
        for m in members:
            m.remove()
