#!/usr/bin/env bash
# Installs every Debian package namegate needs to build, test and run its lab.
# Idempotent: when everything is already present it only runs dpkg-query and exits.
set -euo pipefail

packages=(
	# build
	build-essential clang libclang-rt-14-dev meson ninja-build pkg-config
	# core libraries
	libdpdk-dev dpdk dpdk-dev libmnl-dev libnftnl-dev libldns-dev libyaml-dev libpcap-dev
	libmicrohttpd-dev libssl-dev libcmocka-dev libjson-c-dev libcurl4-openssl-dev libsystemd-dev
	# signed policy bundles: libsodium verifies them, minisign makes them (and the tests' keys)
	libsodium-dev minisign
	# tests, differential oracles and the lab
	tshark ldnsutils python3-ldns python3-scapy python3-pytest python3-cryptography nftables iproute2 ethtool
	dnsmasq-base curl openssl procps psmisc knot-dnsutils valgrind
	# the HA pair's election (tests/ha, and the sample config's keepalived -t)
	keepalived
	# real servers and a 0x20-randomising stub on the far side of the lab's attack tests
	nginx-light gunicorn python3-aiohttp unbound
	# nDPI, the new-connection baseline (tests/bench/bench_ndpi.c)
	libndpi-dev
	# a real browser in a lab VM (tests/e2e/lab_browser.py)
	chromium
	# the agent VM image (vm-images/agent) and the VM suite that boots it
	qemu-system-x86 busybox-static cpio kmod ca-certificates
	# the appliance image (vm-images/appliance) and its test
	debootstrap dosfstools mtools fdisk e2fsprogs qemu-utils ovmf
	# namegate's Debian package (vm-images/deb): dpkg-shlibdeps, dpkg-buildflags; lintian
	dpkg-dev lintian
	# unused includes, found by include-what-you-use (tests/layout/check_unused_includes.py)
	iwyu
	# the man pages (doc/) and their test (tests/man)
	scdoc groff-base man-db
	# the fleet suite (tests/fleet): a real etcd and etcdctl
	etcd-server etcd-client
	# the install test (tests/install): the unit through systemd-analyze, logrotate's rule
	systemd logrotate
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}" >&2
apt-get update -qq
# tshark's debconf question (may non-root users capture) needs a preseeded answer
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
# nginx and unbound are servers the lab starts in its own namespaces: installing them
# must not start system services on the host (policy-rc.d's 101: "action forbidden")
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
