"""First bytes on every port (SPEC s8; issue 13), attacked from a hostile VM: plaintext
HTTP is judged request by request as the server frames it, and a ClientHello is judged by
its SNI whatever the port. Each attack is paired with an allowed control on the same
address and port, and asserted on what the lab's servers logged (the requests they read)
and on the counter that moved.

vm1's policy allows pypi.org on every port; its address (203.0.113.10) also serves
multi.test, which vm1 may not reach, so a foreign Host there is domain fronting.
"""
import contextlib

import pytest

import lab as labmod
import ng_counters as nc
from lab_net import wait_until
from test_conntrue import (VM1, hello_with, inet_capture, ng,  # noqa: F401 (ng)
                           resolve, vm_scapy)
from test_forged_peer import _SPOOF, spoofed_ack_then_rewrite


def requests(lab, tag):
    """(host, path) of every request from vm1 the servers read whose path starts with /tag
    (request events carry no client port: each test's paths are its own)."""
    return [(e["host"], e["path"]) for e in lab.server_events(event="request", client=VM1)
            if e["path"].startswith("/" + tag)]


@contextlib.contextmanager
def one_segment_lost_past_namegate(lab, match):
    """Inside the block, one client segment to port 80 that nft's match also selects, past
    the first megabyte of them, dropped as it leaves the switch toward the internet (past
    namegate, so only the client's TCP can send it again); asserts after it that one was."""
    rules = (f'table netdev ng_loss {{\n chain out {{\n'
             f'  type filter hook egress device "{lab.prefix}i" priority 0;\n'
             f'  ip protocol tcp tcp dport 80 {match} ip length > 1000'
             f' quota over 1000000 bytes limit rate 1/hour burst 1 packets counter drop\n'
             f' }}\n}}\n')
    lab.ns_exec(lab.sw_ns, ["nft", "-f", "-"], input=rules, check=True)
    try:
        yield
        dropped = lab.ns_exec(lab.sw_ns, "nft list table netdev ng_loss").stdout
    finally:
        lab.ns_exec(lab.sw_ns, "nft delete table netdev ng_loss")
    assert "packets 1 " in dropped, f"no segment was lost past namegate: {dropped}"


def head(host, path="/", extra=""):
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: lab\r\n{extra}\r\n"


_SOCKET = r"""
import socket, struct
def conn(addr, port, sport):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", sport))
    s.settimeout(5)
    s.connect((addr, port))
    return s

def read_response(s):
    # one response with a Content-Length (the lab's servers always send one)
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(4096)
        if not b:
            return None
        data += b
    hdr, _, body = data.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in hdr.split(b"\r\n")
             if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        b = s.recv(4096)
        if not b:
            return None
        body += b
    return hdr.split(b"\r\n")[0].decode()

def outcome(fn):
    try:
        return fn()
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "timeout"

def close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
"""


def vm_sockets(lab, code):
    return vm_scapy(lab, _SOCKET + labmod._dedent(code))


def two_requests(lab, addr, sport, first, second):
    """first, then (once its response is read) second, on one connection from sport to
    addr:80; what each got: the status line, "reset", or None (the connection closed)."""
    return vm_sockets(lab, f"""
        s = conn({addr!r}, 80, {sport})
        first = outcome(lambda: (s.sendall({first.encode()!r}), read_response(s))[1])
        second = outcome(lambda: (s.sendall({second.encode()!r}), read_response(s))[1])
        close(s)
        result(first=first, second=second)
    """)


def one_request(lab, addr, sport, data):
    """data in one write on a connection from sport to addr:80; what it got, as
    two_requests() says."""
    return vm_sockets(lab, f"""
        s = conn({addr!r}, 80, {sport})
        got = outcome(lambda: (s.sendall({data.encode()!r}), read_response(s))[1])
        close(s)
        result(got=got)
    """)


def test_host_split_over_two_segments_is_judged_whole(ng):
    """The request line in one segment, a foreign Host in the next: the head is held until
    whole and the connection cut; the same split with the allowed Host is served."""
    addr = resolve(ng, "pypi.org")
    sport, control = 20101, 20102
    with nc.Delta(ng) as d:
        r = vm_scapy(ng, f"""
            def split(sport, host, path):
                ip, seq, ack = handshake({addr!r}, sport, dport=80)
                s = listen({addr!r}, sport, dport=80)
                a = b"GET " + path + b" HTTP/1.1\\r\\nUser-Agent: lab\\r\\n"
                b = b"Host: " + host + b"\\r\\n\\r\\n"
                send(seg(ip, sport, seq, ack, a, dport=80))
                send(seg(ip, sport, seq + len(a), ack, b, dport=80))
                return reset_seen(s, timeout=5)
            r1 = split({sport}, b"multi.test", b"/split-foreign")
            r2 = split({control}, b"pypi.org", b"/split-allowed")
            result(foreign=r1, allowed=r2)
        """)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert wait_until(lambda: requests(ng, "split-allowed")) == [("pypi.org", "/split-allowed")], r
    assert not r["allowed"], "the allowed split head was cut"
    assert r["foreign"], "the connection with a foreign Host was not cut"
    assert requests(ng, "split-foreign") == [], "the server read the request for multi.test"


