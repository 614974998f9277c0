"""The appliance image (vm-images/appliance) as the lab's gateway: built from this tree,
booted under qemu with its two virtio NICs on TAPs of the lab's VM bridge and uplink
bridge, and judged by what it prints on its serial console, by what a VM behind it can
reach, and by what its operator sees after logging in on the console. namegate is in the
image as its Debian package (vm-images/deb): lintian judges the .deb, and on the console
the packaged unit must come up through sd_notify, reload through systemd, and go away with
the package.

The image's shipped configuration is the lab's on purpose (resolver 10.77.0.1, VM agent1
at 52:54:00:00:10:11 / 10.77.0.11 with policy python-dev: pypi.org,
files.pythonhosted.org, *.githubusercontent.com), so nothing is injected into the image.

Environment (tests/appliance/meson.build): APPLIANCE_DIR, where build.sh puts the image
(built on every run: the Debian tree is cached there, the rest takes about 30 s);
NAMEGATE_ACCEL, qemu accelerators (default tcg).
"""

import glob
import json
import os
import re
import subprocess
import time

import pytest

import lab as labmod
from lab import VM
from serial_console import SerialConsole

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECIPE = os.path.join(ROOT, "vm-images", "appliance")
# The management segment: a TAP in the switch namespace with the "Prometheus side"
# address, and dnsmasq handing the appliance's management NIC its fixed lease.
MGMT_HOST, MGMT_APPLIANCE, MGMT_MAC = "192.168.77.1", "192.168.77.10", "52:54:00:aa:00:01"
BOOT_TIMEOUT = 480          # to the status report; about 60 s under TCG here
CURL_TIMEOUT = 20           # a nested, emulated DPDK is slow, not wrong


def _log(msg):
    print(f"appliance: {msg}", flush=True)


def _outdir():
    return os.environ.get("APPLIANCE_DIR", "/var/tmp/namegate-appliance")


@pytest.fixture(scope="module")
def image():
    if os.geteuid() != 0:
        pytest.skip("building and booting the appliance needs root")
    t0 = time.monotonic()
    cp = subprocess.run([os.path.join(RECIPE, "build.sh"), _outdir()], capture_output=True,
                        text=True, timeout=1800)
    assert cp.returncode == 0, f"appliance build failed:\n{cp.stdout}\n{cp.stderr}"
    _log(f"built in {time.monotonic() - t0:.0f}s:\n{cp.stdout.strip()}")
    return os.path.join(_outdir(), "namegate-appliance.qcow2")


@pytest.fixture(scope="module")
def deb(image):
    """The package the image installed (build.sh made it with vm-images/deb)."""
    debs = glob.glob(os.path.join(_outdir(), "deb", "namegate_*.deb"))
    assert len(debs) == 1, debs
    return debs[0]


class Appliance:
    def __init__(self, lab, proc, console_log, console_sock):
        self.lab, self.proc = lab, proc
        self.console_log, self.console_sock = console_log, console_sock
        self._console = None

    def console_text(self):
        try:
            with open(self.console_log, "rb") as f:     # qemu makes it once it runs
                return f.read().decode(errors="replace").replace("\r", "")
        except FileNotFoundError:
            return ""

    def status_lines(self):
        # getty's "namegate login: " prompt has no newline: a status line printed while it
        # comes up follows it on the same console line
        mark = "namegate-status: "
        return [ln[ln.index(mark) + len(mark):] for ln in self.console_text().splitlines()
                if mark in ln]

    def shell(self):
        """A root shell on the serial console, logged in once per module."""
        if self._console is None:
            self._console = SerialConsole(self.console_sock)
            self._console.login(os.environ.get("NAMEGATE_ROOT_PASSWORD", "namegate"),
                                "ng-test-appliance-pw")
        return self._console


