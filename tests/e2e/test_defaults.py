"""The documented defaults start: a configuration that sets only the two ports, the
policies and the VMs (everything else, EAL's arguments and memory included, left to
namegate) starts the real daemon in the lab and serves it, with the tables at their
default sizes."""
import copy
import os
import types

import pytest

import lab as labmod
import lab_namegate
from lab_net import wait_until

SOCKET = "/run/namegate/namegate.sock"      # the default control socket
EVENTS = "/var/log/namegate/events.jsonl"   # the default event log


def _binary():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("NAMEGATE_BIN is not set to a built namegate")
    return binary


def _only_ports_policies_vms():
    """Overrides that remove every key the lab's file sets but the ports (its own
    interfaces), the policies and the VMs."""
    shape = types.SimpleNamespace(tmpdir="/", gw_vm_if="v", gw_up_if="u", prefix="p", vms=[])
    full = lab_namegate.build_config(shape)
    gone = {k: None for k in full if k not in ("dataplane", "policies", "vms")}
    gone["dataplane"] = {k: None for k in full["dataplane"]
                         if k not in ("vm_port", "uplink_port")}
    return gone


@pytest.fixture(scope="module")
def minimal(request):
    if os.path.exists(SOCKET):
        pytest.fail(f"{SOCKET} exists: another namegate runs with the default socket here")
    had_events = os.path.exists(EVENTS)
    had_dirs = {d: os.path.isdir(d) for d in (os.path.dirname(SOCKET), os.path.dirname(EVENTS))}
    lab = labmod.Lab(mode="namegate", policies=copy.deepcopy(lab_namegate.DEFAULT_POLICIES),
                     namegate_cmd=[_binary(), "-c", "{config}"], ready_timeout=90.0,
                     config=_only_ports_policies_vms())

    def cleanup():
        lab.teardown()
        if not had_events and os.path.exists(EVENTS):
            os.unlink(EVENTS)
        for d, had in had_dirs.items():     # the directories namegate made for them
            if not had and os.path.isdir(d) and not os.listdir(d):
                os.rmdir(d)
    request.addfinalizer(cleanup)
    return lab.setup()


def test_the_file_sets_only_ports_policies_and_vms(minimal):
    text = open(minimal.config_path).read()
    top = {line.split(":")[0] for line in text.splitlines()
           if line and not line.startswith((" ", "-", "#"))}
    assert top == {"dataplane", "policies", "vms"}, text
    assert "eal" not in text and "max_flows" not in text


def test_it_starts_with_eal_sized_from_its_tables(minimal):
    # the workers forward (the lab's probe passes) a moment before the main thread says so
    wait_until(lambda: "namegate: ready: 2 VMs" in minimal.namegate_output()[0], 10,
               "the daemon's ready line")
    cp = minimal.sw_exec([_binary(), "-c", minimal.config_path, "--check"])
    assert "(derived from the host and ports, -m sized from the tables)" in cp.stdout
    # the default tables: a million flows and bindings
    assert "max_flows" not in cp.stderr and cp.returncode == 0


def test_it_serves_allowed_and_blocked(minimal):
    ok = minimal.curl("vm1", "https://pypi.org/")
    assert ok.ok and ok.json()["server"] == "pypi", ok.stderr
    blocked = minimal.curl("vm1", "https://evil.test/")
    assert not blocked.ok


def test_defaults_for_socket_metrics_and_events(minimal):
    ctl = os.environ.get("NAMEGATECTL_BIN", "namegatectl")
    cp = minimal.sw_exec([ctl, "-s", SOCKET, "status"])
    assert cp.returncode == 0 and "generation" in cp.stdout, cp.stdout + cp.stderr
    text = minimal.metrics()
    assert text and 'namegate_build_info{version="' in text
    assert "namegate_config_last_reload_successful 1" in text
    assert '"event":"start"' in open(EVENTS).read()