def test_second_request_on_a_keepalive_connection_is_judged(ng):
    """Domain fronting on port 80: the first request names pypi.org and is served, the
    second on the same connection names multi.test (same address) and is cut."""
    addr = resolve(ng, "pypi.org")
    sport = 30103
    with nc.Delta(ng) as d:
        r = two_requests(ng, addr, sport, head("pypi.org", "/ka-1"), head("multi.test", "/ka-2"))
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert r["first"] == "HTTP/1.1 200 OK", r
    assert r["second"] in ("reset", None), r
    assert requests(ng, "ka-") == [("pypi.org", "/ka-1")]


def test_pipelined_requests_in_one_segment_are_each_judged(ng):
    """Two requests in one write: the allowed one and one for files.pythonhosted.org, a
    name vm1 may reach but that never resolved to this address (strict binding)."""
    addr = resolve(ng, "pypi.org")
    sport = 30104
    both = head("pypi.org", "/pipe-1") + head("files.pythonhosted.org", "/pipe-2")
    with nc.Delta(ng) as d:
        r = one_request(ng, addr, sport, both)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    # the segment carries the denied head too, so nothing of it may reach the server
    assert requests(ng, "pipe-") == [], r


def test_body_bytes_are_body_and_the_next_head_is_found_after_them(ng):
    """A POST whose Content-Length body holds text that looks like a request for
    multi.test is served as one POST; the request after the body, for multi.test, is cut."""
    addr = resolve(ng, "pypi.org")
    sport = 30105
    inner = head("multi.test", "/post-inside")
    post = (f"POST /post-1 HTTP/1.1\r\nHost: pypi.org\r\nContent-Length: {len(inner)}\r\n\r\n"
            + inner)
    with nc.Delta(ng) as d:
        r = two_requests(ng, addr, sport, post, head("multi.test", "/post-after"))
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert r["first"] == "HTTP/1.1 200 OK", r
    assert r["second"] in ("reset", None), r
    assert requests(ng, "post") == [("pypi.org", "/post-1")]