@pytest.fixture(scope="module")
def appliance(request, image):
    vm = VM("agent1", "52:54:00:00:10:11", "10.77.0.11", policy="python-dev")
    lab = labmod.Lab(mode="external", vms=[vm], log=_log)
    request.addfinalizer(lab.teardown)
    lab.setup()
    mgmt_tap = f"{lab.prefix}gm"
    lab.sw_exec(f"ip tuntap add dev {mgmt_tap} mode tap && "
                f"ip addr add {MGMT_HOST}/24 dev {mgmt_tap} && ip link set {mgmt_tap} up",
                check=True)
    lab.spawn("mgmt-dhcp", [
        "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0",
        "--user=root", "--pid-file=", "--log-dhcp",
        f"--log-facility={os.path.join(lab.tmpdir, 'mgmt-dhcp.log')}",
        f"--interface={mgmt_tap}", "--bind-interfaces",
        f"--dhcp-range={MGMT_APPLIANCE},{MGMT_APPLIANCE},1h",
        f"--dhcp-host={MGMT_MAC},{MGMT_APPLIANCE}",
        f"--dhcp-leasefile={os.path.join(lab.tmpdir, 'mgmt.leases')}"])
    log = os.path.join(lab.tmpdir, "appliance.console")
    sock = os.path.join(lab.tmpdir, "appliance.sock")
    env = dict(labmod.CLEAN_ENV,
               NAMEGATE_ACCEL=os.environ.get("NAMEGATE_ACCEL", "tcg"),
               NAMEGATE_VM_NET=f"tap,ifname={lab.gw_vm_if},script=no,downscript=no",
               NAMEGATE_UPLINK_NET=f"tap,ifname={lab.gw_up_if},script=no,downscript=no",
               NAMEGATE_MGMT_NET=f"tap,ifname={mgmt_tap},script=no,downscript=no",
               NAMEGATE_MGMT_MAC=MGMT_MAC,
               NAMEGATE_SERIAL="chardev:con")
    # -snapshot: the guest writes to a throwaway overlay, the image stays as built
    argv = ["env"] + [f"{k}={v}" for k, v in env.items()] + [
        os.path.join(RECIPE, "run-qemu.sh"), image, "-snapshot",
        "-chardev", f"socket,id=con,path={sock},server=on,wait=off,logfile={log}"]
    t0 = time.monotonic()
    proc = lab.spawn("appliance", argv)
    app = Appliance(lab, proc, log, sock)
    request.addfinalizer(lambda: app._console and app._console.close())
    deadline = time.monotonic() + BOOT_TIMEOUT
    while "end" not in app.status_lines():
        assert proc.alive(), f"qemu exited: {' '.join(proc.output())[-2000:]}"
        assert time.monotonic() < deadline, \
            f"no status report in {BOOT_TIMEOUT}s:\n{app.console_text()[-3000:]}"
        time.sleep(1)
    _log(f"booted to its status report in {time.monotonic() - t0:.0f}s:\n  " +
         "\n  ".join(app.status_lines()))
    return app


# ------------------------------------------------------------------ the package

def test_package_has_no_lintian_errors(deb):
    t0 = time.monotonic()
    cp = subprocess.run(["lintian", "--pedantic", deb], capture_output=True, text=True,
                        timeout=300)
    tags = [ln for ln in cp.stdout.splitlines() if re.match(r"[EWIPX]: ", ln)]
    listed = "".join(f"\n  {t}" for t in tags) or " clean"
    _log(f"lintian ({time.monotonic() - t0:.0f}s):{listed}")
    assert not [t for t in tags if t.startswith("E: ")], cp.stdout + cp.stderr
    assert cp.returncode == 0, cp.stdout + cp.stderr


# ------------------------------------------------------------------ what it prints

def test_namegate_service_is_active(appliance):
    assert "namegate.service: active" in appliance.status_lines()


@pytest.mark.parametrize("dev", ["0000:00:04.0", "0000:00:05.0"])
def test_each_nic_is_driven_by_the_virtio_pmd(appliance, dev):
    lines = appliance.status_lines()
    assert any(dev in ln and re.search(r"drv=(uio_pci_generic|vfio-pci)", ln) for ln in lines)
    assert any(re.search(rf"Probe PCI driver: net_virtio .*device: {dev}", ln) for ln in lines)


def test_both_ports_open_and_hugepages_reserved(appliance):
    lines = appliance.status_lines()
    assert any("vm port 0000:00:04.0, uplink port 0000:00:05.0" in ln for ln in lines), lines
    m = [re.match(r"HugePages_Total:\s+(\d+)", ln) for ln in lines]
    assert any(x and int(x.group(1)) > 0 for x in m), lines


