"""The fleet lab (issue 27): two namegate gateways of one shard and one etcd with auth on,
in the lab's switch namespace (its own loopback, its own ports). Gateway B fronts the lab's
VMs (net_af_packet on the lab's veths); gateway A has the same VMs behind net_null ports,
so what it shows is its policy, as `namegatectl check` reads it. Operators write with their
own credentials; each gateway logs in as its own etcd user, which may not write a grant.

It asserts outcomes and prints the timings as RESULT lines (never asserted: the machine is
shared): fleet_grant_apply_ms, fleet_revoke_cut_ms, fleet_bad_bundles_refused (of 3),
fleet_good_bundle_ms, fleet_outage_answers_changed (of 20), fleet_grant_fail_s.
Every process and namespace is removed on exit, also when a test fails.
"""
import calendar
import copy
import json
import os
import pwd
import re
import shutil
import subprocess
import threading
import time

import pytest

import lab as labmod
import lab_namegate
from etcd_lab import GATEWAY, OPERATOR, Etcd, free_port
from lab_net import wait_until
from test_dataplane import _binary, _vms
from test_dataplane import _policies as _dataplane_policies
from test_reload import _HOLDER

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
    pytest.mark.skipif(shutil.which("etcd") is None or shutil.which("minisign") is None,
                       reason="needs etcd-server and minisign"),
]

FLEET = "labfleet"
SHARD = "rack1"
PREFIX = f"/namegate/{FLEET}"
GW_A = ("gwa", "gwapw")
GW_B = ("gwb", "gwbpw")
FUTURE = "2099-01-01T00:00:00Z"
PAST = "2001-01-01T00:00:00Z"


def _policies():
    """The data plane tests' policies, and names vm1 may ask an operator for."""
    p = _dataplane_policies()
    p["python"]["ask"] = ["evil.test", "*.ask.test"]
    return p


def sign(keydir, path, serial, key="k1", until=FUTURE):
    subprocess.run(["minisign", "-S", "-W", "-s", os.path.join(keydir, f"{key}.sec"),
                    "-m", path, "-t", f"namegate-bundle fleet={FLEET} shard={SHARD} "
                    f"serial={serial} not_after={until}"], check=True, capture_output=True)


