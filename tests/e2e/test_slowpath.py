"""The slow path (SPEC s4 step 8, s5) through the real daemon and kernel: ICMP goes through
the exception TAPs and the kernel bridge, where `table bridge namegate` lets a VM reach
what it resolved and nothing else; the table is read with nft itself, and put back when
someone deletes it."""
import json

import pytest

import lab_services as svc
from lab_net import wait_until
from test_dataplane import start


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def nft_json(lab, *what):
    cp = lab.sw_exec(["nft", "-j", "list", *what])
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)["nftables"]


def counter(lab, name):
    for obj in nft_json(lab, "counter", "bridge", "namegate", name):
        if "counter" in obj:
            return obj["counter"]["packets"]
    raise AssertionError(f"no counter {name}")


def elements(lab, set_name):
    for obj in nft_json(lab, "set", "bridge", "namegate", set_name):
        if "set" in obj:
            return obj["set"].get("elem", [])
    return []


def set_addrs(lab, set_name):
    """The addresses in one of the table's sets ([] if it cannot be listed)."""
    cp = lab.sw_exec(["nft", "-j", "list", "set", "bridge", "namegate", set_name])
    if cp.returncode:
        return []
    return [e["elem"]["val"] if isinstance(e, dict) and "elem" in e else e
            for obj in json.loads(cp.stdout)["nftables"] if "set" in obj
            for e in obj["set"].get("elem", [])]


def wait_bound(lab, set_name, *addrs):
    """Until every addr is in the set: a binding goes to the kernel in the next batch."""
    wait_until(lambda: set(addrs) <= set(set_addrs(lab, set_name)),
               what=f"{', '.join(addrs) if len(addrs) < 4 else f'{len(addrs)} addresses'} "
                    f"to reach {set_name}")


def unanswered(lab, vm, addr, drop_counter):
    """A ping that must get no answer: a short one, then the proof that the kernel bridge
    dropped it (its VM's drop counter moved), so no answer is still on its way."""
    before = counter(lab, drop_counter)
    p = lab.ping(vm, addr, timeout=2.0)
    wait_until(lambda: counter(lab, drop_counter) > before,
               what=f"{vm}'s echo request to {addr} to be dropped ({drop_counter})")
    return p.returncode != 0


def test_ping_reaches_what_the_vm_resolved_and_nothing_else(ng):
    assert unanswered(ng, "vm1", "203.0.113.10", "vm1_drop")    # not resolved yet
    drops = counter(ng, "vm1_drop")
    assert ng.dig("vm1", "pypi.org").addresses == ["203.0.113.10"]
    wait_bound(ng, "vm1_v4addr", "203.0.113.10")
    ok = ng.ping("vm1", "203.0.113.10")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert unanswered(ng, "vm1", "203.0.113.20", "vm1_drop")    # evil.test: never resolved
    assert counter(ng, "vm1_drop") > drops
    assert unanswered(ng, "vm2", "203.0.113.10", "vm2_drop")    # vm1's binding is vm1's


def test_bindings_are_in_the_vms_sets_with_timeouts(ng):
    ng.dig("vm1", "files.pythonhosted.org")
    wait_bound(ng, "vm1_v4addr", "203.0.113.11")
    elems = elements(ng, "vm1_v4addr")
    addrs = [e["elem"]["val"] if isinstance(e, dict) and "elem" in e else e for e in elems]
    assert "203.0.113.11" in addrs, elems
    timed = [e for e in elems if isinstance(e, dict) and "elem" in e]
    assert timed and all(0 < e["elem"]["expires"] <= 86400 for e in timed)

    def gauge():            # counted from the kernel once a second
        metrics = ng.metrics()
        assert metrics is not None
        return int(next(l.split()[1] for l in metrics.splitlines()
                        if l.startswith("namegate_nft_elements ")))
    wait_until(lambda: gauge() > 0, what="namegate_nft_elements to count the elements")


def test_deleted_table_is_put_back_with_the_live_bindings(ng):
    ng.dig("vm1", "pypi.org")
    wait_bound(ng, "vm1_v4addr", "203.0.113.10")
    assert ng.sw_exec(["nft", "delete", "table", "bridge", "namegate"]).returncode == 0
    wait_bound(ng, "vm1_v4addr", "203.0.113.10")        # namegate checks once a second
    assert ng.ping("vm1", "203.0.113.10").returncode == 0


def test_bind_latency_is_measured_and_reported(ng):
    """SPEC s5 wants bindings in the kernel within 5 ms p99 of the DNS answer; namegate
    measures that for every element it adds (namegate_nft_bind_latency_seconds). The
    figure is printed, not asserted against 5 ms: timing belongs to benchmarks, and CI
    machines are shared and noisy."""
    for i in range(60):
        ng.dig("vm1", f"n{i}.bulk.test")
    # every one in the kernel, so measured
    wait_bound(ng, "vm1_v4addr", *[svc.bulk_addr(i) for i in range(60)])
    lines = dict(l.rsplit(" ", 1) for l in ng.metrics().splitlines()
                 if l.startswith("namegate_nft_bind_latency_seconds"))
    p50 = float(lines['namegate_nft_bind_latency_seconds{quantile="0.5"}'])
    p99 = float(lines['namegate_nft_bind_latency_seconds{quantile="0.99"}'])
    print(f"nft bind latency p50 {p50 * 1e3:.2f} ms p99 {p99 * 1e3:.2f} ms")
    assert 0 < p50 <= p99


def test_table_removed_on_exit(request):
    from test_dataplane import start as start_lab
    lab = start_lab(request)
    assert lab.sw_exec(["nft", "list", "table", "bridge", "namegate"]).returncode == 0
    assert lab.stop_namegate() == 0
    assert lab.sw_exec(["nft", "list", "table", "bridge", "namegate"]).returncode != 0
    links = lab.sw_exec(["ip", "-br", "link"]).stdout
    assert "namegate-x" not in links


def metric(text, sample):
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def test_exception_path_through_the_main_lcore(ng):
    """Issue 14: a worker hands frames for the kernel to the main lcore over a ring, which
    alone writes and reads the TAPs and hands back what the bridge let through. A burst of
    echoes all comes back; each crossed the slow port both ways; none was lost between the
    worker and the main lcore (slow_queue_full)."""
    assert ng.dig("vm1", "pypi.org").addresses == ["203.0.113.10"]
    wait_bound(ng, "vm1_v4addr", "203.0.113.10")
    before = ng.metrics()
    ok = ng.ping("vm1", "203.0.113.10", count=20, timeout=2.0)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    after = ng.metrics()
    for d in ("rx", "tx"):
        sample = f'namegate_port_packets_total{{port="slow",dir="{d}"}}'
        assert metric(after, sample) - metric(before, sample) >= 40, (d, after)
    for reason in ("slow_queue_full", "tx_full"):
        assert metric(after, f'namegate_drops_total{{reason="{reason}"}}') == 0, reason
