"""namegatectl's query tools on synthetic logs: events and flows through every filter, --last
and --since (both forms) over the log and its rotated PATH.1, malformed lines skipped and
counted, --follow after the history and across a rotation; bindings across VMs; check
--json; where the socket is found; the bash completion. Run as test_namegatectl.py is.
"""
import contextlib
import datetime
import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from test_namegatectl import CTL, FAKE, HERE, Daemon

pytestmark = pytest.mark.skipif(not (os.access(CTL, os.X_OK) and os.access(FAKE, os.X_OK)),
                                reason="NAMEGATECTL_BIN and FAKE_DAEMON_BIN must be set")

COMPLETION = os.path.join(os.path.dirname(os.path.dirname(HERE)), "control", "cli",
                          "namegatectl.bash")
SKIPPED = 'namegatectl: {}: skipped {} malformed line{} (not a JSON object with an RFC 3339 "ts")\n'


def line(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def write(path, lines):
    with open(path, "w") as f:
        f.writelines(lines)


def run(*args, env=None):
    p = subprocess.run([CTL, *args], capture_output=True, text=True, timeout=30, env=env)
    return p.returncode, p.stdout, p.stderr


def ago(**kw):
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(**kw)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


EV = [line(e) for e in [
    {"ts": "2026-12-05T08:00:00.000Z", "vm": "vm1", "event": "block", "reason": "sni_denied",
     "proto": "tcp", "dst": "203.0.113.5:443", "name": "evil.example.com"},
    {"ts": "2026-12-05T08:05:00.000Z", "vm": "vm2", "event": "block", "reason": "no_binding",
     "name": "Pypi.Org."},
    {"ts": "2026-12-05T08:10:00.000Z", "event": "policy", "generation": 2, "vms": 2},
    {"ts": "2026-12-05T08:15:00.000Z", "vm": "vm1", "event": "block", "reason": "dns_denied",
     "name": "example.com"},
    {"ts": "2026-12-05T08:20:00.000Z", "vm": "vm1", "event": "grant", "id": 3,
     "host": "pypi.org", "until": "2026-12-05T09:20:00Z", "reason": "pip needs it"},
    {"ts": "2026-12-05T08:25:00.000Z", "vm": "vm1", "event": "approval_pending", "id": 1,
     "name": "a.b.example.com", "type": "A"},
]]


def logfile(tmp_path, name, lines):
    path = str(tmp_path / name)
    write(path, lines)
    return path


@pytest.fixture
def evlog(tmp_path):
    return logfile(tmp_path, "events.jsonl", EV)


@pytest.mark.parametrize("args,want", [
    ((), [0, 1, 2, 3, 4, 5]),
    (("--vm", "vm1"), [0, 3, 4, 5]),
    (("--reason", "sni_denied"), [0]),
    (("--vm", "vm1", "--reason", "dns_denied"), [3]),
    (("--vm", "vm2", "--reason", "dns_denied"), []),
    # a wildcard matches names below, never the name itself
    (("--name", "*.example.com"), [0, 5]),
    (("--name", "*.b.example.com"), [5]),
    (("--name", "example.com"), [3]),
    # a plain name: that name, any case, a trailing dot either side
    (("--name", "PYPI.org"), [1]),
    (("--name", "pypi.org."), [1]),
    (("--since", "2026-12-05T08:10:00Z"), [2, 3, 4, 5]),
    (("--since", "2026-12-05T09:10:00+01:00"), [2, 3, 4, 5]),
    (("--since", "2026-12-05T08:09:59.999Z"), [2, 3, 4, 5]),
    (("--since", "2026-12-05t08:10:00.001z"), [3, 4, 5]),
    (("--last", "2"), [4, 5]),
    (("--last", "1", "--vm", "vm2"), [1]),
    (("--last", "2", "--name", "*.example.com"), [0, 5]),
    (("--last", "100"), [0, 1, 2, 3, 4, 5]),
    (("--since", "2026-12-05T08:05:00Z", "--last", "2", "--reason", "no_binding"), [1]),
])
def test_events_filters(evlog, args, want):
    """Each filter, and several at once: the lines as they are in the file, in its order."""
    rc, out, err = run("events", "-e", evlog, *args)
    assert (rc, err) == (0, "")
    assert out == "".join(EV[i] for i in want)


def test_events_since_duration(tmp_path):
    path = str(tmp_path / "events.jsonl")
    lines = [line({"ts": ago(hours=3), "vm": "vm1", "event": "block", "reason": "quic"}),
             line({"ts": ago(minutes=90), "vm": "vm1", "event": "block", "reason": "quic"}),
             line({"ts": ago(minutes=20), "vm": "vm1", "event": "block", "reason": "quic"}),
             line({"ts": ago(seconds=1), "vm": "vm1", "event": "block", "reason": "quic"})]
    write(path, lines)
    for since, want in (("2h", lines[1:]), ("1h", lines[2:]), ("10m", lines[3:]),
                        ("1d", lines), ("3600", lines[2:]), ("1h30m30s", lines[1:])):
        rc, out, err = run("events", "-e", path, "--since", since)
        assert (rc, out, err) == (0, "".join(want), ""), since


def test_events_bad_filters(evlog):
    for args, why in [
            (("--last", "0"), '--last: "0" is not a count from 1 to 1000000'),
            (("--last", "-3"), '--last: "-3" is not a count'),
            (("--last", "2x"), '--last: "2x" is not a count'),
            (("--since", "2026-13-01T00:00:00Z"), "--since: bad time"),
            (("--since", "2026-02-29T00:00:00Z"), "--since: bad time"),
            (("--since", "2026-12-05T08:00:00"), "--since: bad time"),
            (("--since", "yesterday"), "bad duration"),
            (("--since", "31d"), "longer than 30d"),
            (("--name", "1.2.3.4"), "is not a name or *.name pattern"),
            (("--name", "pypi.org:443"), "is not a name or *.name pattern"),
            (("--name", "bad name!"), "--name: bad host pattern")]:
        rc, out, err = run("events", "-e", evlog, *args)
        assert rc == 2 and out == "" and err.startswith("namegatectl: events: ") and \
            why in err, (args, err)
    for args in (("--json",), ("--vm",), ("--flow-log", "x"), ("--for", "1h")):
        rc, out, err = run("events", "-e", evlog, *args)
        assert rc == 2 and out == "" and "usage: namegatectl events" in err, args


def test_events_rotated(tmp_path):
    """PATH.1 (logrotate's delaycompress) is read when --last or --since reach past PATH."""
    path = str(tmp_path / "events.jsonl")
    old = [line({"ts": f"2026-12-04T2{i}:00:00.000Z", "vm": "vm1", "event": "block",
                 "reason": "no_binding"}) for i in range(3)]
    new = [line({"ts": f"2026-12-05T0{i}:00:00.000Z", "vm": "vm1", "event": "block",
                 "reason": "no_binding"}) for i in range(2)]
    write(path, new)
    # Where PATH.1 is a directory, reading it fails: so these show it was left alone.
    os.mkdir(path + ".1")
    assert run("events", "-e", path) == (0, "".join(new), "")
    assert run("events", "-e", path, "--last", "2") == (0, "".join(new), "")
    assert run("events", "-e", path, "--since", "2026-12-05T00:00:00Z") == \
        (0, "".join(new), "")
    rc, out, err = run("events", "-e", path, "--last", "3")
    assert rc == 2 and "Is a directory" in err
    rc, out, err = run("events", "-e", path, "--since", "2026-12-04T23:00:00Z")
    assert rc == 2 and "Is a directory" in err
    os.rmdir(path + ".1")
    write(path + ".1", old)
    assert run("events", "-e", path) == (0, "".join(new), "")
    assert run("events", "-e", path, "--last", "3") == (0, "".join(old[2:] + new), "")
    assert run("events", "-e", path, "--last", "9") == (0, "".join(old + new), "")
    assert run("events", "-e", path, "--since", "2026-12-04T21:00:00Z") == \
        (0, "".join(old[1:] + new), "")
    # without PATH.1 there is nothing older: no error
    os.unlink(path + ".1")
    assert run("events", "-e", path, "--last", "3") == (0, "".join(new), "")


def test_events_malformed_lines(tmp_path):
    """Torn and foreign lines are skipped and counted on stderr; the rest still shows."""
    path = str(tmp_path / "events.jsonl")
    good = [line({"ts": "2026-12-05T08:00:00.000Z", "vm": "vm1", "event": "block"}),
            line({"ts": "2026-12-05T08:00:01.000Z", "vm": "vm2", "event": "block"})]
    with open(path, "wb") as f:
        f.write(good[0].encode())
        f.write(b"not json\n")
        f.write(b"[1,2]\n")
        f.write(b'{"vm":"vm1","event":"block"}\n')                 # no ts
        f.write(b'{"ts":"yesterday","vm":"vm1"}\n')                # not RFC 3339
        f.write(b'{"ts":"2026-12-05T08:00:00Z"} trailing\n')
        f.write(b'\x00\xff\xfe{"ts":"2026-12-05T08:00:00Z"}\n')   # a NUL inside
        f.write(b'{"ts":"2026-12-05T08:00:00.5Z","vm":"vm1","ev')  # torn: glued to the next
        f.write(b'{"ts":"2026-12-05T08:00:02.000Z","vm":"vm1","event":"lost"}\n')
        f.write(b"\n")                                             # blank: not counted
        f.write(good[1].encode())
        f.write(b'{"ts":"2026-12-05T08:00:03.000Z","vm":"vm1"')   # being written: no newline
    rc, out, err = run("events", "-e", path)
    assert (rc, out, err) == (0, "".join(good), SKIPPED.format("events", 7, "s"))
    rc, out, err = run("events", "-e", path, "--last", "1", "--vm", "vm1")
    assert (rc, out, err) == (0, good[0], SKIPPED.format("events", 7, "s"))
    write(path, [good[0], "}\n"])
    assert run("events", "-e", path) == (0, good[0], SKIPPED.format("events", 1, ""))


def readline(p):
    out = p.stdout.readline()
    assert out != "", p.stderr.read()
    return out


@contextlib.contextmanager
def follower(*args):
    """namegatectl ARGS running, killed at the end if a failed check left it so."""
    p = subprocess.Popen([CTL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def stop(p):
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=10)
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    return rc, err


def test_events_follow_filtered(tmp_path):
    """--last N then what comes, filtered, across a rotation; ^C says what was skipped."""
    path = str(tmp_path / "events.jsonl")
    write(path, EV)
    with follower("events", "-e", path, "-f", "--last", "1", "--vm", "vm1", "--reason",
                  "dns_denied") as p:
        assert readline(p) == EV[3]
        later = [line({"ts": "2026-12-05T09:00:00.000Z", "vm": "vm2", "event": "block",
                       "reason": "dns_denied"}),
                 line({"ts": "2026-12-05T09:00:01.000Z", "vm": "vm1", "event": "block",
                       "reason": "dns_denied"}),
                 line({"ts": "2026-12-05T09:00:02.000Z", "vm": "vm1", "event": "block",
                       "reason": "dns_denied"})]
        with open(path, "a") as f:
            f.write(later[0] + "garbage\n" + later[1])
        assert readline(p) == later[1]      # vm2's was passed over
        os.rename(path, path + ".1")
        write(path, [later[2]])
        assert readline(p) == later[2]      # the new file, from its start
        rc, err = stop(p)
        assert (rc, err) == (0, SKIPPED.format("events", 1, ""))


FL = [line(f) for f in [
    {"ts": "2026-12-05T08:01:02.345Z", "vm": "vm1", "proto": "tcp", "src": "10.77.0.11:40312",
     "dst": "203.0.113.10:443", "name": "pypi.org", "sni": "pypi.org", "verdict": "allowed",
     "end": "fin", "start": "2026-12-05T08:01:01.900Z", "stop": "2026-12-05T08:01:02.340Z",
     "bytes_out": 1834, "bytes_in": 20931, "packets_out": 12, "packets_in": 18,
     "budgets": ["uploads"], "final": True},
    {"ts": "2026-12-05T08:02:00.000Z", "vm": "vm1", "proto": "tcp", "src": "10.77.0.11:40400",
     "dst": "198.51.100.9:443", "name": None, "sni": "evil.example.com", "verdict": "blocked",
     "reason": "sni_denied", "end": "blocked", "start": "2026-12-05T08:02:00.000Z",
     "stop": "2026-12-05T08:02:00.000Z", "bytes_out": 517, "bytes_in": 0, "packets_out": 1,
     "packets_in": 0, "budgets": [], "final": True},
    {"ts": "2026-12-05T08:03:00.000Z", "vm": "build-runner-long", "proto": "tcp",
     "src": "10.77.0.12:50000", "dst": "151.101.0.223:80", "name": "files.pythonhosted.org",
     "host": "Files.PythonHosted.org", "verdict": "allowed", "end": "cut:budget_exhausted",
     "start": "2026-12-05T08:02:30.000Z", "stop": "2026-12-05T08:03:00.000Z",
     "bytes_out": 41943040, "bytes_in": 880, "packets_out": 30000, "packets_in": 900,
     "budgets": ["uploads"], "final": True},
    {"ts": "2026-12-05T08:04:00.000Z", "vm": "vm1", "proto": "udp", "src": "[fd77::11]:5353",
     "dst": "[2001:db8::53]:853", "name": None, "verdict": "allowed", "end": "idle",
     "start": "2026-12-05T08:03:00.000Z", "stop": "2026-12-05T08:04:00.000Z",
     "bytes_out": 10, "bytes_in": 20, "packets_out": 1, "packets_in": 1, "budgets": [],
     "final": False},
    {"ts": "2026-12-05T08:05:00.000Z", "vm": "build-runner-long", "proto": "tcp",
     "src": "10.77.0.12:50002", "dst": "185.199.108.133:443",
     "name": "raw.githubusercontent.com", "sni": "raw.githubusercontent.com",
     "verdict": "would_block", "end": "rst", "start": "2026-12-05T08:04:59.000Z",
     "stop": "2026-12-05T08:05:00.000Z", "bytes_out": 0, "bytes_in": 0, "packets_out": 2,
     "packets_in": 1, "budgets": [], "final": True},
]]

ROWS = [
    ["2026-12-05T08:01:02.345Z", "vm1", "tcp", "10.77.0.11:40312", "->", "203.0.113.10:443",
     "pypi.org", "allowed/fin", "1834/20931"],
    ["2026-12-05T08:02:00.000Z", "vm1", "tcp", "10.77.0.11:40400", "->", "198.51.100.9:443",
     "evil.example.com", "blocked/sni_denied", "517/0"],
    ["2026-12-05T08:03:00.000Z", "build-runner-long", "tcp", "10.77.0.12:50000", "->",
     "151.101.0.223:80", "files.pythonhosted.org", "allowed/cut:budget_exhausted",
     "41943040/880"],
    ["2026-12-05T08:04:00.000Z", "vm1", "udp", "[fd77::11]:5353", "->", "[2001:db8::53]:853",
     "-", "allowed/open", "10/20"],
    ["2026-12-05T08:05:00.000Z", "build-runner-long", "tcp", "10.77.0.12:50002", "->",
     "185.199.108.133:443", "raw.githubusercontent.com", "would_block/rst", "0/0"],
]
HEAD = ["TIME", "VM", "PROTO", "SOURCE", "DESTINATION", "NAME", "VERDICT", "BYTES(out/in)"]


def flow_table(out):
    """The rows of flows' table, checked for alignment: every column starts (or, SOURCE,
    ends) at one place, the header over its column, no trailing blanks."""
    lines = out.splitlines()
    spans = [[(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", ln)]
             for ln in lines]
    assert [t for _, _, t in spans[0]] == HEAD, lines[0]
    head = spans[0][:4] + [None] + spans[0][4:]     # the arrow's column has no title
    for row in spans[1:]:
        assert len(row) == 9, row
        for j in range(9):
            edge = 1 if j == 3 else 0
            assert row[j][edge] == spans[1][j][edge], (j, lines)
            if head[j] is not None:
                assert head[j][edge] == row[j][edge], (j, lines)
    assert all(ln == ln.rstrip() for ln in lines)
    return [[t for _, _, t in row] for row in spans[1:]]


@pytest.fixture
def flowlog(tmp_path):
    return logfile(tmp_path, "flows.jsonl", FL)


@pytest.mark.parametrize("args,want", [
    ((), [0, 1, 2, 3, 4]),
    (("--vm", "build-runner-long"), [2, 4]),
    (("--reason", "sni_denied"), [1]),                  # a blocked attempt's reason
    (("--reason", "budget_exhausted"), [2]),            # a flow cut for it
    (("--name", "evil.example.com"), [1]),              # no name: its SNI
    (("--name", "files.pythonhosted.org"), [2]),
    (("--name", "*.githubusercontent.com"), [4]),
    (("--name", "githubusercontent.com"), []),
    (("--name", "*.org"), [0, 2]),
    (("--vm", "vm1", "--since", "2026-12-05T08:02:00Z"), [1, 3]),
    (("--last", "2"), [3, 4]),
    (("--last", "1", "--vm", "vm1"), [3]),
])
def test_flows_filters(flowlog, args, want):
    rc, out, err = run("flows", "--flow-log", flowlog, *args)
    assert (rc, err) == (0, "")
    assert (flow_table(out) if out else []) == [ROWS[i] for i in want]
    rc, out, err = run("flows", "--flow-log", flowlog, "--json", *args)
    assert (rc, out, err) == (0, "".join(FL[i] for i in want), "")


def test_flows_path_from_the_daemon(tmp_path, flowlog):
    os.mkdir(tmp_path / "with")
    os.mkdir(tmp_path / "without")
    d = Daemon(tmp_path / "with", flow_log=flowlog)
    try:
        rc, out, err = d.ctl("flows", "--last", "1", "--json")
        assert (rc, out, err) == (0, FL[4], "")
        # flows VM is still the daemon's live view of the VM's flows
        rc, out, _ = d.ctl("flows", "agent1")
        assert rc == 0 and out.split()[:6] == ["PROTO", "PEER", "VM_PORT", "STATE", "AGE(s)",
                                              "VERDICT"]
        rc, out, err = d.ctl("flows", "agent1", "--since", "1h")
        assert rc == 2 and out == "" and err.startswith("usage: namegatectl flows VM")
    finally:
        d.stop()
    d = Daemon(tmp_path / "without")
    try:
        rc, out, err = d.ctl("flows")
        assert (rc, out) == (2, "")
        assert err == ('namegatectl: flows: no flow log is configured (no "flow_log" in '
                       "namegate's configuration; or give --flow-log PATH)\n")
    finally:
        d.stop()


def test_flows_follow_and_malformed(flowlog):
    with follower("flows", "--flow-log", flowlog, "--follow", "--vm", "vm1", "--last",
                  "1") as p:
        header = readline(p)
        first = readline(p)
        assert header.split() == HEAD and first.split() == ROWS[3]
        # the flow's final record, after another VM's and a torn line
        last = json.loads(FL[3])
        last.update(ts="2026-12-05T08:09:00.000Z", final=True, bytes_out=11, bytes_in=21)
        with open(flowlog, "a") as f:
            f.write(FL[2] + '{"ts":"2026-12-05T08:0\n' + line(last))
        nxt = readline(p)
        assert nxt.split() == ["2026-12-05T08:09:00.000Z"] + ROWS[3][1:7] + ["allowed/idle",
                                                                               "11/21"]
        # the live line lines up under the history's columns
        assert [m.start() for m in re.finditer(r"\S+", nxt)] == \
            [m.start() for m in re.finditer(r"\S+", first)]
        rc, err = stop(p)
        assert (rc, err) == (0, SKIPPED.format("flows", 1, ""))


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


def test_bindings_every_vm(daemon):
    rc, out, err = daemon.ctl("bindings")
    assert (rc, err) == (0, "")
    assert [ln.split() for ln in out.splitlines()] == [
        ["VM", "NAME", "ADDRESS", "TTL(s)", "PORTS"],
        ["agent1", "files.pythonhosted.org", "151.101.0.223", "290", "any"],
        ["agent1", "pypi.org", "151.101.64.223", "3599", "443,80"],
        ["agent1", "pypi.org", "2a04:4e42::223", "3599", "-"],
        ["build-runner-long", "Upload.PyPI.org", "151.101.0.224", "60", "-"]]
    rc, out, _ = daemon.ctl("bindings", "--name", "*.pypi.org")
    assert [ln.split() for ln in out.splitlines()] == [
        ["VM", "NAME", "ADDRESS", "TTL(s)", "PORTS"],
        ["build-runner-long", "Upload.PyPI.org", "151.101.0.224", "60", "-"]]
    rc, out, _ = daemon.ctl("bindings", "--name", "PyPI.org", "--json")
    assert rc == 0 and json.loads(out) == {"bindings": [
        {"name": "pypi.org", "addr": "151.101.64.223", "ttl": 3599, "ports": [443, 80],
         "vm": "agent1"},
        {"name": "pypi.org", "addr": "2a04:4e42::223", "ttl": 3599, "vm": "agent1"}]}
    rc, out, _ = daemon.ctl("bindings", "agent1", "--name", "*.pythonhosted.org")
    assert [ln.split()[0] for ln in out.splitlines()] == ["NAME", "files.pythonhosted.org"]
    rc, out, _ = daemon.ctl("bindings", "--name", "*.org")
    assert len(out.splitlines()) == 5
    assert daemon.ctl("bindings", "--name", "nothing.test") == (0, "no bindings matching the "
                                                                "name\n", "")
    for args in (("--vm", "agent1"), ("--since", "1h"), ("--last", "1")):
        rc, out, err = daemon.ctl("bindings", *args)
        assert rc == 2 and err.startswith("usage: namegatectl bindings"), args


@pytest.mark.parametrize("vm,host,rc,want", [
    ("vm1", "pypi.org:443", 0, {"verdict": "allow", "reason": "allow_pattern", "rule": {
        "key": "policies.dev.allow", "index": 0, "pattern": "pypi.org", "line": 5}}),
    ("vm1", "github.com:22", 0, {"verdict": "allow", "reason": "allow_pattern", "rule": {
        "key": "policies.dev.allow", "index": 3, "pattern": "github.com:22", "line": 8}}),
    ("vm1", "upload.pypi.org:443", 1, {"verdict": "block", "reason": "deny_pattern", "rule": {
        "key": "policies.dev.deny", "index": 0, "pattern": "upload.pypi.org", "line": 11}}),
    ("vm1", "example.com", 1, {"verdict": "block", "reason": "default_deny", "rule": None,
                               "policy": "dev"}),
    ("vm2", "pypi.org:443", 1, {"verdict": "block", "reason": "default_deny", "rule": None,
                                "policy": "offline", "audit": True}),
    ("vm3", "evil.npmjs.org:443", 1, {"verdict": "block", "reason": "deny_pattern", "rule": {
        "policy": "from-sandbox", "import": True, "key": "sandbox.network.deniedDomains",
        "index": 0, "pattern": "evil.npmjs.org", "line": 13}}),
])
def test_check_json(daemon, vm, host, rc, want):
    """Online and offline agree; the verdict, the rule and the reason, and the line."""
    online = daemon.ctl("check", "--json", vm, host)
    offline = run("check", "-c", daemon.config, vm, host, "--json")
    assert online == offline and online[0] == rc and online[2] == ""
    doc = json.loads(online[1])
    text = run("check", "-c", daemon.config, vm, host)[1]
    assert doc["line"] + "\n" == text and doc["vm"] == vm and doc["host"] == host
    assert doc["audit"] == want.pop("audit", False)
    rule = want.pop("rule")
    for k, v in want.items():
        assert doc[k] == v, k
    if rule is None:
        assert doc["rule"] is None
    else:
        assert os.path.basename(doc["rule"].pop("file")) in ("ng.yaml", "sandbox-settings.json")
        assert doc["rule"] == rule


def test_check_json_grant_and_errors(daemon):
    assert daemon.ctl("grant", "vm1", "evil.test:443", "--for", "1h")[0] == 0
    rc, out, _ = daemon.ctl("check", "vm1", "evil.test:443", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["verdict"] == "allow" and doc["reason"] == "grant"
    assert doc["rule"] == {"grant": 1}
    rc, out, err = daemon.ctl("check", "--json", "nope", "pypi.org")
    assert (rc, out) == (2, "") and "unknown VM 'nope'" in err


def test_socket_discovery(daemon, tmp_path):
    """-s, else NAMEGATE_SOCKET, else -c FILE's control_socket, else the default."""
    env = dict(os.environ)
    env["NAMEGATE_SOCKET"] = daemon.sock
    rc, out, err = run("stats", "agent1", "--json", env=env)
    assert rc == 0 and json.loads(out)["vms"][0]["vm"] == "agent1", err
    missing = str(tmp_path / "nowhere.sock")
    rc, _, err = run("-s", missing, "status", env=env)                  # -s first
    assert rc == 2 and missing in err
    cfg = os.path.join(daemon.dir, "ctl.yaml")
    with open(daemon.config) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(text + f"control_socket: {daemon.sock}\n")
    env.pop("NAMEGATE_SOCKET")
    rc, out, err = run("-c", cfg, "status", env=env)
    assert rc == 0 and out.startswith("namegate 0.1.0"), err
    env["NAMEGATE_SOCKET"] = missing
    rc, _, err = run("-c", cfg, "status", env=env)                      # the variable first
    assert rc == 2 and missing in err
    env.pop("NAMEGATE_SOCKET")
    with open(cfg, "w") as f:
        f.write(text.replace("policy: offline", "policy: nope"))
    rc, out, err = run("-c", cfg, "status", env=env)
    assert rc == 2 and out == "" and "unknown policy 'nope'" in err
    if not os.path.exists("/run/namegate/namegate.sock"):
        rc, _, err = run("status", env=env)
        assert rc == 2 and "/run/namegate/namegate.sock" in err


def test_vms(daemon):
    assert daemon.ctl("vms") == (0, "agent1\nbuild-runner-long\n", "")
    assert run("-c", daemon.config, "vms") == (0, "vm1\nvm2\nvm3\nvm4\n", "")


def complete(words, env=None):
    """What _namegatectl offers for words (the last one being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              '_namegatectl; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "--norc", "-c", script, "bash", COMPLETION, *words],
                       capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.split("\n") if w]


def test_bash_completion(daemon):
    assert complete(["namegatectl", "ev"]) == ["events"]
    assert complete(["namegatectl", "-s", "x", "gr"]) == ["grant", "grants"]
    assert complete(["namegatectl", "flows", "--f"]) == ["--follow", "--flow-log"]
    assert complete(["namegatectl", "check", "--j"]) == ["--json"]
    assert complete(["namegatectl", "--so"]) == ["--socket"]
    # VM names: from -c FILE, else the daemon's (the binary as typed)
    assert complete([CTL, "-c", daemon.config, "stats", ""]) == ["vm1", "vm2", "vm3", "vm4"]
    assert complete([CTL, "-s", daemon.sock, "events", "--vm", "a"]) == ["agent1"]
    assert complete([CTL, "-s", daemon.sock, "bindings", "agent1", ""]) == []
    env = dict(os.environ, NAMEGATE_SOCKET=daemon.sock)
    assert complete([CTL, "check", "b"], env=env) == ["build-runner-long"]
    assert shutil.which("bash")
