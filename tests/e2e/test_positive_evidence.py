"""Positive evidence only (issue 23): on a flow a DNS binding admitted, bytes pass unjudged
as "another protocol" only when something proves it, the server speaking first or an SSH
identification line; everything else is judged as HTTP requests (by the host they name)
or cut with host_denied. And a CONNECT becomes a tunnel only once the server answers 2xx.

The oracle is what real servers read and answer (lab_real: Debian's nginx, gunicorn and
aiohttp on pypi.org's address, each with a pypi.org and an evil.test site, and the lab's
Python http.server on port 80). Every cut is paired with a control that is served."""
import secrets

import pytest

import lab_real
import ng_counters as nc
from lab_real import PORTS, exchange
from test_browsers import start


@pytest.fixture(scope="module")
def ng(request):
    lab = start(request)
    assert lab_real.ADDR in lab.dig("vm1", "pypi.org").addresses
    lab.real = lab_real.RealServers(lab).start()
    return lab


def tag():
    return secrets.token_hex(4)


# ---------------------------------------------------------------- HTTP/0.9 simple requests

def test_http09_request_naming_a_denied_site_is_cut(ng):
    """nginx answers "GET http://evil.test/..." with no version from its evil.test site; on
    the code before, namegate passed the line as another protocol and nginx served it."""
    path = f"/h09-{tag()}"
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["nginx"], [f"GET http://evil.test{path}\r\n".encode()])
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out
    assert not ng.real.served("nginx", path), "nginx served a request namegate never judged"


def test_control_http09_request_naming_an_allowed_site_is_served(ng):
    path = f"/h09ok-{tag()}"
    out = exchange(ng, PORTS["nginx"], [f"GET http://pypi.org{path}\r\n".encode()])
    assert out == b"pypi\n", out
    assert ng.real.served("nginx", path) == [("pypi.org", path)]


def test_http09_request_naming_no_site_is_cut(ng):
    """"GET /path" alone: Python's http.server (port 80) serves it, nginx from its default
    site; it names no host namegate can judge, so it is cut."""
    paths = {80: f"/h09py-{tag()}", PORTS["nginx"]: f"/h09ng-{tag()}"}
    with nc.Delta(ng) as d:
        outs = {port: exchange(ng, port, [f"GET {path}\r\n".encode()])
                for port, path in paths.items()}
        d.wait({nc.blocked("vm1", "host_denied"): 2})
    assert outs == {80: "reset", PORTS["nginx"]: "reset"}, outs
    assert not ng.server_events(event="request", path=paths[80])
    assert not ng.real.served("nginx", paths[PORTS["nginx"]])


# ---------------------------------------------------------------- no evidence: cut

def test_bytes_that_prove_nothing_are_cut_before_the_server_reads_them(ng):
    """A binary client-first protocol (say PostgreSQL's startup message) proves nothing:
    cut at once, and the echo server reads none of it (before: passed and echoed)."""
    before = ng.real.read("echo")
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["echo"], [b"\x00\x00\x00\x08\x04\xd2\x16\x2f"])
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out
    assert ng.real.read("echo") == before


def test_a_line_no_server_takes_for_a_request_is_cut(ng):
    """"EHLO x" from the client first is no evidence of SMTP (the server did not greet):
    judged as a request, which it is not, so cut."""
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["echo"], [b"EHLO client.test\r\n"])
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out


# ---------------------------------------------------------------- evidence: passed

def test_server_that_speaks_first_makes_another_protocol(ng):
    marker = f"EHLO {tag()}.test\r\n".encode()
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["banner"], [marker], greeting=True)
    assert out == b"220 lab.test ESMTP ready\r\n" + marker, out
    assert marker in ng.real.read("banner")
    assert d[nc.blocked("vm1", "host_denied")] == 0


def test_ssh_identification_line_makes_another_protocol(ng):
    data = f"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3 {tag()}\r\n".encode() + \
        bytes(range(256))
    out = exchange(ng, PORTS["echo"], [data])
    assert out == data, out
    assert data in ng.real.read("echo")


@pytest.mark.parametrize("server", ["gunicorn", "nginx"])
def test_ssh_looking_request_is_judged(ng, server):
    """gunicorn serves "SSH-2.0-x /p HTTP/1.1" (its method pattern matches a prefix), nginx
    an unknown method "SSHX": both are requests, judged by their Host."""
    path = f"/ssh-{tag()}"
    method = "SSH-2.0-x" if server == "gunicorn" else "SSHX"
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS[server],
                       [f"{method} {path} HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode()])
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out
    assert not ng.real.served(server, path)


# ---------------------------------------------------------------- CONNECT

def _connect(host="pypi.org:443"):
    return f"CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def _get(path, host):
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def test_request_after_a_refused_connect_is_judged(ng):
    """aiohttp answers CONNECT with 404 and serves the next request on the connection; on
    the code before, namegate took everything after an allowed CONNECT for a tunnel."""
    path = f"/afterconnect-{tag()}"
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["aiohttp"], [_connect(), _get(path, "evil.test")],
                       half_close=False)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out
    assert not ng.real.served("aiohttp", path), "aiohttp served the request after its 404"


def test_request_pipelined_behind_a_connect_waits_for_the_answer(ng):
    """The same in one segment: the request is held until the server answers the CONNECT,
    which it cannot do before it has it: cut, and aiohttp serves nothing of it."""
    path = f"/pipeconnect-{tag()}"
    with nc.Delta(ng) as d:
        out = exchange(ng, PORTS["aiohttp"], [_connect() + _get(path, "evil.test")],
                       half_close=False)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert out == "reset", out
    assert not ng.real.served("aiohttp", path)


def test_control_allowed_request_after_a_refused_connect_is_served(ng):
    path = f"/afterconnect-ok-{tag()}"
    out = exchange(ng, PORTS["aiohttp"], [_connect(), _get(path, "pypi.org")],
                   half_close=False)
    assert isinstance(out, bytes) and out.startswith(b"HTTP/1.1 404"), out
    assert b"pypi\n" in out, out
    assert ng.real.served("aiohttp", path) == [("pypi.org", path)]


def test_control_tunnel_after_a_2xx_passes_unjudged(ng):
    data = b"\x16\x03\x01 not judged: the tunnel's " + tag().encode()
    out = exchange(ng, PORTS["proxy"], [_connect(), data])
    assert out == b"HTTP/1.1 200 Connection established\r\n\r\n" + data, out
    assert data in ng.real.read("proxy")
