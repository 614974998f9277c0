#!/usr/bin/env bash
# disk.sh OUTDIR ROOT_PARTUUID: makes OUTDIR/namegate-appliance.raw from OUTDIR/rootfs,
# without loop devices or mounts: each partition is built as a file (FAT with mtools, ext4
# with mkfs.ext4 -d) and copied into a GPT disk laid out by sfdisk.
#   partition 1: EFI system partition: systemd-boot as the removable-media loader
#                (\EFI\BOOT\BOOTX64.EFI, so no firmware boot entry is needed), the kernel,
#                the initramfs and the one loader entry with the kernel command line
#   partition 2: the root file system, ext4, found by the initramfs by PARTUUID
set -euo pipefail

out=${1:?usage: disk.sh OUTDIR ROOT_PARTUUID}
partuuid=${2:?usage: disk.sh OUTDIR ROOT_PARTUUID}
root=$out/rootfs
image=$out/namegate-appliance.raw
esp_mib=128
# 512 hugepages of 2 MiB: namegate's tables, mbufs and rings (see namegate.yaml's sizes)
hugepages=${NAMEGATE_HUGEPAGES:-512}
cmdline="root=PARTUUID=$partuuid ro console=tty0 console=ttyS0,115200"
cmdline+=" default_hugepagesz=2M hugepagesz=2M hugepages=$hugepages"

tmp=$(mktemp -d "$out/disk.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$root/boot/initrd.img-${kernel##*/vmlinuz-}
[ -f "$initrd" ] || { echo "disk: no initramfs for $kernel" >&2; exit 1; }

# --- the ESP
cat >"$tmp/loader.conf" <<CONF
default namegate.conf
timeout 0
CONF
cat >"$tmp/namegate.conf" <<CONF
title namegate appliance
linux /vmlinuz
initrd /initrd.img
options $cmdline
CONF
truncate -s ${esp_mib}M "$tmp/esp.img"
mkfs.vfat -F 32 -n ESP "$tmp/esp.img" >/dev/null
export MTOOLS_SKIP_CHECK=1
mmd -i "$tmp/esp.img" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries
mcopy -i "$tmp/esp.img" "$root/usr/lib/systemd/boot/efi/systemd-bootx64.efi" ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$tmp/esp.img" "$kernel" ::/vmlinuz
mcopy -i "$tmp/esp.img" "$initrd" ::/initrd.img
mcopy -i "$tmp/esp.img" "$tmp/loader.conf" ::/loader/loader.conf
mcopy -i "$tmp/esp.img" "$tmp/namegate.conf" ::/loader/entries/namegate.conf

# --- the root file system: what the tree holds, plus room for logs and the journal
used_mib=$(du -sm "$root" | cut -f1)
root_mib=$(( (used_mib * 5 / 4 + 512 + 63) / 64 * 64 ))
mkfs.ext4 -q -L namegate-root -d "$root" "$tmp/root.img" ${root_mib}M >/dev/null

# --- the disk: 1 MiB for the GPT in front, the partitions, 1 MiB for the backup GPT
rm -f "$image"
truncate -s $((1 + esp_mib + root_mib + 1))M "$image"
sfdisk -q "$image" <<PARTS
label: gpt
start=1MiB, size=${esp_mib}MiB, type=uefi, name=namegate-esp
start=$((1 + esp_mib))MiB, size=${root_mib}MiB, type=4f68bce3-e8cd-4db1-96e7-fbcaf984b709, uuid=$partuuid, name=namegate-root
PARTS
dd if="$tmp/esp.img" of="$image" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$tmp/root.img" of="$image" bs=1M seek=$((1 + esp_mib)) conv=notrunc,sparse status=none
echo "disk: $image (${root_mib} MiB root, ${esp_mib} MiB ESP)"
