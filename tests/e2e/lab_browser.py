"""A real browser in a lab VM: Debian's headless Chromium, run as root inside the VM's
namespace (`ip netns exec`, so its /etc/resolv.conf is /etc/netns/<vm ns>/resolv.conf:
the lab's resolver, through the gateway). The namespace has no route but the lab's, so
nothing it does can leave the machine.

    b = Browser(lab, "vm1")             # one profile (user data dir) per Browser
    r = b.load("https://pypi.org/page")  # --dump-dom, with a deadline
    r.dom, r.error, r.elapsed, r.netlog()

Certificates: the lab's servers are trusted by the hashes of their own keys
(--ignore-certificate-errors-spki-list, which Chromium honours only with a
--user-data-dir), not by ignoring certificate errors: a certificate from anyone else
still fails. Flags beyond the usual headless set, and why:

  --disable-background-networking --disable-component-update --no-first-run
      no update checks, safe-browsing lists, variations or promos: their DNS queries
      would be refused by namegate and counted as the VM's blocks, blurring the counters
      a test reads. They change nothing about how a page itself is fetched.
  --disable-extensions --disable-sync --disable-default-apps --no-pings
  --disable-client-side-phishing-detection
  --host-resolver-rules=MAP *.google.com ~NOTFOUND, ... (QUIET_RULES)
      the same: even with the flags above Chromium 156 looks up update.googleapis.com,
      accounts.google.com, clients2.google.com and redirector.gvt1.com, some 40 queries a
      load, which namegate refuses and counts (and its per-VM event log rate-limits,
      hiding a test's own event behind them). The rules make only those Google service
      names fail inside Chromium without a query; every lab name is resolved as usual,
      by Chromium's own DNS client (A, AAAA and HTTPS queries) via resolv.conf.
  --no-proxy-server
      never a proxy, whatever the environment says (the environment is the lab's anyway).
  --log-net-log=FILE
      Chromium's own record of what it did (DNS queries and their types, QUIC attempts,
      ECH, which protocol served the page), for the tests and for reading after a run.

No --disable-features: nothing had to be turned off for the lab to work.
"""

import base64
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

import lab_net

CHROMIUM = os.environ.get("NAMEGATE_CHROMIUM", "chromium")
ENV_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Chromium's own services (see the module's doc): fail them inside the browser, unasked
QUIET_RULES = ", ".join(f"MAP {p} ~NOTFOUND" for p in (
    "*.google.com", "*.googleapis.com", "*.gvt1.com", "*.gstatic.com", "*.googleusercontent.com",
    "google.com", "googleapis.com", "gvt1.com"))


def chromium_path():
    """The chromium program, or an error saying how to get it (tests fail, never skip:
    tests/install-deps.sh installs it)."""
    path = shutil.which(CHROMIUM, path=ENV_PATH) if "/" not in CHROMIUM else CHROMIUM
    if not path or not os.access(path, os.X_OK):
        raise lab_net.LabError(f"{CHROMIUM!r} not found: run tests/install-deps.sh "
                               "(Debian package chromium)")
    return path


