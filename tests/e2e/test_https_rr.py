"""HTTPS (type 65) and SVCB (64) answers through namegate (SPEC s8, "First bytes on every
port"): the VM receives them without their ech SvcParam (dns.ech: strip, the default;
pass leaves it), and every address an answer gives the VM, ipv4hint and ipv6hint
included, is bound, or removed from the answer when the VM's binding quota is full.

svcb.test's records carry alpn=h2,http/1.1, ipv4hint=203.0.113.40 and an ECHConfigList
made for the run (lab_services.dns_rrs); hint.test has only an HTTPS record, whose
ipv4hint 203.0.113.44 is served (svcb's server, certificate for hint.test)."""
import base64
import os

import pytest

import lab_services as svc
from lab_clients import parse_kdig
from test_browsers import start


@pytest.fixture(scope="module")
def ng(request):
    return start(request)


def published_ech(lab):
    with open(os.path.join(lab.tmpdir, "ech.bin"), "rb") as f:
        return base64.b64encode(f.read()).decode()


def svcb_answer(result, rtype):
    recs = [data for _, _, t, data in result.answers if t == rtype]
    assert result.rcode == "NOERROR" and len(recs) == 1, result.raw
    return recs[0]


def resolver_answer(lab, name, rtype):
    """The record as the resolver serves it, asked from the internet side (no namegate)."""
    cp = lab.inet_exec(["kdig", f"@{svc.RESOLVER}", "+timeout=2", "+retry=0", name, rtype])
    return svcb_answer(parse_kdig(cp.stdout), rtype)


@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_https_answer_reaches_the_vm_without_ech(ng, tcp):
    raw = resolver_answer(ng, "svcb.test", "HTTPS")
    assert f"ech={published_ech(ng)}" in raw, f"control: the resolver serves no ech: {raw}"
    got = svcb_answer(ng.dig("vm1", "svcb.test", "HTTPS", tcp=tcp), "HTTPS")
    assert "ech=" not in got, f"the VM received the ech parameter: {got}"
    # the rest of the record is untouched
    assert got.split() == ["1", ".", "alpn=h2,http/1.1", "ipv4hint=203.0.113.40"], got


def test_svcb_answer_reaches_the_vm_without_ech(ng):
    assert "ech=" in resolver_answer(ng, "svcb.test", "SVCB")
    got = svcb_answer(ng.dig("vm1", "svcb.test", "SVCB"), "SVCB")
    assert "ech=" not in got, f"the VM received the ech parameter: {got}"
    assert "alpn=h2,http/1.1" in got and "ipv4hint=203.0.113.40" in got, got


def test_ech_pass_leaves_the_parameter(request):
    lab = start(request, dns={"ech": "pass"})
    got = svcb_answer(lab.dig("vm1", "svcb.test", "HTTPS"), "HTTPS")
    assert f"ech={published_ech(lab)}" in got, got
    assert "alpn=h2,http/1.1" in got and "ipv4hint=203.0.113.40" in got, got


def test_ipv4hint_address_is_bound(ng):
    """hint.test has no A record: the HTTPS answer's ipv4hint is all the VM learns, and a
    client that connects to it (as Chromium may) must get through."""
    got = svcb_answer(ng.dig("vm1", "hint.test", "HTTPS"), "HTTPS")
    assert "ipv4hint=203.0.113.44" in got, got
    r = ng.curl("vm1", "https://hint.test/", resolve="hint.test:443:203.0.113.44")
    assert r.ok, f"the ipv4hint address was not bound: {r.outcome} {r.stderr}"
    assert r.json()["server"] == "svcb" and r.json()["addr"] == "203.0.113.44"


def test_addresses_past_the_binding_quota_are_removed(request):
    """many.test has 40 A records; with room for 8 bindings the VM is given no address it
    could not connect to: the answer keeps at most 8, and every one of them connects."""
    quota = 8
    lab = start(request, dataplane={"max_bindings_per_vm": quota})
    r = lab.dig("vm1", "many.test", tcp=True)
    assert r.rcode == "NOERROR", r.raw
    assert 1 <= len(r.addresses) <= quota, \
        f"{len(r.addresses)} addresses reached the VM with room for {quota} bindings"
    assert set(r.addresses) <= set(svc.MANY_ADDRS), r.addresses
    for a in r.addresses:
        c = lab.curl("vm1", "https://many.test/", resolve=f"many.test:443:{a}")
        assert c.ok and c.json()["addr"] == a, f"{a}: {c.outcome} {c.stderr}"
