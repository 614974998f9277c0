#!/bin/bash
# A benchmark on 2 MiB pages, as the daemon has its tables on a host with hugepages
# (dp_eal.c; issue 25: "hugepages for the tables where the machine has them").
#
#   hugepages.sh PAGES COMMAND [ARG...]
#
# PAGES 2 MiB pages in a hugetlbfs mount of this run's own, named to COMMAND in
# BENCH_HUGE_DIR (bench_scale and bench_full give it to EAL for --no-huge). A host with
# too few free (a lab VM, this project's CI) has them reserved here for the run; the mount
# and the reservation are put back as they were on any exit. As root only: where the pages
# cannot be had, it says so and exits 77 (meson's skip), never a figure on other pages.
set -u
need=$1
shift
nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
free=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages

if [ "$(id -u)" -ne 0 ] || [ ! -w "$nr" ]; then
	echo "INFO hugepages: not measured, 2 MiB pages cannot be reserved here (not root)"
	exit 77
fi
before=$(cat "$nr")
dir=$(mktemp -d /tmp/ngbench-huge.XXXXXX)
mounted=0
cleanup() {
	# lazily: a benchmark a timeout left running keeps its pages until it exits, then
	# the kernel frees them down to the count put back
	[ "$mounted" = 1 ] && umount -l "$dir"
	rmdir "$dir"
	echo "$before" >"$nr"
}
child=
trap cleanup EXIT
# a signal ends the benchmark first: the mount is then free to go, and its pages with it
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child"; exit 130' INT TERM

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
echo "INFO hugepages: $need 2 MiB pages free for the run in $dir (nr_hugepages was $before)"
# in the background and waited for: bash runs a trap only once a foreground child is done
BENCH_HUGE_DIR=$dir "$@" &
child=$!
wait "$child"
