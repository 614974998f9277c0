"""What the lab's clients print, in a form tests can assert on: curl's outcome, kdig's
answer, and the ICMP echo program run inside a VM (the image has no ping(8))."""

import json
import re
from dataclasses import dataclass


@dataclass
class CurlResult:
    returncode: int
    body: str
    stderr: str
    http_code: int
    time: float
    remote_ip: str

    @property
    def ok(self):
        return self.returncode == 0 and 200 <= self.http_code < 400

    def json(self):
        return json.loads(self.body)

    @property
    def outcome(self):
        return curl_outcome(self.returncode, self.stderr)


def curl_outcome(rc, stderr):
    """curl's exit status in the words an operator uses: how did the request fail?"""
    s = stderr.lower()
    if rc == 0:
        return "ok"
    if rc == 6:
        return "dns failed"
    if rc in (28, 124) or "timed out" in s:
        return "timeout"
    if "reset by peer" in s or rc == 56:
        return "connection reset"
    if rc == 7:
        # curl 7.88 says "Couldn't connect to server" whatever the cause; an RST answering
        # the SYN (namegate's on_block: reset) is by far the likely one in the lab
        return "no route" if "no route" in s or "unreachable" in s else "connection refused"
    return {35: "tls handshake failed", 60: "certificate rejected",
            52: "empty reply"}.get(rc, f"curl error {rc}")


@dataclass
class DigResult:
    rcode: str              # NOERROR, NXDOMAIN, REFUSED, ...; None when nothing answered
    answers: list           # [(name, ttl, type, data)]
    ede: int                # Extended DNS Error code, if any
    raw: str

    @property
    def addresses(self):
        return [d for _, _, t, d in self.answers if t in ("A", "AAAA")]

    @property
    def chain(self):
        return [(n, d) for n, _, t, d in self.answers if t == "CNAME"]


def parse_kdig(text):
    m = re.search(r"status: (\w+)", text)
    answers, in_answer = [], False
    for line in text.splitlines():
        if line.startswith(";; ANSWER SECTION"):
            in_answer = True
        elif in_answer and (not line.strip() or line.startswith(";;")):
            in_answer = False
        elif in_answer:
            f = line.split(None, 4)
            if len(f) == 5:
                answers.append((f[0].rstrip(".").lower(), int(f[1]), f[3], f[4].rstrip(".")))
    e = re.search(r"EDE: (\d+)", text)
    return DigResult(m.group(1) if m else None, answers, int(e.group(1)) if e else None, text)


PING_CODE = r"""
import os, socket, struct, sys, time
addr, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
size = int(sys.argv[4]) if len(sys.argv) > 4 else 0    # data after the 8-byte header
v6 = ":" in addr
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_RAW,
                  socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
ident, lost = os.getpid() & 0xFFFF, 0
def csum(b):
    b += b"\0" * (len(b) & 1)
    n = sum(struct.unpack(f"!{len(b) // 2}H", b))
    n = (n >> 16) + (n & 0xFFFF)
    return ~(n + (n >> 16)) & 0xFFFF
for seq in range(1, count + 1):
    req_type, rep_type = (128, 129) if v6 else (8, 0)
    body = struct.pack("!HH", ident, seq) + b"namegate-lab"
    body += bytes(max(0, 4 + size - len(body)))     # ident and sequence are the header's
    hdr = struct.pack("!BBH", req_type, 0, 0)
    pkt = hdr[:2] + struct.pack("!H", 0 if v6 else csum(hdr + body)) + body  # kernel sums v6
    t0 = time.monotonic()
    s.sendto(pkt, (addr, 0))
    while True:
        left = timeout - (time.monotonic() - t0)
        s.settimeout(max(left, 0.001))
        try:
            data, src = s.recvfrom(65536)
        except socket.timeout:
            print(f"no reply from {addr} (seq {seq})"); lost += 1; break
        icmp = data if v6 else data[(data[0] & 15) * 4:]
        if icmp[0] == rep_type and struct.unpack("!HH", icmp[4:8]) == (ident, seq):
            print(f"reply from {src[0]} seq {seq} in {(time.monotonic() - t0) * 1000:.1f} ms")
            break
sys.exit(1 if lost else 0)
"""
