"""Approval while the answer waits (issue 15), through the real daemon: a VM's query for a
name only an ask pattern matches is held, not answered and not forwarded; a second
process lists it (namegatectl pending) and approves it, and the waiting client gets its
answer and its first connection through; deny and approval.timeout answer REFUSED with
EDE 15 and a text saying why; retransmissions are one request, answered at the latest ID;
a VM at its limit is refused (vm_limit) while its neighbour's request still waits;
approval.webhook receives each new request as a JSON POST, and its failures are counted."""
import copy
import json
import os
import re
import secrets
import select
import subprocess
import threading
import time

import pytest

import lab as labmod
import lab_namegate
import lab_services as svc
import ng_counters as nc
from lab_net import wait_until
from test_dataplane import _binary

TIMEOUT = 6            # approval.timeout for this module (the default is 8 s)
PER_VM = 2             # approval.max_pending_per_vm (one worker: all of it on it)
HOOK_PORT = 18093      # the webhook sink, on the gateway namespace's loopback (the run's own)
HOOK_URL = f"http://127.0.0.1:{HOOK_PORT}/hook"

# The webhook's receiver: prints each POST (path and JSON body) as one line, answers 204.
SINK = r'''
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        print(json.dumps({"path": self.path, "type": self.headers["Content-Type"],
                          "body": json.loads(body)}), flush=True)
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("listening", flush=True)
srv.serve_forever()
'''

# A stub resolver: argv repeat, then names; each name asked repeat times from one socket
# (a new ID each time, as a stub retrying does), then every answer printed as JSON.
STUB = r"""
import json, socket, struct, sys, time
repeat, server, names = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def query(qid, name):
    head = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1)
    qname = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    opt = b"\0" + struct.pack("!HHIH", 41, 1232, 0, 0)
    return head + qname + struct.pack("!HH", 1, 1) + opt
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
qid = 0x1000
for name in names:
    for _ in range(repeat):
        qid += 1
        s.sendto(query(qid, name), (server, 53))
        time.sleep(0.3)
print("sent", flush=True)
s.settimeout(25)
for _ in names:
    try:
        data = s.recv(4096)
    except socket.timeout:
        print(json.dumps({"timeout": True}), flush=True)
        break
    ident, flags = struct.unpack("!HH", data[:4])
    print(json.dumps({"id": ident, "rcode": flags & 0xf, "ancount": data[7],
                      "raw": data.decode("latin-1")}), flush=True)
"""


def _policies():
    p = copy.deepcopy(lab_namegate.DEFAULT_POLICIES)
    p["python"]["ask"] = ["evil.test", "*.ask.test"]
    p["python"]["deny"] = p["python"]["deny"] + ["denied.ask.test"]   # under an ask pattern
    p["github"]["ask"] = ["*.ask.test"]
    return p


@pytest.fixture(scope="module")
def ng(request):
    lab = labmod.Lab(mode="namegate", vms=labmod.default_vms(2), policies=_policies(),
                     namegate_cmd=[_binary(), "-c", "{config}"],
                     config={"approval": {"timeout": f"{TIMEOUT}s",
                                          "max_pending_per_vm": PER_VM,
                                          "webhook": HOOK_URL}})
    request.addfinalizer(lab.teardown)
    return lab.setup()


def ctl(lab, *args):
    cp = lab.namegatectl(*args)
    return cp.returncode, cp.stdout, cp.stderr


def pending(lab, vm=None):
    rc, out, err = ctl(lab, "pending", *([vm] if vm else []), "--json")
    assert rc == 0, err
    return json.loads(out)["pending"]


def waiting(lab, name, vm="vm1", qtype=1):
    """The one request of vm for (name, qtype), once it is listed."""
    def find():
        got = [p for p in pending(lab) if p["vm"] == vm and p["name"] == name and
               p["type"] == qtype]
        return got or None
    return wait_until(find, timeout=10, what=f"{vm}'s request for {name} to be listed")


def events(lab, kind):
    path = lab_namegate.build_config(lab, lab.policies, lab.config_overrides)["events"]
    with open(path) as f:
        return [e for e in (json.loads(line) for line in f if line.endswith("\n"))
                if e.get("event") == kind]


def queried(lab, name):
    return any(n == name for _, n, _ in lab.resolver_queries())


class Threaded:
    """fn(*args) in a thread: the client that waits while the test acts."""

    def __init__(self, fn, *args, **kw):
        self.result, self.error = None, None
        self.t = threading.Thread(target=self._run, args=(fn, args, kw), daemon=True)
        self.t.start()

    def _run(self, fn, args, kw):
        try:
            self.result = fn(*args, **kw)
        except Exception as e:      # noqa: BLE001 - re-raised in join()
            self.error = e

    def join(self, timeout=40):
        self.t.join(timeout)
        assert not self.t.is_alive(), "the waiting client never finished"
        if self.error:
            raise self.error
        return self.result


