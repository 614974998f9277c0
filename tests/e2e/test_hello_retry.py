"""HelloRetryRequest (RFC 8446 s4.1.4): a client whose first ClientHello carries no key
share the server takes gets an HRR and sends a second ClientHello on the same connection.
OpenSSL (3.0, the lab's Python ssl servers) reads that second hello's server_name as the
one it serves (its SNI callback runs again with it: openssl/openssl#32472), so a VM whose
first hello names pypi.org (judged, allowed) and whose second names evil.test has the
server read a name namegate never judged: after the HRR, or pipelined before it. Each
attack pairs with a control that the same honest retry goes on through namegate. No client
puts a second hello in the first hello's segment (it needs the HRR's group): namegate cuts
that one whatever it names (not_tls), so its control is the cut.

The crafted hellos stand for what a client could send; test_real_client_hello_retry is
what real ones do: OpenSSL's s_client against OpenSSL's s_server that takes one group only,
an honest retry end to end (the client sends CCS + its second hello only after reading the
HRR).
"""
import json
import os
import re
import secrets
import struct

import pytest

import lab_real
import lab_services as svc
import ng_counters as nc
from lab_net import read_text, wait_until
from test_conntrue import VM1, resolve
from test_conntrue import ng  # noqa: F401 (a fixture)

# In vm1: a retried handshake from a plain socket (its own TCP retransmits what is lost).
# CH1 names pypi.org with an empty key_share, so the server must answer HRR (x25519); CH2
# is the same hello naming ch2_sni with a real x25519 share (the base point, u = 9).
# mode: 'waited' (CH1, read the HRR, then CCS + CH2), 'one_send' (CH1 + CCS + CH2 in one
# send), 'two_sends' (CH1, then CCS + CH2 at once, before any reply). What it read, as
# the first and second ServerHello the server sent: 'hrr', 'server_hello' (not an HRR),
# or how the connection ended instead ('reset', 'eof', 'timeout', 'alert ...').
_CLIENT = r"""
import json, socket, struct
HRR = bytes.fromhex('cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c')
SIGALGS = [0x0905, 0x0906, 0x0904, 0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x0804,
           0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0303, 0x0203, 0x0301, 0x0201]

def u16(v):
    return struct.pack('!H', v)

def vec8(b):
    return bytes([len(b)]) + b

def vec16(b):
    return u16(len(b)) + b

def ext(t, body):
    return u16(t) + vec16(body)

def hello(host, shares, rnd, sid):
    exts = [ext(0x0000, vec16(b'\x00' + vec16(host.encode()))),
            ext(0x000B, b'\x03\x00\x01\x02'),
            ext(0x000A, vec16(u16(0x001D) + u16(0x0017))),          # x25519, secp256r1
            ext(0x0016, b''), ext(0x0017, b''),
            ext(0x000D, vec16(b''.join(u16(a) for a in SIGALGS))),
            ext(0x002B, vec8(u16(0x0304) + u16(0x0303))),
            ext(0x002D, b'\x01\x01'),
            ext(0x0033, vec16(b''.join(u16(g) + vec16(k) for g, k in shares)))]
    body = u16(0x0303) + rnd + vec8(sid) + vec16(u16(0x1302) + u16(0x1303) + u16(0x1301)) + \
        b'\x01\x00' + vec16(b''.join(exts))
    return b'\x16\x03\x01' + vec16(b'\x01' + struct.pack('!I', len(body))[1:] + body)

def recv_exact(s, n):
    data = b''
    while len(data) < n:
        more = s.recv(n - len(data))
        if not more:
            return None
        data += more
    return data

def server_hello(s):
    # the next ServerHello's kind, or how the connection ended before one came
    try:
        while True:
            head = recv_exact(s, 5)
            body = head and recv_exact(s, struct.unpack('!H', head[3:5])[0])
            if body is None:
                return 'eof'
            if head[0] == 21:
                return 'alert ' + body.hex()
            if head[0] == 22 and body[:1] == b'\x02':
                return 'hrr' if body[6:38] == HRR else 'server_hello'
    except (ConnectionResetError, BrokenPipeError):
        return 'reset'
    except socket.timeout:
        return 'timeout'

def send(s, data):
    try:
        s.sendall(data)
        return None
    except (ConnectionResetError, BrokenPipeError):
        return 'reset'

def run(dst, sport, ch2_sni, mode):
    rnd, sid = bytes(range(32)), bytes(range(32, 64))
    ch1 = hello('pypi.org', [], rnd, sid)
    ch2 = hello(ch2_sni, [(0x001D, b'\x09' + bytes(31))], rnd, sid)
    ccs = b'\x14\x03\x03\x00\x01\x01'
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('', sport))
    s.settimeout(30)        # a cap for a reply that is expected
    s.connect((dst, 443))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == 'waited':
        first = send(s, ch1) or server_hello(s)
        second = first if first != 'hrr' else send(s, ccs + ch2) or server_hello(s)
    else:
        sent = send(s, ch1 + ccs + ch2) if mode == 'one_send' else \
            send(s, ch1) or send(s, ccs + ch2)
        first = sent or server_hello(s)
        second = first if first not in ('hrr', 'server_hello') else server_hello(s)
    s.close()
    return dict(first=first, second=second)
"""

