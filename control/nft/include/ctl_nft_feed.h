/*
 * The slow path's feeder: what the fast path binds reaches the kernel's sets (nft.h),
 * batched per drain of the workers' records, and the table is rebuilt whole with every
 * live binding when it is opened (start, a reload's new VMs) or found tampered with. The
 * ports of each binding are the workers' own: the record's when the running generation
 * judged it, else the running generation's (the plane's name_ports), so the kernel and the
 * fast path never disagree. Also namegate_nft_bind_seconds, from each binding's DNS answer
 * to its element. The control loop's thread only, except ctl_nft_feed_render().
 */
#ifndef CTL_NFT_FEED_H
#define CTL_NFT_FEED_H

#include <stdint.h>
#include <stdio.h>

#include "policy/vocab.h"

struct ctl_mirror;
struct ctl_nft_feed;
struct dp_evt;
struct dp_plane;

/* A VM of the running generation: its slot in the records, its nft sets' name. */
struct ctl_nft_vm {
	uint16_t slot;
	const char *name;
	struct pol_vm_id id;
};

/*
 * A feeder for the bindings mirror keeps (kept, not copied); plane and mirror outlive it.
 * tsc() reads the clock the records are stamped by, tsc_hz of them a second, for the
 * latencies. NULL when out of memory.
 */
struct ctl_nft_feed *ctl_nft_feed_new(const struct dp_plane *plane,
    const struct ctl_mirror *mirror, uint64_t (*tsc)(void), uint64_t tsc_hz);

/* Removes the table (at exit) and frees f (NULL: nothing). */
void ctl_nft_feed_free(struct ctl_nft_feed *f);

/*
 * (Re)build "table bridge <table>" for vms[0..n) (their names copied), judging only the
 * frames that enter from interfaces slow_a and slow_b, with every live binding of mirror
 * at now (seconds, the records' clock). 0, or -1 with errno and the table as it was.
 */
int ctl_nft_feed_open(struct ctl_nft_feed *f, const char *table, const struct ctl_nft_vm *vms,
    uint16_t n, const char *slow_a, const char *slow_b, uint64_t now);

/*
 * Before the running generation changes: what each VM's elements are (a digest of them).
 * Then ctl_nft_feed_follow() once the new one runs.
 */
void ctl_nft_feed_mark(struct ctl_nft_feed *f, uint64_t now);

/*
 * A new generation runs: with the same VMs (slots, names, identities) as the table's,
 * refill only the sets of the VMs whose elements it changed (a grant changes its VM's,
 * nothing else: the table and the other VMs' sets stay); otherwise, or without a mark,
 * ctl_nft_feed_open(). Same returns.
 */
int ctl_nft_feed_follow(struct ctl_nft_feed *f, const char *table, const struct ctl_nft_vm *vms,
    uint16_t n, const char *slow_a, const char *slow_b, uint64_t now);

/* A BIND record, its name as the name set keeps it: its elements join the next batch. */
void ctl_nft_feed_bind(struct ctl_nft_feed *f, const struct dp_evt *e, const char *name,
    uint64_t now);

/* The batch to the kernel, after each drain. */
void ctl_nft_feed_flush(struct ctl_nft_feed *f);

/* Once a second: a table deleted or edited behind our back is built again, bindings and all. */
void ctl_nft_feed_check(struct ctl_nft_feed *f, uint64_t now);

/* The latency summary and histogram, elements and errors, with # HELP and # TYPE. */
void ctl_nft_feed_render(struct ctl_nft_feed *f, FILE *out);

#endif
