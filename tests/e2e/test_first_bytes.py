"""First bytes on every port (SPEC s8): a TCP flow a DNS binding admitted is judged by
what it starts with, whatever the port: a ClientHello by its SNI (reason sni_denied), a
plaintext HTTP/1.x request by each request's Host, port stripped and lower-cased, allowed
for the VM and port and (sni_binding: strict) resolved by this VM to that address (reason
host_denied); a cut is RST both ways and the server never reads the request. Also: TCP
Fast Open clients (the hello or request in the SYN), and an answer of 40 addresses.

Every cut is paired with an allowed control on the same address and port."""
import json
import secrets

import pytest

import lab_services as svc
import ng_counters as nc
from test_browsers import VM1, start
from test_conntrue import fastopen

PYPI = "203.0.113.10"


@pytest.fixture(scope="module")
def ng(request):
    lab = start(request)
    # pypi.org's address bound for vm1; files.pythonhosted.org resolved too, elsewhere
    assert PYPI in lab.dig("vm1", "pypi.org").addresses
    assert lab.dig("vm1", "files.pythonhosted.org").addresses == ["203.0.113.11"]
    return lab


def tag():
    return secrets.token_hex(4)


def served(lab, path):
    return lab.server_events(event="request", path=path)


# ---------------------------------------------------------------- TLS on a port not in tls_ports

def s_client(lab, sni, port=2053, addr=PYPI):
    cmd = ["openssl", "s_client", "-connect", f"{addr}:{port}", "-servername", sni,
           "-CAfile", lab.ca_path, "-verify_return_error", "-brief"]
    return lab.vm_exec("vm1", cmd, timeout=20, input="")


def test_tls_with_a_denied_sni_on_a_non_tls_port_is_cut(ng):
    ok = s_client(ng, "pypi.org")
    assert ok.returncode == 0 and "Verification: OK" in ok.stderr, ok.stderr
    assert ng.server_events(event="sni", port=2053, sni="pypi.org", client=VM1)
    with nc.Delta(ng) as d:
        cut = s_client(ng, "evil.test")
    assert cut.returncode != 0, \
        f"a ClientHello for evil.test on port 2053 was let through: {cut.stderr[-400:]}"
    assert "reset" in cut.stderr.lower() or "errno=104" in cut.stderr, cut.stderr
    d.wait({nc.blocked("vm1", "sni_denied"): 1})
    assert not ng.server_events(event="sni", port=2053, sni="evil.test")


def test_tls_with_an_sni_resolved_elsewhere_on_a_non_tls_port_is_cut(ng):
    """strict: files.pythonhosted.org is allowed and resolved, but to .11, not pypi's."""
    with nc.Delta(ng) as d:
        cut = s_client(ng, "files.pythonhosted.org")
    assert cut.returncode != 0, f"the hello was let through: {cut.stderr[-400:]}"
    d.wait({nc.blocked("vm1", "sni_denied"): 1})
    assert not ng.server_events(event="sni", port=2053, sni="files.pythonhosted.org")


def test_sslv2_format_hello_on_a_non_tls_port_is_cut_as_no_sni(ng):
    """An SSLv2-format CLIENT-HELLO (which TLS servers still read) on port 2053, where
    pypi's TLS server listens: TLS with no server name, so no_sni, an RST, and the server
    reads none of it (on the code before it was "another protocol" and reached the TLS
    server unjudged)."""
    hello = ("801c010301000300000010" "00002f" "00112233445566778899aabbccddeeff")
    with nc.Delta(ng) as d:
        out = ng.vm_python("vm1", f"""
import socket
s = socket.create_connection(({PYPI!r}, 2053), timeout=20)     # a cap: a cut is a reset
port = s.getsockname()[1]
s.sendall(bytes.fromhex({hello!r}))
try:
    print(port, "data" if s.recv(100) else "closed")
except ConnectionResetError:
    print(port, "reset")
""")
        d.wait({nc.blocked("vm1", "no_sni"): 1})
    port, word = out.stdout.split()
    assert word == "reset", out.stdout + out.stderr
    assert not ng.server_events(event="hello", port=2053, client=VM1, client_port=int(port)), \
        "the TLS server read an SSLv2-format hello namegate never judged"


# ---------------------------------------------------------------- plaintext HTTP by Host

