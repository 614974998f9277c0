"""Where the benchmarks' captures are: $TRAFFIC_DIR (meson points it at the build's
generated directory), else the default build directory's (tests/traffic makes them)."""
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TRAFFIC = os.environ.get("TRAFFIC_DIR") or os.path.join(ROOT, "build", "tests", "traffic")


def traffic_file(name):
    """TRAFFIC/name; when it is not there, exits with one line saying so."""
    path = os.path.join(TRAFFIC, name)
    if not os.path.isfile(path):
        sys.exit(f"{path}: missing; tests/traffic/gen_traffic.py makes it when the tests are "
                 "built (meson compile)")
    return path
