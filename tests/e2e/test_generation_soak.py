"""Generations under load (issue 23): every grant, revoke and expiry publishes a
generation whose names table holds every name the VMs taught the daemon. Publishing never
fails for lack of room (the soak: two VMs teach 8,000 names while the operator makes 400
grants and revokes, ten times, each start drawing a fresh hash secret), and should room
ever run out anyway, a closing is put in force regardless: a revoke never waits on the
room an opening needs (NAMEGATE_TEST_GEN_NAMES, a test build's knob, caps the table)."""
import contextlib
import copy
import json
import os
import subprocess

import lab as labmod
import lab_namegate
import lab_services as svc
from lab_net import wait_until
from test_dataplane import _binary
from test_reload import _HOLDER

RUNS = 10
NAMES_PER_VM = 4000
PAIRS = 200             # a grant and its revoke: 400 changes a run

# Resolves distinct names n<i>.<argv[1]>.wild.test over UDP, as many more as each line
# on stdin says, up to WINDOW queries in flight, asking again after a second without an
# answer; after each line prints how many were answered with the zone's address so far,
# and how many queries were sent again.
_RESOLVE = r"""
import select, socket, struct, sys, time
tag, resolver, want = sys.argv[1], sys.argv[2], socket.inet_aton(sys.argv[3])
WINDOW = 64

def query(i):
    q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0)
    for label in f"n{i}.{tag}.wild.test".split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((resolver, 53))
s.setblocking(False)
ok, again, nxt = set(), 0, 0
print("ready", flush=True)
for line in sys.stdin:
    todo, pending = list(range(nxt, nxt + int(line))), {}
    nxt += int(line)
    deadline = time.monotonic() + 60
    while (todo or pending) and time.monotonic() < deadline:
        now = time.monotonic()
        while todo and len(pending) < WINDOW:
            i = todo.pop()
            s.send(query(i))
            pending[i] = now
        for i, t in list(pending.items()):
            if now - t > 1.0:
                s.send(query(i))
                pending[i] = now
                again += 1
        if not select.select([s], [], [], 0.05)[0]:
            continue
        while True:
            try:
                m = s.recv(4096)
            except BlockingIOError:
                break
            i, flags, _, an = struct.unpack(">HHHH", m[:8])
            if i in pending and flags & 0xf == 0 and an >= 1 and m[-4:] == want:
                del pending[i]
                ok.add(i)
    print(len(ok), again, flush=True)
"""


def _policies():
    p = copy.deepcopy(lab_namegate.DEFAULT_POLICIES)
    for name in ("python", "github"):
        p[name]["allow"].append("*." + svc.WILD_ZONE)
    return p


def _lab(request, env=None):
    lab = labmod.Lab(mode="namegate", vms=labmod.default_vms(2), policies=_policies(),
                     namegate_cmd=[_binary(), "-c", "{config}"],
                     # one suffix, thousands of names: the name budget would refuse them
                     config={"dns": {"max_names_per_suffix": {"count": 0}}})
    lab.namegate_env = env or {}
    request.addfinalizer(lab.teardown)
    return lab.setup()


def ctl(lab, *args):
    """namegatectl from here: its socket is a path, reached without entering a namespace
    (a thousand a run: the saving counts)."""
    sock = lab_namegate.build_config(lab, lab.policies, lab.config_overrides)["control_socket"]
    cp = subprocess.run([os.environ.get("NAMEGATECTL_BIN", "namegatectl"), "-s", sock, *args],
                        capture_output=True, text=True, timeout=30, env=labmod.CLEAN_ENV)
    return cp.returncode, cp.stdout, cp.stderr


class Teacher:
    """Two VMs teaching the daemon fresh names, as many more at a time as asked."""

    def __init__(self, lab, tag):
        self.vms = [lab.background(vm, _RESOLVE, (f"{tag}{vm}", svc.RESOLVER, svc.WILD_ADDR))
                    for vm in ("vm1", "vm2")]
        self.taught = 0

    def __enter__(self):
        for r in self.vms:
            r.__enter__()
            assert r.line().strip() == "ready", r.stderr()
        return self

    def __exit__(self, *exc):
        for r in self.vms:
            r.__exit__(*exc)

    def more(self, per_vm):
        """Each VM resolves per_vm more names; every one must be answered."""
        for r in self.vms:
            r.send(str(per_vm))
        self.taught += per_vm
        for r in self.vms:
            line = r.line(timeout=90)
            assert line.split()[:1] == [str(self.taught)], (line, r.stderr())


