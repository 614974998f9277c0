"""Offline tools end to end: `namegate -c FILE --check` and `namegatectl check -c FILE`.

Run: NG_BUILD=build pytest-3 tests/policy/test_cli.py (NG_BUILD: the meson build dir).
No DPDK environment is needed: --check never initialises EAL.
"""
import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, os.environ.get("NG_BUILD", "build"))
NAMEGATE = os.path.join(BUILD, "dataplane", "namegate")
CTL = os.path.join(BUILD, "control", "namegatectl")


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def fixture(name):
    return os.path.join(HERE, name)


@pytest.fixture(autouse=True)
def _no_runtime_dir_left():
    """The daemons these tests start fail before they run, leaving DPDK's files behind."""
    yield
    shutil.rmtree(f"/run/dpdk/ngcli{os.getpid()}", ignore_errors=True)


@pytest.mark.skipif(not os.path.exists(NAMEGATE), reason="namegate not built (no DPDK)")
class TestCheck:
    def test_ok_with_summary_and_warnings(self):
        rc, out, err = run(NAMEGATE, "-c", fixture("ng.yaml"), "--check")
        assert rc == 0, err
        assert "OK: 4 VMs, 4 policies, 14 patterns" in out
        assert "policy from-sandbox: 3 allow, 1 deny" in out
        assert "warning: policies.dev.allow[3] \"github.com:22\" allows github.com" in out
        # the fixture's VMs are all untagged: a bump in the wire cannot tell them apart
        # on that one segment by anything they do not write themselves
        assert "warning: vms vm1 and vm" in out and "share VLAN 0" in out
        # wildcards and ranges no budget counts: *.githubusercontent.com, the /24, *.npmjs.org
        assert ("warning: policies.dev.allow[2] \"*.githubusercontent.com\" allows many hosts "
                "without an egress budget") in out
        assert out.endswith("6 warnings\n")

    def test_dpdk_convention(self):
        rc, out, _ = run(NAMEGATE, "--no-huge", "-c", "0x1", "--", "-c", fixture("ng.yaml"),
                         "--check")
        assert rc == 0 and "OK: 4 VMs" in out
        rc, out, _ = run(NAMEGATE, "-c", fixture("ng.yaml"), "--check", "--eal", "-c", "1")
        assert rc == 0 and "OK: 4 VMs" in out

    def test_errors(self):
        rc, out, err = run(NAMEGATE, "-c", fixture("bad.yaml"), "--check")
        assert rc == 1 and out == ""
        lines = err.splitlines()
        assert lines[0].endswith("bad.yaml:2:12: dataplane.workers: 0 is out of range (1..128)")
        assert any(":15:13: vms[1].policy: unknown policy 'nope'" in l for l in lines)

    def test_daemon_fails_closed(self):
        """A bad file, or a port that cannot be opened: one clear message, exit 1."""
        rc, _, err = run(NAMEGATE, "-c", fixture("bad.yaml"))
        assert rc == 1 and "not started: the configuration has errors" in err
        eal = ["--eal", "--no-huge", "--no-pci", "--file-prefix", f"ngcli{os.getpid()}"]
        rc, out, err = run(NAMEGATE, "-c", fixture("ng.yaml"), *eal)
        assert rc == 1 and "namegate: ready" not in out
        assert "port net_af_packet0,iface=ng-vm: cannot probe" in err

    def test_tables_that_cannot_fit(self):
        """-m too small for the tables: --check points at it (FILE:LINE:COL), and a start
        says what it needed before EAL runs, never a bare errno from some table."""
        rc, out, err = run(NAMEGATE, "-c", fixture("ng.yaml"), "--eal", "--no-huge", "-m",
                           "64", "--no-pci", "--file-prefix", f"ngcli{os.getpid()}")
        assert rc == 1 and "namegate: ready" not in out
        need = re.search(r"namegate: needs (\d+) MiB, EAL has 64 MiB: raise -m or lower "
                         r"max_flows\n", err)
        assert need and int(need.group(1)) > 64, err
        rc, out, err = run(NAMEGATE, "-c", fixture("small_eal.yaml"), "--check")
        assert rc == 1 and out == ""
        assert re.search(r"small_eal.yaml:3:24: the tables need \d+ MiB of EAL memory "
                         r"\(max_vms 1024, max_flows 1048576, max_bindings 1048576, 1 worker\) and "
                         r"dataplane.eal gives EAL 512 MiB: raise -m or lower max_flows", err), err

    def test_defaults_sized(self):
        """No dataplane.eal: derived from the host and the ports, -m sized from the tables,
        and --check says so."""
        rc, out, _ = run(NAMEGATE, "-c", fixture("ng.yaml"), "--check")
        assert rc == 0
        eal = re.search(r"^eal: (.*) \(derived from the host and ports, -m sized from the "
                        r"tables\)$", out, re.M)
        assert eal, out
        args = eal.group(1).split()
        assert "--no-pci" in args and args[args.index("--file-prefix") + 1] == "namegate"
        have = int(args[args.index("-m") + 1])
        need = int(re.search(r"^memory: the tables need (\d+) MiB", out, re.M).group(1))
        assert need <= have < need + 16

    def test_usage(self):
        assert run(NAMEGATE, "--check")[0] == 2
        assert run(NAMEGATE, "-c", fixture("ng.yaml"), "--bogus")[0] == 2


@pytest.mark.parametrize("vm,host,rc,line", [
    ("vm1", "pypi.org:443", 0, 'allow pypi.org:443 for vm1: policies.dev.allow[0] "pypi.org"'),
    ("vm1", "evilpypi.org:443", 1, "block evilpypi.org:443 for vm1: no pattern"),
    ("vm1", "upload.pypi.org", 1, 'policies.dev.deny[0] "upload.pypi.org"'),
    ("vm3", "evil.npmjs.org:443", 1, "sandbox.network.deniedDomains[0]"),
    ("vm4", "static.crates.io:443", 0, "network.allowDomains[1]"),
])
def test_namegatectl_check(vm, host, rc, line):
    got, out, err = run(CTL, "check", "-c", fixture("ng.yaml"), vm, host)
    assert got == rc, err
    assert line in out


def test_namegatectl_errors():
    rc, _, err = run(CTL, "check", "-c", fixture("ng.yaml"), "nope", "pypi.org")
    assert rc == 2 and "unknown VM 'nope'" in err
    rc, _, err = run(CTL, "check", "-c", fixture("ng.yaml"), "vm1", "*.pypi.org")
    assert rc == 2 and "a wildcard, not a host" in err
    rc, _, err = run(CTL, "check", "-c", fixture("bad.yaml"), "vm1", "pypi.org")
    assert rc == 2 and "unknown policy 'nope'" in err
    # a socket nothing listens on: a namegate serving the default one must not answer
    none = os.path.join(HERE, "no-such-dir", "namegate.sock")
    rc, _, err = run(CTL, "-s", none, "check", "vm1", "pypi.org")
    assert rc == 2 and "control socket" in err
    rc, _, err = run(CTL, "-s", none, "status")
    assert rc == 2 and "control socket" in err
    assert run(CTL, "frobnicate")[0] == 2
