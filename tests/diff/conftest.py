"""tests/diff's inputs are checked before anything is collected: a missing capture fails
the run in one line instead of a reader's traceback."""
import pytest

import oracles


def pytest_sessionstart(session):
    missing = oracles.missing_input()
    if missing is not None:
        pytest.exit(missing, returncode=1)
