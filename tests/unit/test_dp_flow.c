/*
 * dp_flow: the per-worker flow table under a real EAL (--no-huge, no devices): a burst's
 * lookup agrees with one at a time, and its answers confirmed late are the table's as it
 * is then; an open leaves nothing of an entry's last flow (aging: test_dp_flow_age). Its index
 * (dp_flow_tab.h):
 * keys that share a bucket pair and a tag (found by search under the process's hash
 * secret) are told apart by their keys and fill only their pair; the index takes keys to
 * 90 % of its slots, moving others along, and finds each after deletes and reinserts; the
 * table holds exactly cap flows and keeps a VM to its share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>


#include <rte_malloc.h>

#include "dp_flow.h"
#include "dp_flow_look.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "t_eal.h"
#include "t_flow_key.h"

#define CAP	64

static void
test_burst_lookup_agrees(void **state)
{
	struct dp_flows *t = dp_flows_create("t_burst", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *out[DP_BURST];

	(void)state;
	assert_non_null(t);
	for (uint16_t i = 0; i < DP_BURST; i++) {
		keys[i] = key(1, (uint16_t)(1000 + i));
		if (i % 2 == 0)
			assert_non_null(dp_flow_open(t, &keys[i], CAP, 0));
	}
	dp_flow_lookup_burst(t, keys, DP_BURST, out);
	for (unsigned int i = 0; i < DP_BURST; i++) {
		assert_ptr_equal(out[i], dp_flow_lookup(t, &keys[i]));
		assert_true((out[i] != NULL) == (i % 2 == 0));
		if (out[i] != NULL)
			assert_memory_equal(&out[i]->key, &keys[i], sizeof(keys[i]));
	}
	dp_flows_free(t);
}

/*
 * A burst's answers confirmed late (dp_flow_lookup_start(), then dp_flow_entry_is() or
 * dp_flow_lookup_hashed() when each is wanted) are the table's as it is then: a flow
 * closed since is not its key's any more (its entry keeps the key, DP_FLOW_KEY_CLOSED its
 * tail); one opened since is found; one closed, its entry reused for another key, neither.
 */
