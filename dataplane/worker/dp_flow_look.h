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
 * entry's line: out[i] is the entry keys[i]'s first bucket (else its other one) names
 * under its tag (fetched meanwhile), unread, or NULL when the key has no entry (neither
 * bucket has its tag, or the first has not and no key ever spilled from it to its other
 * bucket: dp_ft_bucket.spilled); h[i] is the key's hash. The caller finishes one when its
 * answer is wanted, and the answer is then the table's as it is, whatever opened or closed
 * since: out[i] when dp_flow_entry_is() (an entry open under a key is that key's flow, keys
 * being unique in the table, so a closed or reused entry fails the same test as a tag
 * that matched another key), NULL for a NULL while dp_flow_still_absent(), else
 * dp_flow_lookup_hashed(keys[i], h[i]). Clears the opened bits: one caller at a time.
 *
 * Passes, so that none waits on a line it asked for in the same pass: every key hashed
 * and its first bucket fetched; the tags compared and the entry of the first that matches
 * fetched, or, when none does and a key of that bucket ever spilled to its other one, the
 * second bucket; for those (few: a key not in the table, or moved), the second bucket's
 * tags. The first two count an index from -n up to 0 (its increment is the loop's test)
 * over arrays addressed from their ends; the last counts its misses down.
 */
static __rte_always_inline void
dp_flow_lookup_start(struct dp_flows *t, const struct dp_flow_key *restrict keys,
    unsigned int n, struct dp_flow **restrict out, uint32_t *restrict h)
{
	struct dp_flows_look *l = (struct dp_flows_look *)(void *)t;
	const struct dp_ft ft_copy = l->ft, *ft = &ft_copy;	/* its fields in registers */
	const struct dp_ft_bucket *bucket_at[DP_BURST], **bucket = bucket_at + n;
	uint8_t miss[DP_BURST];
	struct dp_flow *e = l->h.e;
	unsigned int misses = 0;

	l->h.opened = 0;
	keys += n;
	out += n;
	h += n;
	for (ptrdiff_t i = -(ptrdiff_t)n; i != 0; i++) {
		h[i] = dp_ft_hash(ft, &keys[i]);
		bucket[i] = &ft->b[dp_ft_first(ft, h[i])];
		rte_prefetch0(bucket[i]);
	}
	for (ptrdiff_t i = -(ptrdiff_t)n; i != 0; i++) {
		uint32_t m = dp_ft_match_pairs_vec(bucket[i], dp_ft_tag_vec_at(&h[i]));
		uint64_t bit;

		if (likely(dp_ft_low_bit_if(m, &bit))) {
			out[i] = &e[dp_ft_idx_at(bucket[i], bit)];
			rte_prefetch0(out[i]);
		} else if (bucket[i]->spilled == 0) {
			out[i] = NULL;
		} else {
			bucket[i] = &ft->b[dp_ft_alt(ft, dp_ft_first(ft, h[i]), dp_ft_tag(h[i]))];
			rte_prefetch0(bucket[i]);
			miss[misses++] = (uint8_t)(n + i);
		}
	}
	while (misses != 0) {
		ptrdiff_t i = (ptrdiff_t)miss[--misses] - (ptrdiff_t)n;
		uint32_t m = dp_ft_match_pairs_vec(bucket[i], dp_ft_tag_vec_at(&h[i]));

		out[i] = m != 0 ? &e[dp_ft_idx_at(bucket[i], dp_ft_low_bit(m))] : NULL;
	}
}

#endif
