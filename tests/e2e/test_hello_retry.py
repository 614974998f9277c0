"""HelloRetryRequest (RFC 8446 s4.1.4): a client whose first ClientHello carries no key
share the server takes gets an HRR and sends a second ClientHello on the same connection.
OpenSSL (3.0, the lab's Python ssl servers) reads that second hello's server_name as the
one it serves (its SNI callback runs again with it: openssl/openssl#32472), so a VM whose
first hello names pypi.org (judged, allowed) and whose second names evil.test has the
server read a name namegate never judged: after the HRR, or pipelined before it. Each
attack pairs with a control that the same honest retry goes on through namegate. No client
puts a second hello in the first hello's segment (it needs the HRR's group): namegate cuts
that one whatever it names (not_tls), so its control is the cut.
"""
import json

import pytest

import ng_counters as nc
from lab_net import wait_until
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
