#!/usr/bin/env bash
# The README's demo command: build namegate, then run it on its built-in lab (agent VMs as
# network namespaces, a fake internet with a real resolver and HTTPS servers), show what
# each VM's requests got and why, print the per-VM counters, and clean up. It says what it
# is doing at each step, and while it builds, how far it is and about how long is left.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NAMEGATE_BUILD:-build}

say() { printf 'demo: %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: the lab needs root (network namespaces, AF_PACKET)" >&2
	exit 1
fi

say "checking the Debian packages it needs (a fresh machine installs them: a few minutes)"
bash tests/install-deps.sh

# Only what the demo runs: the daemon and its CLI, not the test programs.
targets=(dataplane/namegate control/namegatectl)
if [ ! -f "$build/build.ninja" ]; then
	say "configuring the build in $build"
	meson setup "$build" >/dev/null
fi

# ninja prints "[n/total] ..." per step: one line every few seconds with the rate so far.
progress() {
	local start=$SECONDS last=-10 line n total elapsed
	while IFS= read -r line; do
		if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
			n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} elapsed=$((SECONDS - start))
			if ((elapsed - last >= 5 || n == total)); then
				last=$elapsed
				say "building: step $n of $total, ${elapsed}s so far, about" \
					"$((elapsed * (total - n) / n))s left"
			fi
		elif [[ $line == *error* || $line == FAILED* ]]; then
			printf '%s\n' "$line" >&2
		fi
	done
}
say "building namegate and namegatectl (on 2 cores: about 1 to 2 minutes the first time)"
meson compile -C "$build" "${targets[@]}" 2>&1 | progress
say "built in $build: $("$build/dataplane/namegate" --version)"

say "starting the lab: 2 agent VMs, a resolver and HTTPS servers, namegate between them"
exec /usr/bin/python3 tests/e2e/lab.py demo --mode namegate \
	--namegate "$(realpath "$build")/dataplane/namegate -c {config}"
