"""Real servers on the far side of the lab, for attack tests that must judge what a server
reads, not what namegate's classifier thinks: Debian's nginx, gunicorn and aiohttp, each
on pypi.org's address on a port of its own, each with two sites (pypi.org, evil.test) and
a log of every request it served with the host it served it for.

    rs = RealServers(lab).start()     # stopped with the lab's other processes
    rs.served("nginx", path)          # [(host, path), ...] the server read and answered

Python's http.server is the lab's own plaintext server (lab_services, port 80), and a
server that speaks first (an SMTP-style banner, then an echo of each line) stands for the
protocols namegate passes as "other" on that evidence.
"""
import ast
import os
import textwrap

import lab_net

ADDR = "203.0.113.10"       # pypi.org's address in the lab (lab_services.SERVERS)
PORTS = {"nginx": 8081, "gunicorn": 8082, "aiohttp": 8083, "banner": 8084, "echo": 8085,
         "proxy": 8086}

_NGINX = """\
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/nginx.error.log info;
events {{ worker_connections 64; }}
http {{
    log_format served '$host $request_uri';
    access_log {d}/nginx.served.log served;
    client_body_temp_path {d}/nginx-body;
    proxy_temp_path {d}/nginx-proxy;
    fastcgi_temp_path {d}/nginx-fastcgi;
    uwsgi_temp_path {d}/nginx-uwsgi;
    scgi_temp_path {d}/nginx-scgi;
    server {{
        listen {addr}:{port} default_server;
        server_name pypi.org;
        location / {{ return 200 "pypi\\n"; }}
    }}
    server {{
        listen {addr}:{port};
        server_name evil.test;
        location / {{ return 200 "evil\\n"; }}
    }}
}}
"""

# gunicorn and aiohttp: one app each, logging the host and path of what they answered
_WSGI = """\
import os
LOG = os.environ["NG_SERVED_LOG"]
def app(environ, start_response):
    host = environ.get("HTTP_HOST", "-").split(":")[0]
    path = environ.get("RAW_URI") or environ.get("PATH_INFO", "")
    with open(LOG, "a") as f:
        f.write(f"{host} {path}\\n")
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [(("evil" if host == "evil.test" else "pypi") + "\\n").encode()]
"""

_AIOHTTP = """\
import sys
from aiohttp import web
addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
async def any_request(request):
    host = (request.host or "-").split(":")[0]
    with open(log, "a") as f:
        f.write(f"{host} {request.raw_path}\\n")
    return web.Response(text="evil\\n" if host == "evil.test" else "pypi\\n")
app = web.Application()
app.router.add_route("*", "/{tail:.*}", any_request)
web.run_app(app, host=addr, port=port, print=lambda *a: open(log + ".ready", "w").close())
"""

