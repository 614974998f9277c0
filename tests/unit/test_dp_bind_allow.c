/*
 * dataplane/worker/dp_bind.c: what dp_bind_allows() answers, by the names' generation,
 * their order and either bucket of the index; and a key told from one a byte or a word
 * away, even in the same bucket under the same tag. The budgets and the table itself:
 * test_dp_bind.c. The fixture (dp_gen_name_ports() a fake: no name table): t_bind.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rte_memory.h>

#include "dp_bind.h"
#include "dp_bind_fetch.h"
#include "dp_bind_int.h"
#include "dp_flow.h"
#include "dp_gen.h"
#include "t_bind.h"

/*
 * dp_bind_allows() judges names where they are: a VM without budgets takes the common
 * pass, which trusts a name's own ports only when it was learned under g; a name of an
 * older generation is judged by g's name table (this test's stub: no longer allowed).
 */
/* dp_bind_allows() for VM 0, which has no budgets: none in the answer either. */
static bool
t_allows(struct dp_binds *b, const struct pol_addr *a, uint16_t port, uint64_t now,
    const struct dp_gen *g, uint64_t *hash)
{
	struct dp_bind_allow by = dp_bind_allows(b, 0, a, port, now, g);

	if (by.allowed)
		*hash = by.name_hash;
	assert_true(!by.allowed || by.budgets == 0);
	return by.allowed;
}

static void
test_allows_by_generation(void **state)
{
	struct dp_vm vm = { .present = true };
	struct dp_gen g = { .id = 2, .vms = &vm };
	struct dp_binds *b = dp_binds_create("t_allow", 16, 1, q, SOCKET_ID_ANY);
	uint64_t hash = 0;

	(void)state;
	assert_non_null(b);
	t_learn(b, 0, &t_shared, 11, 0, 1);	/* its own ports allow 443, g's table does not */
	assert_false(t_allows(b, &t_shared, 443, 10, &g, &hash));
	t_learn(b, 0, &t_shared, 12, 0, 2);
	assert_true(t_allows(b, &t_shared, 443, 10, &g, &hash));
	assert_int_equal(hash, 12);
	assert_false(t_allows(b, &t_shared, 80, 10, &g, &hash));
	assert_false(t_allows(b, &t_shared, 443, 1000, &g, &hash));
	assert_false(t_allows(b, &t_other, 443, 10, &g, &hash));
	g.id = 1;				/* now the first name is g's, and admits */
	assert_true(t_allows(b, &t_shared, 443, 10, &g, &hash));
	assert_int_equal(hash, 11);
	dp_binds_free(b);
}

/* Learn a for VM 0 under name, generation 1, with ports p, until expires. */
static void
t_learn_ports(struct dp_binds *b, const struct pol_addr *a, uint64_t name,
    const struct pol_ports *p, uint64_t expires)
{
	assert_int_equal(dp_bind_learn(b, 0, a, name, p, 1, expires, 64), 0);
}

/* The name that admits VM 0 to a on port, 0 for none. */
static uint64_t
t_admits(struct dp_binds *b, const struct pol_addr *a, uint16_t port, uint64_t now,
    const struct dp_gen *g)
{
	uint64_t hash = 0;

	return t_allows(b, a, port, now, g, &hash) ? hash : 0;
}

/*
 * The common pass inline (dp_bind_allow.h) answers from the first name alone: one that is
 * live, of g, and allows the port. Everything else is the whole pass's: the first name
 * expired, refused by its ports, or denying the port though it allows any other, while a
 * later name admits; and a port-less allow admits every port only when nothing is denied
 * (dp_bind_ports_all(): each deny flag and count on its own).
 */