class Fleet:
    """The lab (gateway B), gateway A beside it, etcd, the keys and the operator's files."""

    def __init__(self, request):
        self.dir = None
        self.lab = None
        self.etcd = None
        self.a = None
        request.addfinalizer(self.teardown)

    def start(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="ng-fleet-")
        for k in ("k1", "k2"):
            subprocess.run(["minisign", "-G", "-W", "-p", self.path(f"{k}.pub"),
                            "-s", self.path(f"{k}.sec")], check=True, capture_output=True)
        for user, pw in (GW_A, GW_B, OPERATOR):
            with open(self.path(f"{user}.pw"), "w") as f:
                f.write(pw + "\n")
        self.port = free_port()
        self.lab = labmod.Lab(mode="namegate", vms=_vms(), policies=_policies(),
                              namegate_cmd=[_binary(), "-c", "{config}"],
                              config=self.fleet_keys(GW_B, "b"))
        self.lab.setup()
        self.etcd = Etcd(ns=self.lab.sw_ns)
        self.etcd.client = f"http://127.0.0.1:{self.port}"
        self.etcd.start()
        self.etcd.setup_auth(prefix=PREFIX, gateways=(GW_A, GW_B), per_gateway=True)
        self.start_a()
        self.wait_connected(self.ctl_b)
        self.wait_connected(self.ctl_a)
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def fleet_keys(self, user, tag):
        return {"fleet": {"name": FLEET, "shard": SHARD, "gateway": user[0],
                          "bundle_keys": [self.path("k1.pub")],
                          "cache": self.path(f"cache-{tag}.yaml"),
                          "endpoints": [f"http://127.0.0.1:{self.port}"],
                          "user": user[0], "password_file": self.path(f"{user[0]}.pw")},
                "grants": {"state": self.path(f"grants-{tag}.json")},
                "events": self.path(f"events-{tag}.jsonl")}

    def config_a(self):
        """Gateway A: the lab's policies and VMs, net_null ports, files of its own."""
        cfg = lab_namegate.build_config(self.lab, self.lab.policies,
                                        self.fleet_keys(GW_A, "a"))
        cfg["dataplane"].update(vm_port="net_null0", uplink_port="net_null1",
                                eal=["--no-huge", "-m", "512", "--no-pci", "--file-prefix",
                                     self.lab.prefix + "a"])
        cfg["slow_path"] = {"enabled": False}
        cfg["metrics"] = "127.0.0.1:9478"
        cfg["control_socket"] = self.path("a.sock")
        return cfg

    def start_a(self):
        path = self.path("a.yaml")
        with open(path, "w") as f:
            f.write(lab_namegate.to_yaml(self.config_a()) + "\n")
        self.a = lab_namegate.Daemon([_binary(), "-c", path], self.lab.sw_ns,
                                     self.path("a.out"), self.path("a.err"))
        self.a.start(dict(labmod.CLEAN_ENV))
        wait_until(lambda: self.ctl_a("status")[0] == 0 or not self.a.alive(), 60,
                   "gateway A to start")
        assert self.a.alive(), (self.a.proc.returncode, open(self.path("a.err")).read()[-2000:],
                                open(self.path("a.out")).read()[-2000:])

    def ctl(self, sock, *args, operator=False, timeout=15):
        env = dict(labmod.CLEAN_ENV)
        if operator:
            env.update(NAMEGATE_FLEET_USER=OPERATOR[0],
                       NAMEGATE_FLEET_PASSWORD_FILE=self.path(f"{OPERATOR[0]}.pw"))
        ctl = os.environ.get("NAMEGATECTL_BIN", "namegatectl")
        cp = subprocess.run(["ip", "netns", "exec", self.lab.sw_ns, ctl, "-s", sock, *args],
                            capture_output=True, text=True, env=env, timeout=timeout)
        return cp.returncode, cp.stdout, cp.stderr

    def ctl_a(self, *args, **kw):
        return self.ctl(self.path("a.sock"), *args, **kw)

    def ctl_b(self, *args, **kw):
        sock = lab_namegate.build_config(self.lab, self.lab.policies,
                                         self.lab.config_overrides)["control_socket"]
        return self.ctl(sock, *args, **kw)

    def fleet_view(self, ctl):
        rc, out, err = ctl("fleet", "--json")
        assert rc == 0, err
        return json.loads(out)

    def wait_connected(self, ctl, up=True, timeout=30):
        wait_until(lambda: self.fleet_view(ctl)["connected"] == up, timeout,
                   f"the gateway's store to be {'reached' if up else 'lost'}")

    def status_of(self, ctl, gateway):
        for s in self.fleet_view(ctl)["gateways"]:
            if s.get("gateway") == gateway:
                return s
        return None

    def policy_info(self, port):
        cp = self.lab.sw_exec(["curl", "-sS", "--max-time", "5",
                               f"http://127.0.0.1:{port}/metrics"])
        m = re.search(r'^namegate_policy_info\{serial="(\d+)",digest="(\w*)"\} 1$',
                      cp.stdout, re.M)
        if m is None:
            return None
        # where it came from: the fleet command's (the metric's labels are the contract's)
        rc, out, _ = (self.ctl_a if port == 9478 else self.ctl_b)("fleet", "--json")
        return (int(m.group(1)), m.group(2), json.loads(out)["source"] if rc == 0 else None)

    def publish(self, text, serial, key="k1", until=FUTURE):
        path = self.path(f"bundle-{serial}-{key}-{until[:4]}.yaml")
        with open(path, "w") as f:
            f.write(text)
        sign(self.dir, path, serial, key=key, until=until)
        rc, out, err = self.ctl_a("publish", path, operator=True)
        assert rc == 0, err
        return time.monotonic()

    def bundle_text(self, policies):
        cfg = lab_namegate.build_config(self.lab, policies, None)
        return lab_namegate.to_yaml(cfg) + "\n"

    def teardown(self):
        if self.a is not None:
            self.a.stop(5)
        if self.etcd is not None:
            self.etcd.remove()
        if self.lab is not None:
            # gateway A's DPDK runtime directory: the lab removes only its own prefix's
            shutil.rmtree(os.path.join("/run/dpdk", self.lab.prefix + "a"), ignore_errors=True)
            self.lab.teardown()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def fleet(request):
    return Fleet(request).start()


