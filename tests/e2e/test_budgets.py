"""Egress budgets (SPEC s8, issue 15: `policies.NAME.budgets: [{host, upload, per}]`): an
allowed host is still a way out, so what a VM sends to it is counted per (VM, rule) in a
sliding window. At 80 % an event; at 100 % the flow that crosses it is cut (an RST both
ways: the server gets about the budget, never the whole upload) and new flows through the
rule are refused with reason=budget, charged to that VM with an event, until the window
frees. The neighbour VM, with the same policy and so the same rule, has a window of its own.

Both VMs have policy `up`: github.com (the lab's HTTPS server that takes uploads on POST
/sink) with a budget of BUDGET bytes per PER, and *.githubusercontent.com without one but
for SHARED, one of its names, with a budget of SHARED_BUDGET: OPEN, another of its names
without a budget, resolves to the same address (the lab's ghcontent server).
"""
import json
import os
import time

import pytest

import lab as labmod
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import _namegatectl
from test_dataplane import _binary
from test_isolation import events
from test_reload import reload_with

BUDGET = 256000                 # IP bytes per window
PER = 8                         # seconds: bytes leave the window 7 to 8 s after they went
RULE = "github.com"
SINK = "https://github.com/sink"
SHARED = "objects.githubusercontent.com"       # budgeted, at SHARED_ADDR
OPEN = "raw.githubusercontent.com"              # allowed, no budget, at SHARED_ADDR too
SHARED_ADDR = "203.0.113.13"
SHARED_BUDGET = 64000
POLICY = {"allow": ["github.com", "*.githubusercontent.com"],
          "budgets": [{"host": RULE, "upload": "256kB", "per": f"{PER}s"},
                      {"host": SHARED, "upload": "64kB", "per": f"{PER}s"}]}


@pytest.fixture(scope="module")
def lab(request):
    ctl = _namegatectl()
    if ctl:
        os.environ.setdefault("NAMEGATECTL_BIN", ctl)
    vms = labmod.default_vms(2)
    for v in vms:
        v.policy = "up"
    lab = labmod.Lab(mode="namegate", vms=vms, namegate_cmd=[_binary(), "-c", "{config}"],
                     policies={"up": POLICY})
    request.addfinalizer(lab.teardown)      # registered first: runs even if setup fails
    return lab.setup()


def budget_metrics(lab, rule=RULE):
    """{(metric, vm): value} of the two budget gauges for rule, from GET /metrics."""
    text = lab.metrics()
    assert text is not None, "GET /metrics failed"
    out = {}
    for m in ("used", "limit"):
        name = f"namegate_vm_budget_{m}_bytes"
        assert f"# TYPE {name} gauge" in text and f"# HELP {name} " in text
        for vm in ("vm1", "vm2"):
            key = f'{name}{{vm="{vm}",rule="{rule}"}} '
            line = next((l for l in text.splitlines() if l.startswith(key)), None)
            assert line is not None, f"no {key.strip()} in /metrics"
            out[(m, vm)] = int(line.split()[-1])
    return out


def used(lab, vm, rule=RULE):
    return budget_metrics(lab, rule)[("used", vm)]


def upload(lab, vm, size, timeout=20, url=SINK):
    """POST size bytes to the sink from vm: (curl result, the server's upload events)."""
    before = len(lab.server_events(event="upload"))
    r = lab.curl(vm, url, data="x" * size, timeout=timeout, args=["-H", "Expect:"])
    # the server logs an upload when its read ends, cut or not: wait for that line. A cut
    # ends it at namegate's RST; if that RST is lost on the lab's bridge, at the sink's
    # 15 s read timeout, so wait past that (the test judges the bytes, not the timing)
    wait_until(lambda: len(lab.server_events(event="upload")) > before, 20,
               "the sink to log the upload")
    return r, lab.server_events(event="upload")[before:]


def wait_freed(lab, vm, rule=RULE, limit=BUDGET):
    """Until vm's window has let its bytes out (no more than PER + a tick)."""
    wait_until(lambda: used(lab, vm, rule) < limit, PER + 4, f"{vm}'s budget window to free",
               step=0.3)


def test_limits_published_per_vm(lab):
    """Every VM of the policy has the rule's series, limit BUDGET, before it sends."""
    m = budget_metrics(lab)
    assert m[("limit", "vm1")] == BUDGET and m[("limit", "vm2")] == BUDGET
    assert m[("used", "vm1")] < BUDGET and m[("used", "vm2")] < BUDGET


