/*
 * The binding table's lines a burst's openings will read, fetched for all of them before
 * the first asks (dp_burst.c). Each opening's lookup (dp_bind_allows_common()) reads two
 * lines, its key's bucket and then the entry the bucket names: with a million bindings
 * both are misses, and one SYN after another waited for each in turn.
 */
#ifndef DP_BIND_FETCH_H
#define DP_BIND_FETCH_H

#include <stdint.h>

#include <rte_prefetch.h>

#include "dp.h"
#include "dp_bind_int.h"
#include "dp_flow.h"

/*
 * Fetch what a lookup of the bindings of each of the n flow keys (their VM, family and
 * peer; n at most DP_BURST) will read: every key's first bucket in one pass, then the
 * entry its tag names there in the next, so that no pass waits on a line it asked for.
 * Only reads, and what it reads decides nothing: a bucket a writer changes meanwhile
 * costs a wasted fetch at worst, and the lookup asks again as it always did.
 */
static inline void
dp_bind_fetch(const struct dp_binds *b, const struct dp_flow_key *const *keys, unsigned int n)
{
	const struct dp_ft_bucket *bk[DP_BURST];
	uint32_t h[DP_BURST];

	for (unsigned int i = 0; i < n; i++) {
		const struct dp_flow_key *k = keys[i];
		struct dp_bind_key key;

		dp_bind_key_of(&key, k->vm, k->family, k->peer);
		h[i] = dp_bind_hash_of(b, &key, k->family);
		bk[i] = &b->ft.b[dp_ft_first(&b->ft, h[i])];
		rte_prefetch0(bk[i]);
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t m = dp_ft_match_pairs_vec(bk[i], dp_ft_tag_vec(h[i])) & 0x5555u;
		uint32_t idx;

		if (m == 0)
			continue;
		/* a slot a writer fills meanwhile may hold anything: fetched only inside */
		idx = __atomic_load_n((const uint32_t *)(const void *)((const uint8_t *)bk[i]->idx +
		    2 * (size_t)__builtin_ctz(m)), __ATOMIC_RELAXED);
		if (idx < b->cap) {
			/* the key and the first name: the pair of lines a lookup reads */
			rte_prefetch0(&b->e[idx]);
			rte_prefetch0((const uint8_t *)&b->e[idx] + 64);
		}
	}
}

#endif