def grant_revoke(lab, where):
    """A grant of evil.test to vm1, revoked at once: both must be made (exit 0)."""
    rc, out, err = ctl(lab, "grant", "vm1", "evil.test", "--for", "10m", "--json")
    assert rc == 0, (where, out, err)
    gid = json.loads(out)["id"]
    rc, out, err = ctl(lab, "revoke", str(gid))
    assert rc == 0 and f"grant {gid} revoked" in out, (where, out, err)


def evil_refused(lab):
    """A new connection through the binding vm1 learned for evil.test gets nowhere."""
    return not lab.curl("vm1", "https://evil.test/", resolve="evil.test:443:203.0.113.20",
                        timeout=3).ok


def test_grants_and_revokes_while_two_vms_teach_8000_names_ten_secrets(request):
    """Each grant and each revoke publishes a generation holding every name taught so far:
    the names come between them, so the tables are built at 400 counts from 40 to 8,000,
    past the counts just under a power of two that a table sized exactly filled whole."""
    lab = _lab(request)
    for run in range(RUNS):
        if run > 0:
            lab.stop_namegate()
            lab.start_namegate()        # a new process: a new hash secret
        with Teacher(lab, f"r{run}") as teacher:
            for _ in range(PAIRS):
                teacher.more(NAMES_PER_VM // PAIRS)
                grant_revoke(lab, f"run {run}, {teacher.taught} names a VM")
        # in force: a grant made now opens evil.test for vm1, its revoke shuts it
        rc, out, err = ctl(lab, "grant", "vm1", "evil.test", "--for", "10m", "--json")
        assert rc == 0, err
        assert lab.curl("vm1", "https://evil.test/").ok
        rc, out, err = ctl(lab, "revoke", str(json.loads(out)["id"]))
        assert rc == 0, err
        assert evil_refused(lab)
        rc, out, err = ctl(lab, "grants", "--json")
        assert rc == 0 and json.loads(out)["grants"] == [], (out, err)
        said = lab.namegate_output()[1]
        assert "name table" not in said and "stays in force" not in said, said[-2000:]


@contextlib.contextmanager
def held_past_room(request, duration):
    """A lab whose generations hold at most 64 names: vm1 is granted evil.test for
    duration, holds a connection to it open, then the VMs teach 200 names, so no
    generation from here on has room for all. Yields (lab, grant id, the holder); after,
    evil.test refuses new connections and the daemon said it left names out."""
    lab = _lab(request, env={"NAMEGATE_TEST_GEN_NAMES": "64"})
    rc, out, err = ctl(lab, "grant", "vm1", "evil.test", "--for", duration, "--json")
    assert rc == 0, err
    with lab.background("vm1", _HOLDER, (lab.ca_path, "evil.test")) as holder:
        assert holder.line().strip() == "ready", holder.stderr()
        holder.send()
        assert holder.line().split() == ["evil.test=200"]
        with Teacher(lab, "fit") as teacher:
            teacher.more(100)
        yield lab, json.loads(out)["id"], holder
    assert evil_refused(lab)
    said = lab.namegate_output()[1]
    assert "in force without" in said, said[-2000:]


def cut(holder):
    holder.send()
    return holder.line().split() == ["evil.test=cut"]


def test_revoke_in_force_when_the_names_no_longer_fit(request):
    """The table of the revoke's generation cannot hold the names taught since the
    grant: the revoke still cuts what the grant opened and refuses new connections."""
    with held_past_room(request, "10m") as (lab, gid, holder):
        rc, out, err = ctl(lab, "revoke", str(gid))
        assert rc == 0 and f"grant {gid} revoked" in out, (out, err)
        assert cut(holder)


def test_expiry_in_force_when_the_names_no_longer_fit(request):
    """As the revoke: a grant that runs out while its generation's table cannot hold the
    names taught since still ends, and what it let open is cut."""
    with held_past_room(request, "8s") as (lab, gid, holder):
        wait_until(lambda: json.loads(ctl(lab, "grants", "--json")[1])["grants"] == [],
                   timeout=20, what="the grant to run out")
        wait_until(lambda: cut(holder), timeout=10,
                   what="the expired grant's connection to be cut")
