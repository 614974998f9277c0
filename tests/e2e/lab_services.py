"""The lab's fake internet: what it serves (names, servers), the test CA and certificates,
the resolver (dnsmasq with local data only), and the server process itself
(`python3 lab_services.py serve SPEC.json`: HTTPS, HTTP, TCP and UDP echo, all in one
process so the lab starts one interpreter, not dozens).

Every address here is TEST-NET (RFC 5737 / 3849) or the lab segment and only ever exists
inside the lab's internet namespace; VMs reach it through their default route.
"""

import json
import os
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import quic_initial

ROUTER4, ROUTER6 = "10.77.0.1", "fd77::1"
LAB_NET4, LAB_NET6 = "10.77.0.0/24", "fd77::/64"
RESOLVER = ROUTER4
# dnsmasq answers on the router's IPv6 address too; namegate treats it as a resolver only
# when a test's config lists it (resolvers: [RESOLVER, RESOLVER6])
RESOLVER6 = ROUTER6
ROGUE_RESOLVER = "203.0.113.53"     # an outside resolver a VM must not be able to use
DNS_TTL = 300


@dataclass
class Server:
    name: str                       # what the response body calls it
    ipv4: str = None
    ipv6: str = None
    sans: list = field(default_factory=list)   # certificate names (and IP: entries)
    more_ipv4: list = field(default_factory=list)   # more addresses: HTTPS 443 and HTTP 80 only
    more_https_ports: list = field(default_factory=list)   # TLS on ports beyond HTTPS_PORTS
    alt_svc: str = None             # an Alt-Svc header on every HTTP(S) response

    @property
    def addresses(self):
        return [a for a in (self.ipv4, self.ipv6) if a] + self.more_ipv4


MANY_ADDRS = [f"192.0.2.{101 + i}" for i in range(40)]     # many.test: 40 A records, all served

SERVERS = [
    # TLS on 2053 too: a port that is not in tls_ports, where SNI is judged all the same
    Server("pypi", "203.0.113.10", "2001:db8::10", ["pypi.org", "ttl5.test", "multi.test"],
           more_https_ports=[2053]),
    Server("files", "203.0.113.11", None, ["files.pythonhosted.org", "multi.test"]),
    Server("github", "203.0.113.12", None, ["github.com"]),
    Server("ghcontent", "203.0.113.13", None,
           ["raw.githubusercontent.com", "objects.githubusercontent.com"]),
    Server("upload", "203.0.113.14", None, ["upload.pypi.org"]),
    Server("evil", "203.0.113.20", None, ["evil.test", "collect.evil.test"]),
    Server("cdn-edge", "203.0.113.30", "2001:db8::30",
           ["edge.cdn.test", "www.pypi-mirror.test", "cdn.pypi-mirror.test"]),
    Server("v6only", None, "2001:db8::20", ["v6only.test"]),
    # Reached by address only (address patterns such as 198.51.100.0/24:443).
    Server("literal", "198.51.100.7", None, ["IP:198.51.100.7"]),
    # svcb.test publishes an HTTPS record (alpn, ipv4hint, ech); hint.test only an HTTPS
    # record whose ipv4hint (203.0.113.44) is the sole way to learn its address
    Server("svcb", "203.0.113.40", None, ["svcb.test", "hint.test"], more_ipv4=["203.0.113.44"]),
    # a site that advertises HTTP/3 (Alt-Svc: h3), for browsers that then try QUIC
    Server("h3", "203.0.113.41", None, ["h3.test"], alt_svc='h3=":443"; ma=86400'),
    Server("many", MANY_ADDRS[0], None, ["many.test"], more_ipv4=MANY_ADDRS[1:]),
]

BULK_NAMES = 1000
BULK_NET = "198.18.0.0/16"          # RFC 2544 benchmarking space, local in the internet ns


def bulk_name(i):
    return f"n{i}.bulk.test"


# Any name under WILD_ZONE resolves to WILD_ADDR: as many distinct names as a test asks
# for (the soak teaches namegate thousands), with no record each.
WILD_ZONE = "wild.test"
WILD_ADDR = "198.18.254.1"


