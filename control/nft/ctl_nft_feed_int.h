/*
 * The feeder's insides, shared by its two halves: ctl_nft_feed.c (bindings to elements,
 * batches, rebuilds, latency) and ctl_nft_follow.c (a new generation followed into the
 * sets of the VMs whose elements it changes). One module split by size.
 */
#ifndef CTL_NFT_FEED_INT_H
#define CTL_NFT_FEED_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/dp_api.h"
#include "ctl_nft_feed.h"
#include "nft.h"

#define CTL_NFT_BATCH		512	/* elements per incremental batch at most */
#define CTL_NFT_LAT_SAMPLES	1024	/* the summary's latest samples */
#define CTL_NFT_LAT_BUCKETS	24	/* upper bounds of namegate_nft_bind_seconds, +Inf apart */
#define CTL_NFT_COUNT_SPACING	50	/* counts are this many times their cost apart: 2 % */

struct ctl_nft_feed {
	const struct dp_plane *plane;
	const struct ctl_mirror *mirror;
	uint64_t (*tsc)(void);		/* the records' TSC clock, now */
	uint64_t tsc_hz;
	struct nft_ctx *nft;		/* NULL until opened */
	int *index;			/* VM slot -> index in the VMs nft_open() was given */
	uint32_t nindex;
	struct ctl_nft_vm *vms;		/* those VMs, names owned */
	uint16_t nvms;
	uint64_t *marked;		/* each VM's elements before a generation changes */
	uint64_t digest_key[2];		/* secret: no VM can pick addresses whose sum hides a change */
	bool has_marks;
	struct nft_elem pending[CTL_NFT_BATCH];	/* learned since the last batch */
	uint64_t pending_tsc[CTL_NFT_BATCH];	/* when each one's binding was learned */
	size_t npending;
	bool stale;			/* a batch found the table changed: rebuild it */
	uint32_t lat_us[CTL_NFT_LAT_SAMPLES];	/* learned -> in the kernel, latest (ring) */
	uint32_t lat_n;
	uint64_t lat_hist[CTL_NFT_LAT_BUCKETS + 1];	/* every sample, by bucket (+Inf last) */
	uint64_t lat_sum_us;
	_Atomic uint64_t elements;	/* what the sets held at the last count (scrapes read it) */
	uint64_t count_at;		/* the records' second of the next count */
};

/* Where elements go: the incremental batch (flushed when full), or a rebuild's list. */
struct ctl_nft_buf {
	struct nft_elem *v;
	size_t n, cap;
	struct ctl_nft_feed *flush_to;	/* NULL: grow instead of flushing */
	uint64_t tsc;			/* when the binding was learned */
	uint64_t now;			/* the records' clock, seconds */
};

/*
 * The nftables elements of one binding: the address (ICMP, later fragments), and the
 * address with each protocol and port it opens (port 0: every port).
 */
void ctl_nft_binding(struct ctl_nft_feed *f, struct ctl_nft_buf *b, uint16_t slot,
    uint8_t family, const uint8_t *addr, uint64_t expires, const struct dp_evt_ports *ports);

/*
 * What a binding judged under generation gen opens now, as the workers see it: its own
 * ports under the running generation, else the running generation's for its name.
 */
void ctl_nft_ports_now(struct ctl_nft_feed *f, uint32_t gen, uint16_t slot, const char *name,
    struct dp_evt_ports *ports);

/* e to the batch or the list of b. */
void ctl_nft_put(struct ctl_nft_buf *b, const struct nft_elem *e);

#endif
