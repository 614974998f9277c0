"""The lab itself, proven with a plain bridge in namegate's place: names resolve through
the real resolver, HTTPS reaches the right server with the lab CA, the topology is what
the config says, and nothing of a run is left after teardown, however it ends."""

import ctypes
import io
import json
import os
import signal
import subprocess
import threading
import time

import pytest

import lab as labmod
import lab_demo
import lab_namegate
import lab_net
from lab_net import LabError

HERE = os.path.dirname(os.path.abspath(__file__))
VMS = ["vm1", "vm2"]
FAKE = [labmod.PYTHON, os.path.join(HERE, "fake_namegate.py"), "-c", "{config}"]


def assert_gone(prefix):
    left = lab_net.leftovers(prefix)
    assert left == {"netns": [], "links": [], "pids": [], "files": []}, left
    assert prefix not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                        text=True).stdout
    assert prefix not in subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                                        text=True).stdout
    assert subprocess.run(["pgrep", "-f", prefix], capture_output=True).returncode == 1


# ------------------------------------------------------------------ DNS

@pytest.mark.parametrize("vm", VMS)
def test_resolver_answers_a_and_aaaa(bridge_lab, vm):
    d = bridge_lab.dig(vm, "pypi.org", "A")
    assert d.rcode == "NOERROR" and d.answers == [("pypi.org", 300, "A", "203.0.113.10")]
    assert bridge_lab.dig(vm, "pypi.org", "AAAA").addresses == ["2001:db8::10"]
    assert bridge_lab.dig(vm, "files.pythonhosted.org").addresses == ["203.0.113.11"]
    assert bridge_lab.dig(vm, "v6only.test", "AAAA").addresses == ["2001:db8::20"]
    # a name with an A record only: NOERROR with no data, not NXDOMAIN
    nodata = bridge_lab.dig(vm, "github.com", "AAAA")
    assert nodata.rcode == "NOERROR" and nodata.answers == []
    assert sorted(bridge_lab.dig(vm, "multi.test").addresses) == ["203.0.113.10",
                                                                   "203.0.113.11"]
    assert bridge_lab.dig(vm, "ttl5.test").answers[0][1] == 5


def test_resolver_follows_cname_chain(bridge_lab):
    d = bridge_lab.dig("vm1", "cdn.pypi-mirror.test")
    assert d.rcode == "NOERROR"
    assert d.chain == [("cdn.pypi-mirror.test", "www.pypi-mirror.test"),
                       ("www.pypi-mirror.test", "edge.cdn.test")]
    assert d.addresses == ["203.0.113.30"]
    d6 = bridge_lab.dig("vm2", "www.pypi-mirror.test", "AAAA")
    assert d6.chain == [("www.pypi-mirror.test", "edge.cdn.test")]
    assert d6.addresses == ["2001:db8::30"]


@pytest.mark.parametrize("name", ["nosuch.test", "pypi.org.evil.test", "c2VjcmV0.collect.evil.test",
                                  "example.com"])
def test_resolver_nxdomain_for_everything_else(bridge_lab, name):
    d = bridge_lab.dig("vm1", name)
    assert d.rcode == "NXDOMAIN" and d.answers == []


def test_resolver_serves_rebinding_names(bridge_lab):
    assert bridge_lab.dig("vm1", "rebind-localhost.test").addresses == ["127.0.0.1"]
    assert bridge_lab.dig("vm1", "rebind-localhost.test", "AAAA").addresses == ["::1"]
    assert bridge_lab.dig("vm1", "rebind-vm.test").addresses == ["10.77.0.12"]
    assert bridge_lab.dig("vm1", "rebind-metadata.test").addresses == ["169.254.169.254"]
    d = bridge_lab.dig("vm1", "rebind-chain.test")
    assert d.chain == [("rebind-chain.test", "rebind-localhost.test")]
    assert d.addresses == ["127.0.0.1"]


def test_big_answer_is_truncated_over_udp_and_whole_over_tcp(bridge_lab):
    udp = bridge_lab.dig("vm1", "big.test", args=["+ignore"])
    assert udp.rcode == "NOERROR" and " tc " in udp.raw.split("Flags:")[1].split(";")[0] + " "
    tcp = bridge_lab.dig("vm1", "big.test", tcp=True)
    assert len(tcp.addresses) == 40 and "(TCP)" in tcp.raw


