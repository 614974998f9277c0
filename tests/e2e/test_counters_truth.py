"""Counters and logs that tell the truth (issue 26), through the real daemon.

The event log on a full disk: the daemon writes its events to a small tmpfs of the test's
own, the disk is filled, events are made; every line in the file parses, each event is
either a whole line there or counted in namegate_events_dropped_total, and stderr says so
once. namegate_nft_elements against what the kernel lists (`nft -j list table`) after
bindings are learned, after some expired on short TTLs, after a rebuild, and after all
expired."""
import copy
import errno
import json
import os
import re
import subprocess
import tempfile

import pytest

import lab as labmod
import lab_namegate
from lab_net import wait_until

LOST = "lines are being lost"


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("NAMEGATE_BIN is not set to a built namegate (no DPDK?)")
    return binary


def start(request, policies=None, **config):
    lab = labmod.Lab(mode="namegate", vms=labmod.default_vms(2), policies=policies,
                     namegate_cmd=[_binary(), "-c", "{config}"], config=config or None)
    request.addfinalizer(lab.teardown)
    return lab.setup()


def metric(lab, sample):
    text = lab.metrics()
    assert text is not None, "GET /metrics failed"
    m = re.search(r"^" + re.escape(sample) + r" (\d+)$", text, re.M)
    assert m, f"no {sample} in the scrape"
    return int(m.group(1))


# ---------------------------------------------------------------- the event log, disk full

@pytest.fixture
def small_tmpfs():
    """A 256 KiB tmpfs on a directory of the test's own, unmounted whatever happens. The
    lab's finalizer (registered later) stops the daemon first; -l covers a daemon that
    still holds the file."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tempfile.mkdtemp(prefix="ng-evfull-")
    mounted = False
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", where],
                       check=True)
        mounted = True
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", where], check=False)
        os.rmdir(where)


def fill(where):
    """Writes a file until the tmpfs refuses (ENOSPC): what room is left is the part of the
    event log's last page its lines have not used yet."""
    with open(os.path.join(where, "fill"), "wb", buffering=0) as f:
        chunk = b"\0" * 4096
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def lines(path):
    """Every line of the event log parsed: a torn line fails here."""
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), f"the log ends in a partial line: {data[-200:]!r}"
    return [json.loads(x) for x in data.decode().splitlines()]


def blocks(path, tag):
    return [e for e in lines(path) if e.get("event") == "block" and tag in e.get("name", "")]


def test_full_disk_loses_whole_lines_counts_them_and_says_so_once(request, small_tmpfs):
    path = os.path.join(small_tmpfs, "events.jsonl")
    ng = start(request, events=path)
    assert lines(path)[0]["event"] == "start"
    dropped0 = metric(ng, "namegate_events_dropped_total")
    fill(small_tmpfs)

    # Denied names: one block event each, under both VMs' rate limits (a burst of 50 each).
    sent = 0
    for i in range(40):
        for vm in ("vm1", "vm2"):
            r = ng.dig(vm, f"q{i}-{vm}.full.evil.test")
            assert r.rcode == "REFUSED", r
            sent += 1

    def accounted():
        written = len(blocks(path, ".full.evil.test"))
        lost = metric(ng, "namegate_events_dropped_total") - dropped0
        return (written, lost) if written + lost == sent else None
    written, lost = wait_until(accounted, what=f"all {sent} events written or counted lost")
    assert lost > 0 and written > 0, (written, lost)    # room for some, not for all
    err = ng.namegate_output()[1]
    assert err.count(LOST) == 1, err
    assert f"namegate: {path}: No space left on device: {LOST}" in err, err

    # Room again: the next event follows the last whole line, and nothing more is said.
    os.unlink(os.path.join(small_tmpfs, "fill"))
    assert ng.dig("vm1", "after.full.evil.test").rcode == "REFUSED"
    wait_until(lambda: blocks(path, "after.full.evil.test"), what="the event after the room")
    assert lines(path)[-1]["name"] == "after.full.evil.test"
    assert ng.namegate_output()[1].count(LOST) == 1
    assert metric(ng, "namegate_events_dropped_total") - dropped0 == lost


# ---------------------------------------------------------------- namegate_nft_elements

def kernel_elements(lab):
    """Every element of every set of the table, as nft lists them."""
    cp = lab.sw_exec(["nft", "-j", "list", "table", "bridge", "namegate"])
    if cp.returncode:
        return 0                    # no table: nothing held
    return sum(len(o["set"].get("elem", [])) for o in json.loads(cp.stdout)["nftables"]
               if "set" in o)


def set_addrs(lab, set_name):
    cp = lab.sw_exec(["nft", "-j", "list", "set", "bridge", "namegate", set_name])
    if cp.returncode:
        return set()
    return {e["elem"]["val"] if isinstance(e, dict) and "elem" in e else e
            for o in json.loads(cp.stdout)["nftables"] if "set" in o
            for e in o["set"].get("elem", [])}


def gauge_matches_kernel(lab, what):
    """The gauge is counted once a second: wait for a scrape that agrees with nft on both
    sides of it (the kernel's count the same before and after), and return the count."""
    def agree():
        before = kernel_elements(lab)
        got = metric(lab, "namegate_nft_elements")
        return (before,) if got == before == kernel_elements(lab) else None
    return wait_until(agree, timeout=20, step=0.2, what=f"namegate_nft_elements to equal "
                      f"the kernel's element count {what}")[0]


def test_nft_elements_is_what_the_kernel_holds(request):
    policies = copy.deepcopy(lab_namegate.DEFAULT_POLICIES)
    policies["python"]["allow"] += ["*.bulk.test", "ttl5.test"]
    # every binding lives 25 s at most; ttl5.test's 5 s
    ng = start(request, policies=policies,
               dns={"min_ttl": 1, "max_ttl": 25, "blocked_rcode": "refused"})
    assert gauge_matches_kernel(ng, "at start") == 0

    bulk = [f"198.18.0.{i + 1}" for i in range(20)]        # lab_services.bulk_addr(i)
    assert ng.dig("vm1", "ttl5.test").addresses == ["203.0.113.10"]
    for i in range(20):
        ng.dig("vm1", f"n{i}.bulk.test")
    ng.dig("vm2", "github.com")
    wait_until(lambda: set(bulk) <= set_addrs(ng, "vm1_v4addr") and
               "203.0.113.12" in set_addrs(ng, "vm2_v4addr"), what="the bindings in nft")
    learned = gauge_matches_kernel(ng, "after the bindings were learned")
    assert learned >= 3 * 21       # each: the address, and it with tcp and udp

    # some expired (ttl5.test), the rest still there
    wait_until(lambda: "203.0.113.10" not in set_addrs(ng, "vm1_v4addr"),
               what="ttl5.test's 5 s binding to expire in the kernel")
    assert gauge_matches_kernel(ng, "after some expired") > 0

    # a rebuild: the table deleted behind namegate's back comes back with what is live
    assert ng.sw_exec(["nft", "delete", "table", "bridge", "namegate"]).returncode == 0
    wait_until(lambda: ng.sw_exec(["nft", "list", "table", "bridge", "namegate"]).returncode
               == 0, what="the table to be put back")
    gauge_matches_kernel(ng, "after a rebuild")

    # drained: every binding expired, in the kernel and in the gauge
    wait_until(lambda: kernel_elements(ng) == 0, timeout=45, step=0.5,
               what="every element to expire")
    assert gauge_matches_kernel(ng, "after draining") == 0
