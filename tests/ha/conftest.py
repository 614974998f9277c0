"""The HA lab's fixture, one lab per test file (ha_lab.py): started, then closed on
success and on failure alike."""
import os

import pytest

from ha_lab import HaLab


@pytest.fixture(scope="module")
def lab():
    lab = HaLab(os.environ["NAMEGATE_BUILD"], os.environ["NAMEGATE_SRC"])
    try:
        lab.start()
        yield lab
    finally:
        lab.close()
