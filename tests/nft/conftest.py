"""The nft test waits the way the e2e lab does: tests/e2e's helpers go on the path."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