def test_vms_resolve_through_their_resolv_conf(bridge_lab):
    """glibc in a VM uses /etc/netns/<vm>/resolv.conf: the lab resolver, nothing else."""
    with open(f"/etc/netns/{bridge_lab.vm('vm2').ns}/resolv.conf") as f:
        assert f.read().startswith("nameserver 10.77.0.1\n")
    cp = bridge_lab.vm_python("vm2", "import socket; print(sorted({a[4][0] for a in "
                              "socket.getaddrinfo('files.pythonhosted.org', 443)}))")
    assert cp.stdout.strip() == "['203.0.113.11']", cp.stderr
    assert ("A", "files.pythonhosted.org", "10.77.0.12") in bridge_lab.resolver_queries()


def test_other_resolver_exists_for_blocking_tests(bridge_lab):
    d = bridge_lab.dig("vm1", "pypi.org", server="203.0.113.53")
    assert d.addresses == ["203.0.113.10"]


# ------------------------------------------------------------------ HTTPS and friends

@pytest.mark.parametrize("vm", VMS)
@pytest.mark.parametrize("host,server", [
    ("pypi.org", "pypi"), ("files.pythonhosted.org", "files"), ("github.com", "github"),
    ("raw.githubusercontent.com", "ghcontent"), ("upload.pypi.org", "upload"),
    ("evil.test", "evil"), ("www.pypi-mirror.test", "cdn-edge"),
])
def test_https_by_name_reaches_the_right_server(bridge_lab, vm, host, server):
    r = bridge_lab.curl(vm, f"https://{host}/hello", ip=4)
    assert r.ok, (r.returncode, r.stderr)
    body = r.json()
    assert body["server"] == server and body["tls"] is True
    assert body["sni"] == host and body["host"] == host and body["path"] == "/hello"
    assert body["client"] == bridge_lab.vm(vm).ipv4


def test_https_over_ipv6(bridge_lab):
    r = bridge_lab.curl("vm1", "https://pypi.org/", ip=6)
    assert r.ok, r.stderr
    assert r.json()["addr"] == "2001:db8::10" and r.json()["client"] == "fd77::11"
    r = bridge_lab.curl("vm2", "https://v6only.test/")
    assert r.ok and r.json()["server"] == "v6only" and r.json()["client"] == "fd77::12"


def test_https_on_8443_and_ip_literal(bridge_lab):
    r = bridge_lab.curl("vm1", "https://pypi.org:8443/")
    assert r.ok and r.json()["port"] == 8443
    r = bridge_lab.curl("vm1", "https://198.51.100.7/")       # certificate with SAN IP
    assert r.ok and r.json()["server"] == "literal" and r.json()["sni"] is None


def test_certificates_are_really_checked(bridge_lab):
    # github.com's name sent to pypi's address: pypi's certificate does not cover it
    r = bridge_lab.curl("vm1", "https://github.com/", connect_to="github.com:443:203.0.113.10:443")
    assert r.returncode == 60 and r.outcome == "certificate rejected"
    # without the lab CA, nothing verifies
    r = bridge_lab.curl("vm1", "https://pypi.org/", args=["--cacert", "/dev/null"])
    assert not r.ok


def test_https_server_logs_what_it_saw(bridge_lab):
    r = bridge_lab.curl("vm2", "https://evil.test/logged")
    assert r.ok
    ev = bridge_lab.server_events(event="request", path="/logged", client="10.77.0.12")
    assert len(ev) == 1 and ev[0]["server"] == "evil" and ev[0]["sni"] == "evil.test"
    assert bridge_lab.server_events(event="accept", server="evil", port=443, client="10.77.0.12")
    assert bridge_lab.server_events(event="hello", server="evil", client="10.77.0.12")[0][
        "first_byte"] == 0x16                              # a TLS handshake record
    # a connection that sends nothing is accepted but never says hello
    bridge_lab.vm_python("vm1", "import socket; socket.create_connection(('203.0.113.20', 8443),"
                         " timeout=20).close()")
    labmod.wait_until(lambda: bridge_lab.server_events(event="tls_error", server="evil",
                                                       port=8443, client="10.77.0.11"),
                      what="the server to log the silent connection's tls_error")
    assert not bridge_lab.server_events(event="hello", server="evil", port=8443,
                                        client="10.77.0.11")