def check(ctl, vm, host):
    rc, out, err = ctl("check", vm, host)
    assert rc in (0, 1), err
    return rc, out.strip()


def test_a_gateway_may_not_write_a_grant(fleet):
    r = fleet.etcd.ctl("put", PREFIX + "/grants/forged", "{}", user=GW_A, check=False)
    assert r.strip() == ""      # nothing written: etcdctl says why on stderr
    assert fleet.etcd.ctl("get", PREFIX + "/grants/forged").strip() == ""
    # ...and may write its status: both gateways' are in the store; but not another's
    names = {s.get("gateway") for s in fleet.fleet_view(fleet.ctl_a)["gateways"]}
    assert names >= {"gwa", "gwb"}, names
    for key in ("/status/gwb", "/pending/gwb/1"):
        fleet.etcd.ctl("put", PREFIX + key, "{}", user=GW_A, check=False)
        assert fleet.etcd.ctl("get", PREFIX + key, "--print-value-only").strip() != "{}"
    # namegatectl on a box goes to the store, and without an operator's credentials
    # it gets nowhere: the gateway's own are not lent to it
    rc, out, err = fleet.ctl_b("grant", "vm1", "evil.test", "--for", "5m")
    assert rc != 0 and "grant not made" in err, (out, err)


def test_grant_made_on_one_gateway_is_applied_by_the_other(fleet):
    assert check(fleet.ctl_b, "vm1", "evil.test:443")[0] == 1
    t0 = time.monotonic()
    rc, out, err = fleet.ctl_a("grant", "vm1", "evil.test", "--for", "10m", "--reason",
                               "fleet lab", "--json", operator=True)
    assert rc == 0, err
    gid = json.loads(out)["id"]
    line = wait_until(lambda: check(fleet.ctl_b, "vm1", "evil.test:443"), 20,
                      "gateway B to apply the grant")[1]
    ms = (time.monotonic() - t0) * 1000
    print(f"RESULT fleet_grant_apply_ms={ms:.0f}")
    assert f"grant {gid}" in line, line
    assert check(fleet.ctl_a, "vm1", "evil.test:443")[0] == 0
    assert check(fleet.ctl_b, "vm2", "evil.test:443")[0] == 1   # one VM's grant only
    assert fleet.lab.curl("vm1", "https://evil.test/").ok
    fleet.grant_id = gid


def test_revoke_through_the_store_cuts_an_open_connection(fleet):
    gid = fleet.grant_id
    with fleet.lab.background("vm1", _HOLDER, (fleet.lab.ca_path, "evil.test")) as holder:
        assert holder.line().strip() == "ready", holder.stderr()
        holder.send()
        assert holder.line().split() == ["evil.test=200"]
        t0 = time.monotonic()
        rc, out, err = fleet.ctl_a("revoke", str(gid))     # on A; the VM is behind B
        assert rc == 0, err
        wait_until(lambda: check(fleet.ctl_b, "vm1", "evil.test:443")[0] == 1, 20,
                   "gateway B to end the grant")
        ms = (time.monotonic() - t0) * 1000
        holder.send()
        assert holder.line().split() == ["evil.test=cut"]
    print(f"RESULT fleet_revoke_cut_ms={ms:.0f}")
    assert fleet.etcd.ctl("get", f"{PREFIX}/revoked/{gid}", "--print-value-only").strip()


def in_background(fn, *args, **kw):
    box = {}
    t = threading.Thread(target=lambda: box.update(r=fn(*args, **kw)), daemon=True)
    t.start()
    return t, box


