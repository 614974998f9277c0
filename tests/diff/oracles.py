"""Independent readings of a capture: namegate-dump, tshark and ldns, as plain data.

Each reader returns what it saw keyed by frame number, so tests compare like with like.
The CNAME chain is followed here in Python, from the answer records tshark or ldns list,
so namegate's own chain logic is judged against a second, independent one.
"""
import json
import os
import subprocess
from pathlib import Path

DUMP = os.environ.get("NAMEGATE_DUMP", "build/sni/dump/namegate-dump")
LDNS_ORACLE = os.environ.get("LDNS_ORACLE", "build/tests/diff/ldns_oracle")
# the captures the build generates (tests/traffic), the default build directory's if unset
TRAFFIC = Path(os.environ.get("TRAFFIC_DIR") or
               Path(__file__).resolve().parents[2] / "build" / "tests" / "traffic")
TRAFFIC_FILES = ("mix.pcap", "hello.pcap", "mix-quic.txt")
TLS_PORTS = (443, 8443)
CHAIN_MAX = 16
TYPE_A, TYPE_CNAME, TYPE_AAAA = 1, 5, 28


def dump(pcap, *args):
    out = subprocess.run([DUMP, *args, str(pcap)], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def missing_input():
    """What to say when a capture the tests read is not there, or None."""
    for name in TRAFFIC_FILES:
        if not (TRAFFIC / name).is_file():
            return (f"{TRAFFIC / name}: missing; tests/traffic/gen_traffic.py makes it when "
                    "the tests are built (meson compile)")
    return None


def ttl_of(v):
    v = int(v)
    return 0 if v >= 1 << 31 else v     # RFC 2181 s8: a TTL with the top bit set means 0


def canon(name):
    name = name.lower()
    return name[:-1] if name.endswith(".") and name != "." else name


def follow_chain(qname, answers):
    """answers: dicts with owner, type, cls, ttl, data (address text or CNAME target).
    Returns the sorted (addr, ttl) pairs on the CNAME chain from qname, and the chain length."""
    answers = answers[:64]
    chain = {canon(qname): 1 << 32}
    cur, ttl, hops = canon(qname), 1 << 32, 0
    while hops < CHAIN_MAX:
        nxt = next((a for a in answers if a["type"] == TYPE_CNAME and a["cls"] == 1
                    and canon(a["owner"]) == cur), None)
        if nxt is None:
            break
        ttl = min(ttl, nxt["ttl"])
        cur = canon(nxt["data"])
        hops += 1
        if cur in chain:
            break
        chain[cur] = ttl
    addrs = [(a["data"], min(a["ttl"], chain[canon(a["owner"])]))
             for a in answers
             if a["type"] in (TYPE_A, TYPE_AAAA) and a["cls"] == 1 and canon(a["owner"]) in chain]
    return sorted(addrs[:32]), hops


def _as_list(v):
    return v if isinstance(v, list) else [v]


def tshark(pcap, *args):
    cmd = ["tshark", "-n", "-r", str(pcap), "-o", "tcp.reassemble_out_of_order:TRUE", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def tshark_tls(pcap):
    """frame -> list of (src, dst, sni or None, alpn list) for ClientHellos to TLS ports."""
    ports = " || ".join(f"tcp.dstport == {p}" for p in TLS_PORTS)
    out = tshark(pcap, "-Y", f"tls.handshake.type == 1 && ({ports})",
                 "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,",
                 "-e", "frame.number", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport",
                 "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport",
                 "-e", "tls.handshake.extensions_server_name",
                 "-e", "tls.handshake.extensions_alpn_str")
    seen = {}
    for line in out.splitlines():
        frame, s4, s6, sport, d4, d6, dport, sni, alpn = line.split("|")
        src = f"{s4}:{sport}" if s4 else f"[{s6}]:{sport}"
        dst = f"{d4}:{dport}" if d4 else f"[{d6}]:{dport}"
        seen.setdefault(int(frame), []).append(
            (src, dst, sni or None, alpn.split(",") if alpn else []))
    return seen


def canon_host(value):
    """An HTTP Host as namegate judges it: lower case, no port, no trailing dot."""
    host = value.strip().lower()
    if host.startswith("["):
        host = host[1:host.index("]")]
    elif ":" in host:
        host = host.rsplit(":", 1)[0]
    return host[:-1] if host.endswith(".") else host


def tshark_http(pcap):
    """frame -> list of (src, dst, host) for HTTP requests, attributed to the frame that
    completes the head (bodies are not waited for, as namegate does not wait for them)."""
    out = tshark(pcap, "-o", "http.desegment_body:FALSE", "-Y", "http.request",
                 "-T", "fields", "-E", "separator=|", "-E", "occurrence=a",
                 "-e", "frame.number", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport",
                 "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "http.host")
    seen = {}
    for line in out.splitlines():
        frame, s4, s6, sport, d4, d6, dport, hosts = line.split("|")
        src = f"{s4}:{sport}" if s4 else f"[{s6}]:{sport}"
        dst = f"{d4}:{dport}" if d4 else f"[{d6}]:{dport}"
        for host in hosts.split(","):      # one per request the frame completes
            seen.setdefault(int(frame), []).append((src, dst, canon_host(host)))
    return seen


def tshark_quic_initials(pcap):
    """[(frame, sni or None)] for every client Initial to UDP 443 (RFC 9001 lets tshark
    remove the protection); the SNI where the frame completes a ClientHello."""
    out = tshark(pcap, "-Y", "udp.dstport == 443 && quic.long.packet_type == 0",
                 "-T", "fields", "-E", "separator=|",
                 "-e", "frame.number", "-e", "tls.handshake.extensions_server_name")
    return [(int(frame), sni or None)
            for frame, sni in (line.split("|") for line in out.splitlines())]


def _tshark_answers(dns):
    answers = []
    for _, recs in (dns.get("Answers") or {}).items():
        for r in _as_list(recs):
            data = r.get("dns.a") or r.get("dns.aaaa") or r.get("dns.cname")
            answers.append({"owner": r.get("dns.resp.name", ""), "type": int(r["dns.resp.type"]),
                            "cls": int(r["dns.resp.class"], 16), "ttl": ttl_of(r["dns.resp.ttl"]),
                            "data": data})
    return answers


def tshark_dns(pcap):
    """frame -> list of DNS messages (port 53) as tshark reads them."""
    out = tshark(pcap, "-Y", "dns && (udp.port == 53 || tcp.port == 53)", "-T", "json",
                 "--no-duplicate-keys", "-J", "frame dns")
    seen = {}
    for pkt in json.loads(out or "[]"):
        layers = pkt["_source"]["layers"]
        frame = int(layers["frame"]["frame.number"])
        for dns in _as_list(layers.get("dns", [])):
            if not isinstance(dns, dict) or "dns.id" not in dns:
                continue
            flags = dns["dns.flags_tree"]
            msg = {"id": int(dns["dns.id"], 16), "qr": flags["dns.flags.response"] == "1"}
            queries = list((dns.get("Queries") or {}).values())
            if int(dns["dns.count.queries"]) == 1 and queries:
                q = _as_list(queries[0])[0]
                msg["qname"] = canon(q["dns.qry.name"])
                msg["qtype"] = int(q["dns.qry.type"])
            if msg["qr"]:
                msg["rcode"] = int(flags["dns.flags.rcode"])
                if "qname" in msg:
                    msg["addrs"], msg["chain"] = follow_chain(msg["qname"], _tshark_answers(dns))
            seen.setdefault(frame, []).append(msg)
    return seen


def ldns_read(wires):
    """Parse hex-encoded messages with ldns; one dict per message, in order."""
    out = subprocess.run([LDNS_ORACLE], input="".join(w + "\n" for w in wires), check=True,
                         capture_output=True, text=True).stdout
    msgs = [json.loads(line) for line in out.splitlines()]
    assert len(msgs) == len(wires)
    return msgs
