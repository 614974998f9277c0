#!/usr/bin/env bash
# build.sh [OUTDIR]: builds the namegate appliance disk image.
#   OUTDIR/namegate-appliance.raw    GPT disk, UEFI (systemd-boot), boots under OVMF
#   OUTDIR/namegate-appliance.qcow2  the same, compressed
#   OUTDIR/deb/namegate_*.deb        namegate's Debian package, which the image installs
# Default OUTDIR: /var/tmp/namegate-appliance. Needs root (debootstrap, chroot) on a
# Debian 12 host: namegate is compiled here against the host's DPDK 22.11 and runs against
# the image's, which is the same release. Network: the Debian mirror only
# (NAMEGATE_MIRROR, default http://deb.debian.org/debian).
# The Debian tree is cached in OUTDIR/base; a rebuild after a change to namegate or to the
# files here takes a minute or two.
set -euo pipefail

out=${1:-/var/tmp/namegate-appliance}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

[ "$(id -u)" -eq 0 ] || { echo "build.sh: run as root (debootstrap, chroot)" >&2; exit 1; }
. /etc/os-release
[ "${VERSION_ID:-}" = 12 ] || echo "build.sh: warning: not Debian 12; the image's DPDK may not match the one namegate is built against" >&2
# build-deb.sh checks its own tools
for tool in debootstrap mkfs.vfat mcopy mkfs.ext4 sfdisk qemu-img; do
	command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing (bash tests/install-deps.sh)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

step() { printf '== %s (%ds)\n' "$*" "$SECONDS"; }

step "namegate: its Debian package in $out/deb"
"$src/vm-images/deb/build-deb.sh" "$out/deb"
# what the recipe made before it installed the package: a build and a meson install tree
rm -rf "$out/build" "$out/destdir"

step "Debian base tree"
"$here/rootfs.sh" "$out"

# The root partition's GPT UUID ties the disk (disk.sh), fstab and the kernel command line
# (configure.sh, disk.sh) together; a new one per build.
partuuid=$(cat /proc/sys/kernel/random/uuid)

step "root file system"
"$here/configure.sh" "$out" "$partuuid"

step "disk image"
"$here/disk.sh" "$out" "$partuuid"
qemu-img convert -c -O qcow2 "$out/namegate-appliance.raw" "$out/namegate-appliance.qcow2"

step "done"
for f in "$out"/namegate-appliance.{raw,qcow2}; do
	printf '%s: %s apparent, %s on disk\n' "$f" \
		"$(du -h --apparent-size "$f" | cut -f1)" "$(du -h "$f" | cut -f1)"
done
