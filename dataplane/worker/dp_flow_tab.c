/*
 * The index's writer (dp_flow_tab.h): placing a key, with a bounded breadth-first search
 * for a chain of moves when both its buckets are full, and removing one. Stores a reader
 * may race with are atomic: a slot's idx before its tag (release), so a reader that sees
 * the tag sees the index and the entry it names.
 */
#include <errno.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "dp_flow_tab.h"

/*
 * Buckets the search for room may visit: at most 80 % of slots are used, where a chain
 * of two or three moves is nearly always found (BFS over 8-slot buckets reaches
 * 2 + 16 + 128 of them in three levels). Bounded so that an open's worst case is too.
 */
#define DP_FT_SEARCH	128

uint32_t
dp_ft_buckets(uint32_t cap)
{
	uint64_t slots = (uint64_t)cap * DP_FT_LOAD_NUM / DP_FT_LOAD_DEN;
	uint64_t n = (slots + DP_FT_WAYS - 1) / DP_FT_WAYS;

	return rte_align32pow2((uint32_t)RTE_MAX(n, UINT64_C(2)));
}

int
dp_ft_init(struct dp_ft *ft, uint32_t cap, uint32_t seed, int socket)
{
	uint32_t n = dp_ft_buckets(cap);

	ft->b = rte_zmalloc_socket("dp_flow_buckets", (size_t)n * sizeof(ft->b[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	if (ft->b == NULL)
		return -ENOMEM;
	ft->mask = n - 1;
	ft->seed = seed;
	ft->moved = 0;
	return 0;
}

void
dp_ft_fini(struct dp_ft *ft)
{
	rte_free(ft->b);
	ft->b = NULL;
}

/* A bucket the search reached: from slot slot of node parent's bucket (-1: a root). */
struct dp_ft_node {
	uint32_t bucket;
	int16_t parent;
	uint8_t slot;
};

/*
 * Move what is in bucket from's slot fs to its other bucket, to, slot ts. Checked, since
 * a chain may pass one bucket twice and find a slot changed under it: false, and nothing
 * moved, when the slot's key does not belong in to or ts is taken.
 */
static bool
dp_ft_move(struct dp_ft *ft, uint32_t from, unsigned int fs, uint32_t to, unsigned int ts)
{
	struct dp_ft_bucket *f = &ft->b[from], *t = &ft->b[to];
	uint16_t tag = f->tag[fs];

	if (tag == 0 || t->tag[ts] != 0 || dp_ft_alt(ft, from, tag) != to)
		return false;
	/* from may be the key's first bucket (which of its two is not known): said so first */
	__atomic_store_n(&f->spilled, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->idx[ts], f->idx[fs], __ATOMIC_RELAXED);
	__atomic_store_n(&t->tag[ts], tag, __ATOMIC_RELEASE);
	/* in both buckets now: a reader that misses it in the second sees the count move */
	__atomic_store_n(&ft->moved, ft->moved + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&f->tag[fs], 0, __ATOMIC_RELEASE);
	return true;
}

/*
 * Node q's bucket has slot s whose key's other bucket, to, has free slot ts: move it
 * there, then each key along the chain into the slot its successor left, back to a root.
 * Returns the root's freed slot, its bucket in *root; -1 if the chain broke (every move
 * made stays valid: each key went to its own other bucket).
 */
static int
dp_ft_shift(struct dp_ft *ft, const struct dp_ft_node *node, int q, unsigned int s,
    uint32_t to, unsigned int ts, uint32_t *root)
{
	if (!dp_ft_move(ft, node[q].bucket, s, to, ts))
		return -1;
	while (node[q].parent >= 0) {
		int p = node[q].parent;

		if (!dp_ft_move(ft, node[p].bucket, node[q].slot, node[q].bucket, s))
			return -1;
		s = node[q].slot;
		q = p;
	}
	*root = node[q].bucket;
	return (int)s;
}

/* Room in bucket b1 or b2 made by moving keys along; its slot, the bucket in *b, or -1. */
static int
dp_ft_make_room(struct dp_ft *ft, uint32_t b1, uint32_t b2, uint32_t *b)
{
	struct dp_ft_node node[DP_FT_SEARCH];
	int n = 2;

	node[0] = (struct dp_ft_node){ .bucket = b1, .parent = -1 };
	node[1] = (struct dp_ft_node){ .bucket = b2, .parent = -1 };
	for (int q = 0; q < n; q++) {
		const struct dp_ft_bucket *bk = &ft->b[node[q].bucket];

		for (unsigned int s = 0; s < DP_FT_WAYS; s++) {
			uint32_t to = dp_ft_alt(ft, node[q].bucket, bk->tag[s]);
			int ts = dp_ft_free_slot(&ft->b[to]);

			if (ts >= 0)
				return dp_ft_shift(ft, node, q, s, to, (unsigned int)ts, b);
			if (n < DP_FT_SEARCH)
				node[n++] = (struct dp_ft_node){ .bucket = to, .parent = (int16_t)q,
				    .slot = (uint8_t)s };
		}
	}
	return -1;
}

int
dp_ft_insert_far(struct dp_ft *ft, uint32_t b1, uint16_t tag, uint32_t idx)
{
	uint32_t b2 = dp_ft_alt(ft, b1, tag), b;
	int s;

	/* the key goes to b2, or a key of b1 is moved for it: before either, b1 says so */
	__atomic_store_n(&ft->b[b1].spilled, 1, __ATOMIC_RELAXED);
	if ((s = dp_ft_free_slot(&ft->b[b2])) >= 0)
		b = b2;
	else if ((s = dp_ft_make_room(ft, b1, b2, &b)) < 0)
		return -ENOSPC;
	dp_ft_place(&ft->b[b], s, tag, idx);
	return 0;
}

