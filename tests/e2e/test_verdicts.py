"""SNI verdicts, hold-and-release, QUIC and audit (SPEC s4 steps 5, 6, 9) through the real
daemon: ClientHellos split by segments and by records pass; non-TLS bytes, a missing or
wrong SNI, or a retransmission that rewrites held bytes are cut both ways, and the server
never sees a byte of them."""
import json
import textwrap

import pytest

import ng_counters as nc
import tls_start
from lab_net import wait_until
from test_dataplane import start

# A TLS client in the VM whose ClientHello is cut into TCP segments (sizes) and TLS records
# (record) before it is sent; the rest of the handshake runs through MemoryBIOs.
_CLIENT = tls_start.SOURCE + r"""
import json, socket, ssl, struct, sys, time
host, addr, port, sni, segs, record, ca, verify = json.loads(sys.argv[1])
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = bool(sni) and verify
if not verify:      # only namegate may cut it, never the client's own certificate check
    ctx.verify_mode = ssl.CERT_NONE
tls, inc, out, hello = tls_start(sni or None, ctx)
s = socket.create_connection((addr, port), timeout=20)     # a cap: cuts are resets
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
print("port", s.getsockname()[1], file=sys.stderr, flush=True)
def sent_alone(n):
    # until n segments with data have left (tcpi_data_segs_out, TCP_INFO offset 156):
    # each piece goes out as a segment of its own, never merged with the next
    end = time.monotonic() + 20
    while struct.unpack_from("=I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256),
                             156)[0] < n:
        if time.monotonic() > end:
            raise SystemExit(f"piece {n} never left")
        time.sleep(0.002)
if record:          # one handshake message over several records (RFC 8446 s5.1)
    body, hello = hello[5:], b""
    for i in range(0, len(body), record):
        chunk = body[i:i + record]
        hello += b"\x16\x03\x01" + struct.pack(">H", len(chunk)) + chunk
pieces, off = [], 0
for n in segs:
    pieces.append(hello[off:off + n]); off += n
pieces.append(hello[off:])
try:
    for i, p in enumerate([p for p in pieces if p]):
        s.sendall(p); sent_alone(i + 1)
    while True:
        try:
            tls.do_handshake(); break
        except ssl.SSLWantReadError:
            data = s.recv(65536)
            if not data:
                raise ConnectionResetError("closed")
            inc.write(data)
            s.sendall(out.read())
    s.sendall(out.read())
    tls.write(b"GET / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nConnection: close\r\n\r\n")
    s.sendall(out.read())
    body = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        inc.write(data)
        try:
            while True:
                body += tls.read()
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
            pass
    print("ok", body.split(b"\r\n\r\n", 1)[1].decode())
except (ConnectionResetError, BrokenPipeError, ssl.SSLError, socket.timeout) as e:
    print("cut", type(e).__name__)
"""


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def tls_client(lab, vm, host, addr, port=443, sni=None, segs=(), record=0, verify=True):
    arg = json.dumps([host, addr, port, host if sni is None else sni, list(segs), record,
                      lab.ca_path, verify])
    cp = lab.vm_exec(vm, ["/usr/bin/python3", "-c", _CLIENT, arg], timeout=60)
    word, _, rest = cp.stdout.strip().partition(" ")
    return word, rest, cp.stderr


def client_port(err):
    """The source port _CLIENT wrote to its stderr."""
    return int(err.split("port ", 1)[1].split()[0])


def server_read(lab, addr, port):
    """What the TLS server at addr made of the connection from client port: "hello" when
    it read a first byte, "tls_error" when the connection ended before any. It logs one of
    the two for every connection it accepts, so this waits for it: a positive marker, after
    which the absence of a hello is final."""
    evs = wait_until(lambda: [e["event"] for e in lab.server_events(addr=addr, client_port=port)
                              if e["event"] in ("hello", "tls_error")],
                     what=f"the server's verdict on the connection from port {port}")
    return evs[0]


def resolve(lab, vm, name):
    addrs = lab.dig(vm, name).addresses
    assert addrs, f"{name} did not resolve"
    return addrs[0]


def test_hello_split_over_segments_passes(ng):
    addr = resolve(ng, "vm1", "pypi.org")
    word, body, err = tls_client(ng, "vm1", "pypi.org", addr, segs=(10, 100, 300))
    assert word == "ok", err
    assert json.loads(body)["server"] == "pypi" and json.loads(body)["sni"] == "pypi.org"


def test_hello_split_over_records_and_segments_passes(ng):
    addr = resolve(ng, "vm1", "files.pythonhosted.org")
    word, body, err = tls_client(ng, "vm1", "files.pythonhosted.org", addr, segs=(7, 60),
                                 record=90)
    assert word == "ok", err
    assert json.loads(body)["server"] == "files"


