"""What operators see (SPEC s6) from the real daemon: the Prometheus endpoint and the
event log move for the right VM and reason."""
import json
import re

from lab_net import wait_until
from test_dataplane import start

import pytest


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def scrape(lab):
    text = lab.metrics()
    assert text is not None, "GET /metrics failed"
    return {k: int(v) for k, v in re.findall(r"^(namegate_\S+) (\d+)$", text, re.M)}


def events(lab):
    """The event log's lines so far (a last line the daemon is still writing is left out:
    only lines that end in a newline are whole)."""
    path = lab_events_path(lab)
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]


def lab_events_path(lab):
    import lab_namegate
    return lab_namegate.build_config(lab, lab.policies, lab.config_overrides)["events"]


def test_metrics_names_and_counters_move_for_the_right_vm(ng):
    before = scrape(ng)
    for key in ['namegate_vm_egress_packets_total{vm="vm1",verdict="allowed"}',
                'namegate_vm_blocked_total{vm="vm2",reason="dns_denied"}',
                'namegate_vm_dns_queries_total{vm="vm1",verdict="blocked"}',
                'namegate_vm_bindings{vm="vm1"}', 'namegate_vm_flows{vm="vm2"}',
                'namegate_port_packets_total{port="vm",dir="rx"}',
                'namegate_policy_generation']:
        assert key in before, key
    assert ng.dig("vm2", "evil.test").rcode == "REFUSED"
    assert ng.curl("vm1", "https://pypi.org/").ok
    after = scrape(ng)
    d = {k: after[k] - before.get(k, 0) for k in after}
    assert d['namegate_vm_blocked_total{vm="vm2",reason="dns_denied"}'] == 1
    assert d['namegate_vm_blocked_total{vm="vm1",reason="dns_denied"}'] == 0
    assert d['namegate_vm_egress_packets_total{vm="vm1",verdict="allowed"}'] >= 3
    assert after['namegate_vm_bindings{vm="vm1"}'] >= 1


def test_event_log_has_one_line_per_block(ng):
    assert ng.dig("vm1", "collect.evil.test").rcode == "REFUSED"
    assert ng.curl("vm1", "https://203.0.113.20/", insecure=True).outcome == \
        "connection refused"
    def blocks():
        evs = events(ng)
        dns = [e for e in evs if e.get("event") == "block" and e.get("vm") == "vm1"
               and e.get("reason") == "dns_denied" and e.get("name") == "collect.evil.test"]
        tcp = [e for e in evs if e.get("event") == "block" and e.get("vm") == "vm1"
               and e.get("reason") == "no_binding" and e.get("dst") == "203.0.113.20:443"]
        return (evs, dns, tcp) if dns and tcp else None
    try:
        evs, dns, tcp = wait_until(blocks, what="the two block events in the event log")
    except AssertionError as e:
        raise AssertionError(f"{e}: {json.dumps(events(ng)[-10:])}") from None
    assert evs[0]["event"] == "start"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", tcp[0]["ts"])
    assert tcp[0]["proto"] == "tcp"


def ctl(lab, *args):
    import os
    import subprocess
    binary = os.environ.get("NAMEGATECTL_BIN", "build/control/namegatectl")
    sock = lab_namegate_cfg(lab)["control_socket"]
    return subprocess.run([binary, "-s", sock, *args], capture_output=True, text=True,
                          timeout=20)


def lab_namegate_cfg(lab):
    import lab_namegate
    return lab_namegate.build_config(lab, lab.policies, lab.config_overrides)


def test_namegatectl_against_the_daemon(ng):
    assert ng.curl("vm1", "https://pypi.org/").ok
    st = json.loads(ctl(ng, "status", "--json").stdout)
    assert st["vms"] == 3 and st["generation"] >= 1 and st["pid"] > 0
    stats = json.loads(ctl(ng, "stats", "vm1", "--json").stdout)
    vm1 = stats["vms"][0]
    assert vm1["vm"] == "vm1" and vm1["egress"]["allowed"]["packets"] > 0
    table = ctl(ng, "stats").stdout
    assert "vm1" in table and "vm2" in table
    b = json.loads(ctl(ng, "bindings", "vm1", "--json").stdout)
    assert {"name": "pypi.org", "addr": "203.0.113.10"} in \
        [{"name": x["name"], "addr": x["addr"]} for x in b["bindings"]]
    assert all(0 < x["ttl"] <= 86400 for x in b["bindings"])
    assert "pypi.org" in ctl(ng, "bindings", "vm1").stdout
    flows = ctl(ng, "flows", "vm1", "--json")
    assert flows.returncode == 0 and "flows" in json.loads(flows.stdout)
    allow = ctl(ng, "check", "vm1", "pypi.org:443")
    assert allow.returncode == 0 and allow.stdout.startswith("allow pypi.org:443 for vm1")
    block = ctl(ng, "check", "vm1", "evil.test:443")
    assert block.returncode == 1 and block.stdout.startswith("block")
    assert ctl(ng, "check", "nosuchvm", "pypi.org").returncode == 2
    r = ctl(ng, "reload")
    assert r.returncode == 0, r.stderr
    assert json.loads(ctl(ng, "status", "--json").stdout)["generation"] == st["generation"] + 1
    ev = ctl(ng, "events")
    assert ev.returncode == 0 and '"event":"policy"' in ev.stdout