def test_console_shows_a_login_prompt(appliance):
    # getty and the status report start independently: either may print first
    deadline = time.monotonic() + 60
    while not re.search(r"^namegate login:", appliance.console_text(), re.M):
        assert time.monotonic() < deadline, appliance.console_text()[-2000:]
        time.sleep(1)


# ------------------------------------------------------------------ what it enforces

def _curl(app, url, *extra):
    return app.lab.curl("agent1", url, timeout=CURL_TIMEOUT, args=extra)


def test_allowed_name_is_reached_through_the_appliance(appliance):
    r = _curl(appliance, "https://pypi.org/")
    assert r.returncode == 0 and r.http_code == 200, r
    assert appliance.lab.server_events(event="request", host="pypi.org", client="10.77.0.11")


def test_disallowed_name_is_refused_and_never_leaves(appliance):
    r = appliance.lab.dig("agent1", "github.com", timeout=CURL_TIMEOUT)
    assert r.rcode == "REFUSED", r
    assert not [q for q in appliance.lab.resolver_queries() if q[1] == "github.com"]


def test_ip_literal_is_reset(appliance):
    r = _curl(appliance, "https://203.0.113.20/", "-k")
    assert r.returncode == 7 and r.http_code == 0, r
    assert not appliance.lab.server_events(event="accept", server="evil")


# ------------------------------------------------------------------ what its operator sees

def test_operator_sees_the_vms_counters_on_the_console(appliance):
    # after the requests above (pytest runs a module's tests in order)
    rc, out = appliance.shell().run("namegatectl stats agent1")
    assert rc == 0, out
    lines = out.splitlines()
    header = next(ln.split() for ln in lines if ln.startswith("VM "))
    row = dict(zip(header, next(ln.split() for ln in lines if ln.startswith("agent1 "))))
    assert row["MODE"] == "enforce", out
    assert int(row["DNS_OK"]) >= 1 and int(row["DNS_BLOCKED"]) >= 1, out
    assert int(row["ALLOWED"].split("/")[0]) > 0, out
    assert "dns_denied" in row["TOP_BLOCK_REASONS"], out


def _scrape(app, deadline=60):
    """/metrics over the management NIC, as Prometheus gets it; DHCP may still be under
    way at the first call."""
    url = f"http://{MGMT_APPLIANCE}:9477/metrics"
    end = time.monotonic() + deadline
    while True:
        cp = app.lab.sw_exec(["curl", "-sS", "--noproxy", "*", "--max-time", "5", url])
        if cp.returncode == 0 or time.monotonic() > end:
            break
        time.sleep(2)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def _metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"no {name}:\n{text[:2000]}"
    return float(m.group(1))


def test_prometheus_scrapes_it_over_the_management_nic(appliance):
    text = _scrape(appliance)
    m = re.search(r'^namegate_vm_egress_packets_total\{vm="agent1",verdict="allowed"\} (\d+)$',
                  text, re.M)
    assert m and int(m.group(1)) > 0, text[:2000]
    assert re.search(r'^namegate_vm_blocked_total\{vm="agent1",reason="dns_denied"\} [1-9]',
                     text, re.M), text[:2000]


# ------------------------------------------------------------------ namegate as a service

def _run(app, command):
    rc, out = app.shell().run(command)
    assert rc == 0, f"{command}: {rc}\n{out}"
    return out


def _show(app, *props):
    """systemctl show's PROPERTY=value lines for namegate.service, as a dict."""
    out = _run(app, f"systemctl show -p {','.join(props)} namegate")
    return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)


def test_namegate_is_installed_by_its_package(appliance, deb):
    version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    out = _run(appliance, "dpkg -s namegate")
    assert "Status: install ok installed" in out and f"Version: {version}\n" in out, out
    assert _run(appliance, "systemctl is-enabled namegate").strip() == "enabled"
    unit = _show(appliance, "FragmentPath", "DropInPaths")
    assert unit == {"FragmentPath": "/lib/systemd/system/namegate.service",
                    "DropInPaths": "/etc/systemd/system/namegate.service.d/appliance.conf"}, unit
    assert _run(appliance, "dpkg -S /lib/systemd/system/namegate.service").startswith(
        "namegate: ")