static void
test_burst_lookup_confirmed_late(void **state)
{
	struct dp_flows *t = dp_flows_create("t_late", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_lookup l[3] = { { .key = key(1, 2000) }, { .key = key(1, 2001) },
		{ .key = key(1, 2002) } };
	const struct dp_flow_key keys[3] = { l[0].key, l[1].key, l[2].key };
	struct dp_flow_key other = key(2, 2003);
	struct dp_flow *out[3], *f0, *f2, *g;
	uint32_t h[3];

	(void)state;
	assert_non_null(t);
	assert_non_null(f0 = dp_flow_open(t, &keys[0], CAP, 0));
	assert_non_null(f2 = dp_flow_open(t, &keys[2], CAP, 0));
	dp_flow_lookup_start(t, l, 3);
	for (int i = 0; i < 3; i++) {
		out[i] = l[i].found;
		h[i] = l[i].hash;
	}
	assert_ptr_equal(out[0], f0);
	assert_true(dp_flow_entry_is(out[0], &keys[0]));
	assert_null(dp_flow_lookup_hashed(t, &keys[1], h[1]));
	dp_flow_close(t, f0);
	assert_memory_equal(&out[0]->key, &keys[0], offsetof(struct dp_flow_key, zero));
	assert_int_equal(out[0]->key.zero, DP_FLOW_KEY_CLOSED);
	assert_false(dp_flow_entry_is(out[0], &keys[0]));
	assert_null(dp_flow_lookup_hashed(t, &keys[0], h[0]));
	assert_null(out[1]);			/* in neither bucket */
	assert_true(dp_flow_still_absent(t, h[1]));
	g = dp_flow_open(t, &keys[1], CAP, 0);
	assert_false(dp_flow_still_absent(t, h[1]));	/* so looked up again: found */
	assert_ptr_equal(dp_flow_lookup_hashed(t, &keys[1], h[1]), g);
	dp_flow_close(t, f2);
	assert_ptr_equal(dp_flow_open(t, &other, CAP, 0), out[2]);	/* the same entry */
	assert_false(dp_flow_entry_is(out[2], &keys[2]));
	assert_null(dp_flow_lookup_hashed(t, &keys[2], h[2]));
	assert_true(dp_flow_entry_is(out[2], &other));
	dp_flows_free(t);
}

/*
 * The burst's openings (dp_burst.c): dp_flow_lookup_rest() hands back the keys their first
 * bucket told absent, in order, and only those; and nothing without the array to fill.
 */
static void
test_burst_lookup_names_the_absent(void **state)
{
	struct dp_flows *t = dp_flows_create("t_absent", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_lookup l[4] = { { .key = key(1, 3000) }, { .key = key(1, 3001) },
		{ .key = key(1, 3002) }, { .key = key(2, 3001) } };
	const struct dp_flow_key *absent[4] = { NULL };

	(void)state;
	assert_non_null(t);
	assert_non_null(dp_flow_open(t, &l[0].key, CAP, 0));
	assert_non_null(dp_flow_open(t, &l[2].key, CAP, 0));
	for (int i = 0; i < 4; i++)
		dp_flow_lookup_begin(dp_flow_look_ft(t), &l[i], dp_flow_hash(t, &l[i].key));
	assert_int_equal(dp_flow_lookup_rest(t, l, l + 4, absent), 2);
	assert_ptr_equal(absent[0], &l[1].key);
	assert_ptr_equal(absent[1], &l[3].key);
	assert_null(absent[2]);
	for (int i = 0; i < 4; i++)
		dp_flow_lookup_begin(dp_flow_look_ft(t), &l[i], dp_flow_hash(t, &l[i].key));
	assert_int_equal(dp_flow_lookup_rest(t, l, l + 4, NULL), 0);
	assert_null(l[1].found);
	assert_non_null(l[2].found);
	dp_flows_free(t);
}

/*
 * A close drops the index's slot, leaving none that a lookup of the key would still find
 * (dp_ft_find() compares keys, not in_use): closed in two orders and opened again, every
 * key is found while open and not after.
 */
static void
test_close_leaves_no_slot(void **state)
{
	struct dp_flows *t = dp_flows_create("t_close", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *f[DP_BURST];

	(void)state;
	assert_non_null(t);
	for (uint16_t i = 0; i < DP_BURST; i++)
		keys[i] = key((uint16_t)(i % 4), (uint16_t)(2000 + i));
	for (int round = 0; round < 3; round++) {
		for (unsigned int i = 0; i < DP_BURST; i++)
			assert_non_null(f[i] = dp_flow_open(t, &keys[i], CAP, 0));
		for (unsigned int i = 0; i < DP_BURST; i++)
			assert_ptr_equal(dp_flow_lookup(t, &keys[i]), f[i]);
		for (unsigned int i = 0; i < DP_BURST; i += 2)
			dp_flow_close(t, f[i]);
		for (unsigned int i = 0; i < DP_BURST; i++)
			assert_ptr_equal(dp_flow_lookup(t, &keys[i]), i % 2 == 0 ? NULL : f[i]);
		for (unsigned int i = 1; i < DP_BURST; i += 2)
			dp_flow_close(t, f[i]);
		for (unsigned int i = 0; i < DP_BURST; i++)
			assert_null(dp_flow_lookup(t, &keys[i]));
	}
	dp_flows_free(t);
}

/*
 * An entry opened again after its flow closed holds the new key, the time and nothing of
 * the old flow: every byte past them zero.
 */
static void
test_open_clears_entry(void **state)
{
	struct dp_flows *t = dp_flows_create("t_clear", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key k = key(1, 7), k2 = key(2, 9);
	struct dp_flow *f, *g;
	const uint8_t *b;

	(void)state;
	assert_non_null(t);
	assert_non_null(f = dp_flow_open(t, &k, CAP, 5));
	memset((uint8_t *)f + sizeof(f->key), 0xa5, sizeof(*f) - sizeof(f->key));
	f->in_use = true;
	dp_flow_close(t, f);
	assert_non_null(g = dp_flow_open(t, &k2, CAP, 77));
	assert_ptr_equal(g, f);			/* the freed entry, taken first */
	assert_memory_equal(&g->key, &k2, sizeof(k2));
	assert_int_equal(g->last_seen, 77);
	assert_true(g->in_use);
	g->last_seen = 0;
	g->in_use = false;
	b = (const uint8_t *)g;
	for (size_t i = sizeof(g->key); i < sizeof(*g); i++)
		assert_int_equal(b[i], 0);
	dp_flows_free(t);
}

#define SAME		(2 * DP_FT_WAYS + 1)	/* one more than a bucket pair holds */
#define SAME_CAP	(SAME + 3)		/* a table of 4 buckets */
#define FILL_SLOTS	(64 * DP_FT_WAYS)	/* a 64-bucket index */

/* Key i of vm, i spread over the port and the peer's address: more than 2^16 of them. */
static struct dp_flow_key
wide_key(uint16_t vm, uint32_t i)
{
	struct dp_flow_key k = { .vm = vm, .family = 4, .proto = 6, .vm_port = (uint16_t)i,
		.peer_port = 443, .peer = { 192, 0, (uint8_t)(i >> 24), (uint8_t)(i >> 16) } };

	return k;
}

/*
 * Key i scattered: the hash is CRC plus secret words, linear enough that keys counting up
 * in one field spread over the buckets evenly, and this test wants them to crowd.
 */
static struct dp_flow_key
scattered(uint32_t i)
{
	uint64_t x = (i + 1) * UINT64_C(0x9e3779b97f4a7c15);
	struct dp_flow_key k = wide_key(1, (uint32_t)(x >> 48));

	memcpy(k.peer, &x, sizeof(x));
	return k;
}

/*
 * SAME keys of vm whose hashes share the first bucket and the tag in a table of SAME_CAP
 * flows (so both buckets): one in 2^18 keys does, under the secret this process drew.
 */
static void
colliding_keys(uint16_t vm, struct dp_flow_key *out)
{
	struct dp_ft ft = { .mask = dp_ft_buckets(SAME_CAP) - 1, .seed = dp_hash_seed() };
	uint32_t want = 0, n = 0;

	for (uint32_t i = 0; n < SAME; i++) {
		struct dp_flow_key k = wide_key(vm, i);
		uint32_t h = dp_ft_hash(&ft, &k);
		uint32_t sig = dp_ft_first(&ft, h) << 16 | dp_ft_tag(h);

		assert_true(i < UINT32_MAX);
		if (n == 0)
			want = sig;
		if (sig == want)
			out[n++] = k;
	}
}

/*
 * A key of vm with a bucket outside the pair k (colliding keys) fills: under some secrets
 * a fixed key's two buckets are both that pair's, and nothing could make room for it.
 */
static struct dp_flow_key
outside_pair(uint16_t vm, const struct dp_flow_key *k)
{
	struct dp_ft ft = { .mask = dp_ft_buckets(SAME_CAP) - 1, .seed = dp_hash_seed() };
	uint32_t h = dp_ft_hash(&ft, k), b0 = dp_ft_first(&ft, h);
	uint32_t b1 = dp_ft_alt(&ft, b0, dp_ft_tag(h));

	for (uint32_t i = 0;; i++) {
		struct dp_flow_key o = wide_key(vm, i);
		uint32_t ho = dp_ft_hash(&ft, &o), c0 = dp_ft_first(&ft, ho);
		uint32_t c1 = dp_ft_alt(&ft, c0, dp_ft_tag(ho));

		if ((c0 != b0 && c0 != b1) || (c1 != b0 && c1 != b1))
			return o;
	}
}

/* Keys of one bucket pair and one tag: each lookup finds its own flow, by its key. */
static void
test_tag_collisions(void **state)
{
	struct dp_flows *t = dp_flows_create("t_coll", SAME_CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key k[SAME], other;
	struct dp_flow *f[SAME], *out[SAME];

	(void)state;
	assert_non_null(t);
	colliding_keys(1, k);
	other = outside_pair(2, &k[0]);
	for (int i = 0; i < SAME - 1; i++) {
		assert_null(dp_flow_lookup(t, &k[i]));
		assert_non_null(f[i] = dp_flow_open(t, &k[i], CAP, 0));
	}
	for (int i = 0; i < SAME - 1; i++)
		assert_ptr_equal(dp_flow_lookup(t, &k[i]), f[i]);
	/* the pair is full: the VM aimed at it filled its own room, not the table */
	assert_null(dp_flow_open(t, &k[SAME - 1], CAP, 0));
	assert_int_equal(dp_flows_count(t, 1), SAME - 1);
	assert_non_null(dp_flow_open(t, &other, CAP, 0));
	dp_flow_lookup_burst(t, k, SAME, out);
	for (int i = 0; i < SAME; i++)
		assert_ptr_equal(out[i], i < SAME - 1 ? f[i] : NULL);
	/* a close makes room in the pair; what stays is still found */
	dp_flow_close(t, f[3]);
	assert_null(dp_flow_lookup(t, &k[3]));
	assert_non_null(f[3] = dp_flow_open(t, &k[SAME - 1], CAP, 0));
	assert_ptr_equal(dp_flow_lookup(t, &k[SAME - 1]), f[3]);
	for (int i = 0; i < SAME - 1; i++)
		if (i != 3)
			assert_ptr_equal(dp_flow_lookup(t, &k[i]), f[i]);
	dp_flows_free(t);
}

/*
 * The index alone, its 64 buckets filled to the load it is sized for (80 %): keys are
 * moved, none is lost, and every other one deleted goes back in. Past that load an insert
 * may fail (each searches a bounded number of buckets for room): that is what the sizing
 * is for, so the refill is asked only at the design load.
 */
static void
test_index_fills_and_moves(void **state)
{
	struct dp_flow *e = rte_zmalloc(NULL, FILL_SLOTS * sizeof(*e), 64);
	uint32_t h[FILL_SLOTS], n = 0, moved = 0;
	struct dp_ft ft;

	(void)state;
	assert_non_null(e);
	assert_int_equal(dp_ft_init(&ft, FILL_SLOTS * DP_FT_LOAD_DEN / DP_FT_LOAD_NUM,
	    dp_hash_seed(), SOCKET_ID_ANY), 0);
	assert_int_equal(ft.mask, 63);
	for (; n < FILL_SLOTS * DP_FT_LOAD_DEN / DP_FT_LOAD_NUM; n++) {
		e[n].key = scattered(n);
		h[n] = dp_ft_hash(&ft, &e[n].key);
		assert_int_equal(dp_ft_insert(&ft, h[n], n), 0);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct dp_ft_bucket *b = &ft.b[dp_ft_first(&ft, h[i])];

		assert_ptr_equal(dp_ft_find(&ft, h[i], e, &e[i].key), &e[i]);
		moved += dp_ft_find_in(b, dp_ft_tag(h[i]), e, &e[i].key) == NULL;
	}
	assert_true(moved > 0);		/* some live in their second bucket */
	/* every other one out, then back in: the rest stay found, the deleted are not */
	for (uint32_t i = 0; i < n; i += 2)
		dp_ft_delete(&ft, h[i], i);
	for (uint32_t i = 0; i < n; i++)
		assert_ptr_equal(dp_ft_find(&ft, h[i], e, &e[i].key), i % 2 ? &e[i] : NULL);
	for (uint32_t i = 0; i < n; i += 2)
		assert_int_equal(dp_ft_insert(&ft, h[i], i), 0);
	for (uint32_t i = 0; i < n; i++)
		assert_ptr_equal(dp_ft_find(&ft, h[i], e, &e[i].key), &e[i]);
	dp_ft_fini(&ft);
	rte_free(e);
}

/* cap flows fit whatever cap is (not a power of two here), and not one more. */
static void
test_holds_cap(void **state)
{
	const uint32_t cap = 1000;
	struct dp_flows *t = dp_flows_create("t_cap", cap, 2, SOCKET_ID_ANY);
	struct dp_flow_key k;

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < cap; i++) {
		k = wide_key(1, i);
		assert_non_null(dp_flow_open(t, &k, cap, 0));
	}
	k = wide_key(1, cap);
	assert_null(dp_flow_open(t, &k, cap, 0));
	for (uint32_t i = 0; i < cap; i++) {
		k = wide_key(1, i);
		assert_non_null(dp_flow_lookup(t, &k));
	}
	assert_int_equal(dp_flows_count(t, 1), cap);
	dp_flows_free(t);
}

/* A VM at its share is refused; another VM is not; a close gives the share back. */
static void
test_per_vm_share(void **state)
{
	struct dp_flows *t = dp_flows_create("t_share", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key k;
	struct dp_flow *f = NULL;

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < 3; i++) {
		k = wide_key(1, i);
		assert_non_null(f = dp_flow_open(t, &k, 3, 0));
	}
	k = wide_key(1, 3);
	assert_null(dp_flow_open(t, &k, 3, 0));
	assert_null(dp_flow_lookup(t, &k));
	k = wide_key(2, 3);
	assert_non_null(dp_flow_open(t, &k, 3, 0));
	dp_flow_close(t, f);
	assert_int_equal(dp_flows_count(t, 1), 2);
	k = wide_key(1, 3);
	assert_non_null(dp_flow_open(t, &k, 3, 0));
	k = wide_key(5, 0);			/* past nvms */
	assert_null(dp_flow_open(t, &k, 3, 0));
	dp_flows_free(t);
}

/* A burst of present, absent and repeated keys agrees with lookups one at a time. */
static void
test_burst_equals_single(void **state)
{
	struct dp_flows *t = dp_flows_create("t_bsingle", 4096, 4, SOCKET_ID_ANY);
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *out[DP_BURST];

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < 3000; i++) {
		struct dp_flow_key k = wide_key(1, i * 7);

		assert_non_null(dp_flow_open(t, &k, UINT32_MAX, 0));
	}
	for (uint32_t round = 0; round < 64; round++) {
		for (uint32_t i = 0; i < DP_BURST; i++)
			keys[i] = wide_key(1, (round * 131 + i * 5) % 4000 * (i % 3 ? 7 : 1));
		keys[DP_BURST - 1] = keys[0];
		dp_flow_lookup_burst(t, keys, DP_BURST, out);
		for (uint32_t i = 0; i < DP_BURST; i++) {
			assert_ptr_equal(out[i], dp_flow_lookup(t, &keys[i]));
			if (out[i] != NULL)
				assert_true(dp_flow_is(out[i], &keys[i]));
		}
	}
	dp_flows_free(t);
}

/*
 * A table filled to its capacity holds some keys in their second bucket: the burst's
 * lookup names an entry for each present key (a NULL would say it is absent), and a NULL
 * for an absent one is the table's answer.
 */
static void
test_burst_lookup_second_bucket(void **state)
{
	const uint32_t cap = 409;	/* 64 buckets of 8, four fifths full */
	struct dp_flows *t = dp_flows_create("t_second", cap, 2, SOCKET_ID_ANY);
	struct dp_flow_lookup l[DP_BURST];

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < cap; i++) {
		struct dp_flow_key k = scattered(i);

		assert_non_null(dp_flow_open(t, &k, UINT32_MAX, 0));
	}
	for (uint32_t at = 0; at < 2 * cap; at += DP_BURST) {
		for (uint32_t i = 0; i < DP_BURST; i++)
			l[i].key = scattered(at + i);		/* from cap on: absent */
		dp_flow_lookup_start(t, l, DP_BURST);
		for (uint32_t i = 0; i < DP_BURST; i++) {
			struct dp_flow *f = dp_flow_lookup(t, &l[i].key);

			assert_true((f != NULL) == (at + i < cap));
			assert_int_equal(l[i].hash, dp_flow_hash(t, &l[i].key));
			if (l[i].found == NULL)
				assert_null(f);
			else if (!dp_flow_entry_is(l[i].found, &l[i].key))
				assert_ptr_equal(dp_flow_lookup_hashed(t, &l[i].key, l[i].hash), f);
			else
				assert_ptr_equal(l[i].found, f);
		}
	}
	dp_flows_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_lookup_agrees),
		cmocka_unit_test(test_burst_lookup_confirmed_late),
		cmocka_unit_test(test_burst_lookup_names_the_absent),
		cmocka_unit_test(test_burst_lookup_second_bucket),
		cmocka_unit_test(test_open_clears_entry),
		cmocka_unit_test(test_close_leaves_no_slot),
		cmocka_unit_test(test_tag_collisions),
		cmocka_unit_test(test_index_fills_and_moves),
		cmocka_unit_test(test_holds_cap),
		cmocka_unit_test(test_per_vm_share),
		cmocka_unit_test(test_burst_equals_single),
	};

	return T_EAL_RUN_AFTER("test_dp_flow", "128", tests, dp_hash_init());
}