static void
test_allows_first_name(void **state)
{
	struct dp_vm vm = { .present = true };
	struct dp_gen g = { .id = 1, .vms = &vm };
	struct dp_binds *b = dp_binds_create("t_first", 64, 1, q, SOCKET_ID_ANY);
	struct pol_ports any = { .any = true }, p443 = t_ports(0), p;
	struct pol_addr a = t_shared;

	(void)state;
	assert_non_null(b);
	/* the first name expires first, the second admits after it */
	t_learn_ports(b, &a, 11, &any, 100);
	t_learn_ports(b, &a, 12, &p443, 200);
	assert_int_equal(t_admits(b, &a, 80, 50, &g), 11);
	assert_int_equal(t_admits(b, &a, 443, 150, &g), 12);
	assert_int_equal(t_admits(b, &a, 80, 150, &g), 0);
	assert_int_equal(t_admits(b, &a, 443, 200, &g), 0);
	/* a first name that refuses the port: the second is asked */
	a.a[3]++;
	t_learn_ports(b, &a, 21, &p443, 100);
	t_learn_ports(b, &a, 22, &any, 100);
	assert_int_equal(t_admits(b, &a, 443, 50, &g), 21);
	assert_int_equal(t_admits(b, &a, 80, 50, &g), 22);
	/* any port but a denied one, a denied list that overflowed, a port-less deny */
	for (int deny = 0; deny < 3; deny++) {
		p = any;
		if (deny == 0) {
			p.ndeny = 1;
			p.deny[0] = 443;
		} else if (deny == 1) {
			p.deny_more = true;
		} else {
			p.deny_any = true;
		}
		a.a[3]++;
		t_learn_ports(b, &a, 31, &p, 100);
		assert_int_equal(t_admits(b, &a, 443, 50, &g), 0);
		assert_int_equal(t_admits(b, &a, 80, 50, &g), deny == 0 ? 31 : 0);
	}
	/* what else the first word holds does not narrow a port-less allow */
	p = any;
	p.allow_more = true;
	p.nallow = 1;
	p.allow[0] = 22;
	a.a[3]++;
	t_learn_ports(b, &a, 41, &p, 100);
	assert_int_equal(t_admits(b, &a, 443, 50, &g), 41);
	dp_binds_free(b);
}

/*
 * A burst's fetch ahead (dp_bind_fetch()) of bound and unbound keys of both families, in
 * a table whose keys spill to their other buckets, changes no answer: it only reads.
 */
static void
test_fetch_changes_no_answer(void **state)
{
	struct dp_vm vm = { .present = true };
	struct dp_gen g = { .id = 1, .vms = &vm };
	/* 409 entries: 64 buckets of 8 slots (dp_ft_buckets()), 400 keys fill 78 % of them */
	struct dp_binds *b = dp_binds_create("t_fetch", 409, 1, q, SOCKET_ID_ANY);
	struct pol_ports p443 = t_ports(0);
	struct dp_flow_key keys[DP_BURST];
	const struct dp_flow_key *ask[DP_BURST];
	enum { BOUND = 400, ASKED = 448 };	/* some in their other bucket */
	unsigned int spilled = 0;

	(void)state;
	assert_non_null(b);
	for (uint32_t i = 0; i < BOUND; i++) {
		struct pol_addr a = t_nth_addr(i);

		struct dp_bind_key k;
		uint32_t h;

		assert_int_equal(dp_bind_learn(b, 0, &a, 1000 + i, &p443, 1, 100, BOUND), 0);
		dp_bind_key_make(&k, 0, &a);
		h = dp_bind_hash(b, &k);
		spilled += dp_bind_find_in(b, &b->ft.b[dp_ft_first(&b->ft, h)],
		    dp_ft_tag_vec(h), &k, false) == NULL;
	}
	assert_true(spilled > 0);
	for (uint32_t i = 0; i < ASKED; i += DP_BURST) {
		for (uint32_t j = 0; j < DP_BURST; j++) {
			struct pol_addr a = t_nth_addr(i + j);

			memset(&keys[j], 0, sizeof(keys[j]));
			keys[j].family = a.family;
			memcpy(keys[j].peer, a.a, sizeof(keys[j].peer));
			ask[j] = &keys[j];
		}
		dp_bind_fetch(b, ask, DP_BURST);
		for (uint32_t j = 0; j < DP_BURST; j++) {
			struct pol_addr a = t_nth_addr(i + j);

			assert_int_equal(t_admits(b, &a, 443, 50, &g),
			    i + j < BOUND ? 1000 + i + j : 0);
		}
	}
	dp_binds_free(b);
}