def waiting_on(fleet, ctl, gateway, name):
    """The request for name waiting on gateway, as another gateway sees it in the store."""
    def find():
        got = [p for p in fleet.fleet_view(ctl)["pending"]
               if p["gateway"] == gateway and p["name"] == name]
        return got[0] if got else None
    return wait_until(find, 15, f"{gateway}'s request for {name} in the store")


def test_request_on_one_gateway_approved_and_denied_from_another(fleet):
    t, box = in_background(fleet.lab.curl, "vm1", "https://evil.test/", timeout=30)
    req = waiting_on(fleet, fleet.ctl_a, "gwb", "evil.test")
    rc, out, err = fleet.ctl_a("pending")
    assert rc == 0 and f"gwb/{req['id']}" in out and "evil.test" in out, (out, err)
    # a management host sees it in the store
    rc, out, err = fleet.ctl("/nonexistent.sock", "--fleet", fleet.path("a.yaml"), "pending",
                             operator=True)
    assert rc == 0 and f"gwb/{req['id']}" in out and "evil.test" in out, (out, err)
    rc, out, err = fleet.ctl_a("approve", f"gwb/{req['id']}", "--for", "10m", operator=True)
    assert rc == 0 and f"request gwb/{req['id']} approved" in out, err
    t.join(35)
    assert box["r"].ok, box["r"].stderr          # the held query went on: curl got through
    wait_until(lambda: not [p for p in fleet.fleet_view(fleet.ctl_a)["pending"]
                            if p["gateway"] == "gwb" and p["id"] == req["id"]], 15,
               "the request to leave the store")
    gid = int(re.search(r"grant (\d+)", out).group(1))
    assert fleet.ctl_b("revoke", str(gid))[0] == 0

    t, box = in_background(fleet.lab.dig, "vm1", "deny.ask.test", edns=True, timeout=20)
    req = waiting_on(fleet, fleet.ctl_a, "gwb", "deny.ask.test")
    rc, out, err = fleet.ctl_a("deny", f"gwb/{req['id']}", operator=True)
    assert rc == 0, err
    t.join(25)
    r = box["r"]
    assert r.rcode == "REFUSED" and r.ede == 15 and "denied by operator" in r.raw, r.raw
    with open(fleet.path("events-b.jsonl")) as f:
        denied = [json.loads(x) for x in f if '"approval_denied"' in x]
    assert denied and denied[-1]["user"] == pwd.getpwuid(os.getuid()).pw_name, denied


def test_bundles_refused_and_accepted_on_both(fleet):
    base = _policies()
    opened = copy.deepcopy(base)
    opened["github"]["allow"].append("pypi.org")          # vm2 may reach pypi.org
    assert check(fleet.ctl_b, "vm2", "pypi.org:443")[0] == 1
    t0 = fleet.publish(fleet.bundle_text(base), 5)
    for port in (9477, 9478):
        wait_until(lambda: (fleet.policy_info(port) or (0,))[0] == 5, 20, "serial 5")
    first_ms = (time.monotonic() - t0) * 1000

    refused = 0
    # a signature that does not verify says nothing of its serial: 0 in the status
    cases = [("bad_signature", dict(serial=6, key="k2"), "not in fleet.bundle_keys"),
             ("rollback", dict(serial=4), "not above"),
             ("expired", dict(serial=7, until=PAST), "expired")]
    for what, kw, why in cases:
        fleet.publish(fleet.bundle_text(opened), **kw)
        ok = True
        for ctl, gw in ((fleet.ctl_a, "gwa"), (fleet.ctl_b, "gwb")):
            st = wait_until(lambda: (lambda s: s if s and "refused" in s and
                                     why in s["refused"]["reason"] else None)(
                                         fleet.status_of(ctl, gw)), 20,
                            f"{gw} to refuse the {what} bundle")
            ok = ok and st["serial"] == 5 and st["refused"]["serial"] in (
                0 if what == "bad_signature" else kw["serial"],)
        assert ok, (what, st)
        refused += ok
        assert check(fleet.ctl_b, "vm2", "pypi.org:443")[0] == 1
    print(f"RESULT fleet_bad_bundles_refused={refused}")

    t0 = fleet.publish(fleet.bundle_text(opened), 6)
    for port in (9477, 9478):
        wait_until(lambda: (fleet.policy_info(port) or (0,))[0] == 6, 20, "serial 6")
    ms = (time.monotonic() - t0) * 1000
    print(f"RESULT fleet_good_bundle_ms={ms:.0f} (the first, serial 5: {first_ms:.0f})")
    assert check(fleet.ctl_b, "vm2", "pypi.org:443")[0] == 0
    assert check(fleet.ctl_a, "vm2", "pypi.org:443")[0] == 0
    info_a, info_b = fleet.policy_info(9478), fleet.policy_info(9477)
    assert info_a == info_b and info_a[2] == "bundle", (info_a, info_b)
    # a management host reads the same from the store (--fleet: no daemon asked)
    rc, out, err = fleet.ctl("/nonexistent.sock", "--fleet", fleet.path("a.yaml"), "fleet",
                             operator=True)
    assert rc == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["gwa"][2] == rows["gwb"][2] == "6", out
    # the cache holds what is in force: the bundle and its signature, as published
    with open(fleet.path("cache-b.yaml")) as f:
        assert f.read() == fleet.bundle_text(opened)


