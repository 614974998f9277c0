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

/*
 * dp_flow_lookup_burst() but for its last step, the keys' compare, which waits on each
 * entry's line: for each lookup a from l up to end, found is the entry its key's first bucket
 * (else its other one) names under its tag (fetched meanwhile), unread, or NULL when the
 * key has no entry (neither bucket has its tag, or the first has not and no key ever
 * spilled from it to its other bucket: dp_ft_bucket.spilled); hash is the key's hash. The
 * caller finishes one when its answer is wanted, and the answer is then the table's as it
 * is, whatever opened or closed since: found when dp_flow_entry_is() (an entry open under
 * a key is that key's flow, keys being unique in the table, so a closed or reused entry
 * fails the same test as a tag that matched another key), NULL for a NULL while
 * dp_flow_still_absent(), else dp_flow_lookup_hashed(key, hash). Clears the opened bits:
 * one caller at a time.
 *
 * Passes, so that none waits on a line it asked for in the same pass: every key hashed
 * and its first bucket fetched; the tags compared and the entry of the first that matches
 * fetched, or, when none does and a key of that bucket ever spilled to its other one, the
 * second bucket; for those (few: a key not in the table, or moved), the second bucket's
 * tags. Each lookup keeps the bucket it reads next in place of its answer.
 */
static __rte_always_inline void
dp_flow_lookup_range(struct dp_flows *t, struct dp_flow_lookup *l, struct dp_flow_lookup *end)
{
	struct dp_flows_look *look = (struct dp_flows_look *)(void *)t;
	const struct dp_ft ft_copy = look->ft, *ft = &ft_copy;	/* its fields in registers */
	struct dp_flow_lookup *miss[DP_BURST];
	struct dp_flow *e = look->h.e;
	unsigned int misses = 0;

	look->h.opened = 0;
	for (struct dp_flow_lookup *a = l; a != end; a++) {
		a->hash = dp_ft_hash(ft, &a->key);
		a->bucket = &ft->b[dp_ft_first(ft, a->hash)];
		rte_prefetch0(a->bucket);
	}
	for (struct dp_flow_lookup *a = l; a != end; a++) {
		const struct dp_ft_bucket *b = a->bucket;
		uint32_t m = dp_ft_match_pairs_vec(b, dp_ft_tag_vec_at(&a->hash));
		uint64_t bit;

		if (likely(dp_ft_low_bit_if(m, &bit))) {
			a->found = &e[dp_ft_idx_at(b, bit)];
			rte_prefetch0(a->found);
		} else if (b->spilled == 0) {
			a->found = NULL;
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
}

/* dp_flow_lookup_range() of the n lookups from l */
static __rte_always_inline void
dp_flow_lookup_start(struct dp_flows *t, struct dp_flow_lookup *l, unsigned int n)
{
	dp_flow_lookup_range(t, l, l + n);
}

#endif
