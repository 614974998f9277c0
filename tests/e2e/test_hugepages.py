"""The derived EAL arguments start the real daemon whatever hugepages the host has: EAL
takes pages only of a size a hugetlbfs mount serves, and only free ones, so a host with
pages reserved but not mounted, or too few free, starts on plain pages and says why, and
one with enough takes them. Each daemon runs in a network namespace of its own (net_null
ports), and where a mount is wanted, in a mount namespace of its own too: no other
process sees it. The 2 MiB pages are reserved here and the count put back after."""
import os
import subprocess
import time

import pytest

import lab_namegate
import lab_net

NR = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
FREE = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"
PAGE_MIB = 2


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("NAMEGATE_BIN is not set to a built namegate")
    return binary


def _read(path):
    with open(path) as f:
        return int(f.read())


def _reserve(pages):
    with open(NR, "w") as f:
        f.write(str(pages))
    return _read(NR)


def _reserve_or_skip(pages):
    """No test may need hugepages (SPEC): where the kernel cannot find the memory for them,
    the test is skipped, never failed."""
    if _reserve(pages) != pages:
        pytest.skip(f"the kernel could not reserve {pages} 2 MiB pages here")


class Host:
    """A namespace, a directory and a configuration of one run's own; the daemon in it."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.ns = f"{prefix}-hp"
        self.tmp = lab_net.tmpdir_for(prefix)
        self.mnt = os.path.join(self.tmp, "huge")
        self.config = os.path.join(self.tmp, "namegate.yaml")
        self.err = os.path.join(self.tmp, "namegate.out")
        self.proc = None

    def write_config(self):
        cfg = {
            "dataplane": {"vm_port": "net_null0", "uplink_port": "net_null1",
                          "max_flows": 4096, "max_flows_per_vm": 4096, "max_bindings": 4096},
            # the derived --file-prefix is the nft table's: this run's own
            "slow_path": {"nft_table": self.prefix},
            "resolvers": ["10.77.0.1"],
            "control_socket": os.path.join(self.tmp, "namegate.sock"),
            "events": os.path.join(self.tmp, "events.jsonl"),
            "grants": {"state": os.path.join(self.tmp, "grants.json")},
            "policies": {"python": {"allow": ["pypi.org"]}},
            "vms": [{"name": "agent1", "mac": "02:00:00:00:00:01", "ipv4": "10.77.0.11",
                     "policy": "python"}],
        }
        with open(self.config, "w") as f:
            f.write(lab_namegate.to_yaml(cfg) + "\n")

    def _argv(self, args, mounted):
        inner = ["nsenter", f"--net=/run/netns/{self.ns}", _binary(), "-c", self.config] + args
        if not mounted:
            return inner
        # a mount only this process and its child see: the host's stay as they were
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f'mount -t hugetlbfs -o pagesize=2M nodev "{self.mnt}" && exec "$@"', "sh"
                ] + inner

    def check(self, mounted, eal=()):
        args = ["--check"] + (["--eal"] + list(eal) if eal else [])
        return subprocess.run(self._argv(args, mounted), capture_output=True, text=True,
                              timeout=60)

    def start(self, mounted):
        with open(self.err, "w") as out:   # the ready line is on stdout, the rest on stderr
            self.proc = subprocess.Popen(self._argv([], mounted), stdout=out, stderr=out)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = self.stderr()
            if "namegate: ready:" in text or self.proc.poll() is not None:
                return text
            time.sleep(0.2)
        return self.stderr()

    def stderr(self):
        with open(self.err) as f:
            return f.read()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def host(request):
    if not os.access(NR, os.W_OK):
        pytest.skip("2 MiB hugepages cannot be reserved here (not root, or no hugetlb)")
    before = _read(NR)
    prefix = lab_net.claim_prefix("hugepages")
    h = Host(prefix)

    def cleanup():
        h.stop()
        lab_net.destroy(prefix)
        _reserve(before)
    request.addfinalizer(cleanup)
    os.makedirs(h.mnt)
    lab_net.run(["ip", "netns", "add", h.ns])
    h.write_config()
    h.before = before
    return h


def _need_mib(h):
    """EAL's -m, as --check (on plain pages here) plans it."""
    cp = h.check(mounted=False)
    line = next(x for x in cp.stdout.splitlines() if x.startswith("memory: the tables need"))
    return int(line.split("EAL will have ")[1].split(" MiB")[0])


def test_reserved_but_unmounted_hugepages_start_on_plain_pages(host):
    _reserve_or_skip(host.before + 64)
    cp = host.check(mounted=False)
    assert cp.returncode == 0, cp.stderr
    assert "eal: --no-huge" in cp.stdout, cp.stdout
    assert "no hugetlbfs mount for them" in cp.stdout, cp.stdout
    # arguments given are taken as given: --check says a start on them fails here
    cp = host.check(mounted=False, eal=["--no-pci", "--file-prefix", host.prefix])
    assert cp.returncode == 0 and "eal: --no-pci" in cp.stdout, cp.stdout + cp.stderr
    assert ("memory: warning: EAL will not start here: this host has 128 MiB of hugepages "
            "reserved and no hugetlbfs mount for them") in cp.stdout, cp.stdout
    text = host.start(mounted=False)
    assert "namegate: ready:" in text, text
    assert "plain pages (--no-huge), not hugepages: this host has" in text, text
    assert "no hugetlbfs mount for them" in text, text


def test_too_few_free_hugepages_start_on_plain_pages(host):
    if _read(FREE) != 0:
        pytest.skip("this host has 2 MiB hugepages of its own free: the count would be theirs")
    _reserve_or_skip(host.before + 8)
    cp = host.check(mounted=True)
    assert cp.returncode == 0, cp.stderr
    assert "eal: --no-huge" in cp.stdout, cp.stdout
    assert "has 16 MiB of hugepages free in hugetlbfs mounts and EAL needs" in cp.stdout
    text = host.start(mounted=True)
    assert "namegate: ready:" in text, text
    assert "16 MiB of hugepages free in hugetlbfs mounts and EAL needs" in text, text


def test_enough_free_hugepages_are_taken(host):
    need = _need_mib(host)
    pages = need // PAGE_MIB + 16
    _reserve_or_skip(host.before + pages)
    free = _read(FREE)
    cp = host.check(mounted=True)
    assert cp.returncode == 0, cp.stderr
    assert "eal: --no-pci" in cp.stdout and "--no-huge" not in cp.stdout, cp.stdout
    assert f"EAL will have {need} MiB of hugepages" in cp.stdout, cp.stdout
    text = host.start(mounted=True)
    assert "namegate: ready:" in text, text
    assert "plain pages" not in text, text
    # EAL took its -m of them at start: the pages are the daemon's while it runs
    assert free - _read(FREE) >= need // PAGE_MIB, (free, _read(FREE), need)