def test_query_tools_against_the_daemon(ng):
    """bindings across VMs, events through filters, check --json and the socket from
    NAMEGATE_SOCKET, against the real daemon's replies."""
    import os
    import subprocess
    assert ng.curl("vm1", "https://pypi.org/").ok
    assert ng.dig("vm2", "evil.test").rcode == "REFUSED"
    rows = [ln.split() for ln in ctl(ng, "bindings").stdout.splitlines()]
    assert rows[0] == ["VM", "NAME", "ADDRESS", "TTL(s)", "PORTS"]
    assert ["vm1", "pypi.org", "203.0.113.10"] in [r[:3] for r in rows[1:]], rows
    b = json.loads(ctl(ng, "bindings", "--name", "PyPI.org", "--json").stdout)["bindings"]
    assert b and all(x["name"] == "pypi.org" and x["vm"] in ("vm1", "vm2", "vm3") for x in b)
    assert json.loads(ctl(ng, "bindings", "--name", "*.pypi.org", "--json").stdout) == \
        {"bindings": []}
    ev = wait_until(lambda: ctl(ng, "events", "--vm", "vm2", "--reason", "dns_denied",
                                "--name", "evil.test", "--last", "1").stdout or None,
                    what="vm2's dns_denied event through the filters")
    e = json.loads(ev)
    assert (e["vm"], e["reason"], e["name"], ev.count("\n")) == ("vm2", "dns_denied",
                                                                 "evil.test", 1)
    st = json.loads(ctl(ng, "status", "--json").stdout)
    online = ctl(ng, "check", "--json", "vm1", "pypi.org:443")
    binary = os.environ.get("NAMEGATECTL_BIN", "build/control/namegatectl")
    offline = subprocess.run([binary, "check", "-c", st["config"], "--json", "vm1",
                              "pypi.org:443"], capture_output=True, text=True, timeout=20)
    assert online.returncode == 0 and online.stdout == offline.stdout, offline.stderr
    doc = json.loads(online.stdout)
    assert doc["verdict"] == "allow" and doc["reason"] == "allow_pattern"
    assert doc["rule"]["pattern"].startswith("pypi.org") and doc["rule"]["line"] > 0
    env = dict(os.environ, NAMEGATE_SOCKET=lab_namegate_cfg(ng)["control_socket"])
    p = subprocess.run([binary, "vms"], capture_output=True, text=True, timeout=20, env=env)
    assert (p.returncode, p.stdout) == (0, "vm1\nvm2\nvm3\n"), p.stderr
    flows = ctl(ng, "flows", "--last", "1", "--json")
    if "flow_log" not in st:        # a daemon that writes no flow log says so
        assert flows.returncode == 2 and "no flow log is configured" in flows.stderr
    else:
        assert flows.returncode == 0, flows.stderr


def test_suggest_lists_what_an_audit_vm_reached(ng):
    assert ng.curl("vm3", "https://evil.test/").ok          # vm3 is audited
    out = json.loads(ctl(ng, "suggest", "vm3", "--json").stdout)
    assert "evil.test" in out["allow"]
    assert "evil.test" in ctl(ng, "suggest", "vm3").stdout


def test_dpdk_telemetry_commands(ng):
    import subprocess
    assert ng.curl("vm1", "https://pypi.org/").ok
    cmds = "/namegate/vms\n/namegate/vm,vm1\n/namegate/bindings,vm1\n"
    cp = subprocess.run(["/usr/bin/python3", "/usr/bin/dpdk-telemetry.py", "-f", ng.prefix],
                        input=cmds, capture_output=True, text=True, timeout=30)
    replies = [json.loads(line) for line in re.findall(r"^\{.*\}$", cp.stdout, re.M)]
    got = {k: v for r in replies for k, v in r.items()}
    assert got["/namegate/vms"] == ["vm1", "vm2", "vm3"], cp.stdout
    assert got["/namegate/vm"]["egress_packets_allowed"] > 0
    assert got["/namegate/bindings"]["bindings"] >= 1


def test_every_metric_family_has_help_and_type_once(ng):
    """SPEC s8: the real endpoint, nft families included, reads as typed families."""
    text = ng.metrics()
    assert text is not None, "GET /metrics failed"
    helps, types, seen, closed = {}, {}, [], set()
    for line in text.splitlines():
        m = re.match(r"^# (HELP|TYPE) (\S+) (.+)$", line)
        if m:
            book = helps if m.group(1) == "HELP" else types
            assert m.group(2) not in book, f"second {m.group(1)} for {m.group(2)}"
            book[m.group(2)] = m.group(3)
            continue
        name = re.match(r"^([a-z_]+)", line).group(1)
        # a histogram's samples are its family's name with _bucket, _sum or _count
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if types.get(base) == "histogram":
            name = base
        assert name in helps and name in types, f"{name} sampled before its HELP/TYPE"
        assert types[name] in ("counter", "gauge", "summary", "histogram"), types[name]
        if seen and seen[-1] != name:
            closed.add(seen[-1])
        assert name not in closed, f"{name}'s samples are not grouped"
        seen.append(name)
    for family in ("namegate_vm_egress_packets_total", "namegate_drops_total",
                   "namegate_nft_elements", "namegate_nft_bind_latency_seconds",
                   "namegate_policy_generation"):
        assert family in types, family
