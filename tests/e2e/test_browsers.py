"""A real browser behind namegate: Debian's headless Chromium in a VM (lab_browser), its DNS
through the VM's resolv.conf and namegate, its TLS trusted by the lab servers' key hashes.
What an agent's browser does that curl does not: A, AAAA and HTTPS queries at once, ECH
from an HTTPS record, QUIC after an Alt-Svc, and its own retries and fallbacks.

The policies here (BROWSER_POLICIES) are shared with test_first_bytes and test_https_rr."""
import json
import os

import pytest

import lab as labmod
import lab_browser
import lab_services as svc
import ng_counters as nc

VM1 = "10.77.0.11"
# a blocked load must fail this fast, Chromium's own start-up (about a second) included
BLOCKED_LOAD_MAX = 10.0

BROWSER_POLICIES = {
    "browser": {
        "allow": ["pypi.org", "files.pythonhosted.org", "svcb.test", "hint.test", "h3.test",
                  "many.test"],
        "deny": ["upload.pypi.org"],
    },
    "offline": {"allow": []},
}


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("NAMEGATE_BIN is not set to a built namegate (no DPDK?)")
    return binary


def start(request, **config):
    """A namegate lab with one VM (vm1, policy browser); config overrides the daemon's."""
    lab = labmod.Lab(mode="namegate", policies=BROWSER_POLICIES,
                     vms=[labmod.VM("vm1", "02:00:00:00:00:01", VM1, "fd77::11", "browser")],
                     namegate_cmd=[_binary(), "-c", "{config}"], config=config or None)
    request.addfinalizer(lab.teardown)
    return lab.setup()


@pytest.fixture(scope="module")
def ng(request):
    lab_browser.chromium_path()         # missing chromium fails here, loudly
    lab = start(request)
    # Chromium's first start on a fresh machine reads its ~300 MB from a cold disk and can
    # take longer than a page load's cap: warm it on a page that needs no network, so the
    # tests' caps time namegate, not the disk
    warm = lab_browser.Browser(lab, "vm1").load("data:text/html,<p>warm</p>", timeout=120.0)
    assert warm.returncode == 0, str(warm)
    return lab


def test_allowed_https_page_loads(ng):
    b = lab_browser.Browser(ng, "vm1")
    with nc.Delta(ng) as d:
        r = b.load("https://pypi.org/page")
    assert r.has(svc.page_marker("pypi")), str(r)
    reqs = ng.server_events(event="request", server="pypi", path="/page")
    assert reqs and reqs[-1]["sni"] == "pypi.org" and reqs[-1]["tls"], reqs
    # nothing of the page was blocked (and Chromium's own services never asked)
    assert d[nc.blocked("vm1", "sni_denied")] == 0 and d[nc.blocked("vm1", "no_binding")] == 0
    print(f"allowed load: {r.elapsed:.2f}s")


def test_blocked_name_fails_fast_and_is_counted(ng):
    """evil.test is not allowed: namegate answers REFUSED itself, Chromium shows
    ERR_NAME_NOT_RESOLVED at once (no retry, no timeout)."""
    b = lab_browser.Browser(ng, "vm1")
    base = b.load("about:blank")            # what Chromium's start and exit cost alone
    with nc.Delta(ng) as d:
        r = b.load("https://evil.test/page", timeout=30)
    assert r.returncode == 0 and r.error == "ERR_NAME_NOT_RESOLVED", str(r)
    assert svc.page_marker("evil") not in r.dom
    assert r.elapsed < BLOCKED_LOAD_MAX, f"the blocked load took {r.elapsed:.2f}s"
    d.wait({nc.blocked("vm1", "dns_denied"): 1})
    assert not [q for q in ng.resolver_queries() if q[1] == "evil.test"]
    events = [json.loads(x) for x in open(os.path.join(ng.tmpdir, "events.jsonl"))]
    assert [e for e in events if e.get("vm") == "vm1" and e.get("reason") == "dns_denied"
            and e.get("name") == "evil.test"], "no block event for evil.test"
    print(f"blocked by DNS: {r.elapsed:.2f}s (about:blank {base.elapsed:.2f}s)")