OUTAGE_CASES = [(vm, host) for vm in ("vm1", "vm2") for host in (
    "pypi.org:443", "files.pythonhosted.org:443", "upload.pypi.org:443", "github.com:443",
    "github.com:22", "raw.githubusercontent.com:443", "evil.test:443", "example.com:443",
    "198.51.100.7:443", "www.pypi-mirror.test:443")]


def answers(fleet):
    return [check(ctl, vm, host)[0] for ctl in (fleet.ctl_b,)
            for vm, host in OUTAGE_CASES]


def test_store_outage_keeps_answers_and_fails_grants_clearly(fleet):
    assert len(OUTAGE_CASES) == 20
    before = answers(fleet)
    assert fleet.lab.curl("vm1", "https://pypi.org/").ok
    fleet.etcd.stop()
    t_stop = time.monotonic()
    try:
        fleet.wait_connected(fleet.ctl_b, up=False)
        fleet.wait_connected(fleet.ctl_a, up=False)
        t0 = time.monotonic()
        rc, out, err = fleet.ctl_a("grant", "vm1", "example.com", "--for", "5m",
                                   operator=True)
        fail_s = time.monotonic() - t0
        assert rc != 0 and "grant not made" in err, (out, err)
        print(f"RESULT fleet_grant_fail_s={fail_s:.2f}")
        during = answers(fleet)
        assert fleet.lab.curl("vm1", "https://pypi.org/").ok
        assert not fleet.lab.curl("vm2", "https://evil.test/", timeout=3).ok
        # a gateway that starts while the store is away starts from its verified cache
        fleet.a.stop(10)
        fleet.start_a()
        assert fleet.policy_info(9478)[::2] == (6, "cache")
        assert check(fleet.ctl_a, "vm2", "pypi.org:443")[0] == 0
        time.sleep(max(0.0, 10 - (time.monotonic() - t_stop)))
    finally:
        fleet.etcd.launch()
        fleet.etcd.wait_ready()
    changed = sum(a != b for a, b in zip(before, during))
    print(f"RESULT fleet_outage_answers_changed={changed}")
    assert changed == 0
    fleet.wait_connected(fleet.ctl_b)
    fleet.wait_connected(fleet.ctl_a)
    rc, out, err = fleet.ctl_a("grant", "vm1", "example.com", "--for", "5m", operator=True)
    assert rc == 0, err
    wait_until(lambda: check(fleet.ctl_b, "vm1", "example.com:443")[0] == 0, 20,
               "a grant made after the outage to be applied")


