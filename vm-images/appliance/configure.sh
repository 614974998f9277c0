#!/usr/bin/env bash
# configure.sh OUTDIR ROOT_PARTUUID: turns a copy of OUTDIR/base into OUTDIR/rootfs, the
# appliance's root file system: namegate's Debian package (OUTDIR/deb/namegate_*.deb, made
# by build.sh with vm-images/deb/build-deb.sh), then the files under overlay/, accounts,
# fstab, and the units enabled. It checks that the binaries find every library and that
# the shipped configuration is valid, using the image's own namegate in a chroot.
set -euo pipefail

out=${1:?usage: configure.sh OUTDIR ROOT_PARTUUID}
partuuid=${2:?usage: configure.sh OUTDIR ROOT_PARTUUID}
here=$(cd "$(dirname "$0")" && pwd)
root=$out/rootfs

die() { echo "configure: $*" >&2; exit 1; }

# dpkg checks the package's Depends against the base tree (rootfs.sh installs them) and
# runs its postinst, which enables namegate.service; nothing starts in a chroot, where
# /run/systemd/system does not exist.
install_package() {
	local debs
	debs=("$out"/deb/namegate_*.deb)
	if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
		die "want one package in $out/deb, found: ${debs[*]}"
	fi
	cp "${debs[0]}" "$root/tmp/namegate.deb"
	chroot "$root" dpkg -i /tmp/namegate.deb >/dev/null ||
		die "dpkg -i ${debs[0]##*/} failed (a Depends missing from rootfs.sh's list?)"
	rm "$root/tmp/namegate.deb"
	systemctl -q --root="$root" is-enabled namegate.service ||
		die "the package's postinst did not enable namegate.service"
}

rm -rf "$root"
cp -a "$out/base" "$root"
rm -f "$root/.namegate-base"
install_package
# After the package, so the lab's namegate.yaml replaces its sample: dpkg keeps it as the
# operator's modified conffile. root owns every file in the image, whoever owns the checkout.
cp -a --no-preserve=ownership "$here/overlay/." "$root/"
install -D -m 644 "$here/README.md" "$root/usr/share/doc/namegate/README.md"

# The package's Depends come from dpkg-shlibdeps: ldd checks them against what runs.
missing=$(chroot "$root" ldd /usr/sbin/namegate /usr/bin/namegatectl /usr/bin/namegate-dump |
	grep 'not found' || true)
[ -z "$missing" ] || die "libraries missing though the package's Depends are met:
$missing"
chroot "$root" /usr/sbin/namegate -c /etc/namegate/namegate.yaml --check

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

# systemd-networkd configures the management NIC, if the appliance has one (10-mgmt.network);
# namegate.service was enabled by its package
systemctl -q --root="$root" enable namegate-console-status.service systemd-networkd.service

# Every appliance gets its own machine-id at first boot, not the build's.
: >"$root/etc/machine-id"
[ -L "$root/var/lib/dbus/machine-id" ] || rm -f "$root/var/lib/dbus/machine-id"
# Documentation an appliance operator never reads on the box; keeps the image smaller.
rm -rf "$root/usr/share/man" "$root/usr/share/info"
echo "configure: $root ready"