def test_http_with_the_allowed_host_is_served(ng):
    path = f"/ok-{tag()}"
    r = ng.curl("vm1", f"http://pypi.org{path}")
    assert r.ok and r.json()["server"] == "pypi" and r.json()["host"] == "pypi.org", r.stderr
    # port stripped and case folded before the check
    path2 = f"/case-{tag()}"
    r = ng.curl("vm1", f"http://pypi.org{path2}", args=["-H", "Host: PyPI.ORG:80"])
    assert r.ok and r.json()["host"] == "PyPI.ORG:80", r.stderr


@pytest.mark.parametrize("host", ["evil.test", "files.pythonhosted.org"],
                         ids=["not-allowed", "resolved-elsewhere"])
def test_http_with_a_foreign_host_is_cut(ng, host):
    path = f"/foreign-{tag()}"
    with nc.Delta(ng) as d:
        r = ng.curl("vm1", f"http://pypi.org{path}", args=["-H", f"Host: {host}"])
    assert not r.ok, f"the request with Host {host} was served: {r.body[:200]}"
    assert r.outcome in ("connection reset", "empty reply"), (r.outcome, r.stderr)
    d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert not served(ng, path), "the server read the request"


@pytest.mark.parametrize("sep", ["1c", "1f", "85", "a0"])
def test_http_split_on_what_python_splits_on_is_judged(ng, sep):
    """Python's http.server (the lab's plaintext server) splits a request line on 0x1c to
    0x1f, NEL and NBSP too: such a line naming evil.test is a request, never "another
    protocol" passed unjudged; namegate cuts it and the server reads nothing (on the code
    before, the server served it)."""
    path = f"/sep-{sep}-{tag()}"
    line = bytes.fromhex(f"474554{sep}") + path.encode() + bytes.fromhex(sep) + \
        b"HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    with nc.Delta(ng) as d:
        out = ng.vm_python("vm1", f"""
import socket
s = socket.create_connection(({PYPI!r}, 80), timeout=20)     # a cap: a cut is a reset
s.sendall({line!r})
try:
    print("data" if s.recv(100) else "closed")
except ConnectionResetError:
    print("reset")
""")
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out.stdout.strip() == "reset", out.stdout + out.stderr
    assert not served(ng, path), "the server read a request namegate never judged"


# The second request on a connection whose first was served; pieces: "keepalive" sends
# it after the first response, "pipelined" sends both requests in one segment.
_KEEPALIVE = r"""
import json, socket, sys
addr, hosts, paths, pipelined = json.loads(sys.argv[1])
s = socket.create_connection((addr, 80), timeout=20)    # a cap: a cut is a reset
reqs = [f"GET {p} HTTP/1.1\r\nHost: {h}\r\n\r\n".encode() for h, p in zip(hosts, paths)]
buf = b""
def response():
    global buf
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            return None
        buf += d
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n")
             if l.lower().startswith(b"content-length")][0])
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            return None
        buf += d
    buf = buf[n:]
    return head.split(b"\r\n")[0].decode()
out = []
try:
    if pipelined:
        s.sendall(reqs[0] + reqs[1])
        out.append(response()); out.append(response())
    else:
        s.sendall(reqs[0]); out.append(response())
        s.sendall(reqs[1]); out.append(response())
except (ConnectionResetError, BrokenPipeError, socket.timeout) as e:
    out.append(type(e).__name__)
print(json.dumps(out))
"""


def keepalive(lab, hosts, paths, pipelined):
    arg = json.dumps([PYPI, hosts, paths, pipelined])
    cp = lab.vm_exec("vm1", ["/usr/bin/python3", "-c", _KEEPALIVE, arg], timeout=40)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def test_foreign_host_after_a_served_request_on_the_same_connection_is_cut(ng):
    paths = [f"/ka1-{tag()}", f"/ka2-{tag()}"]
    with nc.Delta(ng) as d:
        out = keepalive(ng, ["pypi.org", "evil.test"], paths, pipelined=False)
    assert out[0] == "HTTP/1.1 200 OK", out
    assert out[1] in (None, "ConnectionResetError"), f"the second request was served: {out}"
    d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert served(ng, paths[0]) and not served(ng, paths[1])


def test_foreign_host_pipelined_behind_an_allowed_one_is_not_served(ng):
    paths = [f"/p1-{tag()}", f"/p2-{tag()}"]
    with nc.Delta(ng) as d:
        out = keepalive(ng, ["pypi.org", "evil.test"], paths, pipelined=True)
    assert out[-1] in (None, "ConnectionResetError"), f"the second request was served: {out}"
    d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert not served(ng, paths[1])