def test_plain_http_tcp_and_udp_echo(bridge_lab):
    r = bridge_lab.curl("vm1", "http://evil.test/plain")
    assert r.ok and r.json()["tls"] is False and r.json()["port"] == 80
    r = bridge_lab.curl("vm1", "https://files.pythonhosted.org/bytes/100000")
    assert r.ok and len(r.body) == 100000
    r = bridge_lab.curl("vm2", "https://github.com/drip/1")
    assert r.ok and r.body.split() == ["0", "1", "2", "3", "4"] and r.time >= 0.8
    code = """
import socket
t = socket.create_connection(("203.0.113.20", 7), timeout=20); t.sendall(b"tcp-hello")
tcp = t.recv(100)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.settimeout(20)
u.sendto(b"udp-hello", ("2001:db8::10", 443)); udp = u.recv(100)
print(tcp.decode(), udp.decode())
"""
    cp = bridge_lab.vm_python("vm1", code)
    assert cp.stdout.split() == ["tcp-hello", "udp-hello"], cp.stderr


def test_scapy_crafted_frames_from_a_vm(bridge_lab):
    code = """
r = srp1(Ether(src=VM["mac"], dst=ROUTER_MAC) / IP(src=VM["ipv4"], dst="203.0.113.11")
         / UDP(sport=40000, dport=7) / Raw(b"crafted"), timeout=20)
q = sr1(IP(dst=RESOLVER) / UDP(sport=40001, dport=53)
        / DNS(rd=1, qd=DNSQR(qname="github.com", qtype="A")), timeout=20)
print(json.dumps({"echo": bytes(r[Raw].load).decode(), "src": r[IP].src,
                  "dns": q[DNS].an[0].rdata}))
"""
    cp = bridge_lab.scapy("vm2", code)
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout.strip().splitlines()[-1])
    assert out == {"echo": "crafted", "src": "203.0.113.11", "dns": "203.0.113.12"}


# ------------------------------------------------------------------ topology

@pytest.mark.parametrize("vm", VMS)
def test_vm_can_ping_router_and_the_other_vm(bridge_lab, vm):
    for addr in ("10.77.0.1", "fd77::1", "203.0.113.10"):
        cp = bridge_lab.ping(vm, addr)
        assert cp.returncode == 0 and cp.stdout.startswith(f"reply from {addr} "), cp.stdout
    other = [v for v in bridge_lab.vms if v.name != vm][0]
    assert bridge_lab.ping(vm, other.ipv4).returncode == 0


@pytest.mark.parametrize("vm", VMS)
def test_vm_interface_is_as_configured(bridge_lab, vm):
    v = bridge_lab.vm(vm)
    link = json.loads(bridge_lab.vm_exec(vm, ["ip", "-j", "addr", "show", "eth0"]).stdout)[0]
    assert link["address"] == v.mac == f"02:00:00:00:00:0{vm[-1]}"
    addrs = {(a["local"], a["prefixlen"]) for a in link["addr_info"]}
    assert (v.ipv4, 24) in addrs and (v.ipv6, 64) in addrs
    routes = bridge_lab.vm_exec(vm, "ip route show default; ip -6 route show default").stdout
    assert "default via 10.77.0.1 dev eth0" in routes and "default via fd77::1 dev eth0" in routes
    # the router sees the VM at its configured MAC
    assert bridge_lab.ping(vm, "10.77.0.1").returncode == 0
    neigh = bridge_lab.inet_exec(["ip", "neigh", "show", v.ipv4]).stdout
    assert v.mac in neigh


