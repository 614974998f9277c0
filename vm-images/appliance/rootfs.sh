#!/usr/bin/env bash
# rootfs.sh OUTDIR: makes OUTDIR/base, a Debian 12 tree with every package the appliance
# runs, namegate's Depends among them, and nothing of namegate yet. It is the slow step
# (minutes, network), so its result is kept and reused while the package list below and the
# mirror stay the same; configure.sh works on a copy of it.
set -euo pipefail

out=${1:?usage: rootfs.sh OUTDIR}
mirror=${NAMEGATE_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
here=$(cd "$(dirname "$0")" && pwd)
. "$here/chroot.sh"

# Installed with apt --no-install-recommends, so each one is here for a reason.
packages=(
	# boot: systemd as init, the EFI loader, and Debian's kernel for VMs (a quarter of the
	# generic one's size, with virtio, uio_pci_generic, vfio-pci, tun, bridge and nftables);
	# its initramfs finds the root by PARTUUID
	systemd-sysv udev dbus linux-image-cloud-amd64 initramfs-tools systemd-boot-efi
	# DPDK: dpdk-devbind.py/dpdk-hugepages.py (and python3), the PCI bus, the virtio PMD for
	# the two NICs, the TAP PMD for the exception path, the ring mempool every port needs
	dpdk librte-bus-pci23 librte-net-virtio23 librte-net-tap23 librte-mempool-ring23
	# the rest of namegate's package's Depends (dpkg -i in configure.sh refuses the package
	# while one is missing): its libraries; namegate-dump's libpcap
	libmnl0 libnftnl11 libldns3 libyaml-0-2 libmicrohttpd12 libjson-c5 libcurl4 libssl3 libnuma1
	libsodium23
	libsystemd0 libpcap0.8
	# the operator's tools: nft for the slow-path table, ip for its bridge, an editor
	nftables iproute2 kmod pciutils procps ethtool less vim-tiny
)

stamp_want=$(printf '%s\n' "$mirror" "$suite" "${packages[@]}" | sha256sum | cut -c1-16)
if [ -f "$out/base/.namegate-base" ] && [ "$(cat "$out/base/.namegate-base")" = "$stamp_want" ]; then
	echo "rootfs: reusing $out/base ($stamp_want)"
	exit 0
fi

mkdir -p "$out/cache/debs"
rm -rf "$out/base.tmp"
trap 'chroot_unmount "$out/base.tmp"' EXIT

echo "rootfs: debootstrap $suite from $mirror"
# minbase keeps the tree small; the debs are cached so a changed package list only fetches
# what is new.
log=$out/rootfs.log
fail() { echo "rootfs: $1 failed; the end of $log:" >&2; tail -n 30 "$log" >&2; exit 1; }
debootstrap --variant=minbase --cache-dir="$out/cache/debs" "$suite" "$out/base.tmp" "$mirror" \
	>"$log" 2>&1 || fail debootstrap

# debootstrap knows only the release itself; a gateway wants the point and security updates.
cat >"$out/base.tmp/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
EOF

chroot_mount "$out/base.tmp"
# no service may start inside the build host while packages are installed
printf '#!/bin/sh\nexit 101\n' >"$out/base.tmp/usr/sbin/policy-rc.d"
chmod 755 "$out/base.tmp/usr/sbin/policy-rc.d"
echo "rootfs: installing ${#packages[@]} packages"
chroot "$out/base.tmp" env DEBIAN_FRONTEND=noninteractive sh -ec '
	apt-get -qq update
	apt-get -qq -y dist-upgrade
	apt-get -qq -y --no-install-recommends install "$@"
	apt-get -qq clean
	rm -rf /var/lib/apt/lists/*
' sh "${packages[@]}" >>"$log" 2>&1 || fail "package installation"
rm -f "$out/base.tmp/usr/sbin/policy-rc.d"
chroot_unmount "$out/base.tmp"
trap - EXIT

echo "$stamp_want" >"$out/base.tmp/.namegate-base"
rm -rf "$out/base"
mv "$out/base.tmp" "$out/base"
echo "rootfs: $out/base ready"
