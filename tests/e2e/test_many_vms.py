"""dataplane.max_vms through the real daemon: a gateway configured for 4,096 VMs (the lab's
two and idle ones that send nothing) starts and forwards for one of them, counted under its
own name; and with max_vms as small as the VMs it has, the slots of VMs a reload removes go
to the VMs a later reload adds, never before, and the new ones start from zero."""
import re

import lab as labmod
import lab_namegate
import ng_counters as nc
from lab_net import wait_until
from test_dataplane import _binary, _policies
from test_reload import reload_with

NVMS = 4096


def _idle(i, prefix="idle"):
    """A VM that sends nothing: no namespace, an address no capture has."""
    return {"name": f"{prefix}{i}", "mac": f"02:fe:00:{prefix == 'idle':02x}:{i >> 8:02x}:"
            f"{i & 0xff:02x}", "ipv4": f"10.{253 + (prefix == 'idle')}.{i >> 8}.{i & 0xff}",
            "policy": "python"}


def _start(request, max_vms, nidle):
    vms = labmod.default_vms(2)
    live = [lab_namegate._vm_entry(v) for v in vms]
    idle = [_idle(i) for i in range(len(vms), len(vms) + nidle)]
    lab = labmod.Lab(mode="namegate", vms=vms, policies=_policies(),
                     namegate_cmd=[_binary(), "-c", "{config}"],
                     config={"dataplane": {"max_vms": max_vms}, "vms": live + idle},
                     ready_timeout=90)
    request.addfinalizer(lab.teardown)
    lab.setup()
    return lab, live, idle


def test_4096_vms_start_and_forward(request):
    lab, _, _ = _start(request, NVMS, NVMS - 2)
    # the workers forward (the lab's probe passes) a moment before the main thread says so
    wait_until(lambda: f"ready: {NVMS} VMs" in lab.namegate_output()[0], 10,
               "the daemon's ready line")
    with nc.Delta(lab) as d:
        r = lab.curl("vm1", "https://pypi.org/")
    assert r.ok, r.stderr
    assert r.json()["server"] == "pypi" and r.json()["client"] == "10.77.0.11"
    assert d[nc.egress("vm1", "allowed")] >= 3
    assert d[nc.egress(f"idle{NVMS - 1}", "allowed")] == 0     # the last slot is there


def test_removed_vms_slots_go_to_new_ones(request):
    lab, live, idle = _start(request, 4, 2)
    fresh = [_idle(i, "fresh") for i in range(2)]
    # every slot taken: new VMs in place of the idle ones, in one reload, do not fit
    lab.config_overrides["vms"] = live + fresh
    said = reload_with(lab)
    assert "out of VM slots: 4 VMs, max_vms 4" in said and "stays in force" in said, said
    # removed first: their slots drain (an idle VM leaves nothing behind), then go out
    lab.config_overrides["vms"] = live
    said = reload_with(lab)
    assert "in force: 2 VMs" in said, said
    lab.config_overrides["vms"] = live + fresh

    def added():
        text = reload_with(lab)
        return None if "out of VM slots" in text else text
    said = wait_until(added, timeout=20, what="the removed VMs' slots to be free", step=1.0)
    assert "in force: 4 VMs" in said, said
    counters = nc.read(lab)
    # the new VMs count from zero, under their own names; the removed ones are gone
    assert counters[nc.egress("fresh0", "allowed")] == 0
    assert not any(re.search(r'vm="idle[23]"', k) for k in counters)
    # the lab's VMs kept their slots and still forward
    with nc.Delta(lab) as d:
        r = lab.curl("vm1", "https://pypi.org/")
    assert r.ok, r.stderr
    assert d[nc.egress("vm1", "allowed")] >= 3
    assert d[nc.egress("fresh0", "allowed")] == 0
