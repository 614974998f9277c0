"""QUIC judged for the flow's whole handshake, on any port (SPEC s4.6, `quic: inspect`,
issue 23), through the real daemon. The lab's UDP listeners log the version and SNI a QUIC
server would read from each Initial (lab_services, quic_initial.read_initial): a denied name
must never be read. Each absence is checked after a datagram that came back through the
same 4-tuple."""
import pytest

import ng_counters as nc
from test_dataplane import start
from test_verdicts import labmod_path, resolve

DENIED = "upload.pypi.org"      # the python policy's deny, on pypi.org's address


@pytest.fixture(scope="module")
def lab(request):
    return start(request, quic="inspect")


def steps(lab, addr, port, todo):
    """Run quic_initial.py's steps from vm1: (client port, [one word per step])."""
    out = lab.vm_exec("vm1", ["/usr/bin/python3", labmod_path("quic_initial.py"), addr,
                              str(port), *todo], timeout=120)
    lines = out.stdout.split("\n")
    assert out.returncode == 0 and lines[0].startswith("port "), out.stdout + out.stderr
    return int(lines[0].split()[1]), [w for w in lines[1:] if w]


def counted(lab, addr, port, todo, want, reason):
    """Run the steps todo: the words are want, and vm1's block counter for reason moved by
    exactly one. Returns the client's port."""
    with nc.Delta(lab) as d:
        cport, words = steps(lab, addr, port, todo)
        assert words == want, words
        d.wait({nc.blocked("vm1", reason): 1})
    assert d[nc.blocked("vm1", reason)] == 1
    return cport


def read_by_server(lab, addr, port, client_port):
    return lab.server_events(event="udp", addr=addr, port=port, client="10.77.0.11",
                             client_port=client_port)


@pytest.mark.parametrize("version", ["v1", "v2", "d29", "retry"])
def test_new_initial_naming_a_denied_host_is_cut(lab, version):
    """An allowed Initial, then on the same 4-tuple an Initial with a new DCID (and another
    version, or a token as after a Retry) naming a denied host: cut, and the server never
    reads it; then an allowed Initial of that kind on the same 4-tuple is read (a new flow,
    judged again)."""
    addr = resolve(lab, "vm1", "pypi.org")
    cport = counted(lab, addr, 443,
                    ["v1:pypi.org", f"{version}:{DENIED}", f"{version}:pypi.org"],
                    ["echo", "unreachable", "echo"], "sni_denied")
    read = [(e.get("version"), e.get("sni")) for e in read_by_server(lab, addr, 443, cport)]
    assert len(read) == 2 and all(sni == "pypi.org" for _, sni in read), read
    assert not lab.server_events(event="udp", sni=DENIED)


@pytest.mark.parametrize("port", [4433, 8443])
def test_initial_on_another_port_is_judged(lab, port):
    """UDP to a bound address on a port other than 443: an Initial naming a denied host is
    refused and never read; an allowed one on the same 4-tuple is read."""
    addr = resolve(lab, "vm1", "pypi.org")
    cport = counted(lab, addr, port, [f"v1:{DENIED}", "v1:pypi.org"],
                    ["unreachable", "echo"], "sni_denied")
    read = read_by_server(lab, addr, port, cport)
    assert [e.get("sni") for e in read] == ["pypi.org"], read
    assert not lab.server_events(event="udp", sni=DENIED)


def test_long_header_of_an_unknown_version_is_dropped(lab):
    """After the verdict, a short header passes and a long header of a version namegate
    cannot read is dropped (reason quic), the flow kept: a new allowed Initial after it is
    judged and read."""
    addr = resolve(lab, "vm1", "pypi.org")
    cport = counted(lab, addr, 443,
                    ["v1:pypi.org", "short:1200", "!grease:1200", "v1:pypi.org"],
                    ["echo", "echo", "sent", "echo"], "quic")
    read = read_by_server(lab, addr, 443, cport)
    assert [e.get("sni") for e in read] == ["pypi.org", None, "pypi.org"], read
    assert read[1]["size"] == 1200


def test_plain_udp_on_another_port_goes_on(lab):
    """Not QUIC on port 4433: a datagram whose first bit is clear, and one that has it set
    but is under 1200 bytes, pass as plain UDP; one of 1200 bytes or more that looks like a
    long header of an unknown version does not."""
    addr = resolve(lab, "vm1", "pypi.org")
    cport = counted(lab, addr, 4433, ["short:1300", "rtp:200", "!grease:1300", "rtp:300"],
                    ["echo", "echo", "sent", "echo"], "quic")
    assert [e["size"] for e in read_by_server(lab, addr, 4433, cport)] == [1300, 200, 300]
