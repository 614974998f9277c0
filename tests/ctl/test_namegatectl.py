"""namegatectl against fake_daemon: every command's output, --json, and exit statuses.

fake_daemon serves the real control socket (control/sock/ctl_sock.c) with canned counters; its
check and reload use the real policy loader, so the online check is held to the offline
`check -c` output. Run: meson test --suite ctl, or
NAMEGATECTL_BIN=build/control/namegatectl FAKE_DAEMON_BIN=build/tests/ctl/fake_daemon \
    pytest-3 tests/ctl
"""
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
POLICY = os.path.join(os.path.dirname(HERE), "policy")
CTL = os.environ.get("NAMEGATECTL_BIN", "")
FAKE = os.environ.get("FAKE_DAEMON_BIN", "")

pytestmark = pytest.mark.skipif(not (os.access(CTL, os.X_OK) and os.access(FAKE, os.X_OK)),
                                reason="NAMEGATECTL_BIN and FAKE_DAEMON_BIN must be set")

EVENTS = [
    {"ts": "2026-11-29T12:00:00.123Z", "vm": "agent1", "event": "block",
     "reason": "sni_denied", "proto": "tcp", "dst": "203.0.113.5:443",
     "name": "collect.example.invalid"},
    {"ts": "2026-11-29T12:00:01.000Z", "event": "policy", "generation": 2, "vms": 4,
     "file": "ng.yaml"},
]


