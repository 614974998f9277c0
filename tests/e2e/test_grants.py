"""Grants (issue 15) through the real daemon: namegatectl grant lets one VM reach a host
its policy blocks, live; revoking it, or its end, cuts the connections it let open and
refuses new ones; grants survive a restart and a reload through the state file, a
damaged file grants nothing; deny still wins; check names the grant; the gauge and the
event log follow."""
import json
import os
import re
import signal

import pytest

import lab_namegate
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import inet_capture
from test_dataplane import start
from test_reload import _HOLDER, data_sent

EVIL = "203.0.113.20"        # evil.test


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def ctl(lab, *args):
    cp = lab.namegatectl(*args)
    return cp.returncode, cp.stdout, cp.stderr


def cfg(lab):
    return lab_namegate.build_config(lab, lab.policies, lab.config_overrides)


def state_path(lab):
    return os.path.join(os.path.dirname(cfg(lab)["events"]), "grants.json")


def events(lab, kind):
    with open(cfg(lab)["events"]) as f:
        return [e for e in (json.loads(line) for line in f if line.endswith("\n"))
                if e.get("event") == kind]


def gauge(lab, vm):
    text = lab.metrics()
    assert text is not None and "# TYPE namegate_vm_grants gauge" in text, text
    m = re.search(r'^namegate_vm_grants\{vm="%s"\} (\d+)$' % vm, text, re.M)
    assert m, text
    return int(m.group(1))


