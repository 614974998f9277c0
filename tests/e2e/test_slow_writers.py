"""Slow writers (issue 23): a client that writes an HTTP request head or a ClientHello a
piece at a time, pausing longer than its TCP's retransmission timeout, keeps going.
namegate sends on every byte of an unfinished head or hello that cannot complete it (the
hello's bytes while its lengths say more must come; a head's whole lines, and the line
being written unless it holds a CR), so the server acknowledges them and the client writes
on; the bytes that complete it go only with the verdict. Evidence from both ends: the
client's send queue is empty (the server acknowledged everything sent), yet the server
answered nothing and logged no request or hello; then, with the last bytes, an allowed
request is served and a denied one is cut before the server reads it whole.

Withholding even one byte would not do: after its retransmission timeout the client's TCP
sends that byte again and again with a congestion window of one, and nothing new, until
it is acknowledged. On the code before, every byte of an unfinished head was held and the
connection was cut when the hold expired."""
import json
import secrets

import pytest

import lab_services as svc
import ng_counters as nc
import tls_start
from test_browsers import VM1, start

PYPI = "203.0.113.10"

# Sends argv[2] and, a second later, argv[3] (hex) to argv[4]:argv[1], waits until the
# server has acknowledged them (SIOCOUTQ: bytes sent and not acknowledged), prints what it
# saw, and on "go" sends argv[5], the bytes that complete the request, and what came back.
_HTTP = r"""
import fcntl, json, socket, struct, sys, termios, time
port, first, second, addr, last = int(sys.argv[1]), bytes.fromhex(sys.argv[2]), \
    bytes.fromhex(sys.argv[3]), sys.argv[4], bytes.fromhex(sys.argv[5])
s = socket.create_connection((addr, port), timeout=20)
def outq():
    return struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\0" * 4))[0]
s.sendall(first)
time.sleep(1.0)                       # a slow writer: the rest a second later
s.sendall(second)
deadline = time.monotonic() + 4       # a cap: the server acknowledges within an RTT
while outq() > 0 and time.monotonic() < deadline:
    time.sleep(0.02)
s.setblocking(False)
try:
    early = s.recv(65536)
except BlockingIOError:
    early = b""
s.setblocking(True)
print(json.dumps({"outq": outq(), "early": early.hex(), "port": s.getsockname()[1]}))
sys.stdin.readline()
s.sendall(last)
got = b""
try:
    while chunk := s.recv(65536):
        got += chunk
    print(json.dumps({"got": got.decode(errors="replace")}))
except ConnectionResetError:
    print(json.dumps({"got": "reset"}))
"""


@pytest.fixture(scope="module")
def ng(request):
    lab = start(request)
    assert PYPI in lab.dig("vm1", "pypi.org").addresses
    return lab


def tag():
    return secrets.token_hex(4)


def slow_request(lab, host, path):
    """The request line and half a field, then the rest but the empty line that ends the
    head, then that empty line."""
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n".encode()
    cut = head.index(b"Host: ") + 8
    args = [80, head[:cut].hex(), head[cut:].hex(), PYPI, b"\r\n".hex()]
    with lab.background("vm1", _HTTP, args) as bg:
        before = bg.json()
        # the server has every byte sent, and has answered and logged nothing
        assert before["outq"] == 0, f"{before['outq']} of {len(head)} bytes were never " \
            "acknowledged: the slow writer's bytes were held, not sent on"
        assert before["early"] == "", before
        assert not lab.server_events(event="request", path=path)
        bg.send()
        return bg.json()["got"]


def test_slow_http_writer_is_served(ng):
    path = f"/slow-{tag()}"
    got = slow_request(ng, "pypi.org", path)
    assert got.startswith("HTTP/1.0 200") or got.startswith("HTTP/1.1 200"), got[:200]
    assert ng.server_events(event="request", path=path)


def test_slow_http_writer_naming_a_denied_host_is_cut_before_the_server_reads_it(ng):
    path = f"/slow-evil-{tag()}"
    with nc.Delta(ng) as d:
        got = slow_request(ng, "evil.test", path)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert got == "reset", got[:200]
    assert not ng.server_events(event="request", path=path)


# The same for a ClientHello, through Python's ssl over a memory BIO: half of it, a second
# later all but its last byte, then on "go" the last byte, the rest of the handshake and
# a request.
_TLS = tls_start.SOURCE + r"""
import fcntl, json, socket, ssl, struct, sys, termios, time
ca, name, path, addr = sys.argv[1:5]
tls, inc, out, hello = tls_start(name, ssl.create_default_context(cafile=ca))
s = socket.create_connection((addr, 443), timeout=20)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def outq():
    return struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\0" * 4))[0]
s.sendall(hello[:len(hello) // 2])
time.sleep(1.0)
s.sendall(hello[len(hello) // 2:-1])
deadline = time.monotonic() + 4
while outq() > 0 and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({"outq": outq(), "port": s.getsockname()[1], "len": len(hello)}))
sys.stdin.readline()
def pump():
    if data := out.read():
        s.sendall(data)
try:
    s.sendall(hello[-1:])
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump()
            if not (data := s.recv(65536)):
                raise ConnectionResetError("closed")
            inc.write(data)
    tls.write(f"GET {path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
    pump()
    got = b""
    while True:
        try:
            got += tls.read(65536)
        except ssl.SSLWantReadError:
            if not (data := s.recv(65536)):
                break
            inc.write(data)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    print(json.dumps({"got": got.decode(errors="replace")}))
except ConnectionResetError:
    print(json.dumps({"got": "reset"}))
"""


def slow_hello(lab, name, path):
    with lab.background("vm1", _TLS, [lab.ca_path, name, path, PYPI]) as bg:
        before = bg.json()
        assert before["outq"] == 0, f"{before['outq']} of {before['len']} bytes of the " \
            "hello were never acknowledged: held, not sent on"
        assert not lab.server_events(event="sni", client=VM1, client_port=before["port"])
        bg.send()
        return bg.json()["got"], before["port"]


def test_slow_tls_writer_is_served(ng):
    path = f"/slowtls-{tag()}"
    got, _ = slow_hello(ng, "pypi.org", path)
    assert "200 OK" in got and '"sni": "pypi.org"' in got, got[:300]


def test_slow_tls_writer_naming_a_denied_host_is_cut(ng):
    """upload.pypi.org is denied for vm1; its hello, sent slowly to pypi's address, is cut
    when its last byte comes, and the server never completes a handshake for it."""
    path = f"/slowtls-evil-{tag()}"
    with nc.Delta(ng) as d:
        got, port = slow_hello(ng, "upload.pypi.org", path)
        d.wait({nc.blocked("vm1", "sni_denied"): 1})
    assert got == "reset", got[:300]
    assert not ng.server_events(event="sni", client=VM1, client_port=port)
    assert not ng.server_events(event="request", path=path)