def test_small_upload_passes_and_is_counted_to_its_vm(lab):
    """vm2 sends 20 kB: it all arrives, and vm2's window (only) grows by about that."""
    wait_freed(lab, "vm2")
    before = budget_metrics(lab)
    r, ups = upload(lab, "vm2", 20000)
    assert r.http_code == 200, r.stderr
    assert [u["received"] for u in ups] == [20000]
    wait_until(lambda: used(lab, "vm2") - before[("used", "vm2")] >= 20000, 5,
               "vm2's used bytes to count the upload", step=0.3)
    after = budget_metrics(lab)
    grown = after[("used", "vm2")] - before[("used", "vm2")]
    # IP bytes: the body, HTTP and TLS framing, TCP/IP headers, the handshake's share
    assert 20000 <= grown < 40000, grown
    assert after[("used", "vm1")] == before[("used", "vm1")], "vm2's bytes charged to vm1"


def test_warning_at_80_percent_without_cut(lab):
    """vm2 climbs past 80 % but not 100 %: one warning event, nothing cut or refused."""
    wait_freed(lab, "vm2")
    wait_until(lambda: used(lab, "vm2") == 0, PER + 4, "vm2's window to empty", step=0.3)
    warned = len(events(lab, event="budget", vm="vm2", state="warning"))
    with nc.Delta(lab) as d:
        r, ups = upload(lab, "vm2", int(BUDGET * 0.82))
        assert r.http_code == 200, r.stderr
        assert ups[0]["received"] == int(BUDGET * 0.82)
        wait_until(lambda: len(events(lab, event="budget", vm="vm2", state="warning")) >
                   warned, 5, "a budget warning event for vm2")
    assert d[nc.blocked("vm2", "budget")] == 0
    w = events(lab, event="budget", vm="vm2", state="warning")[-1]
    assert w["rule"] == RULE and w["limit"] == BUDGET and w["per"] == PER
    assert BUDGET * 0.8 <= w["used"] < BUDGET
    assert not events(lab, event="budget", vm="vm2", state="exhausted")


def test_upload_cut_at_budget_then_refused_until_window_frees(lab):
    """vm1 uploads 4 MB through a 256 kB budget: cut at the budget (the server got at most
    the budget), charged to vm1 and the rule; a new connection is refused while the window
    is spent, even after a reload, vm2 is untouched, and once the window frees vm1
    connects again."""
    wait_freed(lab, "vm1")
    size = 4 << 20
    budget = nc.blocked("vm1", "budget")
    with nc.Delta(lab) as d:
        r, ups = upload(lab, "vm1", size)
        assert r.returncode != 0 and r.http_code == 0, "the upload must not complete"
        d.wait({budget: 1})
    got = ups[0]["received"]
    print(f"\nRESULT budget_upload_sent={size} budget_limit={BUDGET} server_received={got}")
    assert got <= BUDGET, f"the server received {got} bytes past a {BUDGET}-byte budget"
    assert got < size // 8
    # the window: the budget and at most the datagram that crossed it
    wait_until(lambda: used(lab, "vm1") >= BUDGET, 5, "vm1's used bytes to reach the limit",
               step=0.3)
    m = budget_metrics(lab)
    assert BUDGET <= m[("used", "vm1")] <= BUDGET + 70000, m
    print(f"RESULT budget_used_vm1={m[('used', 'vm1')]}")
    ex = wait_until(lambda: events(lab, event="budget", vm="vm1", state="exhausted"), 5,
                    "a budget exhausted event for vm1")[-1]
    assert ex["rule"] == RULE and ex["used"] >= BUDGET and ex["limit"] == BUDGET
    assert events(lab, event="budget", vm="vm1", state="warning"), "the 80 % event"
    cut = [e for e in events(lab, event="block", vm="vm1", reason="budget")]
    assert cut, "a block event with reason budget for vm1"
    # spent: a new connection through the rule is refused at once
    with nc.Delta(lab) as d:
        r = lab.curl("vm1", "https://github.com/", timeout=5)
        assert r.http_code == 0, "vm1 connected through a spent budget"
        d.wait({budget: 1})
    assert d[nc.blocked("vm2", "budget")] == 0
    # the neighbour, same policy and rule, has its own window
    r = lab.curl("vm2", "https://github.com/")
    assert r.http_code == 200, r.stderr
    assert used(lab, "vm2") < BUDGET
    # a reload keeps what was spent: same host and window, so the same window
    assert "in force" in reload_with(lab)
    assert used(lab, "vm1") >= BUDGET
    with nc.Delta(lab) as d:
        r = lab.curl("vm1", "https://github.com/", timeout=5)
        assert r.http_code == 0, "a reload gave vm1 its budget back"
        d.wait({budget: 1})
    # freed as the bytes leave the window: an event, and connections work again
    wait_freed(lab, "vm1")
    wait_until(lambda: events(lab, event="budget", vm="vm1", state="available"), 5,
               "a budget available event for vm1")
    r = lab.curl("vm1", "https://github.com/")
    assert r.http_code == 200, r.stderr
    r, ups = upload(lab, "vm1", 10000)
    assert r.http_code == 200 and ups[0]["received"] == 10000, r.stderr