def test_sni_not_resolved_to_this_address_is_cut(ng):
    """strict: github.com is allowed for vm2, but it resolved to another address."""
    addr = resolve(ng, "vm2", "raw.githubusercontent.com")
    with nc.Delta(ng) as d:
        word, _, err = tls_client(ng, "vm2", "github.com", addr)
    assert word == "cut", err
    assert server_read(ng, addr, client_port(err)) == "tls_error", \
        "the server read a hello for a name that never resolved to its address"
    assert d[nc.blocked("vm2", "sni_denied")] >= 1
    word, _, err = tls_client(ng, "vm2", "raw.githubusercontent.com", addr)
    assert word == "ok", err


def test_sni_not_allowed_is_cut(ng):
    """upload.pypi.org is denied. The client checks no certificate, so only namegate can
    stop it: a reset, and the server never reads the hello (its own log); the same client
    with pypi.org's name is served."""
    addr = resolve(ng, "vm1", "pypi.org")
    word, body, err = tls_client(ng, "vm1", "pypi.org", addr, verify=False)
    assert word == "ok" and json.loads(body)["sni"] == "pypi.org", f"control: {err}"
    with nc.Delta(ng) as d:
        word, why, err = tls_client(ng, "vm1", "upload.pypi.org", addr, verify=False)
        d.wait({nc.blocked("vm1", "sni_denied"): 1})
    assert (word, why) == ("cut", "ConnectionResetError"), (word, why, err)
    assert not ng.server_events(event="sni", addr=addr, sni="upload.pypi.org"), \
        "the server read a hello namegate refused"


def test_no_sni_is_cut(ng):
    addr = resolve(ng, "vm1", "pypi.org")
    with nc.Delta(ng) as d:
        word, _, err = tls_client(ng, "vm1", "pypi.org", addr, sni="")
    assert word == "cut", err
    assert server_read(ng, addr, client_port(err)) == "tls_error", \
        "the server read a hello without a server name"
    assert d[nc.blocked("vm1", "no_sni")] >= 1


def test_not_tls_on_a_tls_port_is_cut_and_never_reaches_the_server(ng):
    addr = resolve(ng, "vm1", "pypi.org")
    with nc.Delta(ng) as d:
        out = ng.vm_python("vm1", f"""
import socket
s = socket.create_connection(({addr!r}, 443), timeout=20)
print(s.getsockname()[1])
s.sendall(b"GET /?token=secret HTTP/1.0\\r\\n\\r\\n")
try:
    print("data" if s.recv(100) else "closed")
except ConnectionResetError:
    print("reset")
""")
    port, word = out.stdout.split()
    assert word == "reset", out.stderr
    # the server logs no request it cannot decrypt: "hello" is its reading the first byte
    assert server_read(ng, addr, int(port)) == "tls_error", \
        "the TLS server read the plaintext request"
    assert d[nc.blocked("vm1", "not_tls")] >= 1


def test_partial_hello_is_held_then_cut(ng):
    """Half a ClientHello: it goes on (a slow writer's bytes that cannot complete a hello
    do, test_slow_writers), the server never has a whole hello to read a name from, and
    after the hold time the connection is cut."""
    addr = resolve(ng, "vm1", "pypi.org")
    out = ng.vm_python("vm1", tls_start.SOURCE + f"""
import socket, ssl, time
hello = tls_start("pypi.org", ssl.create_default_context())[3]
s = socket.create_connection(({addr!r}, 443), timeout=30)   # a cap: the hold is 5 s
s.sendall(hello[:len(hello) // 2])
port = s.getsockname()[1]
t0 = time.monotonic()
try:
    r = s.recv(100)
    print(port, "closed" if not r else "data")
except ConnectionResetError:
    print(port, "reset", round(time.monotonic() - t0))
""", timeout=60)
    port, word = out.stdout.split()[:2]
    assert word == "reset", out.stdout + out.stderr
    assert ng.server_events(event="hello", addr=addr, client="10.77.0.11",
                            client_port=int(port)), "the half hello never went on"
    assert not ng.server_events(event="sni", addr=addr, client_port=int(port))


