#!/usr/bin/env bash
# The README's test command: install what is missing, build warning-free, run every test
# (unit, corpus replays under ASan/UBSan, differential tests against tshark and ldns, the
# lab, the VMs, the appliance...), then print one closing line "N passed, N failed".
#
# Strict on purpose: it needs root and DPDK (the lab and the daemon are most of what is
# tested), a skipped case or a suite that runs none fails the command (tests/ng_strict.py,
# and meson's SKIP counts as failed), and it runs with the folder CI keeps beside every clone
# ($shared below) hidden in a private mount namespace: the repository alone must be enough.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NAMEGATE_BUILD:-build}
shared=$(dirname "$PWD")/shared

if [ "$(id -u)" -ne 0 ]; then
	echo "run.sh: the tests need root (network namespaces, DPDK's EAL, nftables, qemu)" >&2
	exit 1
fi
if [ -z "${NG_SHARED_HIDDEN:-}" ]; then
	bash tests/install-deps.sh
	# an empty, read-only file system over $shared, seen by this run's processes only
	exec unshare --mount --propagation private env NG_SHARED_HIDDEN=1 bash -c '
		if [ -e "$1" ]; then
			mount -t tmpfs -o ro,size=4k,mode=0555 ng-shared-hidden "$1"
		fi
		shift
		exec bash tests/run.sh "$@"' hide "$shared" "$@"
fi
if [ -e "$shared" ] && [ -n "$(ls -A "$shared")" ]; then
	echo "run.sh: $shared could not be hidden" >&2
	exit 1
fi

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" -Dwerror=true -Dtests=enabled -Ddataplane=enabled >/dev/null
fi
meson compile -C "$build"

cases=$PWD/$build/meson-logs/cases.jsonl
: >"$cases"
export NG_CASES_LOG=$cases
export PYTHONPATH=$PWD/tests${PYTHONPATH:+:$PYTHONPATH} PYTEST_ADDOPTS="-p ng_strict"

status=0
meson test -C "$build" --no-rebuild --print-errorlogs "$@" || status=$?

# meson's own summary is "Ok: N / Fail: N"; CI reads the plain line below. A program that
# skipped (exit 77) counts as failed: nothing here may skip.
/usr/bin/python3 - "$build/meson-logs/testlog.json" "$cases" <<'PY' || status=1
import json, sys
passed = failed = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["result"] in ("OK", "EXPECTEDFAIL"):
        passed += 1
    else:
        failed += 1
        if r["result"] == "SKIP":
            print(f"run.sh: {r['name']} skipped: counted as failed")
runs = [json.loads(line) for line in open(sys.argv[2])]
ran = sum(r["passed"] + r["failed"] + r["error"] for r in runs)
daemon = sum(r["daemon"] for r in runs)
through = ", ".join(f"{r['suite']} {r['daemon']} of {r['passed'] + r['failed'] + r['error']}"
                    for r in runs if r["daemon"])
print(f"pytest cases: {ran} in {len(runs)} suites, {daemon} of them through the real daemon "
      f"({through})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
exit "$status"
