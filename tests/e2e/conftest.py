"""Fixtures for the e2e tests: labs that are always torn down, whatever happens.

Environment:
  NAMEGATE_LAB_MODE   bridge (default) or namegate: what stands between the bridges for
                      the `lab` fixture
  NAMEGATE_BIN        the namegate binary (namegate mode); started as `BIN -c CONFIG`
  NAMEGATE_LAB_LOGS   a directory to copy each run's logs to at teardown
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lab as labmod  # noqa: E402
# pytest finds hooks by name in this module: the ones every lab suite shares
from lab_pytest import (pytest_collection_modifyitems, pytest_configure,  # noqa: E402,F401
                        pytest_sessionstart)


def _log(msg):
    print(f"e2e: {msg}", file=sys.stderr)


def namegate_cmd():
    binary = os.environ.get("NAMEGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip(f"NAMEGATE_LAB_MODE=namegate needs NAMEGATE_BIN (got {binary!r})")
    return [binary, "-c", "{config}"]


def _start(request, **kw):
    new = labmod.Lab(log=_log, **kw)
    request.addfinalizer(new.teardown)     # registered first: runs even if setup fails
    new.setup()
    return new


@pytest.fixture(scope="module")
def lab(request):
    """The lab for dataplane tests: namegate between the bridges when NAMEGATE_LAB_MODE is
    namegate, otherwise a plain bridge. One per test module, so state (bindings, flows)
    does not leak from one module's tests into another's."""
    mode = os.environ.get("NAMEGATE_LAB_MODE", "bridge")
    if mode == "namegate":
        return _start(request, mode="namegate", namegate_cmd=namegate_cmd())
    return _start(request, mode=mode)


@pytest.fixture(scope="module")
def bridge_lab(request):
    """Always a plain bridge: for tests of the lab itself."""
    return _start(request, mode="bridge")


@pytest.fixture
def make_lab(request):
    """Factory for extra labs in one test; each is torn down at the test's end."""
    def make(**kw):
        return _start(request, **kw)
    return make