def test_revoke_while_away_survives_a_restart(fleet):
    """A revoke made on a gateway cut off from the store, which then restarts, still wins
    once the store is back: the grant's record there does not bring the grant back."""
    rc, out, err = fleet.ctl_a("grant", "vm2", "example.com", "--for", "10m", "--json",
                               operator=True)
    assert rc == 0, err
    gid = json.loads(out)["id"]
    for ctl in (fleet.ctl_a, fleet.ctl_b):
        wait_until(lambda: check(ctl, "vm2", "example.com:443")[0] == 0, 20, "the grant")
    fleet.etcd.stop()
    try:
        fleet.wait_connected(fleet.ctl_a, up=False)
        rc, out, err = fleet.ctl_a("revoke", str(gid))
        assert rc == 0, err
        assert check(fleet.ctl_a, "vm2", "example.com:443")[0] == 1
        fleet.a.stop(10)
        fleet.start_a()
        assert check(fleet.ctl_a, "vm2", "example.com:443")[0] == 1
    finally:
        fleet.etcd.launch()
        fleet.etcd.wait_ready()
    fleet.wait_connected(fleet.ctl_a)
    # the revocation reaches the store from the restarted box: B ends the grant too
    wait_until(lambda: check(fleet.ctl_b, "vm2", "example.com:443")[0] == 1, 20,
               "B to end the grant revoked on A")
    assert check(fleet.ctl_a, "vm2", "example.com:443")[0] == 1
    assert fleet.etcd.ctl("get", f"{PREFIX}/revoked/{gid}", "--print-value-only").strip()


def metric(fleet, port, name):
    cp = fleet.lab.sw_exec(["curl", "-sS", "--max-time", "5", f"http://127.0.0.1:{port}/metrics"])
    m = re.search(rf"^{name} (\S+)$", cp.stdout, re.M)
    return float(m.group(1)) if m else None


def test_cache_past_its_not_after_still_starts(fleet):
    """not_after guards what a gateway takes from the store, not what it last enforced."""
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 4))
    fleet.publish(fleet.bundle_text(_policies()), 8, until=soon)
    wait_until(lambda: (fleet.policy_info(9478) or (0,))[0] == 8, 20, "serial 8 on A")
    fleet.etcd.stop()
    try:
        fleet.a.stop(10)
        time.sleep(max(0.0, calendar.timegm(time.strptime(soon, "%Y-%m-%dT%H:%M:%SZ")) -
                       time.time() + 1))
        fleet.start_a()
        assert fleet.policy_info(9478)[::2] == (8, "cache")
        assert metric(fleet, 9478, "namegate_fleet_cache_expired") == 1
        with open(fleet.path("events-a.jsonl")) as f:
            ev = [json.loads(x) for x in f if '"bundle_cache"' in x]
        assert ev[-1]["serial"] == 8 and "not_after" in ev[-1]["reason"], ev[-1]
    finally:
        fleet.etcd.launch()
        fleet.etcd.wait_ready()
    # back in touch: serial 8 in the store is expired, so it is refused; 9 is taken
    fleet.wait_connected(fleet.ctl_a)
    fleet.publish(fleet.bundle_text(_policies()), 9)
    wait_until(lambda: (fleet.policy_info(9478) or (0,))[0] == 9, 20, "serial 9 on A")
    assert metric(fleet, 9478, "namegate_fleet_cache_expired") == 0


def test_unverified_cache_is_never_used(fleet):
    fleet.a.stop(10)
    with open(fleet.path("cache-a.yaml"), "a") as f:
        f.write("# tampered\n")
    fleet.etcd.stop()
    try:
        fleet.start_a()
        info = fleet.policy_info(9478)
        assert info[0] == 0 and info[2] == "file", info
        assert check(fleet.ctl_a, "vm2", "pypi.org:443")[0] == 1
        with open(fleet.path("events-a.jsonl")) as f:
            ev = [json.loads(x) for x in f if '"bundle_cache"' in x]
        assert ev and "serial" not in ev[-1] and ev[-1]["reason"], ev
    finally:
        fleet.etcd.launch()
        fleet.etcd.wait_ready()
    # back in touch, it takes the store's bundle again
    wait_until(lambda: (fleet.policy_info(9478) or (0,))[0] == 9, 20, "serial 9 again")