MODES = ["waited", "one_send", "two_sends"]
# vm1's source ports (unique to this file): the honest retry's, then the attack's
PORTS = {"waited": (20201, 20202), "one_send": (20203, 20204), "two_sends": (20205, 20206)}


def retry(lab, dst, sport, ch2_sni, mode):
    cp = lab.vm_python("vm1", _CLIENT + f"\nprint(json.dumps(run({dst!r}, {sport}, "
                       f"{ch2_sni!r}, {mode!r})))\n", timeout=120)
    lines = cp.stdout.strip().splitlines()
    assert cp.returncode == 0 and lines, \
        f"the client in vm1 failed (rc {cp.returncode}): {cp.stdout[-500:]} {cp.stderr[-1500:]}"
    return json.loads(lines[-1])


def read(lab, port):
    return [e["sni"] for e in lab.server_events(event="sni", client=VM1, client_port=port)]


def blocked(counts):
    """Every blocked reason's count for vm1 (the cut may be counted as sni_denied, or as
    another reason): {reason: n} of those that moved."""
    prefix = 'namegate_vm_blocked_total{vm="vm1",reason="'
    return {k[len(prefix):-2]: v for k, v in counts.items() if k.startswith(prefix) and v}


def moved(d):
    d.refresh()
    return blocked({k: d[k] for k in d.after})


@pytest.mark.parametrize("mode", ["waited", "two_sends"])
def test_honest_hello_retry_goes_on(ng, mode):
    """Control: CH1 and CH2 both name pypi.org. The server answers CH1 with an HRR and CH2
    with a ServerHello, and reads pypi.org only: a retried handshake passes namegate."""
    addr = resolve(ng, "pypi.org")
    port = PORTS[mode][0]
    out = retry(ng, addr, port, "pypi.org", mode)
    assert out["first"] == "hrr", \
        f"the server did not answer the keyless hello with a HelloRetryRequest: {out}"
    assert out["second"] == "server_hello", \
        f"the honest retry did not go on to a ServerHello through namegate: {out}"
    names = wait_until(lambda: read(ng, port) if len(read(ng, port)) >= 2 else None,
                       what="the server to read both hellos")
    assert names == ["pypi.org", "pypi.org"], f"the server read {names}"


@pytest.mark.parametrize("mode", MODES)
def test_second_hello_naming_a_denied_host_is_cut(ng, mode):
    """Attack: CH1 names pypi.org, CH2 (after the HRR, or pipelined before it) evil.test.
    The server must never read evil.test, and the flow is cut and counted."""
    addr = resolve(ng, "pypi.org")
    port = PORTS[mode][1]
    with nc.Delta(ng) as d:
        out = retry(ng, addr, port, "evil.test", mode)
    if mode == "waited":
        # the first hello alone was judged and allowed: the server retried it
        assert out["first"] == "hrr", f"no HelloRetryRequest came for the allowed hello: {out}"
    assert "evil.test" not in read(ng, port), \
        "the server read evil.test: a second ClientHello after HelloRetryRequest went " \
        f"unjudged (the VM read {out})"
    assert "server_hello" not in (out["first"], out["second"]), \
        f"the server answered the second hello: {out}"
    assert out["second"] in ("reset", "eof"), \
        f"the connection was not cut after the second hello: {out}"

    # judged as a hello and denied; in the first hello's segment, refused unread
    reason = "not_tls" if mode == "one_send" else "sni_denied"
    assert reason in wait_until(lambda: moved(d), what="a blocked counter of vm1 to move"), \
        f"the cut was not counted as {reason}: {moved(d)}"
    assert "evil.test" not in read(ng, port), f"the server read {read(ng, port)}"