def wild_name(tag, i):
    return f"n{i}.{tag}.{WILD_ZONE}"


def bulk_addr(i):
    return f"198.18.{i // 250}.{i % 250 + 1}"


REBIND_EMBEDDED = ["64:ff9b::a9fe:a9fe", "64:ff9b:1:a9fe:a9:fe00::", "::a9fe:a9fe",
                   "2002:a9fe:a9fe::1", "2001:0:cb00:7114::5601:5601", "64:ff9b::a4d:c"]
NAT64_CONTROL = "64:ff9b::cb00:710a"     # 203.0.113.10, a served address

# (name(s), [addresses], ttl or None): what the resolver answers; the rest is NXDOMAIN.
HOST_RECORDS = [
    (["pypi.org"], ["203.0.113.10", "2001:db8::10"], None),
    (["files.pythonhosted.org"], ["203.0.113.11"], None),
    (["github.com"], ["203.0.113.12"], None),
    (["raw.githubusercontent.com", "objects.githubusercontent.com"], ["203.0.113.13"], None),
    (["upload.pypi.org"], ["203.0.113.14"], None),
    (["evil.test", "collect.evil.test"], ["203.0.113.20"], None),
    (["edge.cdn.test"], ["203.0.113.30", "2001:db8::30"], None),
    (["v6only.test"], ["2001:db8::20"], None),
    (["multi.test"], ["203.0.113.10"], None),
    (["multi.test"], ["203.0.113.11"], None),
    (["ttl5.test"], ["203.0.113.10"], 5),
    (["svcb.test"], ["203.0.113.40"], None),
    (["h3.test"], ["203.0.113.41"], None),
    # rebinding: names that resolve to loopback, link-local metadata, or another VM
    (["rebind-localhost.test"], ["127.0.0.1", "::1"], None),
    (["rebind-metadata.test"], ["169.254.169.254"], None),
    (["rebind-vm.test"], ["10.77.0.12", "fd77::12"], None),
] + [
    # IPv6 addresses that lead to refused IPv4 ones (NAT64 well-known and local-use, IPv4-
    # compatible, 6to4, Teredo's client), one to another VM, and a NAT64 control that stays;
    # a host-record holds one IPv6 address, so a line each
    (["rebind-embedded.test"], [a], None) for a in REBIND_EMBEDDED + [NAT64_CONTROL]
] + [
    # a name vm1 and vm2 may resolve whose answer is the resolver's own address
    (["resolver.githubusercontent.com"], [RESOLVER], None),
] + [
    # an allowed name with a large answer (30 A records: truncated over UDP, several TCP
    # segments at a small MSS): 29 addresses nothing serves, then the ghcontent server's
    (["big.githubusercontent.com"], [f"203.0.113.{140 + i}"], None) for i in range(29)
] + [
    (["big.githubusercontent.com"], ["203.0.113.13"], None),
] + [
    # 40 A records: over 512 bytes, so a plain UDP answer is truncated and TCP is needed
    (["big.test"], [f"203.0.113.{100 + i}"], None) for i in range(40)
] + [
    # 40 A records of a served name: every one of them must be connectable
    (["many.test"], [a], None) for a in MANY_ADDRS
] + [
    # a thousand names, a thousand addresses: each connection needs its own fresh binding
    ([bulk_name(i)], [bulk_addr(i)], None) for i in range(BULK_NAMES)
]
CNAMES = [   # alias -> target; chains: cdn.pypi-mirror.test -> www... -> edge.cdn.test -> A
    ("www.pypi-mirror.test", "edge.cdn.test"),
    ("cdn.pypi-mirror.test", "www.pypi-mirror.test"),
    ("rebind-chain.test", "rebind-localhost.test"),
]

HTTPS_PORTS = [443, 8443]
HTTP_PORTS = [80]
TCP_ECHO_PORTS = [7, 22, 853]
UDP_ECHO_PORTS = [7, 443, 4433, 8443]   # 4433, 8443: QUIC off port 443


def service_addresses():
    addrs = [a for s in SERVERS for a in s.addresses]
    return addrs + [ROGUE_RESOLVER]