def test_control_two_allowed_requests_on_one_connection(ng):
    paths = [f"/c1-{tag()}", f"/c2-{tag()}"]
    out = keepalive(ng, ["pypi.org", "pypi.org:80"], paths, pipelined=False)
    assert out == ["HTTP/1.1 200 OK"] * 2, out
    assert served(ng, paths[0]) and served(ng, paths[1])


# ---------------------------------------------------------------- TCP Fast Open

def tfo_passive(lab):
    """The internet namespace's TcpExtTCPFastOpenPassive: SYNs whose data it accepted."""
    lines = lab.inet_exec("cat /proc/net/netstat").stdout.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            return dict(zip(head.split()[1:], map(int, vals.split()[1:])))["TCPFastOpenPassive"]
    raise AssertionError("no TcpExt in /proc/net/netstat")


def test_tcp_fast_open_https_three_times(ng):
    with fastopen(ng):
        before = tfo_passive(ng)
        results = [ng.curl("vm1", "https://pypi.org/", ip=4, args=["--tcp-fastopen"])
                   for _ in range(3)]
        after = tfo_passive(ng)
    assert [r.outcome for r in results] == ["ok"] * 3, [r.stderr for r in results]
    assert all(r.json()["sni"] == "pypi.org" for r in results)
    # the first connection fetches the cookie; the next ones carry the hello in the SYN
    assert after - before >= 2, f"only {after - before} SYNs carried data to the server"


def test_tcp_fast_open_request_with_a_foreign_host_is_cut(ng):
    """The request in the SYN's data is judged like any other first bytes."""
    ok, bad = f"/tfo-ok-{tag()}", f"/tfo-bad-{tag()}"
    with fastopen(ng):
        ng.curl("vm1", "http://pypi.org/", ip=4, args=["--tcp-fastopen"])     # the cookie
        before = tfo_passive(ng)
        r = ng.curl("vm1", f"http://pypi.org{ok}", ip=4, args=["--tcp-fastopen"])
        assert r.ok and tfo_passive(ng) > before, "control: no request in SYN data served"
        with nc.Delta(ng) as d:
            r = ng.curl("vm1", f"http://pypi.org{bad}", ip=4,
                        args=["--tcp-fastopen", "-H", "Host: evil.test"])
    assert not r.ok, f"the request in SYN data with Host evil.test was served: {r.body[:200]}"
    d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert not served(ng, bad)


# ---------------------------------------------------------------- 40 addresses

_CONNECT_ALL = r"""
import json, socket, ssl, sys
ca, addrs = sys.argv[1], json.loads(sys.argv[2])
if not addrs:       # resolve as any program would: getaddrinfo (UDP truncated, then TCP)
    addrs = sorted({a[4][0] for a in socket.getaddrinfo("many.test", 443, socket.AF_INET,
                                                         socket.SOCK_STREAM)})
ctx = ssl.create_default_context(cafile=ca)
out = {}
for a in addrs:
    try:
        with socket.create_connection((a, 443), timeout=10) as s, \
                ctx.wrap_socket(s, server_hostname="many.test") as t:
            t.sendall(b"GET / HTTP/1.1\r\nHost: many.test\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := t.recv(65536):
                data += chunk
        out[a] = json.loads(data.split(b"\r\n\r\n", 1)[1])["addr"]
    except Exception as e:
        out[a] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def connect_all(lab, addrs=()):
    cp = lab.vm_exec("vm1", ["/usr/bin/python3", "-c", _CONNECT_ALL, lab.ca_path,
                             json.dumps(list(addrs))], timeout=120)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def test_forty_addresses_over_tcp_are_all_connectable(ng):
    out = connect_all(ng)
    assert sorted(out) == sorted(svc.MANY_ADDRS), f"resolved {len(out)} of 40: {sorted(out)}"
    bad = {a: v for a, v in out.items() if v != a}
    assert not bad, f"{len(bad)} of 40 addresses did not serve: {bad}"


def test_forty_addresses_over_udp_with_edns_are_all_connectable(ng):
    r = ng.dig("vm1", "many.test", args=["+bufsize=1232"])
    assert r.rcode == "NOERROR" and "TC" not in r.raw.split("Flags:")[1].split(";")[0], r.raw
    assert sorted(r.addresses) == sorted(svc.MANY_ADDRS), r.raw
    out = connect_all(ng, r.addresses)
    bad = {a: v for a, v in out.items() if v != a}
    assert not bad, f"{len(bad)} of 40 addresses did not serve: {bad}"

