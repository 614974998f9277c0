/*
 * dp_flow_tab.h's spilled mark, on hashes chosen by hand (the index takes a hash, not a
 * key; 64 buckets, a hash's bucket its low bits, its tag its high half): a key placed in
 * its other bucket because its first was full, and a key moved out of its first bucket to
 * make room for another, each leave that first bucket marked, since the burst's lookup
 * (dp_flow_lookup_start()) reads a key's second bucket only when its first is. A bucket
 * nothing left is not marked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rte_malloc.h>

#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "t_eal.h"

#define CAP	409		/* 64 buckets of 8 */

static uint32_t
hash_of(uint32_t bucket, uint16_t tag)
{
	return (uint32_t)tag << 16 | bucket;
}

/* The first tag from which bucket b's other bucket is one of none of avoid[0..n). */
static uint16_t
tag_away(const struct dp_ft *ft, uint32_t b, const uint32_t *avoid, int n)
{
	for (uint32_t tag = 1; tag <= UINT16_MAX; tag++) {
		uint32_t to = dp_ft_alt(ft, b, (uint16_t)tag);
		int i = 0;

		while (i < n && avoid[i] != to)
			i++;
		if (i == n)
			return (uint16_t)tag;
	}
	fail();
	return 0;
}

/* Is idx under tag in bucket b? */
static bool
in_bucket(const struct dp_ft *ft, uint32_t b, uint16_t tag, uint32_t idx)
{
	for (uint32_t m = dp_ft_match(&ft->b[b], tag); m != 0; m &= m - 1)
		if (ft->b[b].idx[__builtin_ctz(m) / 2] == idx)
			return true;
	return false;
}

/* Each of the n hashes h (entry i under h[i]) is in its first bucket, or that is marked. */
static void
assert_spills_marked(const struct dp_ft *ft, const uint32_t *h, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t first = dp_ft_first(ft, h[i]);

		if (!in_bucket(ft, first, dp_ft_tag(h[i]), i))
			assert_int_not_equal(ft->b[first].spilled, 0);
	}
}

static void
init_index(struct dp_ft *ft)
{
	assert_int_equal(dp_ft_init(ft, CAP, dp_hash_seed(), SOCKET_ID_ANY), 0);
	assert_int_equal(ft->mask, 63);
}

/* Bucket 0 full: the next key of bucket 0 goes to its other bucket, and 0 says so. */
static void
test_spill_to_second(void **state)
{
	struct dp_ft ft;
	uint32_t h[DP_FT_WAYS + 1];

	(void)state;
	init_index(&ft);
	for (uint32_t i = 0; i < DP_FT_WAYS + 1; i++) {
		h[i] = hash_of(0, (uint16_t)(1 + i));
		assert_int_equal(dp_ft_insert(&ft, h[i], i), 0);
		assert_int_equal(ft.b[0].spilled != 0, i == DP_FT_WAYS);
	}
	assert_false(in_bucket(&ft, 0, dp_ft_tag(h[DP_FT_WAYS]), DP_FT_WAYS));
	assert_spills_marked(&ft, h, DP_FT_WAYS + 1);
	assert_int_equal(ft.b[dp_ft_alt(&ft, 0, dp_ft_tag(h[DP_FT_WAYS]))].spilled, 0);
	dp_ft_fini(&ft);
}

/* The buckets of the scene move_scene() builds: the new key's first and other, and more. */
struct scene {
	uint32_t p, x, q, y;
	uint32_t h[3 * DP_FT_WAYS + 1], n;
};

/*
 * A new key's first bucket P and other bucket X both full, P's keys' other bucket Q full
 * too, X's keys' other bucket Y empty: room is made by moving a key of X, whose first
 * bucket X is, to Y. Entry i is indexed under h[i]; the new key is the last, n - 1.
 */
