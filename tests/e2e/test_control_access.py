"""Who may use the control sockets, and who did it (issue 26): the read-only socket serves
an unprivileged member of its group reads and refuses it a grant; a uid in neither group
cannot connect; a grant made through the read-write socket names its caller's uid, pid and
user in the event log and in the grant."""
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile

from lab_net import wait_until
import lab_namegate
from test_dataplane import start

import pytest

NOBODY = 65534


def _groupadd(request, suffix):
    name = f"ng{secrets.token_hex(4)}{suffix}"          # unique per run, at most 32
    subprocess.run(["groupadd", name], check=True, capture_output=True)
    request.addfinalizer(lambda: subprocess.run(["groupdel", name], capture_output=True))
    return name, int(subprocess.run(["getent", "group", name], check=True,
                                    capture_output=True, text=True).stdout.split(":")[2])


@pytest.fixture(scope="module")
def acc(request):
    if os.geteuid() != 0:
        pytest.skip("needs root: groups, namespaces and setpriv")
    # finalizers run last first: the groups and the directory go after the daemon
    ro_name, ro_gid = _groupadd(request, "ro")
    rw_name, rw_gid = _groupadd(request, "rw")
    # the lab's own tmpdir is root's 0700: the sockets live where others may search
    d = tempfile.mkdtemp(prefix="ng-acc-")
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o711)
    ctl = os.path.join(d, "namegatectl")                 # a copy nobody may execute
    shutil.copy(os.environ.get("NAMEGATECTL_BIN", "build/control/namegatectl"), ctl)
    os.chmod(ctl, 0o755)
    rw, ro = os.path.join(d, "rw.sock"), os.path.join(d, "ro.sock")
    lab = start(request, control_socket=rw, control_socket_group=rw_name,
                control_socket_readonly=ro, control_socket_readonly_group=ro_name)
    lab.acc = {"ctl": ctl, "rw": rw, "ro": ro, "ro_gid": ro_gid, "rw_gid": rw_gid}
    return lab


def run_as(lab, gid, sock, *args):
    """namegatectl as uid nobody with only gid; (rc, stdout, stderr, its pid)."""
    p = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={gid}", "--clear-groups",
                          "--", lab.acc["ctl"], "-s", sock, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=20)
    return p.returncode, out, err, p.pid                 # setpriv execs: the same process


def as_root(lab, *args):
    cp = subprocess.run([lab.acc["ctl"], "-s", lab.acc["rw"], *args], capture_output=True,
                        text=True, timeout=20)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def events(lab):
    path = lab_namegate.build_config(lab, lab.policies, lab.config_overrides)["events"]
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]


def test_socket_files_have_their_groups(acc):
    for sock, gid in ((acc.acc["ro"], acc.acc["ro_gid"]), (acc.acc["rw"], acc.acc["rw_gid"])):
        st = os.stat(sock)
        assert st.st_gid == gid and st.st_mode & 0o7777 == 0o660, (sock, st)


def test_readonly_member_reads_stats_and_is_refused_a_grant(acc):
    gid, ro = acc.acc["ro_gid"], acc.acc["ro"]
    rc, out, err, _ = run_as(acc, gid, ro, "stats", "vm1", "--json")
    assert rc == 0, err
    assert json.loads(out)["vms"][0]["vm"] == "vm1"
    rc, out, err, _ = run_as(acc, gid, ro, "grants", "--json")
    assert rc == 0 and "grants" in json.loads(out), err
    host = f"ro-{secrets.token_hex(3)}.test"
    rc, out, err, _ = run_as(acc, gid, ro, "grant", "vm1", host, "--for", "10m")
    assert rc != 0 and out == ""
    assert "this socket is read-only: grant" in err, err
    for args in (("reload",), ("revoke", "1"), ("deny", "1"), ("approve", "1")):
        rc, _, err, _ = run_as(acc, gid, ro, *args)
        assert rc != 0 and "this socket is read-only" in err, (args, err)
    assert host not in as_root(acc, "grants")            # no grant was made
    assert not [e for e in events(acc) if e.get("host") == host]


def test_uid_in_no_group_cannot_connect(acc):
    for sock in (acc.acc["ro"], acc.acc["rw"]):
        rc, out, err, _ = run_as(acc, NOBODY, sock, "status")
        assert rc != 0 and out == "" and "permission denied" in err, err
    # and a member of the read-only group is not one of the read-write one
    rc, _, err, _ = run_as(acc, acc.acc["ro_gid"], acc.acc["rw"], "status")
    assert rc != 0 and "permission denied" in err, err


def test_grant_event_and_grant_name_their_caller(acc):
    host = f"who-{secrets.token_hex(3)}.test"
    rc, out, err, pid = run_as(acc, acc.acc["rw_gid"], acc.acc["rw"], "grant", "vm1", host,
                               "--for", "10m", "--reason", "whodid")
    assert rc == 0, err
    nobody = pwd.getpwuid(NOBODY).pw_name
    ev = wait_until(lambda: [e for e in events(acc)
                             if e.get("event") == "grant" and e.get("host") == host],
                    what="the grant event")
    assert ev[0]["uid"] == NOBODY and ev[0]["pid"] == pid and ev[0]["user"] == nobody, ev
    listed = [g for g in json.loads(as_root(acc, "grants", "--json"))["grants"]
              if g["host"] == host]
    assert listed and listed[0]["uid"] == NOBODY and listed[0]["user"] == nobody, listed
    line = [ln for ln in as_root(acc, "grants").splitlines() if host in ln]
    assert line and f" {nobody} " in line[0], line
    # the revoke names root, who made it; the grant's maker stays who it was
    as_root(acc, "revoke", str(listed[0]["id"]))
    rev = wait_until(lambda: [e for e in events(acc)
                              if e.get("event") == "grant_revoked" and e.get("host") == host],
                     what="the revoke event")
    assert rev[0]["uid"] == 0 and rev[0]["user"] == pwd.getpwuid(0).pw_name, rev
