"""Two real agent VMs (qemu booting vm-images/agent) with different policies behind
namegate in the lab. Each VM runs its requests at boot and prints them, framed, on its
serial console; the tests read the consoles, the servers' and resolver's logs, and
namegate's metrics endpoint.

vm1 has policy python (pypi.org, files.pythonhosted.org, ...) and IPv6 too, vm2 policy
github (github.com, *.githubusercontent.com) and IPv4 only. A third VM, a namespace with policy offline, only
serves the lab's readiness probe and must come out with nothing allowed.
"""

import os
import re
import subprocess
import time

import pytest

import agentvm
import lab as labmod
from lab import VM

CURL = "curl -sS -o /dev/null -w http=%{http_code} --max-time 8"
RESOLVER = "10.77.0.1"
ROUTER6 = "fd77::1"

# (key, command) per VM; keys name the results in the tests below
COMMANDS = {
    "vm1": [
        ("pypi", f"{CURL} https://pypi.org/"),
        ("files", f"{CURL} https://files.pythonhosted.org/"),
        ("pypi_v6", f"{CURL} -6 https://pypi.org/"),
        # python allows github.com:22 only: the name resolves, port 443 stays shut
        ("github_443", f"{CURL} https://github.com/"),
        ("evil", f"{CURL} https://evil.test/"),
        ("dns_evil", f"nslookup collect.evil.test {RESOLVER}"),
        # -k: a certificate could not fail this; only namegate can stop it
        ("literal", f"{CURL} -k https://203.0.113.20/"),
    ],
    "vm2": [
        ("github", f"{CURL} https://github.com/"),
        ("raw", f"{CURL} https://raw.githubusercontent.com/"),
        ("pypi", f"{CURL} https://pypi.org/"),
        ("dns_pypi", f"nslookup pypi.org {RESOLVER}"),
        # github.com's address is bound for vm2 by now: only the SNI can stop this
        ("sni", f"{CURL} -k --resolve evil.test:443:203.0.113.12 https://evil.test/"),
        ("literal", f"{CURL} -k https://203.0.113.10/"),
    ],
}
BOOT_TIMEOUT = 300      # both VMs, software emulation on a loaded 2-core machine


def _log(msg):
    print(f"vm: {msg}", flush=True)