/*
 * More keys of one first bucket than it has slots: some live in their other bucket, where
 * the inline pass does not look, and are admitted all the same (the whole lookup's).
 */
static void
test_allows_other_bucket(void **state)
{
	struct dp_vm vm = { .present = true };
	struct dp_gen g = { .id = 1, .vms = &vm };
	struct dp_binds *b = dp_binds_create("t_other", 64, 1, q, SOCKET_ID_ANY);
	struct pol_ports p = t_ports(0);
	struct pol_addr keys[DP_FT_WAYS + 4];
	unsigned int n = 0, far = 0;
	uint32_t first = UINT32_MAX;
	uint64_t hash = 0;

	(void)state;
	assert_non_null(b);
	for (uint32_t i = 0; i < (1u << 20) && n < DP_FT_WAYS + 4; i++) {
		struct pol_addr a = t_nth_addr(2 * i);	/* IPv4 */
		struct dp_bind_key k;
		uint32_t h;

		dp_bind_key_make(&k, 0, &a);
		h = dp_bind_hash(b, &k);
		if (first == UINT32_MAX)
			first = dp_ft_first(&b->ft, h);
		if (dp_ft_first(&b->ft, h) == first)
			keys[n++] = a;
	}
	assert_int_equal(n, DP_FT_WAYS + 4);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(dp_bind_learn(b, 0, &keys[i], 100 + i, &p, 1, 1000, 64), 0);
	for (unsigned int i = 0; i < n; i++) {
		struct dp_bind_key k;
		uint32_t h;

		dp_bind_key_make(&k, 0, &keys[i]);
		h = dp_bind_hash(b, &k);
		far += dp_bind_find_in(b, &b->ft.b[first], dp_ft_tag_vec(h), &k, false) == NULL;
		assert_true(t_allows(b, &keys[i], 443, T_NOW, &g, &hash));
		assert_int_equal(hash, 100 + i);
	}
	assert_true(far >= n - DP_FT_WAYS);
	dp_binds_free(b);
}

/*
 * The key is compared word by word straight from the entry: a binding is found by its own
 * VM, family and every byte of its address, by no key one byte off, and an IPv4 address
 * by its four bytes only, whatever the rest of pol_addr holds.
 */
static void
test_key_every_byte(void **state)
{
	struct dp_binds *b = dp_binds_create("t_keys", T_CAP, 8, q, SOCKET_ID_ANY);
	struct pol_ports p = t_ports(0);

	(void)state;
	assert_non_null(b);
	for (uint8_t family = 4; family <= 6; family += 2) {
		unsigned int len = family == 4 ? 4 : 16;
		struct pol_addr a = { .family = family }, x;
		uint64_t name = 0x1000 + family;

		for (unsigned int i = 0; i < len; i++)
			a.a[i] = (uint8_t)(0x20 + 7 * i + family);
		assert_int_equal(dp_bind_learn(b, 5, &a, name, &p, 1, 1000, 64), 0);
		assert_true(dp_bind_has_name(b, 5, &a, name, T_NOW));
		assert_false(dp_bind_has_name(b, 4, &a, name, T_NOW));
		assert_false(dp_bind_has_name(b, 6, &a, name, T_NOW));
		x = a;
		x.family = family == 4 ? 6 : 4;	/* the same leading bytes, the other family */
		assert_false(dp_bind_has_name(b, 5, &x, name, T_NOW));
		for (unsigned int i = 0; i < 16; i++) {
			for (unsigned int bit = 0; bit < 8; bit++) {
				x = a;
				x.a[i] ^= (uint8_t)(1u << bit);
				/* past an IPv4 address's four bytes, pol_addr is not the key */
				assert_int_equal(dp_bind_has_name(b, 5, &x, name, T_NOW), i >= len);
			}
		}
	}
	dp_binds_free(b);
}