def grant(lab, *args):
    rc, out, err = ctl(lab, "grant", *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def live(lab, vm=None):
    rc, out, err = ctl(lab, "grants", *([vm] if vm else []), "--json")
    assert rc == 0, err
    return json.loads(out)["grants"]


def blocked(lab, vm="vm1", host="evil.test"):
    return lab.dig(vm, host).rcode == "REFUSED" and not lab.curl(vm, f"https://{host}/",
                                                                    timeout=3).ok


def test_grant_opens_a_blocked_host_for_one_vm_and_revoke_cuts_it(ng):
    assert blocked(ng)
    g = grant(ng, "vm1", "evil.test", "--for", "10m", "--reason", "debugging a fetch")
    assert g["vm"] == "vm1" and g["host"] == "evil.test" and 590 <= g["left"] <= 600
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", g["until"])
    assert ng.curl("vm1", "https://evil.test/").ok
    assert blocked(ng, vm="vm2")                    # vm2's policy gets nothing from it
    assert gauge(ng, "vm1") == 1 and gauge(ng, "vm2") == 0
    assert "203.0.113.20" in ng.nft_list().stdout   # the slow path follows
    rc, out, _ = ctl(ng, "grants")
    assert rc == 0 and re.search(r"^%d\s+vm1\s+evil\.test\s+.*debugging a fetch$" % g["id"],
                                 out, re.M), out
    with ng.background("vm1", _HOLDER, (ng.ca_path, "evil.test", "pypi.org")) as holder:
        assert holder.line().strip() == "ready", holder.stderr()
        holder.send()
        assert holder.line().split() == ["evil.test=200", "pypi.org=200"]
        rc, out, err = ctl(ng, "revoke", str(g["id"]))
        assert rc == 0 and f"grant {g['id']} revoked" in out, err
        with inet_capture(ng) as cap:
            holder.send()
            assert holder.line().split() == ["evil.test=cut", "pypi.org=200"]
            cap.sync()
        assert not data_sent(cap, EVIL), "the request on the revoked connection went out"
    assert blocked(ng)
    # the binding the grant let vm1 learn is still in the table, and opens nothing now
    with nc.Delta(ng) as d:
        r = ng.curl("vm1", "https://evil.test/", resolve="evil.test:443:203.0.113.20",
                    timeout=3)
        d.wait({nc.blocked("vm1", "no_binding"): 1})
    assert not r.ok
    assert live(ng) == [] and gauge(ng, "vm1") == 0
    assert "203.0.113.20" not in ng.nft_list().stdout
    made = [e for e in events(ng, "grant") if e["id"] == g["id"]]
    ended = [e for e in events(ng, "grant_revoked") if e["id"] == g["id"]]
    assert made and made[0]["vm"] == "vm1" and made[0]["host"] == "evil.test"
    assert made[0]["reason"] == "debugging a fetch" and made[0]["until"] == g["until"]
    assert ended and ended[0]["vm"] == "vm1"


def _table(lab):
    """The table's kernel handle (a rebuild makes a new table, with a new handle) and the
    elements of each of its sets, by set name."""
    out = lab.sw_exec(["nft", "-a", "list", "table", "bridge", "namegate"]).stdout
    handle = re.search(r"^table bridge namegate \{ # handle (\d+)", out, re.M)
    sets = dict(re.findall(r"set (\w+) \{(.*?)\n\t\}", out, re.S))
    assert handle, out
    return int(handle.group(1)), sets


def test_a_grant_changes_only_its_vms_sets_not_the_table(ng):
    """A grant, and its revoke, refill the sets of the VM they concern and nothing else:
    the table stays (same kernel handle) and another VM's set keeps an element namegate
    never put there (a rebuild of the table would have dropped it)."""
    foreign = "198.51.100.77"
    assert ng.sw_exec(["nft", "add", "element", "bridge", "namegate", "vm2_v4addr",
                       "{ %s timeout 1h }" % foreign]).returncode == 0
    handle, sets = _table(ng)
    assert foreign in sets["vm2_v4addr"]
    g = grant(ng, "vm1", "evil.test", "--for", "10m")
    assert ng.dig("vm1", "evil.test").rcode == "NOERROR"
    wait_until(lambda: EVIL in _table(ng)[1]["vm1_v4addr"], what="the granted binding in nft")
    after, sets = _table(ng)
    assert after == handle and foreign in sets["vm2_v4addr"], "the grant rebuilt the table"
    rc, _, err = ctl(ng, "revoke", str(g["id"]))
    assert rc == 0, err
    wait_until(lambda: EVIL not in _table(ng)[1]["vm1_v4addr"], what="the binding gone")
    after, sets = _table(ng)
    assert after == handle and foreign in sets["vm2_v4addr"], "the revoke rebuilt the table"


def test_a_grant_ends_by_itself_and_cuts_what_it_opened(ng):
    g = grant(ng, "vm1", "evil.test:443", "--for", "6s")
    with ng.background("vm1", _HOLDER, (ng.ca_path, "evil.test")) as holder:
        assert holder.line().strip() == "ready", holder.stderr()
        holder.send()
        assert holder.line().split() == ["evil.test=200"]
        wait_until(lambda: live(ng) == [], timeout=15, what="the grant to expire")
        with inet_capture(ng) as cap:
            holder.send()
            assert holder.line().split() == ["evil.test=cut"]
            cap.sync()
        assert not data_sent(cap, EVIL), "the request on the expired grant's connection went out"
    assert blocked(ng)
    assert [e for e in events(ng, "grant_expired") if e["id"] == g["id"]]


def test_deny_in_the_policy_beats_a_grant(ng):
    grant(ng, "vm1", "upload.pypi.org", "--for", "5m")
    grant(ng, "vm1", "*.pypi.org", "--for", "5m")
    assert ng.dig("vm1", "upload.pypi.org").rcode == "REFUSED"
    assert not ng.curl("vm1", "https://upload.pypi.org/", timeout=3).ok
    rc, out, _ = ctl(ng, "check", "vm1", "upload.pypi.org:443")
    assert rc == 1 and "policies.python.deny" in out, out
    for g in live(ng):
        assert ctl(ng, "revoke", str(g["id"]))[0] == 0


def test_check_names_the_grant_that_decides(ng):
    g = grant(ng, "vm1", "evil.test", "--for", "20m", "--reason", "pip needs evil.test")
    rc, out, _ = ctl(ng, "check", "vm1", "evil.test:443")
    until = g["until"][11:19]                       # HH:MM:SS; whole minutes as HH:MM
    shown = until[:5] if until.endswith(":00") else until
    assert rc == 0 and out.strip() == (f'allow evil.test:443 for vm1 by grant {g["id"]} '
                                       f'until {shown}Z, "pip needs evil.test"'), out
    rc, out, _ = ctl(ng, "check", "vm2", "evil.test:443")
    assert rc == 1 and "grant" not in out
    assert ctl(ng, "check", "vm1", "pypi.org:443")[1].startswith(
        "allow pypi.org:443 for vm1: policies.python.allow")
    assert ctl(ng, "revoke", str(g["id"]))[0] == 0


def test_bad_requests_are_refused_with_a_reason(ng):
    cases = [
        (("grant", "vm9", "evil.test", "--for", "1h"), "unknown VM 'vm9'"),
        (("grant", "vm1", "*", "--for", "1h"), "bad host pattern"),
        (("grant", "vm1", "*.com", "--for", "1h"), "bad host pattern"),
        (("grant", "vm1", "evil.test:99999", "--for", "1h"), "bad host pattern"),
        (("grant", "vm1", "evil.test", "--for", "31d"), "longer than 30d"),
        (("grant", "vm1", "evil.test", "--for", "99999999999999999999"), "longer than 30d"),
        (("grant", "vm1", "evil.test", "--for", "0s"), "zero"),
        (("grant", "vm1", "evil.test", "--for", "soon"), "bad duration"),
        (("grant", "vm1", "evil.test", "--for", "1h", "--reason", "x" * 201), "longer than"),
        (("grant", "vm1", "evil.test", "--for", "1h", "--reason", "a\nb"), "one line"),
        (("grant", "vm1", "evil.test"), "usage"),
        (("revoke", "abc"), "bad grant id"),
        (("revoke", "999999"), "no live grant 999999"),
        (("grants", "vm9"), "unknown VM 'vm9'"),
    ]
    for args, why in cases:
        rc, out, err = ctl(ng, *args)
        assert rc == 2 and out == "" and why in err, (args, rc, out, err)
    assert live(ng) == []
    assert blocked(ng)


def _restart(lab):
    lab.stop_namegate()
    lab.start_namegate()


def test_grants_survive_a_restart_and_a_reload(ng):
    g = grant(ng, "vm1", "evil.test", "--for", "15m", "--reason", "survives")
    _restart(ng)
    assert "grants: 1 in force" in ng.namegate_output()[1]
    assert [x["id"] for x in live(ng)] == [g["id"]]
    assert ng.curl("vm1", "https://evil.test/").ok
    assert gauge(ng, "vm1") == 1
    err_before = len(ng.namegate_output()[1])
    ng.daemon.signal(signal.SIGHUP)
    wait_until(lambda: "in force" in ng.namegate_output()[1][err_before:], timeout=15,
               what="the reload")
    assert [x["id"] for x in live(ng)] == [g["id"]]
    assert ng.curl("vm1", "https://evil.test/").ok
    assert ctl(ng, "revoke", str(g["id"]))[0] == 0
    assert blocked(ng)
    # ids are never reused after a restart
    _restart(ng)
    assert grant(ng, "vm1", "evil.test", "--for", "1m")["id"] > g["id"]
    for x in live(ng):
        ctl(ng, "revoke", str(x["id"]))


def test_damaged_state_file_grants_nothing_and_the_daemon_starts(ng):
    grant(ng, "vm1", "evil.test", "--for", "15m")
    ng.stop_namegate()
    path = state_path(ng)
    text = open(path).read()
    with open(path, "w") as f:
        f.write(text[:len(text) // 2])             # torn, as a disk that lied would leave it
    ng.start_namegate()
    err = ng.namegate_output()[1]
    assert "grants: " + path in err and "granting nothing (fail closed)" in err, err
    assert os.path.exists(path + ".damaged")
    damaged = events(ng, "grants_damaged")
    assert damaged and damaged[-1]["file"] == path and "moved to" in damaged[-1]["error"]
    assert live(ng) == [] and gauge(ng, "vm1") == 0
    assert blocked(ng)
    assert ng.curl("vm1", "https://pypi.org/").ok   # the rest works as ever
    g = grant(ng, "vm1", "evil.test", "--for", "1m")   # and new grants are written again
    assert json.load(open(path))["grants"][0]["id"] == g["id"]
    assert ctl(ng, "revoke", str(g["id"]))[0] == 0