# ---------------------------------------------------------------- HTTPS/SVCB records

ECH_PUBLIC_NAME = "ech-cover.evil.test"     # the ECH outer name: no VM may reach it
SVCB_KEYS = {"mandatory": 0, "alpn": 1, "no-default-alpn": 2, "port": 3, "ipv4hint": 4,
             "ech": 5, "ipv6hint": 6}


def ech_config_list(public_name=ECH_PUBLIC_NAME, config_id=None):
    """A syntactically valid ECHConfigList (RFC 9849 s4: version 0xfe0d, a fresh X25519
    key, HKDF-SHA256 / AES-128-GCM). Nobody holds its private key: a client that uses it
    sends public_name as the outer SNI, and no lab server can decrypt the inner hello."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    pub = X25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    name = public_name.encode()
    contents = (bytes([os.urandom(1)[0] if config_id is None else config_id])
                + (0x0020).to_bytes(2, "big")                       # DHKEM(X25519, HKDF-SHA256)
                + len(pub).to_bytes(2, "big") + pub
                + (4).to_bytes(2, "big") + (0x0001).to_bytes(2, "big")   # HKDF-SHA256
                + (0x0001).to_bytes(2, "big")                       # AES-128-GCM
                + bytes([0])                                        # maximum_name_length
                + bytes([len(name)]) + name
                + (0).to_bytes(2, "big"))                           # no extensions
    config = (0xfe0d).to_bytes(2, "big") + len(contents).to_bytes(2, "big") + contents
    return len(config).to_bytes(2, "big") + config


def svcb_rdata(priority=1, target=".", **params):
    """SVCB/HTTPS RDATA (RFC 9460) in wire form. params: alpn=[...], ipv4hint=[...],
    ipv6hint=[...], port=N, ech=bytes (an ECHConfigList), sorted by key as required."""
    def name_wire(n):
        labels = [x for x in n.rstrip(".").split(".") if x]
        return b"".join(bytes([len(x)]) + x.encode() for x in labels) + b"\0"

    def value(key, v):
        if key == "alpn":
            return b"".join(bytes([len(x)]) + x.encode() for x in v)
        if key == "ipv4hint":
            return b"".join(socket.inet_pton(socket.AF_INET, a) for a in v)
        if key == "ipv6hint":
            return b"".join(socket.inet_pton(socket.AF_INET6, a) for a in v)
        if key == "port":
            return int(v).to_bytes(2, "big")
        if key == "ech":
            return bytes(v)
        raise ValueError(f"no SvcParam {key!r}")
    out = priority.to_bytes(2, "big") + name_wire(target)
    for key in sorted(params, key=lambda k: SVCB_KEYS[k.replace("_", "-")]):
        v = value(key, params[key])
        out += SVCB_KEYS[key.replace("_", "-")].to_bytes(2, "big") + len(v).to_bytes(2, "big") + v
    return out


def dns_rrs(tmp):
    """[(name, rrtype, rdata)] the resolver serves beyond its host records: HTTPS (65) and
    SVCB (64) records. The ECHConfigList is made once per run and kept in ech.bin."""
    path = os.path.join(tmp, "ech.bin")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(ech_config_list())
    with open(path, "rb") as f:
        ech = f.read()
    svcb = svcb_rdata(alpn=["h2", "http/1.1"], ipv4hint=["203.0.113.40"], ech=ech)
    return [
        ("svcb.test", 65, svcb),
        ("svcb.test", 64, svcb),        # the same as a plain SVCB record
        ("hint.test", 65, svcb_rdata(alpn=["h2", "http/1.1"], ipv4hint=["203.0.113.44"])),
    ]


# ---------------------------------------------------------------- certificates

_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${ENV::SAN}
"""


