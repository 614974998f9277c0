#!/usr/bin/env bash
# The README's demo command: build namegate, then run it on its built-in lab (agent VMs as
# network namespaces, a fake internet with a real resolver and HTTPS servers), show what
# each VM's requests got and why, print the per-VM counters, and clean up.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NAMEGATE_BUILD:-build}

bash tests/install-deps.sh
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
meson compile -C "$build" >/dev/null
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: the lab needs root (network namespaces, AF_PACKET)" >&2
	exit 1
fi
exec /usr/bin/python3 tests/e2e/lab.py demo --mode namegate \
	--namegate "$PWD/$build/dataplane/namegate -c {config}"