def test_host_without_budget_is_not_counted(lab):
    """*.githubusercontent.com has no budget: a large upload there passes whole."""
    time.sleep(1.2)             # a tick of the main lcore: earlier tests' bytes are in
    before = budget_metrics(lab)
    before_n = len(lab.server_events(event="upload"))
    r = lab.curl("vm1", "https://raw.githubusercontent.com/sink", data="y" * (1 << 20),
                 args=["-H", "Expect:"])
    assert r.http_code == 200, r.stderr
    wait_until(lambda: len(lab.server_events(event="upload")) > before_n, 10,
               "the sink to log the upload")
    assert lab.server_events(event="upload")[-1]["received"] == 1 << 20
    time.sleep(1.2)             # a tick: nothing new to count, the window only shrinks
    assert used(lab, "vm1") <= before[("used", "vm1")]


def test_a_grant_keeps_every_budget_and_its_window(lab):
    """A grant gives vm1 a policy of its own; its budget stays the file's, with the bytes
    already in its window, and an upload past it is still cut. When the grant is revoked
    the window is the same again (on the code before: vm1's budget vanished with the grant,
    and came back empty)."""
    wait_freed(lab, "vm1")
    r, _ = upload(lab, "vm1", 150000)
    assert r.http_code == 200, r.stderr
    wait_until(lambda: used(lab, "vm1") >= 150000, 5, "vm1's upload to be counted", step=0.3)
    spent = used(lab, "vm1")
    cp = lab.namegatectl("grant", "vm1", "evil.test:443", "--for", "10m", "--json")
    assert cp.returncode == 0, cp.stderr
    gid = json.loads(cp.stdout)["id"]
    try:
        m = budget_metrics(lab)
        assert m[("limit", "vm1")] == BUDGET, "the grant switched vm1's budget off"
        assert m[("used", "vm1")] >= spent - 20000, "the grant emptied vm1's window"
        r, ups = upload(lab, "vm1", 1 << 20)
        assert r.http_code == 0, "vm1 uploaded a megabyte past its budget under a grant"
        assert ups[0]["received"] <= BUDGET
    finally:
        assert lab.namegatectl("revoke", str(gid)).returncode == 0
    # the cut upload's bytes (over 100 kB, sent within the last seconds) stay in the window
    # for at least 7 s; a window started again would hold none
    assert used(lab, "vm1") >= 50000, "the revoke emptied vm1's window"


def test_a_shared_address_counts_in_the_budget_of_every_name_bound_to_it(lab):
    """vm1 resolves OPEN (no budget) and then SHARED (budgeted), both at SHARED_ADDR, and
    uploads a megabyte by OPEN: the bytes go to SHARED's address, so they count in its
    budget and the upload is cut there (on the code before, the name resolved first
    decided: the upload went through whole)."""
    assert lab.dig("vm1", OPEN).addresses == [SHARED_ADDR]
    assert lab.dig("vm1", SHARED).addresses == [SHARED_ADDR]
    wait_freed(lab, "vm1", SHARED, SHARED_BUDGET)
    size = 1 << 20
    budget = nc.blocked("vm1", "budget")
    with nc.Delta(lab) as d:
        r, ups = upload(lab, "vm1", size, url=f"https://{OPEN}/sink")
        assert r.http_code == 0, f"vm1 uploaded {size} bytes by {OPEN} past {SHARED}'s budget"
        d.wait({budget: 1})
    got = ups[0]["received"]
    print(f"\nRESULT shared_addr_upload_sent={size} budget_limit={SHARED_BUDGET} "
          f"server_received={got}")
    assert got <= SHARED_BUDGET, f"the server received {got} bytes past the budget"
    wait_until(lambda: used(lab, "vm1", SHARED) >= SHARED_BUDGET, 5,
               f"vm1's {SHARED} budget to count the upload", step=0.3)


