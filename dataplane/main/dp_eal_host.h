/*
 * The host's hugepages as EAL will find them, for the EAL arguments namegate derives
 * (dp_eal.c). EAL takes pages only of a size some hugetlbfs mount serves, and only those
 * free: pages reserved without a mount, or taken by another program, are no memory to it,
 * and a start planned on them fails in rte_eal_init(). So: every size the kernel has
 * (/sys/kernel/mm/hugepages), how many pages of it are free and not promised to a mapping,
 * and whether a mount serves it (/proc/mounts; a mount without pagesize= serves the default
 * size, /proc/meminfo's Hugepagesize).
 */
#ifndef DP_EAL_HOST_H
#define DP_EAL_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_EAL_HOST_SIZES	8	/* page sizes told apart; x86 has two, others a few */

struct dp_eal_host_size {
	uint64_t bytes;			/* the page size */
	uint64_t reserved;		/* pages, nr_hugepages */
	uint64_t free;			/* pages free and not promised (free - resv) */
	bool mounted;			/* a hugetlbfs mount serves this size */
};

struct dp_eal_host {
	struct dp_eal_host_size size[DP_EAL_HOST_SIZES];
	unsigned int nsizes;
};

/*
 * The hugepages of the host whose /proc and /sys are under root ("" for this one; a test
 * gives a tree of its own). What cannot be read counts as none: no sizes, no mounts.
 */
void dp_eal_host_read(struct dp_eal_host *h, const char *root);

/* Bytes of hugepages reserved, of every size. */
uint64_t dp_eal_host_reserved(const struct dp_eal_host *h);

/* Bytes EAL can take now: the free pages of the sizes a mount serves. */
uint64_t dp_eal_host_usable(const struct dp_eal_host *h);

/*
 * Can EAL have need bytes of h's hugepages? NULL if so, else why not, one clause written
 * into why (cap bytes) and returned: none reserved, none mounted, or too few free.
 */
const char *dp_eal_host_short(const struct dp_eal_host *h, uint64_t need, char *why,
    size_t cap);

#endif
