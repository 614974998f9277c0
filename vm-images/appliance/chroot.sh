# shellcheck shell=bash
# chroot.sh: sourced. The kernel file systems a package script needs inside a chroot,
# mounted only while it runs. chroot_unmount is safe to call twice and from a trap, so a
# failed build never leaves the host's /dev or /proc mounted under the output directory.

chroot_mount() {
	local root=$1 d
	for d in proc sys dev dev/pts; do
		mkdir -p "$root/$d"
		mountpoint -q "$root/$d" && continue
		case $d in
		proc) mount -t proc proc "$root/proc" ;;
		sys) mount -t sysfs sys "$root/sys" ;;
		*) mount --bind "/$d" "$root/$d" ;;
		esac
	done
}

chroot_unmount() {
	local root=$1 d
	for d in dev/pts dev sys proc; do
		if mountpoint -q "$root/$d" 2>/dev/null; then
			umount "$root/$d" || umount -l "$root/$d"
		fi
	done
}