def test_tx_checksum_offload_off_on_every_veth(bridge_lab):
    seen = 0
    for ns in bridge_lab.namespaces:
        for link in json.loads(lab_net.run(["ip", "-j", "-n", ns, "link", "show", "type",
                                            "veth"]).stdout):
            feats = bridge_lab.ns_exec(ns, ["ethtool", "-k", link["ifname"]]).stdout
            assert "tx-checksumming: off" in feats, (ns, link["ifname"])
            seen += 1
    assert seen == 2 * (len(bridge_lab.vms) + 1) + 4     # VM and uplink pairs, gateway pairs


def test_gateway_slot_in_bridge_mode(bridge_lab):
    p = bridge_lab.prefix
    ports = json.loads(lab_net.run(["bridge", "-j", "-n", bridge_lab.sw_ns, "link"]).stdout)
    master = {x["ifname"]: x["master"] for x in ports}
    assert master[f"{p}gv"] == master[f"{p}gu"] == f"{p}bg"
    assert master[f"{p}gvb"] == master[f"{p}v1"] == master[f"{p}v2"] == f"{p}bv"
    assert master[f"{p}gub"] == master[f"{p}i"] == f"{p}bu"
    # the test addresses exist only in the lab's internet namespace
    assert "203.0.113.10" in bridge_lab.inet_exec("ip addr show lo").stdout
    assert "203.0.113." not in subprocess.run(["ip", "addr"], capture_output=True,
                                              text=True).stdout


def test_demo_table(bridge_lab):
    out = io.StringIO()
    assert lab_demo.run_demo(bridge_lab, out=out) == 0
    text = out.getvalue()
    assert "vm1 " in text and "vm2 " in text
    assert text.count("ok 200 from pypi") >= 4          # v4 and v6, both VMs
    assert "certificate rejected" in text and "NXDOMAIN" in text


def test_lab_fixture_allowed_path(lab):
    """Holds in both modes: vm1's policy (python) allows pypi.org."""
    assert lab.dig("vm1", "pypi.org").addresses == ["203.0.113.10"]
    r = lab.curl("vm1", "https://pypi.org/", ip=4)
    assert r.ok and r.json()["server"] == "pypi", r.stderr


# ------------------------------------------------------------------ lifecycle

def test_teardown_leaves_nothing(make_lab):
    lab = make_lab()
    p = lab.prefix
    assert subprocess.run(["pgrep", "-f", p], capture_output=True).returncode == 0
    assert os.path.isdir(lab.tmpdir) and os.path.isdir(f"/etc/netns/{p}-vm1")
    assert len([n for n in lab_net.list_netns() if n.startswith(p)]) == 4
    lab.teardown()
    assert_gone(p)
    lab.teardown()                                        # idempotent


def test_concurrent_labs_do_not_collide(bridge_lab, make_lab):
    labs, errors = [], []

    def build():
        try:
            labs.append(make_lab())
        except Exception as e:       # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    prefixes = {bridge_lab.prefix} | {x.prefix for x in labs}
    assert len(prefixes) == 3
    for x in labs + [bridge_lab]:            # same addresses, same MACs, separate worlds
        r = x.curl("vm1", "https://pypi.org/", ip=4)
        assert r.ok and r.json()["client"] == "10.77.0.11"
    for x in labs:
        x.teardown()
        assert_gone(x.prefix)
    assert bridge_lab.curl("vm2", "https://github.com/").ok


def test_failed_setup_cleans_up(make_lab):
    bad = labmod.default_vms()
    bad[1].mac = "zz:00:00:00:00:02"
    lab = labmod.Lab(vms=bad)
    with pytest.raises(LabError):
        lab.setup()
    assert lab.prefix and lab_net.PREFIX_RE.match(lab.prefix)
    assert_gone(lab.prefix)


def _die_with_parent():
    # SIGTERM (so it tears its lab down) if pytest itself is SIGKILLed
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


