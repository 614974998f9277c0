#!/usr/bin/env bash
# build-deb.sh OUTDIR: builds namegate's Debian package from this source tree.
#   OUTDIR/build                             meson build directory (release, --prefix=/usr),
#                                            kept: the next run compiles only what changed
#   OUTDIR/pkg/debian/namegate               the package's tree (what dpkg-deb packs)
#   OUTDIR/namegate_VERSION-REV_ARCH.deb     the package (the only .deb left in OUTDIR)
# Needs the build's packages (tests/install-deps.sh) and dpkg-dev; not root: dpkg-deb
# gives every file to root itself. The version is meson's project version with the Debian
# revision NAMEGATE_DEB_REVISION (default 1); the maintainer is NAMEGATE_DEB_MAINTAINER.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${1:?usage: build-deb.sh OUTDIR}
revision=${NAMEGATE_DEB_REVISION:-1}
maintainer=${NAMEGATE_DEB_MAINTAINER:-namegate maintainers <namegate@example.org>}
umask 022

die() { echo "build-deb: $*" >&2; exit 1; }
for tool in meson dpkg-buildflags dpkg-shlibdeps dpkg-deb dpkg-architecture dpkg-query \
	python3 strip gzip; do
	command -v "$tool" >/dev/null || die "$tool is missing (bash tests/install-deps.sh)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$out/build
# dpkg-shlibdeps wants the binaries where a source package would put them: in
# debian/PACKAGE/ (with its DEBIAN/), beside a debian/control that names the source. This
# scratch layout gives it that and keeps the source tree free of a debian/ directory.
pkg=$out/pkg
stage=$pkg/debian/namegate
elfs=(usr/sbin/namegate usr/bin/namegatectl usr/bin/namegate-dump)

# Debian's hardening and reproducibility flags, as dpkg-buildpackage would export them
# from the source tree (its path becomes "." in debug info), but not its -O2 -g: the
# release build type chooses the optimisation (-O3: the fast path is the product), and the
# binaries are stripped anyway. meson takes the flags from the environment at setup.
setup() {
	cd "$src"
	eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CFLAGS_MAINT_STRIP='-O2 -g' \
		dpkg-buildflags --export=sh)"
	meson setup "$build" "$src" --prefix=/usr --buildtype=release \
		-Dtests=disabled -Ddataplane=enabled >/dev/null
}

compile() {
	[ -d "$build/meson-private" ] || (setup)
	meson compile -C "$build" >/dev/null
}

# The files as meson installs them, then what Debian wants done to them: binaries
# stripped the way dh_strip does it, man pages compressed, the license text replaced by
# copyright (which points at common-licenses), and no file writable but by root.
install_tree() {
	rm -rf "$pkg"
	meson install -C "$build" --no-rebuild --destdir "$stage" --quiet >/dev/null
	local f
	for f in "${elfs[@]}"; do
		[ -f "$stage/$f" ] || die "meson install made no /$f"
		strip --remove-section=.comment --remove-section=.note "$stage/$f"
	done
	find "$stage/usr/share/man" -type f -exec gzip -9n {} +
	rm "$stage/usr/share/doc/namegate/LICENSE"
	# where dpkg-shlibdeps looks for the root of the package a binary belongs to
	mkdir "$stage/DEBIAN"
	find "$stage" -type d -exec chmod 755 {} +
	find "$stage" -type f -exec chmod go-w {} +
}

project_version() {
	meson introspect --projectinfo "$build" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])'
}

# Changelog dates and the copyright year come from the last commit, so two builds of the
# same tree make the same package.
source_date() {
	git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s
}

write_docs() {
	local doc=$stage/usr/share/doc/namegate date
	date=$(date -R -u -d "@$(source_date)")
	cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: namegate

Files: *
Copyright: $(date -u -d "@$(source_date)" +%Y) the namegate authors
License: GPL-2+

License: GPL-2+
 This program is free software; you can redistribute it and/or modify it under
 the terms of the GNU General Public License as published by the Free Software
 Foundation; either version 2 of the License, or (at your option) any later
 version.
 .
 This program is distributed in the hope that it will be useful, but WITHOUT ANY
 WARRANTY; without even the implied warranty of MERCHANTABILITY or FITNESS FOR A
 PARTICULAR PURPOSE. See the GNU General Public License for more details.
 .
 On Debian systems, the complete text of the GNU General Public License version 2
 can be found in /usr/share/common-licenses/GPL-2.
EOF
	cat <<EOF | gzip -9n >"$doc/changelog.Debian.gz"
namegate ($version) unstable; urgency=medium

  * Built from the namegate source tree by vm-images/deb/build-deb.sh.

 -- $maintainer  $date
EOF
	chmod 644 "$doc/copyright" "$doc/changelog.Debian.gz"
}

shlib_depends() {
	local f args=()
	printf 'Source: namegate\n\nPackage: namegate\nArchitecture: any\n' \
		>"$pkg/debian/control"
	for f in "${elfs[@]}"; do args+=(-e"debian/namegate/$f"); done
	(cd "$pkg" && dpkg-shlibdeps -O "${args[@]}") | sed -n 's/^shlibs:Depends=//p'
}

# The package that ships a DPDK plugin of the ABI namegate links: EAL loads the plugins
# (drivers, mempools) from its plugin directory at run time, so no ELF names them.
dpdk_plugin_package() {
	local abi=$1 name=$2 lib
	lib=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/librte_$name.so.$abi
	dpkg-query -S "$lib" 2>/dev/null | sed -n '1s/:.*//p' | grep . ||
		die "no package holds $lib (the DPDK plugin $name)"
}

dpdk_abi() {
	readelf -d "$stage/usr/sbin/namegate" |
		sed -n 's/.*Shared library: \[librte_eal\.so\.\([0-9]*\)\].*/\1/p'
}

# Depends: the libraries the binaries link, plus the plugins every start loads: the
# exception path's TAPs (net_tap on the vdev bus) and the mbuf pool's ring mempool.
# Recommends: the PCI bus for NIC ports and AF_PACKET for the sample's interface ports;
# the NIC's own driver is the site's choice.
write_control() {
	local abi depends recommends p size
	abi=$(dpdk_abi)
	[ -n "$abi" ] || die "namegate links no librte_eal"
	depends=$(shlib_depends)
	for p in net_tap bus_vdev mempool_ring; do
		depends+=", $(dpdk_plugin_package "$abi" "$p")"
	done
	recommends=$(dpdk_plugin_package "$abi" bus_pci)
	recommends+=", $(dpdk_plugin_package "$abi" net_af_packet), dpdk"
	size=$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)
	sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$(dpkg --print-architecture)|" \
		-e "s|@MAINTAINER@|$maintainer|" -e "s|@INSTALLED_SIZE@|$size|" \
		-e "s|@DEPENDS@|$depends|" -e "s|@RECOMMENDS@|$recommends|" \
		"$here/control" >"$stage/DEBIAN/control"
	if grep -q "@[A-Z_]*@" "$stage/DEBIAN/control"; then
		die "control: a placeholder is left"
	fi
	(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >"$stage/DEBIAN/conffiles"
	# dpkg records the conffiles' sums itself
	(cd "$stage" && find . \( -path ./etc -o -path ./DEBIAN \) -prune -o -type f -printf '%P\0' |
		sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
	install -m 755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
	chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
}

compile
version=$(project_version)-$revision    # write_docs and write_control use it
install_tree
write_docs
write_control
rm -f "$out"/*.deb
deb=$out/namegate_${version}_$(dpkg --print-architecture).deb
SOURCE_DATE_EPOCH=$(source_date) dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "build-deb: $deb"
