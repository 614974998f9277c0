#!/usr/bin/env bash
# The README's test command: install what is missing, build warning-free, run every test
# (unit, corpus replays under ASan/UBSan, differential tests against tshark and ldns, and
# whatever later suites add), then print one closing line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NAMEGATE_BUILD:-build}

bash tests/install-deps.sh
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" -Dwerror=true -Dtests=enabled >/dev/null
fi
meson compile -C "$build"

status=0
meson test -C "$build" --no-rebuild --print-errorlogs "$@" || status=$?

# meson's own summary is "Ok: N / Fail: N"; CI reads the plain line below.
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit "$status"
