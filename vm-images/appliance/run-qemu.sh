#!/usr/bin/env bash
# run-qemu.sh IMAGE [QEMU-ARGS...]: boots the appliance under qemu with UEFI (OVMF) and the
# NIC layout /etc/namegate/namegate.yaml expects:
#   00:04.0  virtio-net  vm port      netdev from NAMEGATE_VM_NET
#   00:05.0  virtio-net  uplink port  netdev from NAMEGATE_UPLINK_NET
# Both default to "user,restrict=on": a stand-in that lets namegate start and reaches
# nothing. For real use give each a tap on the right bridge, e.g.
#   NAMEGATE_VM_NET=tap,ifname=ngv,script=no,downscript=no
# A third NIC, for management (metrics; DHCP), joins at 00:06.0 when NAMEGATE_MGMT_NET
# names its netdev (NAMEGATE_MGMT_MAC sets its MAC).
# The serial console is the terminal (Ctrl-A X quits) unless NAMEGATE_SERIAL says
# otherwise (any -serial argument, e.g. file:console.log). Extra arguments go to qemu
# (-snapshot leaves IMAGE untouched; -daemonize -pidfile FILE runs it in the background).
set -euo pipefail

image=${1:?usage: run-qemu.sh IMAGE [QEMU-ARGS...]}
shift
ovmf=/usr/share/OVMF
format=raw
case $image in *.qcow2) format=qcow2 ;; esac

# OVMF keeps its variables in a writable flash; each run starts from a fresh copy
vars=$(mktemp /tmp/namegate-ovmf-vars.XXXXXX)
trap 'rm -f "$vars"' EXIT
cp "$ovmf/OVMF_VARS.fd" "$vars"

mgmt=()
if [ -n "${NAMEGATE_MGMT_NET:-}" ]; then
	mgmt=(-netdev "$NAMEGATE_MGMT_NET,id=mgmt"
		-device "virtio-net-pci,netdev=mgmt,addr=06.0${NAMEGATE_MGMT_MAC:+,mac=$NAMEGATE_MGMT_MAC}")
fi

# KVM when there is one, else TCG (NAMEGATE_ACCEL=tcg forces it); -cpu max gives DPDK
# the SSE4.2 it needs under TCG too
accel=()
for a in ${NAMEGATE_ACCEL:-kvm tcg}; do accel+=(-accel "$a"); done
qemu-system-x86_64 \
	-machine q35 "${accel[@]}" -cpu max -smp 2 -m 2048 \
	-drive if=pflash,format=raw,unit=0,readonly=on,file="$ovmf/OVMF_CODE.fd" \
	-drive if=pflash,format=raw,unit=1,file="$vars" \
	-drive if=virtio,format="$format",file="$image" \
	-netdev "${NAMEGATE_VM_NET:-user,restrict=on},id=vmport" \
	-device virtio-net-pci,netdev=vmport,addr=04.0 \
	-netdev "${NAMEGATE_UPLINK_NET:-user,restrict=on},id=uplink" \
	-device virtio-net-pci,netdev=uplink,addr=05.0 \
	"${mgmt[@]}" \
	-nic none -vga none -display none -serial "${NAMEGATE_SERIAL:-mon:stdio}" \
	"$@"
