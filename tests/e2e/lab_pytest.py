"""pytest hooks shared by every suite that builds labs (tests/e2e, tests/vm): their
conftest.py files import these names, which is how pytest finds them."""

import os
import signal
import sys

import pytest

import lab_net


def pytest_configure(config):
    # meson's timeout (and a CI runner) stops a test with SIGTERM: turn it into the same
    # unwinding as Ctrl-C, so pytest runs every fixture finalizer.
    def _interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, _interrupt)


def pytest_sessionstart(session):
    if os.geteuid() == 0:
        # what an earlier run killed with SIGKILL left behind (its owner is gone)
        lab_net.cleanup_stale(log=lambda m: print(f"e2e: {m}", file=sys.stderr))


def pytest_collection_modifyitems(config, items):
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="e2e lab needs root (network namespaces)")
        for item in items:
            item.add_marker(skip)