# banner: speaks first, then echoes (what SMTP, FTP or POP3 servers look like on the
# wire); echo: echoes; proxy: answers a CONNECT head with 200, then echoes the tunnel
_BANNER = """\
import socket, sys, threading
addr, port, log, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def serve(c):
    with c:
        if kind == "banner":
            c.sendall(b"220 lab.test ESMTP ready\\r\\n")
        head = b""
        while kind == "proxy" and b"\\r\\n\\r\\n" not in head:
            if not (data := c.recv(65536)):
                return
            head += data
        if kind == "proxy":
            head, rest = head.split(b"\\r\\n\\r\\n", 1)
            c.sendall(b"HTTP/1.1 200 Connection established\\r\\n\\r\\n" + rest)
            with open(log, "ab") as f:
                f.write(head + b"\\r\\n\\r\\n" + rest)
        while data := c.recv(65536):
            with open(log, "ab") as f:
                f.write(data)
            c.sendall(data)
s = socket.create_server((addr, port))
open(log + ".ready", "w").close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


class RealServers:
    def __init__(self, lab):
        self.lab = lab
        self.dir = os.path.join(lab.tmpdir, "real")

    def log(self, server):
        return os.path.join(self.dir, f"{server}.served.log")

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        d, py = self.dir, "/usr/bin/python3"
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(_NGINX.format(d=d, addr=ADDR, port=PORTS["nginx"]))
        with open(os.path.join(d, "wsgi_app.py"), "w") as f:
            f.write(_WSGI)
        with open(os.path.join(d, "aio_app.py"), "w") as f:
            f.write(_AIOHTTP)
        with open(os.path.join(d, "banner.py"), "w") as f:
            f.write(_BANNER)
        ns = self.lab.inet_ns
        self.lab.spawn("nginx", ["/usr/sbin/nginx", "-e", f"{d}/nginx.error.log",
                                 "-c", f"{d}/nginx.conf"], ns)
        self.lab.spawn("gunicorn", ["/usr/bin/env", f"NG_SERVED_LOG={self.log('gunicorn')}",
                                    "/usr/bin/gunicorn", "--chdir", d, "--workers", "1",
                                    "--bind", f"{ADDR}:{PORTS['gunicorn']}",
                                    "--pid", f"{d}/gunicorn.pid", "wsgi_app:app"], ns)
        self.lab.spawn("aiohttp", [py, f"{d}/aio_app.py", ADDR, str(PORTS["aiohttp"]),
                                   self.log("aiohttp")], ns)
        for kind in ("banner", "echo", "proxy"):
            self.lab.spawn(kind, [py, f"{d}/banner.py", ADDR, str(PORTS[kind]),
                                  self.log(kind), kind], ns)
        lab_net.wait_until(self._ready, lab_net.WAIT, "nginx, gunicorn, aiohttp and the "
                           "banner and echo servers listening")
        return self

    def _ready(self):
        cp = self.lab.inet_exec("ss -Htln")
        listening = {int(l.split()[3].rsplit(":", 1)[1]) for l in cp.stdout.splitlines()
                     if l.split()[3].startswith(ADDR + ":")}
        return set(PORTS.values()) <= listening

    def served(self, server, path=None):
        """(host, path) of each request the server answered, in order; for nginx, a request
        it refused as malformed logs no path and is left out."""
        name = "nginx.served" if server == "nginx" else f"{server}.served"
        text = lab_net.read_text(os.path.join(self.dir, f"{name}.log"))
        out = []
        for line in text.splitlines():
            host, _, p = line.partition(" ")
            if p and (path is None or path in p):
                out.append((host, p))
        return out

    def read(self, server):
        """The bytes the banner or echo server read, all connections together."""
        try:
            with open(self.log(server), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""


def exchange(lab, port, sends, *, greeting=False, half_close=True, addr=ADDR):
    """From vm1, on one fresh connection to addr:port: read the server's greeting first if
    greeting, then send each of sends in turn, reading one answer between them, and after
    the last close the sending side (unless not half_close: aiohttp drops a request whose
    client did that; send "Connection: close" instead) and read to the end. Returns
    everything read, or "reset" when the connection was reset (what a cut looks like)."""
    code = textwrap.dedent(f"""
        import errno, socket
        s = socket.create_connection(({addr!r}, {port}), timeout=20)    # a cap: a cut resets
        got = b""
        try:
            if {greeting!r}:
                got += s.recv(65536)
            sends = {list(sends)!r}
            for i, data in enumerate(sends):
                s.sendall(data)
                if i + 1 < len(sends):
                    got += s.recv(65536)
            if {half_close!r}:
                s.shutdown(socket.SHUT_WR)
            while chunk := s.recv(65536):
                got += chunk
            print(repr(got))
        except (ConnectionResetError, BrokenPipeError):
            print(repr("reset"))
        except OSError as e:        # the RST came first: nothing left to shut down
            if e.errno != errno.ENOTCONN:
                raise
            print(repr("reset"))
    """)
    cp = lab.vm_python("vm1", code, timeout=40)
    assert cp.returncode == 0, cp.stderr
    return ast.literal_eval(cp.stdout.strip())     # what the VM printed: bytes or "reset"
