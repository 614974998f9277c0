#!/usr/bin/env bash
# configure.sh OUTDIR ROOT_PARTUUID: turns a copy of OUTDIR/base into OUTDIR/rootfs, the
# appliance's root file system: namegate (already installed into OUTDIR/destdir by
# build.sh), the files under overlay/, accounts, fstab, and the units enabled. It checks
# that the binaries find every library and that the shipped configuration is valid, using
# the image's own namegate in a chroot.
set -euo pipefail

out=${1:?usage: configure.sh OUTDIR ROOT_PARTUUID}
partuuid=${2:?usage: configure.sh OUTDIR ROOT_PARTUUID}
here=$(cd "$(dirname "$0")" && pwd)
root=$out/rootfs

rm -rf "$root"
cp -a "$out/base" "$root"
rm -f "$root/.namegate-base"
cp -a "$out/destdir/." "$root/"
# root owns every file in the image, whoever owns the checkout
cp -a --no-preserve=ownership "$here/overlay/." "$root/"
install -D -m 644 "$here/README.md" "$root/usr/share/doc/namegate/README.md"

missing=$(chroot "$root" ldd /usr/bin/namegate /usr/bin/namegatectl | grep 'not found' || true)
if [ -n "$missing" ]; then
	echo "configure: libraries missing from the image (add their packages to rootfs.sh):" >&2
	echo "$missing" >&2
	exit 1
fi
chroot "$root" namegate -c /etc/namegate/namegate.yaml --check

# The ESP holds the kernel command line (loader/entries/namegate.conf): mounted where an
# operator looks for it, and the boot goes on without it.
mkdir -p "$root/boot/efi"
cat >"$root/etc/fstab" <<FSTAB
PARTUUID=$partuuid / ext4 errors=remount-ro 0 1
PARTLABEL=namegate-esp /boot/efi vfat umask=0077,nofail 0 2
FSTAB
printf '127.0.0.1\tlocalhost\n127.0.1.1\tnamegate\n' >"$root/etc/hosts"

# The console password: "namegate" unless NAMEGATE_ROOT_PASSWORD says otherwise, expired so
# the first login must set the operator's own.
echo "root:${NAMEGATE_ROOT_PASSWORD:-namegate}" | chroot "$root" chpasswd
chroot "$root" passwd -q -e root

# systemd-networkd configures the management NIC, if the appliance has one (10-mgmt.network)
systemctl -q --root="$root" enable namegate.service namegate-console-status.service \
	systemd-networkd.service

# Every appliance gets its own machine-id at first boot, not the build's.
: >"$root/etc/machine-id"
[ -L "$root/var/lib/dbus/machine-id" ] || rm -f "$root/var/lib/dbus/machine-id"
# Documentation an appliance operator never reads on the box; keeps the image smaller.
rm -rf "$root/usr/share/man" "$root/usr/share/info"
echo "configure: $root ready"