def test_rewritten_retransmission_is_cut(ng):
    """The first half of a real ClientHello for pypi.org (allowed) is held; a
    "retransmission" of it names evil.org in the same bytes; then the second half. Judging
    one version while the server reads the other is the attack: the flow dies (rewrite),
    RST to the VM, and the server never has a whole hello of either name from that port
    (the first half went on as a slow writer's bytes do; the rewrite and the second half
    never did). The control, the same halves with no rewrite, is served."""
    addr = resolve(ng, "vm1", "pypi.org")
    ng.vm_exec("vm1", "nft add table inet ngtest && nft add chain inet ngtest out "
               "'{ type filter hook output priority 0; }' && "
               "nft add rule inet ngtest out tcp flags rst drop", check=True)

    def send(sport, rewrite):
        return ng.scapy("vm1", tls_start.SOURCE + textwrap.dedent(f"""
            hello = tls_start("pypi.org", ssl.create_default_context())[3]
            at = hello.index(b"pypi.org")
            cut = at + 20                   # the name in the first half
            ip, seq = IP(dst={addr!r}), 1000
            sa = sr1(ip/TCP(sport={sport}, dport=443, flags='S', seq=seq), timeout=20)
            ack = sa.seq + 1
            send(ip/TCP(sport={sport}, dport=443, flags='A', seq=seq + 1, ack=ack))
            send(ip/TCP(sport={sport}, dport=443, flags='PA', seq=seq + 1, ack=ack)/hello[:cut])
            if {rewrite!r}:
                other = hello[:at] + b"evil.org" + hello[at + 8:cut]
                send(ip/TCP(sport={sport}, dport=443, flags='PA', seq=seq + 1, ack=ack)/other)
            r = sr1(ip/TCP(sport={sport}, dport=443, flags='PA', seq=seq + 1 + cut, ack=ack)/
                    hello[cut:], timeout=5)
            print('rst' if r is not None and r[TCP].flags & 4 else 'none' if r is None else
                  'data')
        """))
    try:
        control = send(41110, False)
        with nc.Delta(ng) as d:
            out = send(41111, True)
    finally:
        ng.vm_exec("vm1", "nft delete table inet ngtest")
    assert control.stdout.strip() == "data", "control: " + control.stdout + control.stderr
    assert ng.server_events(event="sni", addr=addr, client_port=41110, sni="pypi.org"), \
        "control: the server read the hello sent in two halves"
    # the reply to the second half came back before this: what the server read is logged
    assert not ng.server_events(event="sni", addr=addr, client_port=41111), \
        "the server read a hello from a stream namegate saw rewritten"
    assert out.stdout.strip() == "rst", out.stdout + out.stderr
    d.wait({nc.blocked("vm1", "rewrite"): 1})


def test_quic_gets_port_unreachable(ng):
    addr = resolve(ng, "vm1", "pypi.org")
    with nc.Delta(ng) as d:
        out = ng.vm_python("vm1", f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(20)            # a cap: the port unreachable is expected
s.connect(({addr!r}, 443))
s.send(b"\\xc0\\x00\\x00\\x00\\x01" + b"\\x00" * 1195)
try:
    s.recv(100); print("answer")
except ConnectionRefusedError:
    print("unreachable")
""")
    assert out.stdout.strip() == "unreachable", out.stderr
    assert d[nc.blocked("vm1", "quic")] == 1
    assert not ng.server_events(event="udp", addr=addr, port=443, client="10.77.0.11")


def test_audit_vm_sni_mismatch_passes_as_would_block(ng):
    addr = resolve(ng, "vm3", "raw.githubusercontent.com")
    assert not ng.server_events(event="hello", addr=addr, client="10.77.0.13")
    with nc.Delta(ng) as d:
        word, body, err = tls_client(ng, "vm3", "github.com", addr, sni="github.com")
    assert d[nc.blocked("vm3", "sni_denied")] >= 1 and d[nc.egress("vm3", "would_block")] >= 1
    assert word in ("ok", "cut"), err     # the server's certificate decides, not namegate
    assert ng.server_events(event="hello", addr=addr, client="10.77.0.13")


def test_flood_from_one_vm_does_not_starve_another(request):
    lab = start(request, dataplane={"max_flows_per_vm": 32})
    flood = lab.vm_python("vm1", """
import socket
addr = socket.getaddrinfo("pypi.org", 7, socket.AF_INET)[0][4][0]
held, refused = [], 0
for i in range(200):
    try:
        held.append(socket.create_connection((addr, 7), timeout=20))   # a cap: refusals are resets
    except OSError:
        refused += 1
print(len(held), refused)
""", timeout=120)
    opened, refused = map(int, flood.stdout.split())
    assert opened == 32 and refused == 168, flood.stderr
    assert lab.curl("vm2", "https://github.com/").ok
    assert nc.read(lab)[nc.blocked("vm1", "flow_limit")] == 168


def test_quic_inspect_judges_the_initials_sni(request):
    lab = start(request, quic="inspect")
    client = labmod_path("quic_initial.py")
    addr = resolve(lab, "vm1", "pypi.org")
    with nc.Delta(lab) as d:
        ok = lab.vm_exec("vm1", ["/usr/bin/python3", client, addr, "pypi.org"], timeout=60)
        denied = lab.vm_exec("vm1", ["/usr/bin/python3", client, addr, "upload.pypi.org"],
                             timeout=60)
        garbage = lab.vm_exec("vm1", ["/usr/bin/python3", client, addr, "-"], timeout=60)
    assert ok.stdout.strip() == "echo", ok.stderr
    assert denied.stdout.strip() == "unreachable", denied.stderr
    assert garbage.stdout.strip() == "unreachable", garbage.stderr
    assert d[nc.blocked("vm1", "sni_denied")] == 1 and d[nc.blocked("vm1", "not_tls")] == 1
    assert d[nc.blocked("vm1", "quic")] == 0
    assert len(lab.server_events(event="udp", addr=addr, port=443, client="10.77.0.11")) == 1


def labmod_path(name):
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
