"""What `meson install` puts where a daemon's files belong, and that each piece works as
installed: the file list against the expected one, every binary's --version from the meson
project version, the sample configuration accepted by the installed namegate, the systemd
unit through `systemd-analyze verify` (and a planted mistake caught by the same check),
the logrotate rule through logrotate's own parser, and the HA pair's keepalived sample
through `keepalived -t`."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

BUILD = os.environ["BUILD_DIR"]
VERSION = os.environ["NAMEGATE_VERSION"]
PREFIX = os.environ["PREFIX"].lstrip("/")
UNIT_DIR = os.environ["UNIT_DIR"].lstrip("/")
SYSCONF = os.environ["SYSCONFDIR"].lstrip("/")

EXPECTED = {
    f"{PREFIX}/sbin/namegate",
    f"{PREFIX}/bin/namegatectl",
    f"{PREFIX}/bin/namegate-dump",
    f"{PREFIX}/share/man/man8/namegate.8",
    f"{PREFIX}/share/man/man8/namegatectl.8",
    f"{PREFIX}/share/man/man5/namegate.yaml.5",
    f"{PREFIX}/share/man/man1/namegate-dump.1",
    f"{PREFIX}/share/doc/namegate/LICENSE",
    f"{PREFIX}/share/doc/namegate/keepalived-namegate.conf",
    f"{PREFIX}/share/bash-completion/completions/namegatectl",
    f"{SYSCONF}/namegate/namegate.yaml",
    f"{SYSCONF}/logrotate.d/namegate",
    f"{UNIT_DIR}/namegate.service",
    f"{UNIT_DIR}/namegate-ha-watch.service",
}


@pytest.fixture(scope="module")
def destdir():
    d = tempfile.mkdtemp(prefix="ng-install-")
    try:
        cp = subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", d],
                            capture_output=True, text=True)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def installed(destdir):
    out = set()
    for root, _, files in os.walk(destdir):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), destdir))
    return out


def test_file_list(destdir):
    assert installed(destdir) == EXPECTED
    mode = os.stat(os.path.join(destdir, f"{PREFIX}/sbin/namegate")).st_mode
    assert mode & 0o111, "namegate is not executable"


@pytest.mark.parametrize("binary", ["sbin/namegate", "bin/namegatectl", "bin/namegate-dump"])
def test_version(destdir, binary):
    name = os.path.basename(binary)
    cp = subprocess.run([os.path.join(destdir, PREFIX, binary), "--version"],
                        capture_output=True, text=True)
    assert cp.returncode == 0 and cp.stdout.startswith(f"{name} {VERSION}"), cp.stdout


@pytest.mark.parametrize("binary,page", [("sbin/namegate", "namegate(8)"),
                                         ("bin/namegatectl", "namegatectl(8)"),
                                         ("bin/namegate-dump", "namegate-dump(1)")])
def test_help_names_the_man_page(destdir, binary, page):
    cp = subprocess.run([os.path.join(destdir, PREFIX, binary), "--help"],
                        capture_output=True, text=True)
    assert cp.returncode == 0 and f"See {page}." in cp.stdout


def test_sample_configuration_is_valid(destdir):
    """The shipped sample sets only ports, resolvers, policies and vms: it checks clean,
    and its EAL arguments are derived and sized from the tables."""
    cp = subprocess.run([os.path.join(destdir, PREFIX, "sbin/namegate"), "-c",
                         os.path.join(destdir, SYSCONF, "namegate/namegate.yaml"), "--check"],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.endswith("0 warnings\n")
    assert "(derived from the host and ports, -m sized from the tables)" in cp.stdout


def verify(unit_text, name="namegate.service"):
    """systemd-analyze verify on a unit whose binaries are the installed ones; its
    complaints, which it prints without failing for a bad value."""
    with tempfile.TemporaryDirectory(prefix="ng-unit-") as d:
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(unit_text)
        cp = subprocess.run(["systemd-analyze", "verify", "--man=no", path],
                            capture_output=True, text=True)
        return cp.returncode, cp.stderr.replace(d, "")


def unit(destdir):
    text = open(os.path.join(destdir, UNIT_DIR, "namegate.service")).read()
    # the paths the unit names are the ones the install used
    sbin, bindir = f"/{PREFIX}/sbin/", f"/{PREFIX}/bin/"
    assert f"ExecStart={sbin}namegate -c /{SYSCONF}/namegate/namegate.yaml\n" in text
    assert f"ExecReload={bindir}namegatectl reload\n" in text
    return (text.replace(f"={sbin}", f"={destdir}{sbin}")
            .replace(f"={bindir}", f"={destdir}{bindir}"))


def test_systemd_unit(destdir):
    text = unit(destdir)
    rc, err = verify(text)
    assert rc == 0 and err == "", err
    for line in ["Type=notify", "ProtectSystem=strict", "RuntimeDirectory=namegate dpdk",
                 "UnsetEnvironment=RUNTIME_DIRECTORY",   # else EAL's dir is "/run/dpdk:/run/…"
                 "StateDirectory=namegate", "LogsDirectory=namegate", "NoNewPrivileges=yes"]:
        assert re.search(rf"^{re.escape(line)}$", text, re.M), line
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", text, re.M).group(1).split()
    assert "CAP_NET_ADMIN" in caps and "CAP_SYS_MODULE" not in caps


def test_systemd_verify_catches_a_mistake(destdir):
    """The check above would pass a unit systemd ignores half of: plant two mistakes."""
    text = unit(destdir)
    assert verify(text.replace("Type=notify", "Type=notfy"))[1] != ""
    assert verify(text.replace("ProtectSystem=strict", "ProtectSytem=strict"))[1] != ""


def test_ha_watch_unit(destdir):
    """The HA pair's watcher: the installed namegatectl writes the file the keepalived
    sample tracks, and systemd takes the unit as it is."""
    text = open(os.path.join(destdir, UNIT_DIR, "namegate-ha-watch.service")).read()
    bindir = f"/{PREFIX}/bin/"
    assert f"ExecStart={bindir}namegatectl ha --watch /run/namegate-ha.watch\n" in text
    sample = open(os.path.join(destdir, PREFIX,
                               "share/doc/namegate/keepalived-namegate.conf")).read()
    assert 'file "/run/namegate-ha.watch"' in sample
    rc, err = verify(text.replace(f"={bindir}", f"={destdir}{bindir}"),
                     "namegate-ha-watch.service")
    assert rc == 0 and err == "", err


def test_logrotate_rule(destdir):
    rule = os.path.join(destdir, SYSCONF, "logrotate.d/namegate")
    text = open(rule).read()
    assert "/var/log/namegate/*.jsonl" in text and "--signal=USR2" in text
    with tempfile.TemporaryDirectory(prefix="ng-logrotate-") as d:
        cp = subprocess.run(["logrotate", "--debug", "--state", os.path.join(d, "state"),
                             rule], capture_output=True, text=True)
    assert cp.returncode == 0 and "error" not in cp.stderr.lower(), cp.stderr


def keepalived_check(text):
    """keepalived -t on text in a network namespace of its own that has the sample's
    interface (ha0): keepalived refuses a configuration naming an interface it lacks."""
    ns = f"ngka{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory(prefix="ng-keepalived-") as d:
        conf = os.path.join(d, "keepalived.conf")
        with open(conf, "w") as f:
            f.write(text)
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            subprocess.run(["ip", "-n", ns, "link", "add", "ha0", "type", "veth", "peer",
                            "name", "ha1"], check=True)
            return subprocess.run(["ip", "netns", "exec", ns, "keepalived", "-t", "-f", conf],
                                  capture_output=True, text=True)
        finally:
            subprocess.run(["ip", "netns", "del", ns])


@pytest.mark.skipif(shutil.which("keepalived") is None, reason="no keepalived")
def test_keepalived_sample(destdir):
    """The HA pair's sample, as installed (its script the installed namegatectl: keepalived
    disables a script it cannot find, and -t fails then), passes keepalived's own check;
    the same file without its virtual address, which keepalived requires, fails it."""
    with open(os.path.join(destdir, PREFIX, "share/doc/namegate/keepalived-namegate.conf")) as f:
        text = f.read()
    ctl = "/" + PREFIX + "/bin/namegatectl"
    assert f'script "{ctl} ha --check --timeout 300"' in text
    text = text.replace(ctl, os.path.join(destdir, PREFIX, "bin/namegatectl"))
    cp = keepalived_check(text)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    broken = re.sub(r"\tvirtual_ipaddress \{[^}]*\}\n", "", text)
    assert broken != text
    cp = keepalived_check(broken)
    assert cp.returncode != 0 and "No VIP" in cp.stdout + cp.stderr, cp.stdout + cp.stderr