def _build_image():
    out = os.environ.get("AGENT_VM_DIR", "/var/tmp/namegate-agent-vm")
    recipe = os.environ.get("AGENT_VM_BUILD") or os.path.join(
        os.path.dirname(agentvm.__file__), "build.sh")
    t0 = time.monotonic()
    cp = subprocess.run(["bash", recipe, out], capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, f"agent VM build failed:\n{cp.stdout}\n{cp.stderr}"
    _log(f"image {out}: {cp.stdout.strip()} ({time.monotonic() - t0:.1f}s)")
    return out


class Run:
    """The lab, and what each VM printed."""

    def __init__(self, lab, consoles, metrics, seconds):
        self.lab, self.consoles, self.metrics, self.seconds = lab, consoles, metrics, seconds

    def result(self, vm, key):
        keys = [k for k, _ in COMMANDS[vm]]
        return self.consoles[vm].result(keys.index(key) + 1)

    def counter(self, metric, **labels):
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        m = re.search(rf"^{metric}\{{{re.escape(want)}\}} (\d+)$", self.metrics, re.M)
        return int(m.group(1)) if m else 0


@pytest.fixture(scope="module")
def run(request):
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip(f"needs NAMEGATE_BIN (got {binary!r})")
    image = _build_image()

    vms = [VM("vm1", "02:00:00:00:00:01", "10.77.0.11", "fd77::11", policy="python",
              tap=True),
           VM("vm2", "02:00:00:00:00:02", "10.77.0.12", policy="github", tap=True),
           VM("probe", "02:00:00:00:00:03", "10.77.0.13", policy="offline")]
    lab = labmod.Lab(mode="namegate", vms=vms, namegate_cmd=[binary, "-c", "{config}"],
                     log=_log)
    request.addfinalizer(lab.teardown)
    lab.setup()
    with open(lab.ca_path) as f:
        ca = f.read()

    t0 = time.monotonic()
    procs, consoles = {}, {}
    for vm in vms[:2]:
        avm = agentvm.AgentVM(vm.name, vm.mac, f"{vm.ipv4}/24", gw=RESOLVER, dns=RESOLVER,
                              ip6=vm.ipv6 and f"{vm.ipv6}/64", gw6=vm.ipv6 and ROUTER6,
                              commands=[c for _, c in COMMANDS[vm.name]], ca_pem=ca)
        initrd = agentvm.make_initrd(image, avm, os.path.join(lab.tmpdir, f"{vm.name}.initrd"))
        consoles[vm.name] = os.path.join(lab.tmpdir, f"{vm.name}.console")
        argv = agentvm.qemu_argv(image, avm, initrd, tap=lab.tap_name(vm),
                                 console=consoles[vm.name])
        procs[vm.name] = lab.spawn(f"qemu-{vm.name}", argv)

    # A VM powers off after its last command, and qemu exits with it.
    deadline = time.monotonic() + BOOT_TIMEOUT
    while any(p.alive() for p in procs.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    seconds = time.monotonic() - t0
    _log(f"both VMs booted, ran {sum(len(c) for c in COMMANDS.values())} commands and "
         f"powered off in {seconds:.1f}s")
    texts = {name: open(path, errors="replace").read() for name, path in consoles.items()}
    for name, text in texts.items():
        _log(f"--- {name} console ---\n{text.strip()}")
    for name, p in procs.items():
        assert not p.alive(), f"{name} did not finish within {BOOT_TIMEOUT}s"
    metrics = lab.metrics()
    assert metrics, "namegate's metrics endpoint did not answer"
    return Run(lab, {n: agentvm.parse_console(t) for n, t in texts.items()}, metrics, seconds)


@pytest.mark.parametrize("vm", ["vm1", "vm2"])
def test_vm_booted_with_its_identity_and_ran_everything(run, vm):
    con = run.consoles[vm]
    assert con.up == {"name": vm, "mac": run.lab.vm(vm).mac, "ip": f"{run.lab.vm(vm).ipv4}/24"}
    assert not con.errors
    assert con.ended
    assert [r.command for r in con.results] == [c for _, c in COMMANDS[vm]]


@pytest.mark.parametrize("vm,key,host", [
    ("vm1", "pypi", "pypi.org"), ("vm1", "files", "files.pythonhosted.org"),
    ("vm1", "pypi_v6", "pypi.org"),
    ("vm2", "github", "github.com"), ("vm2", "raw", "raw.githubusercontent.com")])
def test_allowed_https_by_name_reaches_the_server(run, vm, key, host):
    r = run.result(vm, key)
    assert (r.rc, r.output) == (0, "http=200")
    client = run.lab.vm(vm).ipv6 if key.endswith("_v6") else run.lab.vm(vm).ipv4
    hits = run.lab.server_events(event="request", host=host, client=client)
    assert hits, f"the {host} server saw no request from {vm}"


@pytest.mark.parametrize("vm,key,name", [("vm1", "evil", "evil.test"),
                                         ("vm2", "pypi", "pypi.org")])
def test_disallowed_name_does_not_resolve(run, vm, key, name):
    r = run.result(vm, key)
    assert r.rc == 6, r          # curl: could not resolve host
    asked = [q for q in run.lab.resolver_queries() if q[1] == name
             and q[2] == run.lab.vm(vm).ipv4]
    assert not asked, f"{vm}'s query for {name} reached the resolver"


@pytest.mark.parametrize("vm,key,name", [("vm1", "dns_evil", "collect.evil.test"),
                                         ("vm2", "dns_pypi", "pypi.org")])
def test_disallowed_dns_is_refused_by_namegate(run, vm, key, name):
    r = run.result(vm, key)
    assert r.rc != 0
    assert "REFUSED" in r.output, r.output
    assert not [q for q in run.lab.resolver_queries() if q[1] == name
                and q[2] == run.lab.vm(vm).ipv4], f"{name} left the gateway"


@pytest.mark.parametrize("vm", ["vm1", "vm2"])
def test_ip_literal_is_reset(run, vm):
    r = run.result(vm, "literal")
    assert r.rc == 7, r          # curl: failed to connect (namegate's RST)
    assert "http=000" in r.output


def test_name_allowed_on_another_port_is_reset(run):
    r = run.result("vm1", "github_443")
    assert r.rc == 7, r
    assert not run.lab.server_events(event="accept", server="github",
                                     client=run.lab.vm("vm1").ipv4)


def test_allowed_address_with_a_disallowed_sni_is_cut(run):
    r = run.result("vm2", "sni")
    assert r.rc in (35, 56), r   # the TLS handshake was cut, not a certificate error
    assert not run.lab.server_events(event="hello", sni="evil.test"), \
        "the ClientHello with SNI evil.test reached a server"


def test_counters_moved_for_the_right_vm(run):
    c = run.counter
    for vm in ("vm1", "vm2"):
        assert c("namegate_vm_egress_packets_total", vm=vm, verdict="allowed") > 0
        assert c("namegate_vm_dns_queries_total", vm=vm, verdict="allowed") >= 2
        assert c("namegate_vm_dns_queries_total", vm=vm, verdict="blocked") >= 2
        assert c("namegate_vm_blocked_total", vm=vm, reason="no_binding") >= 1
    assert c("namegate_vm_blocked_total", vm="vm2", reason="sni_denied") >= 1
    assert c("namegate_vm_blocked_total", vm="vm1", reason="sni_denied") == 0
    # the probe VM only ever asked for a name nobody may resolve (its ARP is allowed)
    assert c("namegate_vm_dns_queries_total", vm="probe", verdict="blocked") >= 1
    assert c("namegate_vm_dns_queries_total", vm="probe", verdict="allowed") == 0
    assert c("namegate_vm_bindings", vm="probe") == 0
    assert c("namegate_vm_blocked_total", vm="probe", reason="no_binding") == 0
