/*
 * The burst's flow lookup, inline in the burst (dp_burst.c): a call to it cost some 25
 * instructions a burst in saved registers and a frame. It reads the table through the
 * first members of struct dp_flows (dp_flows_look), which dp_flow.c keeps in place.
 */
#ifndef DP_FLOW_LOOK_H
#define DP_FLOW_LOOK_H

#include <rte_common.h>
#include <rte_prefetch.h>

#include "dp_flow.h"
#include "dp_flow_tab.h"

/* The first members of struct dp_flows (dp_flow.c): its head and its index. */
struct dp_flows_look {
	struct dp_flows_head h;
	struct dp_ft ft;
};

/* Table t's index, whose fields a lookup reads. */
static __rte_always_inline const struct dp_ft *
dp_flow_look_ft(const struct dp_flows *t)
{
	return &((const struct dp_flows_look *)(const void *)t)->ft;
}

/*
 * The first pass of a lookup, a, h its key's hash (dp_ft_hash() under ft, the table's
 * index): the hash kept and the key's first bucket fetched. A burst's first stage takes
 * it as it makes each key (a lean frame's hashed from the words it stores,
 * dp_lean_hashed(): the key not read back, no pass of its own), then the rest of the
 * passes, dp_flow_lookup_rest(), for all of them.
 */
static __rte_always_inline void
dp_flow_lookup_begin(const struct dp_ft *ft, struct dp_flow_lookup *a, uint32_t h)
{
	a->hash = h;
	a->bucket = &ft->b[dp_ft_first(ft, h)];
	rte_prefetch0(a->bucket);
}

/*
 * dp_flow_lookup_burst() but for its first pass, taken for each lookup before
 * (dp_flow_lookup_begin()), and its last step, the keys' compare, which waits on each
 * entry's line: for each lookup a from l up to end, found is the entry its key's first
 * bucket (else its other one) names under its tag (fetched meanwhile), unread, or NULL
 * when the key has no entry (neither bucket has its tag, or the first has not and no key
 * ever spilled from it to its other bucket: dp_ft_bucket.spilled); hash is the key's hash.
 * The caller finishes one when its answer is wanted, and the answer is then the table's
 * as it is, whatever opened or closed since: found when dp_flow_entry_is() (an entry open
 * under a key is that key's flow, keys being unique in the table, so a closed or reused
 * entry fails the same test as a tag that matched another key), NULL for a NULL while
 * dp_flow_still_absent(), else dp_flow_lookup_hashed(key, hash). Clears the opened bits:
 * one caller at a time.
 *
 * Passes, so that none waits on a line it asked for in the same pass: every key hashed
 * and its first bucket fetched (the first, before); the tags compared and the entry of the
 * first that matches fetched, or, when none does and a key of that bucket ever spilled to
 * its other one, the second bucket; for those (few: a key not in the table, or moved), the
 * second bucket's tags. Each lookup keeps the bucket it reads next in place of its answer.
 * Where absent is not NULL, the keys the first bucket alone told absent (room for
 * end - l) go in it, and their number is returned: the burst's openings (dp_burst.c).
 */
static __rte_always_inline unsigned int
dp_flow_lookup_rest(struct dp_flows *t, struct dp_flow_lookup *l, struct dp_flow_lookup *end,
    const struct dp_flow_key **absent)
{
	struct dp_flows_look *look = (struct dp_flows_look *)(void *)t;
	const struct dp_ft ft_copy = look->ft, *ft = &ft_copy;	/* its fields in registers */
	struct dp_flow_lookup *miss[DP_BURST];
	struct dp_flow *e = look->h.e;
	unsigned int misses = 0, nabsent = 0;

	look->h.opened = 0;
	for (struct dp_flow_lookup *a = l; a != end; a++) {
		const struct dp_ft_bucket *b = a->bucket;
		uint32_t m = dp_ft_match_pairs_vec(b, dp_ft_tag_vec_at(&a->hash));
		uint64_t bit;

		if (likely(dp_ft_low_bit_if(m, &bit))) {
			a->found = &e[dp_ft_idx_at(b, bit)];
			rte_prefetch0(a->found);
		} else if (b->spilled == 0) {
			a->found = NULL;
			if (absent != NULL)
				absent[nabsent++] = &a->key;
		} else {
			a->bucket = &ft->b[dp_ft_alt(ft, dp_ft_first(ft, a->hash),
			    dp_ft_tag(a->hash))];
			rte_prefetch0(a->bucket);
			miss[misses++] = a;
		}
	}
	while (misses != 0) {
		struct dp_flow_lookup *a = miss[--misses];
		uint32_t m = dp_ft_match_pairs_vec(a->bucket, dp_ft_tag_vec_at(&a->hash));

		a->found = m != 0 ? &e[dp_ft_idx_at(a->bucket, dp_ft_low_bit(m))] : NULL;
	}
	return nabsent;
}

/* The n lookups from l, every pass: each key hashed here, then dp_flow_lookup_rest(). */
static __rte_always_inline void
dp_flow_lookup_start(struct dp_flows *t, struct dp_flow_lookup *l, unsigned int n)
{
	const struct dp_ft ft_copy = *dp_flow_look_ft(t), *ft = &ft_copy;

	for (struct dp_flow_lookup *a = l; a != l + n; a++)
		dp_flow_lookup_begin(ft, a, dp_ft_hash(ft, &a->key));
	dp_flow_lookup_rest(t, l, l + n, NULL);
}

#endif
