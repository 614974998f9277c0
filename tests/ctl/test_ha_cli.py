"""namegatectl ha against fake_daemon with the real HA concern (control/ha) on a FIFO:
the role and the health as the text and --json show them, and --check's exit status, the
one keepalived reads: 1 while starting, 0 once keepalived gave a role, 1 for a namegate
not running, one that does not answer within --timeout, and one that is not a pair."""
import json
import os
import signal
import subprocess
import time

import pytest

from test_namegatectl import CTL, Daemon

pytestmark = pytest.mark.skipif(not os.access(CTL, os.X_OK), reason="NAMEGATECTL_BIN")


class HaDaemon(Daemon):
    def __init__(self, tmp):
        self.fifo = os.path.join(str(tmp), "ha.fifo")
        super().__init__(tmp, extra=["-f", self.fifo])

    def say(self, line):
        fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, (line + "\n").encode())
        os.close(fd)


@pytest.fixture
def ha(tmp_path):
    d = HaDaemon(tmp_path)
    yield d
    d.stop()


def role(d):
    rc, out, _ = d.ctl("ha", "--json")
    assert rc == 0
    return json.loads(out)


def test_starting_then_a_role(ha):
    rc, out, err = ha.ctl("ha")
    assert rc == 0
    assert out.splitlines()[0].startswith("role         starting since ")
    assert "may lead     no: starting: no role from keepalived yet" in out
    assert "heartbeat    5 ms ago (limit 1000 ms)" in out
    rc, out, err = ha.ctl("ha", "--check")
    assert (rc, out) == (1, "")
    assert "may not lead: starting: no role from keepalived yet" in err
    ha.say('INSTANCE "namegate" MASTER 100')
    end = time.monotonic() + 10
    while role(ha)["role"] != "master" and time.monotonic() < end:
        time.sleep(0.02)
    j = role(ha)
    assert j["role"] == "master" and j["healthy"] and j["changes"] == 1
    assert j["lines"] == {"read": 1, "ignored": 0, "malformed": 0}
    assert j["notify_fifo"] == ha.fifo and j["instance"] == ""
    assert ha.ctl("ha", "--check") == (0, "", "")
    rc, out, _ = ha.ctl("ha")
    assert out.splitlines()[0].startswith("role         master since ")
    assert "may lead     yes" in out and "instance     any" in out


def test_check_fails_for_a_namegate_that_does_not_answer(ha):
    ha.say('INSTANCE "namegate" BACKUP 100')
    end = time.monotonic() + 10
    while not role(ha)["healthy"] and time.monotonic() < end:
        time.sleep(0.02)
    assert ha.ctl("ha", "--check")[0] == 0
    os.kill(ha.proc.pid, signal.SIGSTOP)
    try:
        rc, out, err = ha.ctl("ha", "--check", "--timeout", "200")
    finally:
        os.kill(ha.proc.pid, signal.SIGCONT)
    assert rc == 1 and "namegatectl: ha:" in err, err
    rc, _, err = ha.ctl("ha", "--check", sock=ha.sock + ".none")
    assert rc == 1 and "namegatectl: ha:" in err, err


def test_not_a_pair(tmp_path):
    d = Daemon(tmp_path)
    try:
        rc, _, err = d.ctl("ha")
        assert rc == 2
        assert "not one of an HA pair (no ha: in its configuration)" in err
        rc, _, err = d.ctl("ha", "--check")
        assert rc == 1 and "not one of an HA pair" in err
    finally:
        d.stop()


@pytest.mark.parametrize("args", [["--check", "--timeout", "0"], ["--check", "--timeout", "x"],
                                  ["--json", "--check"], ["extra"]])
def test_usage(tmp_path, args):
    p = subprocess.run([CTL, "-s", str(tmp_path / "none.sock"), "ha", *args],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