def test_approve_while_curl_waits_then_its_first_connection_works(ng):
    started = time.monotonic()
    client = Threaded(ng.curl, "vm1", "https://evil.test/", timeout=30)
    req = waiting(ng, "evil.test")[0]
    assert not queried(ng, "evil.test")             # held: the resolver never saw it
    assert req["left"] <= TIMEOUT and req["first_seen"].endswith("Z")
    rc, out, _ = ctl(ng, "pending")
    assert rc == 0 and f"{req['id']}" in out and "evil.test" in out, out
    rc, out, err = ctl(ng, "approve", str(req["id"]), "--for", "10m")
    assert rc == 0 and f"request {req['id']} approved" in out, err
    r = client.join()
    assert r.ok, r.stderr
    assert time.monotonic() - started < TIMEOUT + 5
    assert queried(ng, "evil.test")                 # forwarded once approved, and bound
    assert not [p for p in pending(ng) if p["name"] == "evil.test"]
    approved = [e for e in events(ng, "approval_approved") if e["id"] == req["id"]]
    assert approved and approved[0]["vm"] == "vm1" and approved[0]["name"] == "evil.test"
    assert approved[0]["uid"] == os.getuid()         # who approved: namegatectl, here
    pend = [e for e in events(ng, "approval_pending") if e["id"] == req["id"]]
    assert pend and "uid" not in pend[0]            # nobody asked for that one
    rc, out, _ = ctl(ng, "grants", "vm1", "--json")
    grants = json.loads(out)["grants"]
    g = [x for x in grants if x["id"] == approved[0]["grant"]]
    assert g and g[0]["host"] == "evil.test" and g[0]["reason"] == f"approved request {req['id']}"
    assert g[0]["uid"] == os.getuid()               # the approver made the grant
    assert 590 <= g[0]["left"] <= 600
    assert ctl(ng, "revoke", str(g[0]["id"]))[0] == 0
    # vm2 never got anything from vm1's approval
    assert ng.dig("vm2", "evil.test").rcode == "REFUSED"


def test_deny_answers_refused_with_ede_15_and_why(ng):
    client = Threaded(ng.dig, "vm1", "deny.ask.test", edns=True, timeout=20)
    req = waiting(ng, "deny.ask.test")[0]
    rc, out, err = ctl(ng, "deny", str(req["id"]))
    assert rc == 0 and f"request {req['id']} denied" in out, err
    r = client.join()
    assert r.rcode == "REFUSED" and r.ede == 15, r.raw
    assert "namegate: denied by operator" in r.raw, r.raw
    assert not queried(ng, "deny.ask.test")
    wait_until(lambda: [e for e in events(ng, "approval_denied") if e["id"] == req["id"]],
               timeout=5, what="the deny event")
    rc, _, err = ctl(ng, "approve", str(req["id"]))
    assert rc != 0 and "waits for approval" in err    # it is over: nothing to approve


def test_timeout_answers_refused_with_ede_15(ng):
    started = time.monotonic()
    r = ng.dig("vm1", "slow.ask.test", edns=True, timeout=TIMEOUT + 10)
    took = time.monotonic() - started
    assert r.rcode == "REFUSED" and r.ede == 15, r.raw
    assert "namegate: approval timed out" in r.raw, r.raw
    assert TIMEOUT - 1.5 <= took <= TIMEOUT + 4, took
    assert not queried(ng, "slow.ask.test")
    wait_until(lambda: [e for e in events(ng, "approval_timeout")
                        if e["name"] == "slow.ask.test"], timeout=5, what="the timeout event")
    assert not [p for p in pending(ng) if p["name"] == "slow.ask.test"]


def test_retransmits_are_one_request_answered_at_the_latest_id(ng):
    with ng.background("vm1", STUB, (3, svc.RESOLVER, "again.ask.test")) as stub:
        assert stub.line() == "sent", stub.stderr()
        time.sleep(0.5)
        reqs = [p for p in pending(ng) if p["name"] == "again.ask.test"]
        assert len(reqs) == 1, reqs                  # three queries, one request
        assert ctl(ng, "deny", str(reqs[0]["id"]))[0] == 0
        a = stub.json()
    assert a["id"] == 0x1003 and a["rcode"] == 5     # the stub's latest query, REFUSED
    assert "namegate: denied by operator" in a["raw"]
    assert len([e for e in events(ng, "approval_pending")
                if e["name"] == "again.ask.test"]) == 1