static void
move_scene(struct dp_ft *ft, struct scene *sc)
{
	uint16_t tn, tp, tq, tx;

	init_index(ft);
	sc->p = 0;
	sc->n = 0;
	tn = tag_away(ft, sc->p, &sc->p, 1);
	sc->x = dp_ft_alt(ft, sc->p, tn);
	tp = tag_away(ft, sc->p, (uint32_t[]){ sc->p, sc->x }, 2);
	sc->q = dp_ft_alt(ft, sc->p, tp);
	tx = tag_away(ft, sc->x, (uint32_t[]){ sc->p, sc->x, sc->q }, 3);
	sc->y = dp_ft_alt(ft, sc->x, tx);
	tq = tag_away(ft, sc->q, (uint32_t[]){ sc->p, sc->x, sc->q, sc->y }, 4);
	for (uint32_t i = 0; i < DP_FT_WAYS; i++) {
		sc->h[sc->n] = hash_of(sc->p, tp);
		assert_int_equal(dp_ft_insert(ft, sc->h[sc->n], sc->n), 0), sc->n++;
		sc->h[sc->n] = hash_of(sc->q, tq);
		assert_int_equal(dp_ft_insert(ft, sc->h[sc->n], sc->n), 0), sc->n++;
		sc->h[sc->n] = hash_of(sc->x, tx);
		assert_int_equal(dp_ft_insert(ft, sc->h[sc->n], sc->n), 0), sc->n++;
	}
	assert_int_equal(ft->b[sc->x].spilled | ft->b[sc->p].spilled | ft->b[sc->q].spilled, 0);
	sc->h[sc->n] = hash_of(sc->p, tn);
	assert_int_equal(dp_ft_insert(ft, sc->h[sc->n], sc->n), 0), sc->n++;
	assert_true(in_bucket(ft, sc->x, tn, sc->n - 1));	/* the new key took X's room */
	assert_int_equal(dp_ft_free_slot(&ft->b[sc->y]), 1);	/* and one of X's is in Y */
}

/* X must say that one of its keys left (the new key's own first, P, says so anyway). */
static void
test_spill_by_move(void **state)
{
	struct dp_ft ft;
	struct scene sc;

	(void)state;
	move_scene(&ft, &sc);
	assert_int_not_equal(ft.b[sc.x].spilled, 0);
	assert_spills_marked(&ft, sc.h, sc.n);
	assert_int_equal(ft.b[sc.q].spilled | ft.b[sc.y].spilled, 0);
	dp_ft_fini(&ft);
}

/*
 * dp_ft_delete_at() drops a slot only where it still is: the place a key left for its
 * other bucket (another key's slot now) is refused, as is a slot already dropped (free,
 * though it still holds the index); the key is dropped where it went, found by its hash.
 */
static void
test_delete_at_where_it_is(void **state)
{
	uint32_t moved, left, new_at;
	struct dp_ft ft;
	struct scene sc;

	(void)state;
	move_scene(&ft, &sc);
	moved = ft.b[sc.y].idx[0];
	new_at = dp_ft_place_of(&ft, sc.h[sc.n - 1], sc.n - 1);
	assert_int_equal(new_at / sizeof(ft.b[0]), sc.x);
	/* the new key took the slot the moved one left: the moved one's place once */
	left = new_at;
	assert_false(dp_ft_delete_at(&ft, left, moved));
	assert_true(in_bucket(&ft, sc.x, dp_ft_tag(sc.h[sc.n - 1]), sc.n - 1));
	assert_true(dp_ft_delete_at(&ft, new_at, sc.n - 1));
	assert_false(in_bucket(&ft, sc.x, dp_ft_tag(sc.h[sc.n - 1]), sc.n - 1));
	assert_false(dp_ft_delete_at(&ft, new_at, sc.n - 1));
	assert_int_equal(dp_ft_place_of(&ft, sc.h[moved], moved) / sizeof(ft.b[0]), sc.y);
	dp_ft_delete(&ft, sc.h[moved], moved);
	assert_int_equal(dp_ft_place_of(&ft, sc.h[moved], moved), UINT32_MAX);
	for (uint32_t i = 0; i < sc.n - 1; i++)
		if (i != moved)
			assert_true(dp_ft_place_of(&ft, sc.h[i], i) != UINT32_MAX);
	dp_ft_fini(&ft);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spill_to_second),
		cmocka_unit_test(test_spill_by_move),
		cmocka_unit_test(test_delete_at_where_it_is),
	};

	return T_EAL_RUN_AFTER("test_dp_flow_tab", "64", tests, dp_hash_init());
}
