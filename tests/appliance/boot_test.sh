#!/usr/bin/env bash
# Boots the appliance image (vm-images/appliance) under qemu with its two virtio NICs and
# checks from its serial console that it reaches the login prompt and that namegate.service
# is up with both NICs driven by DPDK's virtio PMD (the image prints that itself after boot:
# namegate-console-status.service); then logs in as root there (console_login.py).
#
# Skips (exit 77) when the image has not been built: vm-images/appliance/build.sh.
# NAMEGATE_APPLIANCE_IMAGE: the image (default /var/tmp/namegate-appliance/...qcow2)
# NAMEGATE_ACCEL: qemu accelerators to try, default "tcg" (about 2 minutes; "kvm" where
#   nested KVM works takes seconds)
# NAMEGATE_BOOT_TIMEOUT: seconds to wait for the status report, default 480
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
image=${NAMEGATE_APPLIANCE_IMAGE:-/var/tmp/namegate-appliance/namegate-appliance.qcow2}
limit=${NAMEGATE_BOOT_TIMEOUT:-480}
export NAMEGATE_ACCEL=${NAMEGATE_ACCEL:-tcg}

skip() { echo "SKIP: $*"; exit 77; }
[ -f "$image" ] || skip "no appliance image at $image (build it with vm-images/appliance/build.sh)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
[ -r /usr/share/OVMF/OVMF_CODE.fd ] || skip "OVMF is not installed"

tmp=$(mktemp -d /tmp/namegate-appliance-test.XXXXXX)
cleanup() {
	local pid i
	if [ -s "$tmp/qemu.pid" ] && pid=$(cat "$tmp/qemu.pid") && kill "$pid" 2>/dev/null; then
		for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
console=$tmp/console.log

# -snapshot: the guest's writes go to a temporary overlay, the image stays as built.
# The NICs' backends are qemu's user network with restrict=on: nothing outside is reachable.
# The serial console is a socket (for console_login.py) that also logs to $console.
NAMEGATE_SERIAL=chardev:con "$src/vm-images/appliance/run-qemu.sh" "$image" \
	-chardev "socket,id=con,path=$tmp/console.sock,server=on,wait=off,logfile=$console" \
	-snapshot -daemonize -pidfile "$tmp/qemu.pid"
echo "booting $image (accel $NAMEGATE_ACCEL), console in $console"

start=$SECONDS
until grep -aq 'namegate-status: end' "$console" 2>/dev/null; do
	if ! kill -0 "$(cat "$tmp/qemu.pid")" 2>/dev/null; then
		echo "FAIL: qemu exited"; tail -n 40 "$console" 2>/dev/null; exit 1
	fi
	if [ $((SECONDS - start)) -ge "$limit" ]; then
		echo "FAIL: no status report within ${limit}s; the console's end:"; tail -n 40 "$console"; exit 1
	fi
	sleep 2
done
echo "status report after $((SECONDS - start))s"
# the serial console ends its lines with CR LF
tr -d '\r' <"$console" >"$tmp/console.txt"
console=$tmp/console.txt

failed=0
expect() { # expect DESCRIPTION EXTENDED-REGEX: one line of the console must match
	if grep -aEq "$2" "$console"; then
		echo "ok: $1"
	else
		echo "FAIL: $1 (no line matches /$2/)"; failed=1
	fi
}
expect "console login prompt" '^namegate login:'
expect "namegate.service is active" '^namegate-status: namegate.service: active$'
expect "namegate answers on its control socket" '^namegate-status: namegate [0-9.]+, pid [0-9]+'
for slot in 04 05; do
	dev="0000:00:$slot.0"
	expect "$dev is bound to a DPDK driver" "^namegate-status: $dev .*drv=(uio_pci_generic|vfio-pci)"
	expect "$dev is driven by the virtio PMD" "^namegate-status: EAL: Probe PCI driver: net_virtio .* device: $dev"
done
expect "both ports are open" '^namegate-status: namegate: ready: .*vm port 0000:00:04.0, uplink port 0000:00:05.0'
expect "hugepages are reserved" '^namegate-status: HugePages_Total: +[1-9]'
if [ $failed -ne 0 ]; then
	echo "the status report:"; grep -a '^namegate-status:' "$console"
	exit 1
fi
# the operator's way in: root on the console, first login with the shipped password
python3 "$src/tests/appliance/console_login.py" "$tmp/console.sock" "${NAMEGATE_ROOT_PASSWORD:-namegate}"
echo "PASS: appliance boots, runs namegate on its two virtio NICs, root logs in on the console ($((SECONDS - start))s)"