def test_blocked_sni_on_a_bound_address_fails_fast(ng):
    """A page whose name is pinned (like a hosts-file line) to an address the VM did bind:
    the connection is admitted, the ClientHello names evil.test, namegate cuts it."""
    addr = ng.dig("vm1", "pypi.org").addresses[0]
    b = lab_browser.Browser(ng, "vm1")
    with nc.Delta(ng) as d:
        r = b.load("https://evil.test/page", rules=[f"MAP evil.test {addr}"])
    assert r.returncode == 0 and r.error in ("ERR_CONNECTION_RESET", "ERR_CONNECTION_CLOSED"), \
        str(r)
    assert r.elapsed < BLOCKED_LOAD_MAX, f"the blocked load took {r.elapsed:.2f}s"
    d.wait({nc.blocked("vm1", "sni_denied"): 1})
    assert not ng.server_events(event="sni", sni="evil.test", client=VM1)
    print(f"blocked by SNI: {r.elapsed:.2f}s")


def test_blocked_address_fails_fast(ng):
    """An address nothing bound (evil.test's, by literal): the SYN is answered by RST."""
    b = lab_browser.Browser(ng, "vm1")
    with nc.Delta(ng) as d:
        r = b.load("https://203.0.113.20/page")
    assert r.returncode == 0 and r.error == "ERR_CONNECTION_REFUSED", str(r)
    assert r.elapsed < BLOCKED_LOAD_MAX, f"the blocked load took {r.elapsed:.2f}s"
    d.wait({nc.blocked("vm1", "no_binding"): 1})
    assert not ng.server_events(event="accept", addr="203.0.113.20", client=VM1)
    print(f"blocked by address: {r.elapsed:.2f}s")


def test_https_record_with_ech_loads_under_strict_binding(ng):
    """svcb.test publishes an HTTPS record (alpn h2,http/1.1, ipv4hint, ech whose
    public_name ech-cover.evil.test no VM may reach). Chromium asks for it; with the ech
    parameter stripped by namegate it sends the real SNI, which strict binding admits.
    (With the ech left in, Chromium's outer SNI is the cover name: sni_denied, reset.)"""
    b = lab_browser.Browser(ng, "vm1")
    with nc.Delta(ng) as d:
        r = b.load("https://svcb.test/page")
    assert ("HTTPS", "svcb.test", VM1) in ng.resolver_queries(), \
        "Chromium did not ask for the HTTPS record"
    assert r.has(svc.page_marker("svcb")), \
        f"{r}; namegate counted {d[nc.blocked('vm1', 'sni_denied')]} sni_denied (an ECH " \
        f"hello's outer SNI {svc.ECH_PUBLIC_NAME} is denied: did the ech param reach the VM?)"
    assert d[nc.blocked("vm1", "sni_denied")] == 0
    snis = {e["sni"] for e in ng.server_events(event="sni", server="svcb", client=VM1)}
    assert snis == {"svcb.test"}, snis
    assert not ng.server_events(event="sni", sni=svc.ECH_PUBLIC_NAME)


def test_alt_svc_h3_page_loads_over_tcp_twice(ng):
    """h3.test answers with Alt-Svc: h3=":443". Chromium remembers it in the profile and
    tries QUIC; namegate blocks UDP 443 (quic: block, ICMP port unreachable), and the page
    loads over TCP, on the first visit and on the next (the Alt-Svc remembered)."""
    b = lab_browser.Browser(ng, "vm1")
    with nc.Delta(ng) as d:
        first = b.load("https://h3.test/page")
        assert first.has(svc.page_marker("h3")), str(first)
        state = os.path.join(b.profile, "Default", "Network Persistent State")
        text = open(state).read() if os.path.exists(state) else ""
        assert "https://h3.test" in text and '"quic"' in text, \
            f"Chromium did not remember the Alt-Svc: {text[:500]!r}"
        second = b.load("https://h3.test/page")
        assert second.has(svc.page_marker("h3")), str(second)
    quic = d[nc.blocked("vm1", "quic")]
    assert quic >= 1, "Chromium never tried QUIC: the test did not exercise what it is for"
    assert not ng.server_events(event="udp", server="h3", client=VM1)
    tls = ng.server_events(event="request", server="h3", client=VM1, path="/page")
    assert len(tls) == 2 and all(e["tls"] for e in tls), tls
    broken = "broken_alternative_services" in open(state).read()
    print(f"h3: loads {first.elapsed:.2f}s and {second.elapsed:.2f}s, {quic} QUIC "
          f"datagrams blocked, alternative service marked broken: {broken}")