def make_certs(tmp, prefix):
    """A CA made for this run and one certificate per server, signed by it. Our own
    openssl config, so the system's defaults cannot turn a leaf into a CA."""
    cnf = os.path.join(tmp, "openssl.cnf")
    with open(cnf, "w") as f:
        f.write(_OPENSSL_CNF)
    ca, cakey = os.path.join(tmp, "ca.pem"), os.path.join(tmp, "ca.key")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
    _openssl(["req", "-x509", "-config", cnf, "-extensions", "ca_ext", *ec,
              "-keyout", cakey, "-out", ca, "-subj", f"/CN=namegate lab CA {prefix}"], "DNS:x")
    procs = []
    for s in SERVERS:
        san = ",".join(n if n.startswith("IP:") else f"DNS:{n}" for n in s.sans)
        cn = next((n for n in s.sans if not n.startswith("IP:")), s.name)
        argv = ["openssl", "req", "-x509", "-config", cnf, "-extensions", "leaf_ext",
                "-CA", ca, "-CAkey", cakey, *ec, "-keyout", os.path.join(tmp, f"{s.name}.key"),
                "-out", os.path.join(tmp, f"{s.name}.pem"), "-subj", f"/CN={cn}"]
        procs.append((argv, subprocess.Popen(argv, env=dict(os.environ, SAN=san),
                                             stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, text=True)))
    for argv, p in procs:       # in parallel: nine key generations at once
        _, err = p.communicate(timeout=30)
        if p.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {err.strip()}")
    return ca


def _openssl(args, san):
    cp = subprocess.run(["openssl"] + args, env=dict(os.environ, SAN=san),
                        capture_output=True, text=True, timeout=30)
    if cp.returncode:
        raise RuntimeError(f"openssl {' '.join(args)}: {cp.stderr.strip()}")


# ---------------------------------------------------------------- resolver

