"""Live reload (SIGHUP, SPEC s4 last paragraph) through the real daemon: a new policy is
in force at once, flows and bindings it no longer allows are cut on their next packet, a
file with errors changes nothing, and VMs come and go."""
import signal

import lab_namegate
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import VM1, inet_capture
from test_dataplane import _policies, _vms, start

# Holds two keep-alive HTTPS connections open; prints each request's outcome as the lead
# (the test) asks for it on stdin.
FILES = "203.0.113.11"      # files.pythonhosted.org

_HOLDER = r"""
import http.client, socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
conns = {}
for host in sys.argv[2:]:
    addr = socket.getaddrinfo(host, 443, socket.AF_INET)[0][4][0]
    c = http.client.HTTPSConnection(host, 443, context=ctx, timeout=20)   # caps: a cut
    c.sock = ctx.wrap_socket(socket.create_connection((addr, 443), timeout=20),  # is a reset
                             server_hostname=host)
    conns[host] = c
print("ready", flush=True)
for line in sys.stdin:
    out = []
    for host, c in conns.items():
        try:
            c.request("GET", "/"); r = c.getresponse(); r.read(); out.append(f"{host}={r.status}")
        except (OSError, http.client.HTTPException) as e:
            out.append(f"{host}=cut")
    print(" ".join(out), flush=True)
"""


def data_sent(cap, dst):
    """Segments with data from vm1 to dst that reached the internet (capture cap): after
    a cut, the client's next request must not, whatever the client was told."""
    return [(p["sport"], len(p["payload"])) for p in cap.packets(src=VM1, dst=dst, proto=6)
            if p["payload"]]


def reload_with(lab, policies=None, vms=None, raw=None):
    """Rewrite the daemon's file and SIGHUP it; returns what it said about the reload."""
    err_before = len(lab.namegate_output()[1])
    if raw is not None:
        with open(lab.config_path, "w") as f:
            f.write(raw)
    else:
        saved = lab.vms
        lab.vms = vms if vms is not None else lab.vms
        try:
            lab_namegate.write_config(lab, lab.config_path, policies or lab.policies,
                                      lab.config_overrides)
        finally:
            lab.vms = saved
    lab.daemon.signal(signal.SIGHUP)

    def said():
        text = lab.namegate_output()[1][err_before:]
        # the whole line: it ends in a newline
        return text if "generation" in text and ("in force" in text or "stays" in text) \
            and text.endswith("\n") else None
    return wait_until(said, what="namegate to say what it made of the reload")


def gen(lab):
    return nc.read(lab)["namegate_policy_generation"]


def test_new_policy_in_force_and_what_it_no_longer_allows_is_cut(request):
    lab = start(request)
    with lab.background("vm1", _HOLDER, (lab.ca_path, "pypi.org",
                                         "files.pythonhosted.org")) as holder:
        assert holder.line().strip() == "ready", holder.stderr()
        holder.send()
        assert holder.line().split() == ["pypi.org=200", "files.pythonhosted.org=200"]
        policies = _policies()
        policies["python"]["allow"].remove("files.pythonhosted.org")
        said = reload_with(lab, policies=policies)
        assert "generation 2 in force" in said, said
        with inet_capture(lab) as cap:
            holder.send()
            assert holder.line().split() == ["pypi.org=200", "files.pythonhosted.org=cut"]
            cap.sync()
        assert not data_sent(cap, FILES), "the request on the cut connection went out"
    assert lab.dig("vm1", "files.pythonhosted.org").rcode == "REFUSED"
    assert lab.curl("vm1", "https://pypi.org/").ok
    assert gen(lab) == 2


def test_file_with_errors_changes_nothing(request):
    lab = start(request)
    good = open(lab.config_path).read()
    said = reload_with(lab, raw=good.replace("policies:", "policies:\n  broken: [", 1))
    assert "stays in force" in said and lab.config_path + ":" in said, said
    assert gen(lab) == 1
    assert lab.curl("vm1", "https://files.pythonhosted.org/").ok
    assert lab.dig("vm1", "evil.test").rcode == "REFUSED"


def test_vms_come_and_go(request):
    lab = start(request)
    assert lab.curl("vm2", "https://github.com/").ok
    said = reload_with(lab, vms=[v for v in lab.vms if v.name != "vm2"])
    assert "generation 2 in force" in said, said
    with inet_capture(lab) as cap, nc.Delta(lab) as d:
        r = lab.curl("vm2", "https://github.com/", timeout=2)
        d.wait({nc.blocked("unknown", "spoofed"): 1})   # proof it was dropped, not slow
        cap.sync()
    assert not r.ok
    # its replies could not reach it anyway: what it sent must not have gone out either
    assert not cap.packets(src="10.77.0.12"), "a removed VM's frames reached the internet"
    assert d[nc.blocked("unknown", "spoofed")] >= 1
    assert lab.curl("vm1", "https://pypi.org/").ok
    said = reload_with(lab, vms=_vms())
    assert "generation 3 in force" in said, said
    assert lab.curl("vm2", "https://github.com/").ok


def test_a_sighup_reload_names_who_sent_the_signal(request):
    """kill -HUP: the policy event names the sender the kernel reports (its pid and uid,
    root here), as a reload through the control socket names its caller."""
    import json
    import os
    import subprocess
    lab = start(request)
    events = os.path.join(lab.tmpdir, "events.jsonl")
    before = len(open(events).read().splitlines())
    killer = subprocess.Popen(["kill", "-HUP", str(lab.daemon.proc.pid)])
    assert killer.wait(10) == 0

    def policy_event():
        lines = [json.loads(x) for x in open(events).read().splitlines()[before:]]
        return [e for e in lines if e.get("event") == "policy"]
    ev = wait_until(policy_event, what="the reload's policy event")
    assert ev[0]["pid"] == killer.pid and ev[0]["uid"] == 0 and ev[0]["user"] == "root", ev
