"""Fixtures for the VM suite: real agent VMs (qemu, vm-images/agent) in the e2e lab.

Environment (set by tests/vm/meson.build):
  NAMEGATE_BIN, NAMEGATECTL_BIN   the binaries under test
  AGENT_VM_DIR                    where vm-images/agent/build.sh puts the image
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "vm-images", "agent"))

# pytest finds hooks by name in this module: the ones every lab suite shares
from lab_pytest import (pytest_collection_modifyitems, pytest_configure,  # noqa: E402,F401
                        pytest_sessionstart)
