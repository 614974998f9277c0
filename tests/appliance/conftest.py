"""The appliance suite runs in the e2e lab: its modules and hooks come from tests/e2e."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

# pytest finds hooks by name in this module: the ones every lab suite shares
from lab_pytest import (pytest_collection_modifyitems, pytest_configure,  # noqa: E402,F401
                        pytest_sessionstart)
