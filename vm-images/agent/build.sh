#!/usr/bin/env bash
# Builds the agent VM: Debian's kernel and an initramfs holding busybox, curl (with the
# shared libraries it links), the CA bundle and vm-images/agent/init. Everything a VM is
# told (MAC, addresses, resolver, what to run) comes at boot, from the kernel command line
# and a seed archive (see init and agentvm.py), so one build serves every VM and every lab.
#
#   vm-images/agent/build.sh [OUTDIR]      default /var/tmp/namegate-agent-vm
#
# Output: OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz, OUTDIR/manifest. Rebuilds only when
# this recipe, the init script, the kernel package or curl changed (OUTDIR/stamp).
# Needs: dpkg-deb, depmod, apt-get (downloads linux-image-amd64's package; nothing is installed on
# the build host), and the Debian packages busybox-static, curl, ca-certificates, cpio.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/var/tmp/namegate-agent-vm}
mkdir -p "$out"
out=$(cd "$out" && pwd)

die() { echo "agent-vm build: $*" >&2; exit 1; }
for tool in dpkg-deb apt-get cpio depmod gzip ldd; do
	command -v "$tool" >/dev/null || die "$tool is missing"
done
# grep reads the whole list: with -q it would stop at the match, busybox would die of
# SIGPIPE, and pipefail would call the package missing when it is not
[ -x /bin/busybox ] && busybox --list | grep -x nslookup >/dev/null ||
	die "busybox-static is missing"
[ -x /usr/bin/curl ] || die "curl is missing"
[ -r /etc/ssl/certs/ca-certificates.crt ] || die "ca-certificates is missing"

# The metapackage names the current kernel package; ask apt rather than pinning a version.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
	apt-get update -qq && kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kpkg" ] || die "apt knows no linux-image-amd64"
kver_pkg=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')

stamp=$( { cat "$0" "$here/init"; echo "$kpkg $kver_pkg"; dpkg-query -W curl busybox-static ca-certificates; } | sha256sum | cut -c1-16)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
	[ -f "$out/vmlinuz" ] && [ -f "$out/initramfs.cpio.gz" ]; then
	echo "agent-vm build: $out is up to date ($kpkg $kver_pkg)"
	exit 0
fi

work=$(mktemp -d "$out/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$(date +%s.%N)

# -- kernel and the modules a virtio NIC needs (Debian builds virtio as modules) --------
deb_dir="$work/debs"
mkdir -p "$deb_dir"
(cd "$deb_dir" && apt-get download -qq "$kpkg" 2>/dev/null) ||
	(apt-get update -qq && cd "$deb_dir" && apt-get download -qq "$kpkg") ||
	die "could not download $kpkg"
dpkg-deb -x "$deb_dir"/"$kpkg"_*.deb "$work/kernel"
kdir=$(echo "$work"/kernel/lib/modules/*)
kver=$(basename "$kdir")
depmod -b "$work/kernel" "$kver"    # the package leaves modules.dep to its postinst
cp "$work/kernel/boot/vmlinuz-$kver" "$out/vmlinuz.new"

root="$work/root"
mkdir -p "$root"/{bin,dev,etc/ssl/certs,lib/modules,lib64,proc,sys,tmp,run,seed,root}

# modules.dep lists a module's dependencies after it; loading them in reverse, depth
# first, gives an order in which every module finds what it needs already loaded.
declare -A seen=()
order=()
add_module() {
	local rel=$1 dep
	[ -n "${seen[$rel]:-}" ] && return
	seen[$rel]=1
	for dep in $(awk -F': *' -v m="$rel" '$1 == m {print $2}' "$kdir/modules.dep"); do
		add_module "$dep"
	done
	order+=("$rel")
}
for m in virtio_net virtio_pci virtio-rng; do
	rel=$(awk -F: -v m="/$m.ko" 'index($1, m) == length($1) - length(m) + 1 {print $1; exit}' "$kdir/modules.dep")
	[ -n "$rel" ] || die "$kver has no module $m"
	add_module "$rel"
done
: >"$root/etc/modules.order"
for rel in "${order[@]}"; do
	cp "$kdir/$rel" "$root/lib/modules/"
	basename "$rel" >>"$root/etc/modules.order"
done

# -- userland: busybox, and curl with every library the dynamic loader will ask for ------
cp /bin/busybox "$root/bin/busybox"
copy_with_libs() {
	local bin=$1 lib
	cp "$bin" "$root/bin/"
	for lib in $(ldd "$bin" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}
copy_with_libs /usr/bin/curl
# glibc's resolver is inside libc; it needs only these files to use the VM's resolver
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
install -m 0755 "$here/init" "$root/init"

(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -9 >"$out/initramfs.cpio.gz.new"
mv "$out/vmlinuz.new" "$out/vmlinuz"
mv "$out/initramfs.cpio.gz.new" "$out/initramfs.cpio.gz"
cat >"$out/manifest" <<EOF
kernel: $kpkg $kver_pkg ($kver)
modules: ${order[*]##*/}
curl: $(dpkg-query -W -f='${Version}' curl)
busybox: $(dpkg-query -W -f='${Version}' busybox-static)
vmlinuz_bytes: $(stat -c %s "$out/vmlinuz")
initramfs_bytes: $(stat -c %s "$out/initramfs.cpio.gz")
build_seconds: $(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.1f", a - b}')
EOF
echo "$stamp" >"$out/stamp"
echo "agent-vm build: $out ($kver, initramfs $(du -h "$out/initramfs.cpio.gz" | cut -f1))"