class Daemon:
    def __init__(self, tmp, flow_log=None, extra=()):
        self.dir = str(tmp)
        # The policy fixture and the files it imports, in a directory we may edit.
        for name in ("ng.yaml", "sandbox-settings.json", "bound.json"):
            shutil.copy(os.path.join(POLICY, name), self.dir)
        self.config = os.path.join(self.dir, "ng.yaml")
        self.events = os.path.join(self.dir, "events.jsonl")
        with open(self.events, "w") as f:
            f.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in EVENTS)
        self.sock = os.path.join(self.dir, "run", "namegate.sock")  # run/ is created
        self.proc = subprocess.Popen(
            [FAKE, "-s", self.sock, "-c", self.config, "-e", self.events] +
            (["-l", flow_log] if flow_log else []) + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line == "ready\n", self.proc.stderr.read()

    def ctl(self, *args, sock=None, timeout=30, env=None):
        p = subprocess.run([CTL, "-s", sock or self.sock, *args], capture_output=True,
                           text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=10) == 0
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()
    assert not os.path.exists(d.sock)   # the daemon removes its socket


def offline(*args):
    p = subprocess.run([CTL, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def columns(table_lines, aligns):
    """Checks an aligned table (cells without blanks); returns the rows as token lists."""
    spans = [[(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line)]
             for line in table_lines]
    for s in spans:
        assert len(s) == len(aligns), spans
    for j, a in enumerate(aligns):
        edge = 0 if a == "l" else 1
        assert len({s[j][edge] for s in spans}) == 1, (j, table_lines)
    for line in table_lines:
        assert line == line.rstrip()
    return [[t for _, _, t in s] for s in spans]


def test_socket_mode(daemon):
    st = os.stat(daemon.sock)
    assert oct(st.st_mode & 0o7777) == "0o660"
    assert oct(os.stat(os.path.dirname(daemon.sock)).st_mode & 0o7777) == "0o711"


def test_status(daemon):
    rc, out, err = daemon.ctl("status")
    assert rc == 0, err
    lines = out.splitlines()
    assert re.fullmatch(r"namegate 0\.1\.0, pid \d+, up 1d2h3m4s", lines[0])
    assert lines[1:] == [
        f"config       {daemon.config} (generation 1)",
        "vms          4",
        "workers      1",
        "vm port      net_af_packet0,iface=ng-vm",
        "uplink port  net_af_packet1,iface=ng-up",
        "metrics      127.0.0.1:9477",
        f"events       {daemon.events}",
    ]
    rc, out, _ = daemon.ctl("status", "--json")
    assert rc == 0
    st = json.loads(out)
    assert st["events"] == daemon.events and st["generation"] == 1 and st["vms"] == 4


def test_stats_table(daemon):
    rc, out, err = daemon.ctl("stats")
    assert rc == 0, err
    lines = out.splitlines()
    rows = columns(lines[:3], "llrrrrrrrl")
    assert rows[0] == ["VM", "MODE", "ALLOWED", "BLOCKED", "WOULD_BLOCK", "DNS_OK",
                       "DNS_BLOCKED", "BINDINGS", "FLOWS", "TOP_BLOCK_REASONS"]
    assert rows[1] == ["agent1", "enforce", "1523/2048576", "17/1088", "0/0", "120", "3",
                       "12", "4", "sni_denied=9,no_binding=5,dns_denied=3"]
    # Ties are broken by name; at most three reasons.
    assert rows[2] == ["build-runner-long", "audit", "3/180", "0/0", "42/2520", "7", "0",
                       "0", "0", "no_binding=40,not_tls=2,sni_denied=2"]
    assert lines[3:] == [
        "(egress packets/bytes; DNS in queries)",
        "ports: vm rx 1600 tx 1500, uplink rx 1500 tx 1540, slow rx 2 tx 2",
        "policy generation 1",
    ]


def test_stats_one_vm(daemon):
    rc, out, _ = daemon.ctl("stats", "agent1")
    assert rc == 0
    rows = columns(out.splitlines()[:2], "llrrrrrrrl")
    assert [r[0] for r in rows] == ["VM", "agent1"]
    rc, out, err = daemon.ctl("stats", "nope")
    assert (rc, out) == (2, "")
    assert err == "namegatectl: stats: unknown VM 'nope'\n"


def test_stats_json(daemon):
    """--json is the daemon's reply as is: one line, and options may follow the VM."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(daemon.sock)
        s.sendall(b'{"cmd":"stats","vm":"agent1"}\n')
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    rc, out, _ = daemon.ctl("stats", "agent1", "--json")
    assert rc == 0 and out == raw.decode()
    assert out.count("\n") == 1
    doc = json.loads(out)
    assert doc["vms"][0]["egress"]["allowed"] == {"packets": 1523, "bytes": 2048576}
    rc, out, _ = daemon.ctl("stats", "--json")
    assert [v["vm"] for v in json.loads(out)["vms"]] == ["agent1", "build-runner-long"]


def test_bindings(daemon):
    rc, out, err = daemon.ctl("bindings", "agent1")
    assert rc == 0, err
    rows = columns(out.splitlines(), "llrl")
    # the ports as the daemon gives them: a list, "any", or "-" when it does not say
    assert rows == [["NAME", "ADDRESS", "TTL(s)", "PORTS"],
                    ["files.pythonhosted.org", "151.101.0.223", "290", "any"],
                    ["pypi.org", "151.101.64.223", "3599", "443,80"],
                    ["pypi.org", "2a04:4e42::223", "3599", "-"]]
    rc, out, _ = daemon.ctl("bindings", "build-runner-long", "--name", "pypi.org")
    assert (rc, out) == (0, "build-runner-long has no bindings matching the name\n")
    rc, out, _ = daemon.ctl("bindings", "agent1", "--json")
    assert rc == 0 and len(json.loads(out)["bindings"]) == 3
    rc, _, err = daemon.ctl("bindings", "a", "b")
    assert rc == 2 and err == "usage: namegatectl bindings [VM] [--name PATTERN] [--json]\n"
    rc, _, err = daemon.ctl("bindings", "x")
    assert rc == 2 and err == "namegatectl: bindings: unknown VM 'x'\n"


def test_flows(daemon):
    rc, out, err = daemon.ctl("flows", "agent1")
    assert rc == 0, err
    rows = columns(out.splitlines(), "llrlrl")
    assert rows == [["PROTO", "PEER", "VM_PORT", "STATE", "AGE(s)", "VERDICT"],
                    ["tcp", "151.101.64.223:443", "40312", "established", "12", "allowed"],
                    ["udp", "10.77.0.1:53", "5353", "open", "1", "allowed"],
                    ["tcp", "[2a04:4e42::223]:443", "40400", "syn_sent", "3601", "allowed"]]
    rc, out, _ = daemon.ctl("flows", "build-runner-long")
    assert (rc, out) == (0, "build-runner-long has no flows\n")


def test_events(daemon, tmp_path):
    want = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in EVENTS)
    rc, out, err = daemon.ctl("events")          # the path comes from status
    assert (rc, out) == (0, want), err
    rc, out, _ = offline("events", "-e", daemon.events)    # no daemon needed
    assert (rc, out) == (0, want)
    rc, _, err = offline("events", "-e", str(tmp_path / "missing.jsonl"))
    assert rc == 2 and "No such file or directory" in err


def test_events_follow(daemon):
    p = subprocess.Popen([CTL, "-s", daemon.sock, "events", "--follow"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in EVENTS:
            p.stdout.readline()
        extra = '{"ts":"2026-11-29T12:00:02.000Z","vm":"agent1","event":"block"}\n'
        with open(daemon.events, "a") as f:
            f.write(extra)
        assert p.stdout.readline() == extra     # seen as it is appended
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


def test_reload(daemon):
    rc, out, err = daemon.ctl("reload")
    assert (rc, out, err) == (0, "reloaded: policy generation 2\n", "")
    # A broken file is rejected with its file:line:col messages; generation 2 stays.
    with open(daemon.config) as f:
        good = f.read()
    with open(daemon.config, "w") as f:
        f.write(good.replace("policy: offline", "policy: nope"))
    rc, out, err = daemon.ctl("reload")
    assert rc == 1 and out == ""
    lines = err.splitlines()
    assert re.fullmatch(re.escape(daemon.config) + r":\d+:\d+: vms\[1\]\.policy: "
                        r"unknown policy 'nope'", lines[0]), err
    assert lines[-1] == "namegatectl: reload rejected; namegate keeps the running policy"
    rc, out, _ = daemon.ctl("status", "--json")
    assert json.loads(out)["generation"] == 2
    rc, out, _ = daemon.ctl("check", "vm2", "pypi.org")   # still the old vm2 policy
    assert rc == 1 and "vm2 is in audit mode" in out
    with open(daemon.config, "w") as f:
        f.write(good)
    rc, out, _ = daemon.ctl("reload", "--json")
    assert rc == 0 and json.loads(out) == {"ok": True, "generation": 3}


@pytest.mark.parametrize("vm,host", [
    ("vm1", "pypi.org:443"),
    ("vm1", "pypi.org"),
    ("vm1", "upload.pypi.org:443"),
    ("vm1", "raw.githubusercontent.com"),
    ("vm1", "198.51.100.7:443"),
    ("vm1", "[2001:db8::1]:443"),
    ("vm2", "pypi.org:443"),            # audit mode: block, with the note
    ("vm3", "example.com"),
    ("nope", "pypi.org"),                # unknown VM: exit 2, message on stderr
    ("vm1", "bad host!"),                # bad host: exit 2
])
def test_check_matches_offline(daemon, vm, host):
    online = daemon.ctl("check", vm, host)
    assert online == offline("check", "-c", daemon.config, vm, host)
    assert online[0] in (0, 1, 2)
    if online[0] < 2:
        assert online[1].startswith(("allow " if online[0] == 0 else "block ") + "")
        assert online[1].count("\n") == 1 and online[2] == ""
    else:
        assert online[1] == "" and online[2] != ""


def test_suggest(daemon):
    rc, out, err = daemon.ctl("suggest", "build-runner-long")
    assert rc == 0, err
    assert out == (
        "# namegatectl suggest build-runner-long: 5 hosts it was refused; review before use\n"
        "policies:\n"
        "  sandbox:\n"
        "    allow:\n"
        "      - \"*.githubusercontent.com\"\n"
        "      - files.pythonhosted.org\n"
        "      - \"github.com:22\"\n"
        "      - pypi.org\n"
        "      - \"[2001:db8::1]:443\"\n")
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        assert yaml.safe_load(out) == {"policies": {"sandbox": {"allow": [
            "*.githubusercontent.com", "files.pythonhosted.org", "github.com:22",
            "pypi.org", "[2001:db8::1]:443"]}}}
    rc, out, _ = daemon.ctl("suggest", "agent1")
    assert rc == 0 and out == ("# namegatectl suggest agent1: nothing refused so far\n"
                               "policies:\n  agent1:\n    allow: []\n")
    rc, out, _ = daemon.ctl("suggest", "agent1", "--json")
    assert json.loads(out) == {"vm": "agent1", "allow": []}


def test_not_running(tmp_path):
    sock = str(tmp_path / "namegate.sock")
    for cmd in (["status"], ["stats"], ["reload"], ["check", "vm1", "pypi.org"],
                ["events"], ["bindings", "vm1"]):
        p = subprocess.run([CTL, "-s", sock, *cmd], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr == f"namegatectl: namegate is not running (no control socket at {sock})\n"
    # A socket left behind by a daemon that died.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock)
    s.close()
    p = subprocess.run([CTL, "-s", sock, "status"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr == f"namegatectl: namegate is not running (nothing listens on {sock})\n"


def test_default_socket_path():
    p = subprocess.run([CTL, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "usage: namegatectl [-s SOCKET | -c FILE] [-F FILE] COMMAND" in p.stdout
    if not os.path.exists("/run/namegate/namegate.sock"):
        p = subprocess.run([CTL, "status"], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2
        assert "/run/namegate/namegate.sock" in p.stderr


def test_usage_errors(daemon):
    for args in (["stats", "a", "b"], ["status", "extra"], ["flows", "a", "b"], ["suggest"],
                 ["reload", "--follow"], ["events", "--json"], ["check", "vm1"],
                 ["frobnicate"]):
        rc, out, err = daemon.ctl(*args)
        assert rc == 2 and out == "" and "usage" in err, args


def test_publish_refuses_a_signature_path_cut_short(tmp_path):
    """publish FILE reads FILE.minisig: where that name would not fit a 4,096-byte path,
    it is refused by name (exit 2), never read as the shorter name the cut leaves."""
    d = str(tmp_path)
    bundle = d + "/" * (4096 - len(".minisig") - len(d) - 1) + "b"   # runs of '/' are one
    assert len(bundle + ".minisig") == 4096
    with open(bundle, "w") as f:
        f.write("policies: {}\n")
    with open(os.path.join(d, "b.minisi"), "w") as f:      # what the cut would name
        f.write("untrusted comment: not a signature\n")
    p = subprocess.run([CTL, "publish", bundle], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stdout == ""
    assert "File name too long" in p.stderr, p.stderr[-200:]


def test_daemon_drops_silent_client(tmp_path):
    """A client that never sends its request does not hold up namegatectl."""
    d = Daemon(tmp_path)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.sock)
        t0 = time.monotonic()
        rc, out, _ = d.ctl("stats", "agent1")
        assert rc == 0 and out.startswith("VM")
        assert time.monotonic() - t0 < 2.0
        s.close()
    finally:
        d.stop()


def test_grant_grants_revoke(daemon):
    rc, out, err = daemon.ctl("grant", "vm1", "evil.test:443", "--for", "1h30m",
                              "--reason", "pip needs it")
    assert rc == 0, err
    m = re.fullmatch(r"grant (\d+): vm1 may reach evil\.test:443 until "
                     r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) \(1h(29|30)m\)\n", out)
    assert m, out
    gid = int(m.group(1))
    rc, out, _ = daemon.ctl("check", "vm1", "evil.test:443")
    hhmmss = m.group(2)[11:19]
    shown = hhmmss[:5] if hhmmss.endswith(":00") else hhmmss
    assert rc == 0 and out == (f'allow evil.test:443 for vm1 by grant {gid} until {shown}Z, '
                               '"pip needs it"\n'), out
    assert daemon.ctl("check", "vm2", "evil.test:443")[0] == 1     # one VM's grant only
    # deny still wins over a grant that covers it
    assert daemon.ctl("grant", "vm1", "upload.pypi.org", "--for", "5m")[0] == 0
    rc, out, _ = daemon.ctl("check", "vm1", "upload.pypi.org:443")
    assert rc == 1 and "policies.dev.deny" in out, out
    rc, out, _ = daemon.ctl("grants")
    lines = out.splitlines()
    assert rc == 0 and lines[0].split() == ["ID", "VM", "HOST", "UNTIL", "(UTC)", "LEFT",
                                            "BY", "REASON"], out
    me = pwd.getpwuid(os.getuid()).pw_name       # the daemon's SO_PEERCRED of this client
    assert re.match(r"^%d\s+vm1\s+evil\.test:443\s+\S+Z\s+1h\d+m\s+%s\s+pip needs it$"
                    % (gid, re.escape(me)), lines[1]), out
    rc, out, _ = daemon.ctl("grants", "vm2", "--json")
    assert rc == 0 and json.loads(out) == {"grants": []}
    listed = json.loads(daemon.ctl("grants", "vm1", "--json")[1])["grants"]
    assert [g["host"] for g in listed] == ["evil.test:443", "upload.pypi.org"]
    assert listed[0]["reason"] == "pip needs it" and 5300 < listed[0]["left"] <= 5400
    assert listed[0]["uid"] == os.getuid() and listed[0]["user"] == me
    rc, out, _ = daemon.ctl("revoke", str(gid))
    assert rc == 0 and out == f"grant {gid} revoked: vm1 may no longer reach evil.test:443\n"
    assert daemon.ctl("check", "vm1", "evil.test:443")[0] == 1
    rc, out, err = daemon.ctl("revoke", str(gid))
    assert rc == 2 and out == "" and err == f"namegatectl: revoke: no live grant {gid}\n"
    # the state file is the one the daemon would read at its next start
    state = json.load(open(daemon.config + ".grants.json"))
    assert state["version"] == 1 and [g["host"] for g in state["grants"]] == ["upload.pypi.org"]


def test_grant_refuses_bad_input_with_a_reason(daemon):
    for args, why in [
            (("grant", "vm9", "evil.test", "--for", "1h"), "unknown VM 'vm9'"),
            (("grant", "vm1", "*", "--for", "1h"), "bad host pattern \"*\""),
            (("grant", "vm1", "evil.test", "--for", "31d"), "longer than 30d"),
            (("grant", "vm1", "evil.test", "--for", "1h1h"), "bad duration"),
            (("grant", "vm1", "evil.test", "--for", "1h", "--reason", "x" * 300),
             "longer than 200 bytes"),
            (("grants", "vm9"), "unknown VM 'vm9'")]:
        rc, out, err = daemon.ctl(*args)
        assert rc == 2 and out == "" and why in err and err.startswith("namegatectl: "), \
            (args, err)
    for args in (["grant", "vm1", "evil.test"], ["grant", "vm1", "--for", "1h"],
                 ["grant", "vm1", "a", "b", "--for", "1h"], ["revoke"], ["revoke", "1", "2"],
                 ["grants", "a", "b"], ["grants", "--for", "1h"]):
        rc, out, err = daemon.ctl(*args)
        assert rc == 2 and out == "" and "usage" in err, args
    assert json.loads(daemon.ctl("grants", "--json")[1]) == {"grants": []}