def test_installed_files_are_the_packages(appliance):
    """dpkg --verify: the unit and binaries as packaged; what differs is what the image
    means to change: the lab's namegate.yaml over the sample (a modified conffile) and
    the man pages it drops like every package's."""
    _, out = appliance.shell().run("dpkg --verify namegate")     # 1: it reports some
    lines = out.splitlines()
    assert re.search(r"^\S+ c /etc/namegate/namegate\.yaml$", out, re.M), out
    unexpected = [ln for ln in lines if not (ln.endswith(" /etc/namegate/namegate.yaml")
                                            or re.match(r"missing\s+/usr/share/man\b", ln))]
    assert not unexpected, out


def test_systemd_sees_it_ready_through_sd_notify(appliance):
    state = _show(appliance, "Type", "ActiveState", "SubState", "StatusText", "NRestarts")
    assert state["Type"] == "notify" and state["NRestarts"] == "0", state
    assert (state["ActiveState"], state["SubState"]) == ("active", "running"), state
    assert state["StatusText"] == "serving: generation 1, 1 VM", state


def test_journal_has_the_daemons_lines(appliance):
    out = _run(appliance, "journalctl -b -o cat --no-pager -u namegate")
    assert re.search(r"^namegate: ready: 1 VMs?, vm port 0000:00:04\.0", out, re.M), out


def test_operator_reload_through_systemd(appliance):
    out = _run(appliance, "systemctl reload namegate && namegatectl status")
    assert re.search(r"generation 2", out), out
    assert _show(appliance, "StatusText")["StatusText"] == "serving: generation 2, 1 VM"
    text = _scrape(appliance)
    assert _metric(text, "namegate_policy_generation") == 2
    assert _metric(text, "namegate_config_last_reload_successful") == 1


def test_rejected_reload_keeps_the_generation(appliance):
    """A file naming an unknown policy: `systemctl reload` fails, generation 2 stays, and
    the event log says where the file is wrong. The shipped file comes back after."""
    conf, events = "/etc/namegate/namegate.yaml", "/var/log/namegate/events.jsonl"
    _run(appliance, f"cp {conf} /root/namegate.yaml.good && "
                    f"sed -i 's/policy: python-dev}}/policy: nosuch}}/' {conf}")
    try:
        before = int(_run(appliance, f"wc -l < {events}"))
        rc, out = appliance.shell().run("systemctl reload namegate")
        assert rc != 0, out
        new = _run(appliance, f"tail -n +{before + 1} {events}")
    finally:
        _run(appliance, f"cp /root/namegate.yaml.good {conf}")
    rejected = [ev for ev in map(json.loads, new.splitlines())
                if ev["event"] == "policy_rejected"]
    assert len(rejected) == 1, new
    ev = rejected[0]
    assert (ev["generation"], ev["file"]) == (2, conf), ev
    assert ev["line"] > 0 and ev["col"] > 0 and "unknown policy" in ev["message"], ev
    state = _show(appliance, "ActiveState", "StatusText")
    assert state == {"ActiveState": "active",
                     "StatusText": "serving: generation 2, 1 VM "
                                   "(the last reload was rejected)"}, state
    text = _scrape(appliance)
    assert _metric(text, "namegate_policy_generation") == 2
    assert _metric(text, "namegate_config_last_reload_successful") == 0


def test_removal_stops_it_and_purge_forgets_it(appliance):
    """The prerm stops the service; a purge takes the conffiles, the state, the logs and
    the enablement. Last in the module: the appliance has no namegate after it."""
    _run(appliance, "dpkg --remove namegate")
    assert _run(appliance, "systemctl is-active namegate || true").strip() == "inactive"
    assert _run(appliance, "test -f /etc/namegate/namegate.yaml && "
                           "test ! -e /lib/systemd/system/namegate.service && echo kept"
                ).strip() == "kept"
    _run(appliance, "dpkg --purge namegate")
    out = _run(appliance, "ls /etc/namegate /var/lib/namegate /var/log/namegate "
                          "/etc/systemd/system/multi-user.target.wants/namegate.service "
                          "2>&1 || true")
    assert out.count("No such file or directory") == 4, out