@pytest.fixture
def cli_up():
    """Starts `lab.py up` and returns (process, prefix); whatever the test does, the
    process is stopped (SIGTERM: it tears its lab down) and its prefix destroyed."""
    started = []

    def start():
        p = subprocess.Popen([labmod.PYTHON, os.path.join(HERE, "lab.py"), "up"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_die_with_parent)
        started.append([p, None])
        prefix = p.stdout.readline().strip()
        started[-1][1] = prefix
        assert lab_net.PREFIX_RE.match(prefix), (prefix, p.stderr.read() if p.poll() else "")
        assert len([n for n in lab_net.list_netns() if n.startswith(prefix)]) == 4
        return p, prefix
    yield start
    for p, prefix in started:
        if p.poll() is None:
            p.terminate()
            try:
                p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
        if prefix and lab_net.PREFIX_RE.match(prefix):
            lab_net.destroy(prefix)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cli_up_cleans_up_on_signal(cli_up, sig):
    p, prefix = cli_up()
    p.send_signal(sig)
    _, err = p.communicate(timeout=20)
    assert "torn down" in err
    assert_gone(prefix)


@pytest.mark.parametrize("how", ["prefix", "all-stale"])
def test_cli_cleanup_after_sigkill(cli_up, how):
    p, prefix = cli_up()
    p.kill()
    p.wait(10)
    assert lab_net.leftovers(prefix)["netns"]          # a SIGKILLed run leaves its lab
    assert prefix in lab_net.stale_prefixes()
    arg = ["--prefix", prefix] if how == "prefix" else ["--all-stale"]
    cp = subprocess.run([labmod.PYTHON, os.path.join(HERE, "lab.py"), "cleanup"] + arg,
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    if how == "prefix":            # (another session's --all-stale may have got there first)
        assert f"{prefix}: removed" in cp.stdout
    assert_gone(prefix)


# ------------------------------------------------------------------ namegate mode

def test_namegate_mode_with_a_stand_in_daemon(make_lab):
    """The namegate-mode plumbing, exercised with fake_namegate.py (an AF_PACKET wire)."""
    lab = make_lab(mode="namegate", namegate_cmd=FAKE)
    p = lab.prefix
    text = open(lab.config_path).read()
    for line in [f'  vm_port: "net_af_packet0,iface={p}gv"',
                 f'  uplink_port: "net_af_packet1,iface={p}gu"',
                 f'  eal: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", {p}]',
                 'resolvers: ["10.77.0.1"]', 'metrics: "127.0.0.1:9477"',
                 f'control_socket: "{lab.tmpdir}/namegate.sock"',
                 '  - name: vm1', '    mac: "02:00:00:00:00:01"', '    ipv4: "10.77.0.11"',
                 '    ipv6: "fd77::11"', '    policy: python', '    mode: enforce',
                 '  - name: vm2', '    policy: github']:
        assert line in text.splitlines(), line
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml:
        assert yaml.safe_load(text) == lab_namegate.build_config(lab)
    assert lab.daemon.pid in lab_net.ns_pids(lab.sw_ns)
    assert f"{p}bg" not in lab.sw_exec("ip -o link").stdout      # no bridge: only the daemon
    r = lab.curl("vm1", "https://pypi.org/", ip=4)
    assert r.ok and r.json()["server"] == "pypi"
    assert 'namegate_port_packets_total{port="vm",dir="rx"}' in lab.metrics()
    assert lab.stop_namegate() == 0
    assert "forwarding" in lab.namegate_output()[0]
    assert not lab.probe()                 # with the daemon gone, nothing crosses the slot


def test_namegate_mode_reports_a_daemon_that_refuses_to_start():
    lab = labmod.Lab(mode="namegate", namegate_cmd=FAKE[:2] + ["--fail-start",
                                                               "config.yaml:3:5: bad key"])
    with pytest.raises(LabError, match="exited with status 1.*bad key"):
        lab.setup()
    assert_gone(lab.prefix)


def test_cli_demo_in_namegate_mode():
    t0 = time.monotonic()
    cp = subprocess.run([labmod.PYTHON, os.path.join(HERE, "lab.py"), "demo", "--mode",
                         "namegate", "--namegate", " ".join(FAKE[:2])],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert "namegate mode" in cp.stdout and "ok 200 from pypi" in cp.stdout
    assert "namegate counters" in cp.stdout
    prefix = cp.stdout.split()[2].rstrip(",")
    assert_gone(prefix)
    assert time.monotonic() - t0 < 60