/*
 * Key i of a run differing from each other in word w only (IPv6: every word is address);
 * w 3: IPv4 keys, the first word's address bytes.
 */
static struct pol_addr
t_word_key(unsigned int w, uint32_t i)
{
	struct pol_addr a = { .family = w == 3 ? 4 : 6, .a = { 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3,
		4, 5, 6, 7, 8, 9, 10, 11, 12 } };
	unsigned int at = w == 0 || w == 3 ? 0 : w == 1 ? 4 : 12;	/* key offset 8w: 8w - 4 */
	uint32_t v = i * UINT32_C(0x9e3779b1);	/* all 32 bits: CRC is linear, 16 may not collide */

	memcpy(&a.a[at], &v, sizeof(v));
	return a;
}

/*
 * Two keys one word apart that share a bucket and a tag: only the comparison of whole keys
 * tells their entries apart. For each word, such a pair is bound to two names, and each key
 * finds its own, through the lookup and through the opening's inline one (which tells an
 * IPv4 key by its first word). The pair is found by birthday among keys of this table's
 * seed.
 */
static void
test_key_same_slot(void **state)
{
	struct dp_vm vms[6] = { [5] = { .present = true } };
	struct dp_gen g = { .id = 1, .vms = vms };

	(void)state;
	for (unsigned int w = 0; w < 4; w++) {
		struct dp_binds *b = dp_binds_create("t_slot", 64, 8, q, SOCKET_ID_ANY);
		uint32_t *seen, nslots, first = 0, second = 0;
		struct pol_ports p = t_ports(0);

		assert_non_null(b);
		nslots = (b->ft.mask + 1) << 16;
		assert_non_null(seen = calloc(nslots, sizeof(*seen)));
		for (uint32_t i = 1; i < (1u << 16) && second == 0; i++) {
			struct pol_addr a = t_word_key(w, i);
			struct dp_bind_key k;
			uint32_t h, slot;

			dp_bind_key_make(&k, 5, &a);
			h = dp_bind_hash(b, &k);
			slot = dp_ft_first(&b->ft, h) << 16 | dp_ft_tag(h);
			if (seen[slot] != 0) {
				first = seen[slot];
				second = i;
			}
			seen[slot] = i;
		}
		free(seen);
		assert_int_not_equal(second, 0);
		struct pol_addr a1 = t_word_key(w, first), a2 = t_word_key(w, second);

		assert_int_equal(dp_bind_learn(b, 5, &a1, 111, &p, 1, 1000, 64), 0);
		assert_int_equal(dp_bind_learn(b, 5, &a2, 222, &p, 1, 1000, 64), 0);
		assert_int_equal(dp_binds_count(b, 5), 2);
		assert_true(dp_bind_has_name(b, 5, &a1, 111, T_NOW));
		assert_false(dp_bind_has_name(b, 5, &a1, 222, T_NOW));
		assert_true(dp_bind_has_name(b, 5, &a2, 222, T_NOW));
		assert_false(dp_bind_has_name(b, 5, &a2, 111, T_NOW));
		assert_int_equal(dp_bind_allows(b, 5, &a1, 443, T_NOW, &g).name_hash, 111);
		assert_int_equal(dp_bind_allows(b, 5, &a2, 443, T_NOW, &g).name_hash, 222);
		dp_binds_free(b);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allows_by_generation),
		cmocka_unit_test(test_allows_first_name),
		cmocka_unit_test(test_allows_other_bucket),
		cmocka_unit_test(test_fetch_changes_no_answer),
		cmocka_unit_test(test_key_every_byte),
		cmocka_unit_test(test_key_same_slot),
	};

	return t_bind_run("test_dp_bind_allow", tests, sizeof(tests) / sizeof(tests[0]));
}