def dnsmasq_argv(tmp):
    """A real resolver with local data only (our config file: no upstream, no /etc/hosts),
    listening on the router addresses and on the rogue outside resolver, logging every
    query so tests can show that a blocked query never reached it."""
    lines = ["keep-in-foreground", "no-resolv", "no-hosts", "no-poll", "bind-interfaces",
             f"listen-address={RESOLVER}", f"listen-address={ROGUE_RESOLVER}",
             f"listen-address={RESOLVER6}", "user=root",
             "pid-file=", "cache-size=0", f"local-ttl={DNS_TTL}", "log-queries=extra",
             f"log-facility={os.path.join(tmp, 'dnsmasq.log')}",
             "local=/#/"]                 # every name not below is NXDOMAIN
    for names, addrs, ttl in HOST_RECORDS:
        lines.append("host-record=" + ",".join(names + addrs + ([str(ttl)] if ttl else [])))
    lines.append(f"address=/{WILD_ZONE}/{WILD_ADDR}")
    for alias, target in CNAMES:
        lines.append(f"cname={alias},{target},{DNS_TTL}")
    for name, rrtype, rdata in dns_rrs(tmp):
        lines.append(f"dns-rr={name},{rrtype},{rdata.hex()}")
    conf = os.path.join(tmp, "dnsmasq.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    return ["dnsmasq", f"--conf-file={conf}"]


# ---------------------------------------------------------------- the server process

# Server events (servers.jsonl, Lab.server_events): accept (a TCP connection, any kind),
# hello (first bytes of a TLS connection arrived), sni (the ClientHello was parsed: its
# server name, logged before the server answers it), tls_error (handshake failed or the
# connection ended before any data), request (an HTTP request, with server, addr, port,
# tls, client, sni, host, path), upload (POST /sink: the body bytes that arrived, counted
# as they arrive, with the error that ended a cut one), udp (a datagram echoed; with the
# QUIC version and SNI when it starts with an Initial a QUIC server would read). Fields:
# EVENT_FIELDS.
EVENT_FIELDS = {"ts", "event", "server", "addr", "port", "kind", "client", "client_port",
                "tls", "sni", "host", "method", "path", "error", "first_byte", "size",
                "received", "version"}
def server_spec(tmp):
    listeners = []
    for s in SERVERS:
        for addr in s.addresses:
            common = {"server": s.name, "addr": addr, "alt_svc": s.alt_svc}
            more = addr in s.more_ipv4
            https = [443] if more else HTTPS_PORTS + s.more_https_ports
            listeners += [dict(common, kind="https", port=p,
                               cert=os.path.join(tmp, f"{s.name}.pem"),
                               key=os.path.join(tmp, f"{s.name}.key")) for p in https]
            listeners += [dict(common, kind="http", port=p) for p in HTTP_PORTS]
            if more:
                continue
            listeners += [dict(common, kind="tcp-echo", port=p) for p in TCP_ECHO_PORTS]
            listeners += [dict(common, kind="udp-echo", port=p) for p in UDP_ECHO_PORTS]
    return {"log": os.path.join(tmp, "servers.jsonl"), "ready": os.path.join(tmp, "servers.ready"),
            "listeners": listeners}


_log_lock = threading.Lock()
_log_file = None


def _event(**kw):
    kw["ts"] = round(time.time(), 3)
    with _log_lock:
        _log_file.write(json.dumps(kw) + "\n")
        _log_file.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "namegate-lab"

    def _info(self):
        L = self.server.listener
        return {"server": L["server"], "addr": L["addr"], "port": L["port"],
                "tls": L["kind"] == "https", "client": self.client_address[0],
                "sni": getattr(self.connection, "lab_sni", None),
                "host": self.headers.get("Host"), "method": self.command, "path": self.path}

    def end_headers(self):
        if self.server.listener.get("alt_svc"):
            self.send_header("Alt-Svc", self.server.listener["alt_svc"])
        super().end_headers()

    def _reply(self, body, ctype="application/json"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        info = self._info()
        _event(event="request", **info)
        parts = self.path.strip("/").split("/")
        if parts[0] == "bytes" and len(parts) == 2 and parts[1].isdigit():
            self._reply(b"x" * min(int(parts[1]), 64 << 20), "application/octet-stream")
        elif parts[0] == "drip" and len(parts) == 2 and parts[1].isdigit():
            # a long-lived flow: one line every 0.2 s for N seconds, no Content-Length
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(int(parts[1]) * 5):
                self.wfile.write(f"{i}\n".encode())
                self.wfile.flush()
                time.sleep(0.2)
            self.close_connection = True
        elif parts[0] == "page":
            # for browsers: an HTML page whose DOM carries a marker naming the server
            html = (f"<!doctype html><html><head><title>{_server_html(info)}</title></head><body>"
                    f"<h1 id=\"ng-marker\">namegate-lab page from {_server_html(info)}</h1>"
                    f"<pre id=\"ng-info\">{_html_escape(json.dumps(info))}</pre>"
                    f"</body></html>\n")
            self._reply(html.encode(), "text/html; charset=utf-8")
        else:
            self._reply((json.dumps(info) + "\n").encode())

    do_HEAD = do_GET

    def _chunked(self):
        # a chunked request body (RFC 9112 s7.1), which BaseHTTPRequestHandler cannot read
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass            # trailer fields
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _sink(self):
        # an upload sink: counts what arrives as it arrives, so a connection cut halfway
        # still tells how much got through ("upload" event, received = body bytes read)
        want, got, error = int(self.headers.get("Content-Length") or 0), 0, None
        try:
            while got < want:
                chunk = self.rfile.read1(min(65536, want - got))
                if not chunk:
                    break
                got += len(chunk)
        except OSError as e:
            error = type(e).__name__
        _event(event="upload", **dict(self._info(), received=got, error=error))
        if error is None and got == want:
            self._reply((json.dumps(dict(self._info(), received=got)) + "\n").encode())
        else:
            self.close_connection = True

    def do_POST(self):
        if self.path.startswith("/sink"):
            return self._sink()
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            data = self._chunked()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        info = dict(self._info(), received=len(data))
        _event(event="request", **info)
        self._reply((json.dumps(info) + "\n").encode())

    def log_message(self, fmt, *args):
        pass                # requests are logged as JSON events instead


def _server_html(info):
    return _html_escape(info["server"])


def _html_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def page_marker(server):
    """What the DOM of /page from that server contains."""
    return f"namegate-lab page from {server}"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listener):
        self.listener = listener
        self.address_family = socket.AF_INET6 if ":" in listener["addr"] else socket.AF_INET
        self.ctx = None
        if listener["kind"] == "https":
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(listener["cert"], listener["key"])
            self.ctx.sni_callback = self._sni
        super().__init__((listener["addr"], listener["port"]), _Handler)

    def _sni(self, s, name, ctx):
        """The ClientHello was read: log its server name ("sni" event) before any reply."""
        setattr(s, "lab_sni", name)
        L = self.listener
        try:
            peer = s.getpeername()[:2]
        except OSError:
            peer = (None, None)
        _event(event="sni", server=L["server"], addr=L["addr"], port=L["port"],
               client=peer[0], client_port=peer[1], sni=name)

    def server_bind(self):
        # HTTPServer.server_bind would look up our own address by reverse DNS: skip it.
        _fastopen(self.socket)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        # The TLS handshake runs here, in the connection's own thread, so a client that
        # stalls mid-ClientHello cannot block the accept loop.
        L = self.listener
        _event(event="accept", server=L["server"], addr=L["addr"], port=L["port"],
               kind=L["kind"], client=client_address[0], client_port=client_address[1])
        request.settimeout(15)
        if self.ctx:
            # "hello": the client's first TLS bytes reached us. A gateway that cuts a flow
            # on its ClientHello lets the TCP handshake through but never this.
            try:
                first = request.recv(1, socket.MSG_PEEK)
            except OSError as e:
                first, why = b"", str(e)
            else:
                why = "closed before sending anything"
            if not first:
                _event(event="tls_error", server=L["server"], addr=L["addr"], port=L["port"],
                       client=client_address[0], client_port=client_address[1], error=why)
                return
            _event(event="hello", server=L["server"], addr=L["addr"], port=L["port"],
                   client=client_address[0], client_port=client_address[1],
                   first_byte=first[0])
            try:
                request = self.ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                _event(event="tls_error", server=L["server"], addr=L["addr"], port=L["port"],
                       client=client_address[0], client_port=client_address[1],
                       error=str(e))
                return
        try:
            self.RequestHandlerClass(request, client_address, self)
        except OSError:
            pass
        finally:
            if self.ctx:
                request.close()


class _TCPEcho(socketserver.BaseRequestHandler):
    def handle(self):
        L = self.server.listener
        _event(event="accept", server=L["server"], addr=L["addr"], port=L["port"],
               kind=L["kind"], client=self.client_address[0])
        self.request.settimeout(15)
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except OSError:
            pass


class _UDPEcho(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        L = self.server.listener
        quic = quic_initial.read_initial(data)     # what a QUIC server would read
        _event(event="udp", server=L["server"], addr=L["addr"], port=L["port"],
               client=self.client_address[0], client_port=self.client_address[1],
               size=len(data), **({"sni": quic[1], "version": quic[0]} if quic else {}))
        sock.sendto(data, self.client_address)


def _plain_server(listener):
    fam = socket.AF_INET6 if ":" in listener["addr"] else socket.AF_INET
    base = socketserver.ThreadingUDPServer if listener["kind"] == "udp-echo" \
        else socketserver.ThreadingTCPServer
    handler = _UDPEcho if listener["kind"] == "udp-echo" else _TCPEcho
    cls = type("S", (base,), {"address_family": fam, "allow_reuse_address": True,
                              "daemon_threads": True})
    srv = cls((listener["addr"], listener["port"]), handler, bind_and_activate=False)
    if base is socketserver.ThreadingTCPServer:
        _fastopen(srv.socket)
    try:
        srv.server_bind()
        srv.server_activate()
    except BaseException:
        srv.server_close()
        raise
    srv.listener = listener
    return srv


def _fastopen(sock):
    """TCP Fast Open on a listening socket: used only where the namespace's
    net.ipv4.tcp_fastopen has the server bit (2), which the lab leaves off by default."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)


def serve(spec_path):
    global _log_file
    with open(spec_path) as f:
        spec = json.load(f)
    _log_file = open(spec["log"], "a")
    servers = [(_HTTPServer(L) if L["kind"] in ("http", "https") else _plain_server(L))
               for L in spec["listeners"]]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(spec["ready"], "w") as f:
        f.write(f"{os.getpid()} {len(servers)}\n")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        sys.exit("usage: lab_services.py serve SPEC.json")
    serve(sys.argv[2])