def test_chunked_body_is_followed_to_its_end(ng):
    """A chunked POST (with a chunk extension and a trailer) is served, and a request
    after its last chunk is judged: allowed here, so both are served."""
    addr = resolve(ng, "pypi.org")
    sport = 30106
    chunked = ("POST /chunked HTTP/1.1\r\nHost: pypi.org\r\nTransfer-Encoding: chunked\r\n"
               "\r\n5;x=y\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
    r = two_requests(ng, addr, sport, chunked, head("pypi.org", "/chunked-after"))
    assert r == {"first": "HTTP/1.1 200 OK", "second": "HTTP/1.1 200 OK"}, r
    assert [p for _, p in requests(ng, "chunked")] == ["/chunked", "/chunked-after"]


def test_ambiguous_framing_is_cut(ng):
    """Content-Length with Transfer-Encoding (the classic smuggling shape) cannot be framed
    one way only: cut before the server reads any of it."""
    addr = resolve(ng, "pypi.org")
    sport = 30107
    smuggle = ("POST /smuggle HTTP/1.1\r\nHost: pypi.org\r\nContent-Length: 4\r\n"
               "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    with nc.Delta(ng) as d:
        r = one_request(ng, addr, sport, smuggle)
        d.wait({nc.blocked("vm1", "host_denied"): 1})
    assert r["got"] in ("reset", None), r
    assert requests(ng, "smuggle") == []


def test_rewriting_a_judged_head_cuts_the_connection(ng):
    """The allowed head is judged and released, but acknowledges data the server never
    sent, so the server discards it; the same bytes then come again saying multi.test."""
    addr = resolve(ng, "pypi.org")
    sport = 20108
    good, bad = head("pypi.org", "/rw-abc"), head("multi.test", "/rw-a")
    assert len(good) == len(bad)
    with nc.Delta(ng) as d:
        r = vm_scapy(ng, f"""
            ip, seq, ack = handshake({addr!r}, {sport}, dport=80)
            s = listen({addr!r}, {sport}, dport=80)
            send(seg(ip, {sport}, seq, ack + 100000, {good.encode()!r}, dport=80))
            send(seg(ip, {sport}, seq, ack, {bad.encode()!r}, dport=80))
            result(reset=reset_seen(s, timeout=5))
        """)
        d.wait({nc.blocked("vm1", "rewrite"): 1})
    assert r["reset"], r
    assert ("multi.test", "/rw-a") not in requests(ng, "rw-")


def test_spoofed_server_ack_does_not_let_a_judged_head_be_rewritten(ng):
    """The allowed head is judged and sent, but the server discards it (it acknowledges
    data never sent); an accomplice on the internet spoofs the server's ACK of it, and the
    VM sends the same bytes again saying multi.test (domain fronting)."""
    # The VM picks its own ISN, so an accomplice knows the ACK that covers the head; only
    # the path knows the server's sequence number. Only an ACK in the server's stream as
    # namegate saw it frees the head's copy, so the rewrite is compared and cut. Control:
    # the same spoof at the server's own next sequence number is taken and the rewrite
    # reaches the server: the spoof works, and the sequence number is what stopped it.
    addr = resolve(ng, "pypi.org")
    spoof = _SPOOF.replace("sport=443", "sport=80")
    argv = [ng.inet_ns, labmod.PYTHON, "-c", spoof, ng.router_mac, ng.vm("vm1").mac, addr, VM1]
    out, bad = {}, {}
    for sport, off_stream in ((20120, True), (20121, False)):
        good, bad[sport] = head("pypi.org", f"/sp{sport}-abc"), head("multi.test", f"/sp{sport}-a")
        assert len(good) == len(bad[sport])
        out[sport] = spoofed_ack_then_rewrite(ng, argv, repr(addr), sport, 80,
                                              repr(good.encode()), repr(bad[sport].encode()),
                                              off_stream)
    assert out[20120]["spoof_seen"] and out[20121]["spoof_seen"], out
    # control: an ACK in the server's stream frees the copy, so the rewrite got through
    assert wait_until(lambda: ("multi.test", "/sp20121-a") in requests(ng, "sp20121-")), \
        f"control: the in-stream spoofed ACK did not let the head go: {out}"
    assert ("multi.test", "/sp20120-a") not in requests(ng, "sp20120-"), \
        "the server read the rewritten Host multi.test after a spoofed ACK"
    assert out[20120]["reset"], f"the rewrite after a spoofed ACK was not cut: {out}"


def test_keepalive_goes_on_after_a_server_segment_lost_before_namegate(ng):
    """The server's first full data segment is lost between it and namegate; the rest of
    its answer passes, out of order as namegate sees the server's stream, and the server's
    retransmission fills the hole only to the lost segment's end: namegate never again
    sees the stream in order, so no ACK frees a judged request's copy. The keep-alive
    connection still serves requests whose bytes fill the hold's buffer twice over: the
    oldest judged bytes are evicted."""
    addr = resolve(ng, "pypi.org")
    sport = 20130
    # dropped as it enters the switch (a drop in the internet namespace's own stack would
    # be reported to the sender, which sends the segment again at once), once: a bucket
    # of one token
    rules = (f'table netdev ng_hole {{\n chain in {{\n'
             f'  type filter hook ingress device "{ng.prefix}i" priority 0;\n'
             f'  ip protocol tcp tcp sport 80 tcp dport {sport} ip length > 1000'
             f' limit rate 1/hour burst 1 packets counter drop\n }}\n}}\n')
    ng.ns_exec(ng.sw_ns, ["nft", "-f", "-"], input=rules, check=True)
    try:
        big = head("pypi.org", "/bytes/20000").encode()
        small = [head("pypi.org", f"/hole-{i:02d}", f"X-Pad: {'x' * 900}\r\n").encode()
                 for i in range(40)]
        r = vm_sockets(ng, f"""
            s = conn({addr!r}, 80, {sport})
            got = []
            for req in [{big!r}] + {small!r}:
                got.append(outcome(lambda: (s.sendall(req), read_response(s))[1]))
            close(s)
            result(got=got)
        """)
        dropped = ng.ns_exec(ng.sw_ns, "nft list table netdev ng_hole").stdout
    finally:
        ng.ns_exec(ng.sw_ns, "nft delete table netdev ng_hole")
    assert "packets 1 " in dropped, f"no server segment was lost before namegate: {dropped}"
    assert r["got"] == ["HTTP/1.1 200 OK"] * 41, r
    assert len(requests(ng, "hole-")) == 40


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("expect", [False, True])
def test_upload_survives_a_segment_lost_past_namegate(ng, chunked, expect):
    """A 4 MB plain-HTTP upload (curl, Content-Length or chunked; with curl's default
    "Expect: 100-continue", which holds the body until the server's 100, or without)
    loses one of its segments between namegate and the server, past its first megabyte.
    By then more than the hold's buffer followed it, so its copy was evicted; the
    client's TCP sends it again and the upload completes: body data frames nothing, so a
    resend of it needs no copy (before, namegate cut the connection as a rewrite). The
    server read every byte, and nothing was cut."""
    size = 4_000_000
    path = f"/upload-loss-{'chunked' if chunked else 'length'}-{int(expect)}"
    with one_segment_lost_past_namegate(ng, ""), nc.Delta(ng) as d:
        r = ng.curl("vm1", f"http://pypi.org{path}", data="u" * size, timeout=30,
                    args=([] if expect else ["-H", "Expect:"]) +
                    (["-H", "Transfer-Encoding: chunked"] if chunked else []))
    assert r.http_code == 200, r.stderr
    got = [e["received"] for e in ng.server_events(event="request", client=VM1)
           if e["path"] == path]
    assert got == [size], got
    assert d[nc.blocked("vm1", "rewrite")] == 0


def test_chunked_upload_survives_losing_a_segment_that_holds_framing(ng):
    """vm1 uploads 4 MB in chunks of 1,000 bytes, so every full segment holds chunk
    framing (a size line, the CRLF after a chunk), and one segment is lost past namegate
    past the first megabyte, its copy evicted before the client sends it again. The
    framing in it is compared with what the hold kept of it, the same, and the upload
    completes: the server read every byte of every chunk, nothing was cut."""
    addr = resolve(ng, "pypi.org")
    sport = 20140
    with one_segment_lost_past_namegate(ng, f"tcp sport {sport}"), nc.Delta(ng) as d:
        r = vm_sockets(ng, f"""
            s = conn({addr!r}, 80, {sport})
            s.settimeout(30)
            # one write, as curl makes: the window past the lost segment fills
            s.sendall(b"POST /chunk-loss HTTP/1.1\\r\\nHost: pypi.org\\r\\n"
                      b"Transfer-Encoding: chunked\\r\\n\\r\\n" +
                      b"".join(b"3e8\\r\\n" + bytes([97 + i % 26]) * 1000 + b"\\r\\n"
                               for i in range(4000)) + b"0\\r\\n\\r\\n")
            got = outcome(lambda: read_response(s))
            close(s)
            result(got=got)
        """)
    assert r["got"] == "HTTP/1.1 200 OK", r
    got = [e["received"] for e in ng.server_events(event="request", client=VM1)
           if e["path"] == "/chunk-loss"]
    assert got == [4_000_000], got
    assert d[nc.blocked("vm1", "rewrite")] == 0


@pytest.mark.parametrize("sni,echoed", [("pypi.org", True), ("evil.test", False)])
def test_tls_on_a_port_that_is_not_a_tls_port_is_judged_by_sni(ng, sni, echoed):
    """Port 22 of pypi.org's address is an echo server: a ClientHello there is judged by
    its SNI exactly as on 443. Allowed, the server echoes it; denied, the connection is
    cut and the server never reads it."""
    addr = resolve(ng, "pypi.org")
    sport = 30110 if echoed else 30111
    with inet_capture(ng) as cap, nc.Delta(ng) as d:
        r = vm_sockets(ng, f"""
            s = conn({addr!r}, 22, {sport})
            h = client_hello({sni!r})
            def echo():
                s.sendall(h)
                got = b""
                while len(got) < len(h):
                    b = s.recv(65536)
                    if not b:
                        return "closed"
                    got += b
                return "echoed" if got == h else "other"
            got = outcome(echo)
            close(s)
            result(got=got)
        """)
        if not echoed:
            d.wait({nc.blocked("vm1", "sni_denied"): 1})
        cap.sync()
    assert r["got"] == ("echoed" if echoed else "reset"), r
    # the echo server logs no bytes: what crossed the wire is what it could read
    assert bool(hello_with(cap, sni)) == echoed, \
        f"a ClientHello for {sni} {'never reached' if echoed else 'reached'} the internet"


def test_another_protocol_on_a_bound_port_passes(ng):
    """An SSH banner (not TLS, not HTTP) to pypi.org's port 22 passes: only TLS and HTTP
    carry a name to judge."""
    addr = resolve(ng, "pypi.org")
    r = vm_sockets(ng, f"""
        s = conn({addr!r}, 22, 30112)
        banner = b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\\r\\n"
        def echo():
            s.sendall(banner)
            return s.recv(4096)
        got = outcome(echo)
        close(s)
        result(got=got if isinstance(got, str) else got.decode())
    """)
    assert r["got"] == "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", r
