"""Differential tests: every SNI, HTTP Host and DNS answer set namegate-dump prints must
equal what tshark reports for the same capture, and every DNS message must read the same in
ldns."""
import os
from pathlib import Path

import pytest

import custom_pcap
import oracles

TRAFFIC = oracles.TRAFFIC
BUILD = Path(os.environ.get("BUILD_DIR", "/tmp"))

RCODES = {"NOERROR": 0, "FORMERR": 1, "SERVFAIL": 2, "NXDOMAIN": 3, "NOTIMP": 4, "REFUSED": 5}
TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16, "AAAA": 28,
         "SRV": 33, "NAPTR": 35, "OPT": 41, "DS": 43, "RRSIG": 46, "NSEC": 47, "DNSKEY": 48,
         "SVCB": 64, "HTTPS": 65, "ANY": 255, "CAA": 257}


def code(table, prefix, text):
    return int(text[len(prefix):]) if text.startswith(prefix) else table[text]


@pytest.fixture(scope="module")
def custom():
    return custom_pcap.build(TRAFFIC / "hello.pcap", BUILD / "diff_custom.pcap")


@pytest.fixture(scope="module", params=["mix.pcap", "hello.pcap", "custom"])
def capture(request, custom):
    pcap = custom if request.param == "custom" else TRAFFIC / request.param
    return pcap, oracles.dump(pcap, "--wire")


def ours_tls(lines):
    seen = {}
    for x in lines:
        if x["type"] == "tls" and "verdict" not in x:
            seen.setdefault(x["frame"], []).append((x["src"], x["dst"], x["sni"], x["alpn"]))
    return seen


def ours_dns(lines):
    seen = {}
    for x in lines:
        if x["type"] != "dns" or "verdict" in x:
            continue
        msg = {"id": x["id"], "qr": x["qr"]}
        if "qname" in x:
            msg["qname"] = x["qname"]
            msg["qtype"] = code(TYPES, "TYPE", x["qtype"])
        if x["qr"]:
            msg["rcode"] = code(RCODES, "RCODE", x["rcode"])
            if "qname" in x:
                msg["addrs"] = sorted((a["addr"], a["ttl"]) for a in x["addrs"])
                msg["chain"] = x["chain"]
        seen.setdefault(x["frame"], []).append(msg)
    return seen


def ours_http(lines):
    seen = {}
    for x in lines:
        if x["type"] == "http" and "verdict" not in x:
            seen.setdefault(x["frame"], []).append((x["src"], x["dst"], x["host"]))
    return seen


@pytest.mark.parametrize("which", ["mix.pcap", "custom"])
def test_http_hosts_match_tshark(which, custom):
    """Every plaintext request head (mix.pcap: apt and apk mirrors on keep-alive
    connections; custom: a split head, bodies that read like requests, chunks, pipelining),
    framed by namegate's reader through its bodies, names the Host tshark reads, in the
    frame that completes it; none is refused."""
    pcap = custom if which == "custom" else TRAFFIC / which
    lines = oracles.dump(pcap)
    ours, theirs = ours_http(lines), oracles.tshark_http(pcap)
    assert theirs, f"tshark found no HTTP request in {pcap}: the comparison would be empty"
    assert ours == theirs
    assert [x for x in lines if x["type"] == "http" and "verdict" in x] == []


def test_sni_matches_tshark(capture):
    pcap, lines = capture
    ours, theirs = ours_tls(lines), oracles.tshark_tls(pcap)
    assert theirs, f"tshark found no ClientHello in {pcap}: the comparison would be empty"
    assert ours == theirs


def test_every_hello_judged(capture):
    """The generated captures hold only well-formed hellos: nothing may be refused."""
    pcap, lines = capture
    refused = [x for x in lines if x["type"] == "tls" and "verdict" in x]
    assert refused == []


def test_quic_initials_match_tshark():
    """mix-quic.txt, by which test_dp_quic judges namegate's QUIC reader, says what tshark
    reads in mix.pcap's client Initials: the same frames, each hello's name in the frame
    that completes it."""
    rows = [line.split() for line in (TRAFFIC / "mix-quic.txt").read_text().splitlines()
            if not line.startswith("#")]
    ours = [(int(frame), None if name == "-" else name) for frame, name in rows]
    theirs = oracles.tshark_quic_initials(TRAFFIC / "mix.pcap")
    assert any(sni for _, sni in theirs) and any(sni is None for _, sni in theirs)
    assert ours == theirs


def test_dns_matches_tshark(capture):
    pcap, lines = capture
    ours, theirs = ours_dns(lines), oracles.tshark_dns(pcap)
    if pcap.name == "hello.pcap":
        assert theirs == {} and ours == {}
        return
    assert theirs, f"tshark found no DNS in {pcap}"
    assert ours == theirs


def test_dns_matches_ldns(capture):
    pcap, lines = capture
    dns = [x for x in lines if x["type"] == "dns"]
    if pcap.name == "hello.pcap":
        assert dns == []
        return
    ref = oracles.ldns_read([x["wire"] for x in dns])
    for x, r in zip(dns, ref):
        where = f"frame {x['frame']}"
        assert r["ok"] == ("verdict" not in x), where
        if not r["ok"]:
            continue
        assert (x["id"], x["qr"], code(RCODES, "RCODE", x["rcode"])) == \
            (r["id"], r["qr"], r["rcode"]), where
        assert ("qname" in x) == (r["qdcount"] == 1), where
        if "qname" not in x:
            continue
        assert x["qname"] == oracles.canon(r["qname"]), where
        assert code(TYPES, "TYPE", x["qtype"]) == r["qtype"], where
        assert x["edns"] == r["edns"], where
        if x["qr"]:
            answers = [{"owner": a["owner"], "type": a["type"], "cls": a["class"],
                        "ttl": oracles.ttl_of(a["ttl"]), "data": a["data"]} for a in r["answers"]]
            addrs, hops = oracles.follow_chain(r["qname"], answers)
            assert sorted((a["addr"], a["ttl"]) for a in x["addrs"]) == addrs, where
            assert x["chain"] == hops, where


def test_custom_capture_cases(custom):
    """The awkward cases are really in the custom capture and come out right."""
    lines = oracles.dump(custom)
    tls = [x for x in lines if x["type"] == "tls"]
    assert [x["dst"] for x in tls] == ["192.0.2.10:443", "[2001:db8::10]:8443"]
    assert tls[0]["sni"] == tls[1]["sni"] and tls[0]["sni"]
    chain = next(x for x in lines if x["type"] == "dns" and x.get("qname") == "www.example.com"
                 and x["qr"])
    assert chain["chain"] == 2
    assert sorted((a["addr"], a["ttl"]) for a in chain["addrs"]) == \
        [("192.0.2.7", 120), ("192.0.2.8", 30)]
    tcp = [x for x in lines if x["type"] == "dns" and x["proto"] == "tcp"]
    assert [(x["id"], x["qr"]) for x in tcp] == [(1, False), (2, False), (1, True), (2, True)]
    http = [(x["host"], x["body"]) for x in lines if x["type"] == "http"]
    assert http == [("example.com", "none"), ("example.com", "length"),
                    ("example.com", "chunked"), ("one.example", "none"), ("two.example", "none")]