def test_second_hello_in_the_first_hellos_segment_is_cut(ng):
    """No client sends its second hello before the HRR that asks for it: in the first
    hello's own segment it is cut even when it names the same host (the first hello's
    segment carries no handshake record past it, and so is never sent)."""
    addr = resolve(ng, "pypi.org")
    port = PORTS["one_send"][0]
    with nc.Delta(ng) as d:
        out = retry(ng, addr, port, "pypi.org", "one_send")
    assert out["first"] in ("reset", "eof"), f"the pipelined hellos were not cut: {out}"
    assert "not_tls" in wait_until(lambda: moved(d), what="a blocked counter of vm1 to move"), \
        f"the cut was not counted as not_tls: {moved(d)}"
    assert read(ng, port) == [], f"the server read a hello of the cut segment: {read(ng, port)}"


# ---------------------------------------------------------------- a real client and server

HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
X25519, P256 = 0x001D, 0x0017
# s_server's port on pypi.org's address: none of the lab's servers (lab_services) or
# lab_real's listen there; vm1's policy (python) allows "pypi.org", a name with no port,
# so every port of its bound address is admitted and the hello judged as on 443
HRR_PORT = 8087


@pytest.fixture
def hrr_server(ng):
    """OpenSSL's s_server in the lab's internet on pypi.org's address, with the lab CA's
    pypi.org certificate, taking P-256 only: a client whose first key share is another
    group's gets a HelloRetryRequest. -www answers a GET with a page of what it negotiated.
    Stopped at the test's end, pass or fail (and by the lab's teardown as a backstop)."""
    used = {L["port"] for L in svc.server_spec(ng.tmpdir)["listeners"]
            if L["addr"] == lab_real.ADDR and L["kind"] != "udp-echo"}
    assert HRR_PORT not in used | set(lab_real.PORTS.values()), \
        f"port {HRR_PORT} is another lab server's"
    cert, key = (os.path.join(ng.tmpdir, f"pypi.{ext}") for ext in ("pem", "key"))
    srv = ng.spawn("hrr-s_server", ["openssl", "s_server", "-tls1_3", "-groups", "P-256",
                                    "-cert", cert, "-key", key, "-www",
                                    "-accept", f"{lab_real.ADDR}:{HRR_PORT}"], ng.inet_ns)
    try:
        def listening():
            if not srv.alive():
                raise AssertionError(f"s_server exited: {' '.join(srv.output())[-800:]}")
            cp = ng.inet_exec(["ss", "-Htln", "src", f"{lab_real.ADDR}:{HRR_PORT}"])
            return cp.returncode == 0 and cp.stdout.strip()
        wait_until(listening, what=f"s_server listening on {lab_real.ADDR}:{HRR_PORT}")
        yield srv
    finally:
        srv.stop(3.0)


# s_client -msg: "<<< TLS 1.3, Handshake [length 0058], ServerHello" (or a record's name
# alone: "RecordHeader", "ChangeCipherSpec"; an alert's: "Alert [length 0002], warning
# close_notify"), then the message's bytes, 16 a line
_MSG = re.compile(r"^(<<<|>>>) [^,]+, (\w+) \[length [0-9a-f]+\](?:, (.+))?$")
_HEX = re.compile(r"^    [0-9a-f]{2}( [0-9a-f]{2})*$")


def msg_log(text):
    """[(direction '>>>' sent or '<<<' received, kind, bytes)] of s_client -msg output."""
    out = []
    for line in text.splitlines():
        m = _MSG.match(line)
        if m:
            out.append((m.group(1), m.group(3) or m.group(2), bytearray()))
        elif out and _HEX.match(line):
            out[-1][2].extend(bytes.fromhex(line))
    return [(d, k, bytes(b)) for d, k, b in out]


def hello_extensions(msg):
    """{type: body} of a ClientHello or ServerHello handshake message (with its header)."""
    off = 4 + 2 + 32
    off += 1 + msg[off]                                         # session id
    if msg[0] == 1:
        off += 2 + struct.unpack_from("!H", msg, off)[0]        # cipher suites
        off += 1 + msg[off]                                     # compression methods
    else:
        off += 2 + 1                                            # cipher suite, compression
    end = off + 2 + struct.unpack_from("!H", msg, off)[0]
    off, exts = off + 2, {}
    while off < end:
        t, n = struct.unpack_from("!HH", msg, off)
        exts[t] = msg[off + 4:off + 4 + n]
        off += 4 + n
    return exts


def client_hello_facts(msg):
    """(server name, [key share groups]) of a ClientHello."""
    exts = hello_extensions(msg)
    sni = exts.get(0x0000, b"")
    name = sni[5:5 + struct.unpack_from("!H", sni, 3)[0]].decode() if sni else None
    shares, ks, off = [], exts.get(0x0033, b"\0\0"), 2
    while off < len(ks):
        g, n = struct.unpack_from("!HH", ks, off)
        shares.append(g)
        off += 4 + n
    return name, shares


