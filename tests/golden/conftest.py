"""pytest setup for the golden verdict test."""
import signal
import sys

sys.dont_write_bytecode = True      # no __pycache__ in the source tree


def pytest_configure(config):
    # meson's timeout stops a test with SIGTERM: unwind like Ctrl-C, so the fixture that
    # owns the daemon, its FIFOs and its files still cleans up.
    def _interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, _interrupt)