def test_icmp_to_a_budgeted_address_counts_and_is_refused_once_spent(lab):
    """ICMP goes to the kernel, not through a flow; what vm1 sends to SHARED_ADDR counts in
    SHARED's budget all the same: 20 echoes of 1400 bytes move vm1's used bytes by their IP
    bytes, and once the budget is spent echoes are refused (reason budget) and none comes
    back. vm2, with no budgeted name at the address, is answered meanwhile. On the code
    before, the echoes were not counted and were answered past the budget."""
    n, size = 20, 1400
    ip_bytes = n * (20 + 8 + size)
    assert lab.dig("vm1", OPEN).addresses == [SHARED_ADDR]
    assert lab.dig("vm1", SHARED).addresses == [SHARED_ADDR]
    wait_until(lambda: used(lab, "vm1", SHARED) == 0, PER + 4,
               f"vm1's {SHARED} window to empty", step=0.3)
    p = lab.ping("vm1", SHARED_ADDR, count=n, timeout=2.0, size=size)
    assert p.returncode == 0, p.stdout + p.stderr
    wait_until(lambda: used(lab, "vm1", SHARED) >= ip_bytes, 5,
               f"vm1's {SHARED} budget to count {ip_bytes} bytes of echoes", step=0.3)
    grown = used(lab, "vm1", SHARED)
    print(f"\nRESULT icmp_echo_ip_bytes={ip_bytes} budget_used={grown}")
    assert grown < ip_bytes + 3000, grown      # the requests only, not the replies
    # spent by an upload: echoes are refused from then on, each counted as reason budget
    r, _ = upload(lab, "vm1", 1 << 20, url=f"https://{OPEN}/sink")
    assert r.http_code == 0, "the upload went through the spent budget"
    wait_until(lambda: used(lab, "vm1", SHARED) >= SHARED_BUDGET, 5,
               f"vm1's {SHARED} budget to be spent", step=0.3)
    with nc.Delta(lab) as d:
        p = lab.ping("vm1", SHARED_ADDR, count=3, timeout=1.0, size=size)
        d.wait({nc.blocked("vm1", "budget"): 3})
    assert p.returncode != 0 and p.stdout.count("no reply from") == 3, p.stdout
    cut = events(lab, event="block", vm="vm1", reason="budget")
    assert any(e.get("dst") == SHARED_ADDR for e in cut), cut[-3:]
    # the neighbour at the same address, without a budgeted name there: answered
    assert lab.dig("vm2", OPEN).addresses == [SHARED_ADDR]
    p = lab.ping("vm2", SHARED_ADDR, count=3, timeout=2.0, size=size)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_neighbour_at_the_same_address_has_its_own_bindings_and_window(lab):
    """vm1's binding of SHARED is vm1's: vm2, which resolved only OPEN, uploads past
    SHARED's budget to the same address, whole. Once vm2 resolves SHARED too its bytes
    there count, in vm2's window only."""
    assert lab.dig("vm2", OPEN).addresses == [SHARED_ADDR]
    r, ups = upload(lab, "vm2", 100000, url=f"https://{OPEN}/sink")
    assert r.http_code == 200, r.stderr
    assert ups[0]["received"] == 100000
    assert lab.dig("vm2", SHARED).addresses == [SHARED_ADDR]
    wait_freed(lab, "vm2", SHARED, SHARED_BUDGET)
    before = budget_metrics(lab, SHARED)
    r, ups = upload(lab, "vm2", 20000, url=f"https://{OPEN}/sink")
    assert r.http_code == 200 and ups[0]["received"] == 20000, r.stderr
    wait_until(lambda: used(lab, "vm2", SHARED) - before[("used", "vm2")] >= 20000, 5,
               f"vm2's {SHARED} budget to count the upload", step=0.3)
    grown = used(lab, "vm2", SHARED) - before[("used", "vm2")]
    assert 20000 <= grown < 40000, grown