def test_a_vm_at_its_limit_is_refused_and_its_neighbour_still_waits(ng):
    names = [f"n{i}.ask.test" for i in range(PER_VM + 1)]
    with nc.Delta(ng) as d, ng.background("vm1", STUB, (1, svc.RESOLVER, *names)) as stub:
        assert stub.line() == "sent", stub.stderr()
        over = stub.json()                           # the one past the limit, at once
        assert over["id"] == 0x1000 + PER_VM + 1 and over["rcode"] == 5, over
        assert "too many queries" in over["raw"]
        d.wait({nc.blocked("vm1", "vm_limit"): 1})
        other = Threaded(ng.dig, "vm2", "other.ask.test", edns=True, timeout=20)
        req = waiting(ng, "other.ask.test", vm="vm2")[0]
        mine = [p for p in pending(ng, "vm1") if p["name"] in names]
        assert len(mine) == PER_VM, mine
        for p in mine:
            assert ctl(ng, "deny", str(p["id"]))[0] == 0
        assert ctl(ng, "deny", str(req["id"]))[0] == 0
        assert other.join().rcode == "REFUSED"
        answers = [stub.json() for _ in range(PER_VM)]
    assert sorted(a["id"] for a in answers) == [0x1001 + i for i in range(PER_VM)]
    assert d[nc.blocked("vm2", "vm_limit")] == 0
    # the refused query was answered by namegate; the resolver (one process, in order)
    # logs a later forwarded query only after it, had it been forwarded too
    marker = f"{secrets.token_hex(4)}.githubusercontent.com"
    ng.dig("vm1", marker)
    wait_until(lambda: queried(ng, marker), what="the marker query to reach the resolver")
    assert not queried(ng, names[-1]), "the query past the VM's limit reached the resolver"


def test_allow_and_deny_still_decide_before_ask(ng):
    assert ng.dig("vm1", "pypi.org").rcode == "NOERROR"
    assert ng.dig("vm1", "collect.evil.test", edns=True).rcode == "REFUSED"
    # denied by the policy and under the ask pattern *.ask.test: the deny answers at once,
    # with the policy's reason; had it waited for approval, the answer would say so
    r = ng.dig("vm1", "denied.ask.test", edns=True)
    assert r.rcode == "REFUSED" and r.ede == 15, r.raw
    assert "blocked by namegate policy" in r.raw and "approval" not in r.raw, r.raw
    assert not [p for p in pending(ng) if p["name"] in ("pypi.org", "collect.evil.test",
                                                       "denied.ask.test")]


def test_control_socket_rejects_bad_requests(ng):
    for args, text in ((("approve", "abc"), "bad request id"),
                       (("deny", "0"), "bad request id"),
                       (("approve", "999999"), "no request 999999"),
                       (("pending", "nosuchvm"), "unknown VM")):
        rc, _, err = ctl(ng, *args)
        assert rc != 0 and text in err, (args, err)


def hook_counts(lab):
    text = lab.metrics()
    assert text is not None, "no metrics"
    got = dict(re.findall(r'^namegate_approval_webhook_total\{result="(\w+)"\} (\d+)$', text,
                          re.M))
    return int(got["sent"]), int(got["failed"])


def test_webhook_receives_each_new_request_and_failures_are_counted(ng):
    # nothing listens yet: the POST fails, is counted, and the request waits all the same
    sent0, failed0 = hook_counts(ng)
    client = Threaded(ng.dig, "vm1", "nohook.ask.test", edns=True, timeout=20)
    req = waiting(ng, "nohook.ask.test")[0]
    wait_until(lambda: hook_counts(ng)[1] > failed0, timeout=10, what="the failed POST")
    assert ctl(ng, "deny", str(req["id"]))[0] == 0
    assert client.join().rcode == "REFUSED"
    with ng.background(ng.sw_ns, SINK, (HOOK_PORT,)) as sink:
        assert sink.line() == "listening", sink.stderr()
        client = Threaded(ng.dig, "vm2", "hook.ask.test", edns=True, timeout=20)
        req = waiting(ng, "hook.ask.test", vm="vm2")[0]
        post = sink.json()
        assert post["path"] == "/hook" and post["type"] == "application/json"
        assert post["body"] == {"id": req["id"], "vm": "vm2", "name": "hook.ask.test",
                                "type": 1, "first_seen": req["first_seen"]}
        # the daemon answered its control socket while the POST was in flight
        assert ctl(ng, "deny", str(req["id"]))[0] == 0
        assert client.join().rcode == "REFUSED"
    assert hook_counts(ng)[0] == sent0 + 1


def test_pending_follow_prints_each_new_request_once(ng):
    sock = lab_namegate.build_config(ng, ng.policies, ng.config_overrides)["control_socket"]
    argv = ["ip", "netns", "exec", ng.sw_ns, os.environ.get("NAMEGATECTL_BIN", "namegatectl"),
            "-s", sock, "pending", "--follow", "--json"]
    follow = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        client = Threaded(ng.dig, "vm1", "follow.ask.test", edns=True, timeout=20)
        assert select.select([follow.stdout], [], [], 15)[0], "pending --follow printed nothing"
        line = json.loads(follow.stdout.readline())
        assert line["vm"] == "vm1" and line["name"] == "follow.ask.test" and line["type"] == 1
        assert ctl(ng, "deny", str(line["id"]))[0] == 0
        assert client.join().rcode == "REFUSED"
    finally:
        follow.terminate()
        out, err = follow.communicate(timeout=10)
    assert follow.returncode == 0, err
    assert "follow.ask.test" not in out              # printed once, not again
