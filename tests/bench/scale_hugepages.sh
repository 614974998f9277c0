#!/bin/bash
# bench_scale on 2 MiB pages, as the daemon has its tables on a host with hugepages
# (issue 25: "hugepages for the tables where the machine has them").
#
#   scale_hugepages.sh BENCH_SCALE
#
# A host with none reserved (a lab VM, this project's CI) has them reserved here for the
# run, in a hugetlbfs mount of its own, and both put back as they were on any exit. As
# root only: where the pages cannot be had, it says so and exits 77 (meson's skip), never a
# figure measured on other pages.
set -u
bench=$1
need=1600	# 2 MiB pages: bench_scale's -m 3072 and EAL's own
nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
free=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages

if [ "$(id -u)" -ne 0 ] || [ ! -w "$nr" ]; then
	echo "INFO hugepages: not measured, 2 MiB pages cannot be reserved here (not root)"
	exit 77
fi
before=$(cat "$nr")
dir=$(mktemp -d /tmp/ngscale-huge.XXXXXX)
mounted=0
cleanup() {
	[ "$mounted" = 1 ] && umount "$dir"
	rmdir "$dir"
	echo "$before" >"$nr"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

have=$(cat "$free")
if [ "$have" -lt "$need" ]; then
	echo $((before + need - have)) >"$nr"
	have=$(cat "$free")
fi
if [ "$have" -lt "$need" ]; then
	echo "INFO hugepages: not measured, $have of $need 2 MiB pages could be reserved"
	exit 77
fi
mount -t hugetlbfs -o pagesize=2M nodev "$dir" || exit 1
mounted=1
echo "INFO hugepages: $need 2 MiB pages reserved in $dir for the run (nr_hugepages was $before)"
"$bench" --huge-dir "$dir"