def hello_wait_drops(counts):
    return sum(v for k, v in counts.items()
               if k.startswith("namegate_drops_total") and 'reason="hello_wait"' in k)


def test_real_client_hello_retry(ng, hrr_server):
    """OpenSSL's s_client in vm1 offers an X25519 key share first (P-256 second) to an
    s_server that takes P-256 only: the server answers with a HelloRetryRequest, and the
    client, having read it, sends change_cipher_spec and a second hello naming pypi.org with
    a P-256 share. Through namegate the handshake completes (the certificate verified for
    pypi.org against the lab CA) and the GET is answered: the second hello behind its CCS
    was judged and allowed, nothing was cut or left hanging, and no block was counted. The
    -msg log proves the retry really happened, so this is namegate's retry path, not the
    one-hello path."""
    assert lab_real.ADDR in ng.dig("vm1", "pypi.org").addresses     # the binding strict needs
    msgfile = os.path.join(ng.tmpdir, f"hrr-msg-{secrets.token_hex(3)}.txt")
    argv = ["openssl", "s_client", "-connect", f"{lab_real.ADDR}:{HRR_PORT}",
            "-servername", "pypi.org", "-tls1_3", "-groups", "X25519:P-256",
            "-CAfile", ng.ca_path, "-verify_hostname", "pypi.org", "-verify_return_error",
            "-msg", "-msgfile", msgfile, "-ign_eof"]
    with nc.Delta(ng) as d:
        # -ign_eof: the client sends the GET and reads until the server closes (-www does,
        # after its page); a hang is the cap's 124
        cp = ng.vm_exec("vm1", argv, timeout=60, input="GET / HTTP/1.0\r\n\r\n")
    msgs = msg_log(read_text(msgfile))
    seen = [f"{di} {k}" for di, k, _ in msgs if k not in ("RecordHeader", "InnerContent")]
    waits = hello_wait_drops(d.after) - hello_wait_drops(d.before)
    why = f"s_client rc {cp.returncode}; messages {seen}; hello_wait drops {waits}; " \
        f"blocked {blocked({k: d[k] for k in d.after})}; stderr {cp.stderr[-1500:]}"

    # the server forced a retry, and the client retried as RFC 8446 s4.1.4 says
    server_hellos = [b for di, k, b in msgs if di == "<<<" and k == "ServerHello"]
    client_hellos = [b for di, k, b in msgs if di == ">>>" and k == "ClientHello"]
    assert server_hellos and server_hellos[0][6:38] == HRR_RANDOM, \
        f"the server's first answer was not a HelloRetryRequest: {why}"
    assert hello_extensions(server_hellos[0]).get(0x0033) == struct.pack("!H", P256), \
        f"the HelloRetryRequest did not ask for P-256: {why}"
    assert [client_hello_facts(h) for h in client_hellos] == \
        [("pypi.org", [X25519]), ("pypi.org", [P256])], \
        f"the client did not send its two hellos (X25519, then P-256, both pypi.org): {why}"
    # in this order: the client waited for the HRR, then sent CCS and its second hello
    assert seen[:4] == [">>> ClientHello", "<<< ServerHello", ">>> ChangeCipherSpec",
                        ">>> ClientHello"], \
        f"not hello, HRR, change_cipher_spec, second hello: {why}"

    # and the retried handshake completed through namegate: a real ServerHello, the
    # certificate verified, the GET answered by the page s_server writes for -www
    assert len(server_hellos) == 2 and server_hellos[1][6:38] != HRR_RANDOM, \
        f"no ServerHello came for the second hello: {why}"
    assert cp.returncode == 0, f"s_client failed: {why}"
    assert "New, TLSv1.3, Cipher is" in cp.stdout and "Verify return code: 0 (ok)" in \
        cp.stdout, f"the TLS 1.3 handshake did not complete and verify: {why}"
    assert "HTTP/1.0 200 ok" in cp.stdout and "Shared groups: secp256r1" in cp.stdout, \
        f"s_server's -www page did not come back over the retried handshake: " \
        f"{cp.stdout[-1500:]} {why}"

    # nothing of vm1's was blocked; hello_wait drops (none expected, for a client that
    # waits for the HRR) may move and did not fail the handshake: not asserted
    assert blocked({k: d[k] for k in d.after}) == {}, f"namegate counted a block for vm1: {why}"
