"""etcd for the fleet tests: one member on loopback ports of its own, in a temporary
directory, with auth on and the roles of issue 27; in a network namespace when given one
(the fleet lab's gateways reach it on that namespace's loopback)."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

PREFIX = "/ng-" + uuid.uuid4().hex[:8]
ROOT = ("root", "rootpw")
OPERATOR = ("op1", "op1pw")
GATEWAY = ("gw1", "gw1pw")
TOKEN_TTL = 2     # seconds a simple token lives unused: test_reauth outlives it


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Etcd:
    """One etcd member on loopback ports of its own, in a temporary directory."""

    def __init__(self, name="ng", ns=None):
        self.name = name
        self.wrap = ["ip", "netns", "exec", ns] if ns else []
        self.dir = tempfile.mkdtemp(prefix="ng-etcd-")
        self.client = f"http://127.0.0.1:{free_port()}"
        self.peer = f"http://127.0.0.1:{free_port()}"
        self.proc = None
        self.log = None

    def launch(self, cluster=None, extra=()):
        self.log = open(os.path.join(self.dir, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            self.wrap + ["etcd", "--name", self.name, "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", self.client, "--advertise-client-urls", self.client,
             "--listen-peer-urls", self.peer, "--initial-advertise-peer-urls", self.peer,
             "--initial-cluster", cluster or f"{self.name}={self.peer}",
             "--auth-token", "simple", "--auth-token-ttl", str(TOKEN_TTL), *extra],
            stdout=self.log, stderr=subprocess.STDOUT)

    def start(self):
        self.launch()
        self.wait_ready()

    def wait_ready(self):
        end = time.monotonic() + 30
        while time.monotonic() < end:
            for user in (ROOT, None):
                auth = ["--user", ":".join(user)] if user else []
                r = subprocess.run(self.wrap + ["etcdctl", "--endpoints", self.client, *auth,
                                    "--dial-timeout", "1s", "endpoint", "health"],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("etcd did not start: " +
                           open(os.path.join(self.dir, "etcd.log")).read()[-2000:])

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def ctl(self, *args, user=ROOT, stdin=None, check=True):
        auth = ["--user", ":".join(user)] if user else []
        r = subprocess.run(self.wrap + ["etcdctl", "--endpoints", self.client, *auth, *args],
                           input=stdin,
                           capture_output=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"etcdctl {args}: {r.stderr.decode()}")
        return r.stdout.decode()

    def setup_auth(self, prefix=PREFIX, gateways=(GATEWAY,), per_gateway=False):
        """The roles of issue 27: operators write the prefix (grants, bundles), gateways
        read it and write their status, revocations and pending requests. per_gateway:
        a role for each gateway (its user's name is its fleet.gateway) that writes only
        its own status and requests, as namegate(8) recommends."""
        e = self.wrap + ["etcdctl", "--endpoints", self.client]
        users = []
        for g in gateways:
            role = "gw-" + g[0] if per_gateway else "gateway"
            users += [["user", "add", ":".join(g), "--interactive=false"]]
            if per_gateway:
                users += [["role", "add", role],
                          ["role", "grant-permission", role, "read", prefix + "/",
                           "--prefix=true"],
                          ["role", "grant-permission", role, "readwrite", prefix + "/revoked/",
                           "--prefix=true"],
                          ["role", "grant-permission", role, "readwrite",
                           prefix + "/status/" + g[0]],
                          ["role", "grant-permission", role, "readwrite",
                           prefix + "/pending/" + g[0] + "/", "--prefix=true"]]
            users += [["user", "grant-role", g[0], role]]
        for args in (["user", "add", ":".join(ROOT), "--interactive=false"],
                     ["role", "add", "operator"], ["role", "add", "gateway"],
                     ["role", "grant-permission", "operator", "readwrite", prefix + "/",
                      "--prefix=true"],
                     ["role", "grant-permission", "gateway", "read", prefix + "/",
                      "--prefix=true"],
                     ["role", "grant-permission", "gateway", "readwrite", prefix + "/status/",
                      "--prefix=true"],
                     ["role", "grant-permission", "gateway", "readwrite", prefix + "/revoked/",
                      "--prefix=true"],
                     ["role", "grant-permission", "gateway", "readwrite", prefix + "/pending/",
                      "--prefix=true"],
                     ["user", "add", ":".join(OPERATOR), "--interactive=false"],
                     ["user", "grant-role", OPERATOR[0], "operator"],
                     *users,
                     ["auth", "enable"]):
            subprocess.run(e + args, check=True, capture_output=True)

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def revision(self):
        out = self.ctl("get", PREFIX + "/", "--prefix", "--limit", "1", "-w", "fields")
        for line in out.splitlines():
            if line.startswith('"Revision"'):
                return int(line.split(":")[1])
        raise RuntimeError("no revision in " + out)