def spki_hashes(tmpdir):
    """base64(SHA-256(SubjectPublicKeyInfo)) of every server certificate of the run."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    out = []
    for pem in sorted(glob.glob(os.path.join(tmpdir, "*.pem"))):
        if os.path.basename(pem) == "ca.pem":
            continue
        with open(pem, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        spki = cert.public_key().public_bytes(Encoding.DER,
                                              PublicFormat.SubjectPublicKeyInfo)
        out.append(base64.b64encode(hashlib.sha256(spki).digest()).decode())
    return out


@dataclass
class PageLoad:
    url: str
    returncode: int         # 124: killed at the deadline
    dom: str                # --dump-dom's output: the page, or Chromium's error page
    stderr: str
    elapsed: float          # seconds from start to exit, Chromium's start-up included
    netlog_path: str

    @property
    def error(self):
        """The net error Chromium showed (ERR_NAME_NOT_RESOLVED, ...), or None."""
        m = re.search(r"\b(ERR_[A-Z0-9_]+)\b", self.dom) or \
            re.search(r"net::(ERR_[A-Z0-9_]+)", self.stderr)
        return m.group(1) if m else None

    def has(self, marker):
        return self.returncode == 0 and marker in self.dom

    def netlog(self):
        """The NetLog's events (a list of dicts), or [] if Chromium wrote none. A log cut
        short (Chromium killed) is read up to its last whole event."""
        text = lab_net.read_text(self.netlog_path)
        if not text:
            return []
        try:
            return json.loads(text).get("events", [])
        except ValueError:
            body = text[text.find('"events": [') + len('"events": ['):]
            body = body[:body.rfind("},") + 1]
            try:
                return json.loads("[" + body + "]")
            except ValueError:
                return []

    def netlog_constants(self):
        text = lab_net.read_text(self.netlog_path)
        m = re.match(r'\{"constants":', text)
        if not m:
            return {}
        try:
            return json.loads(text).get("constants", {})
        except ValueError:
            return {}

    def __str__(self):
        return (f"chromium {self.url}: exit {self.returncode} after {self.elapsed:.2f}s, "
                f"error {self.error}; dom {self.dom[:300]!r}; stderr {self.stderr[-600:]!r}")


class Browser:
    """One Chromium profile in one VM; each load() is a fresh Chromium process on it, so
    what the profile remembers (Alt-Svc, the HTTP cache) carries from one load to the
    next, as across restarts of a user's browser."""

    def __init__(self, lab, vm, name=None):
        self.lab, self.vm = lab, lab.vm(vm)
        self.program = chromium_path()
        n = len(glob.glob(os.path.join(lab.tmpdir, "chromium-*")))
        self.dir = os.path.join(lab.tmpdir, f"chromium-{name or self.vm.name}-{n}")
        self.profile = os.path.join(self.dir, "profile")
        for d in ("profile", "home", "cache", "config"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.loads = 0

    def argv(self, url, netlog, extra=(), rules=()):
        return [self.program, "--headless=new", "--no-sandbox", "--disable-gpu",
                f"--user-data-dir={self.profile}",
                "--ignore-certificate-errors-spki-list=" + ",".join(
                    spki_hashes(self.lab.tmpdir)),
                "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-extensions", "--disable-sync", "--disable-default-apps",
                "--no-pings", "--disable-client-side-phishing-detection",
                "--host-resolver-rules=" + ", ".join([*rules, QUIET_RULES]),
                "--no-proxy-server",
                f"--log-net-log={netlog}", "--net-log-capture-mode=Default",
                *extra, "--dump-dom", url]

    def load(self, url, timeout=30.0, extra=(), rules=()):
        """Run Chromium on url until it exits (it prints the DOM and quits once the page
        or its error page has loaded), or kill it and its children at timeout (a cap:
        a load that is expected returns long before). rules: more host resolver rules
        ("MAP name addr": a name pinned to an address, as in a hosts file)."""
        self.loads += 1
        netlog = os.path.join(self.dir, f"netlog-{self.loads}.json")
        out_path = os.path.join(self.dir, f"load-{self.loads}.out")
        err_path = os.path.join(self.dir, f"load-{self.loads}.err")
        env = {"PATH": ENV_PATH, "LC_ALL": "C", "HOME": os.path.join(self.dir, "home"),
               "XDG_CACHE_HOME": os.path.join(self.dir, "cache"),
               "XDG_CONFIG_HOME": os.path.join(self.dir, "config")}
        argv = ["ip", "netns", "exec", self.vm.ns] + self.argv(url, netlog, extra, rules)
        t0 = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, start_new_session=True)
            try:
                rc = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                rc = 124
            elapsed = time.monotonic() - t0
            # whatever of its process group is left (renderers, the zygote): gone now
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        return PageLoad(url, rc, lab_net.read_text(out_path), lab_net.read_text(err_path),
                        elapsed, netlog)


# ---------------------------------------------------------------- reading a NetLog

def event_types(load):
    """{type id: name} from the NetLog's constants."""
    const = load.netlog_constants().get("logEventTypes", {})
    return {v: k for k, v in const.items()}


def events_named(load, *names):
    types = event_types(load)
    return [e for e in load.netlog() if types.get(e.get("type")) in names]


def dns_query_types(load):
    """The DNS record types Chromium's own resolver asked for, by name ('A', 'AAAA',
    'HTTPS'), from HOST_RESOLVER_DNS_TASK / DNS_TRANSACTION events."""
    out = set()
    for e in events_named(load, "DNS_TRANSACTION", "HOST_RESOLVER_DNS_TASK",
                          "DNS_TRANSACTION_QUERY"):
        p = e.get("params") or {}
        qt = p.get("qtype") or p.get("dns_query_type") or p.get("query_type")
        if qt is not None:
            out.add({1: "A", 28: "AAAA", 65: "HTTPS"}.get(qt, str(qt)))
    return out
