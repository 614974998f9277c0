/*
 * dataplane/worker/dp_bind.c. The budgets of an address (issue 23): every name bound to
 * it counts, whichever the VM resolved first; a budgeted name pushed out of the entry by
 * newer names keeps counting while the address is bound; one VM's names are not its
 * neighbour's; another generation's indexes bring none along. The table: every binding
 * learned up to cap is found (through both buckets of the index, dp_flow_tab.h), and only
 * by its own VM; past cap a new address is refused, and past a VM's share too; the sweep
 * deletes the expired and the orphaned in slices that resume at their cursor; a deleted
 * entry is reused only after every worker has passed a quiescent point (RCU), never while
 * one may still read it; dp_binds_mem() covers what the heap gives a table. A key is told
 * from one a byte or a word away, even in the same bucket under the same tag.
 * dp_gen_name_ports() is a fake below: no name table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp_bind.h"
#include "dp_bind_int.h"
#include "dp_budget.h"
#include "dp_gen.h"
#include "dp_hash.h"
#include "t_eal.h"

#define T_CAP		4096	/* a table of 1,024 buckets: keys spread over many */
#define T_NOW		10
#define T_SHARE		128	/* more than the sweep test's table holds */

const struct pol_ports *
dp_gen_name_ports(const struct dp_gen *g, uint16_t slot, uint64_t name_hash)
{
	(void)g, (void)slot, (void)name_hash;
	return NULL;
}

static struct rte_rcu_qsbr *q;		/* this thread plays worker 0; a reader, worker 1 */
static const struct pol_addr t_shared = { .family = 4, .a = { 203, 0, 113, 13 } };
static const struct pol_addr t_other = { .family = 4, .a = { 203, 0, 113, 14 } };

/* A name allowing port 443, counted in budget b (1 + index, 0: none). */
static struct pol_ports
t_ports(uint8_t b)
{
	struct pol_ports p = { .nallow = 1, .budget = b };

	p.allow[0] = 443;
	return p;
}

/* Bind a to name for vm until 1000, or, for a budgeted name, 500: the first to go. */
static void
t_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *a, uint64_t name, uint8_t bud,
    uint32_t gen)
{
	struct pol_ports p = t_ports(bud);

	assert_int_equal(dp_bind_learn(b, vm, a, name, &p, gen, bud != 0 ? 500 : 1000, 64), 0);
}

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

static struct pol_addr t_nth_addr(uint32_t i);

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
		far += dp_bind_find_in(b, &b->ft.b[first], dp_ft_tag(h), &k, false) == NULL;
		assert_true(t_allows(b, &keys[i], 443, T_NOW, &g, &hash));
		assert_int_equal(hash, 100 + i);
	}
	assert_true(far >= n - DP_FT_WAYS);
	dp_binds_free(b);
}

static void
test_every_bound_name_counts(void **state)
{
	struct dp_vm vms[2] = { { .present = true, .budgets = 2 },
		{ .present = true, .budgets = 2 } };
	struct dp_gen g = { .id = 1, .vms = vms };
	struct dp_binds *b = dp_binds_create("t_binds", 16, 2, q, SOCKET_ID_ANY);
	struct dp_bind_allow by;

	(void)state;
	assert_non_null(b);
	/* the unbudgeted name first, then the budgeted one: both count, by either name */
	t_learn(b, 0, &t_shared, 11, 0, 1);
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 10, &g), 0);
	t_learn(b, 0, &t_shared, 12, 2, 1);
	by = dp_bind_allows(b, 0, &t_shared, 443, 10, &g);
	assert_true(by.allowed);
	assert_int_equal(by.name_hash, 11);	/* the first name still admits */
	assert_int_equal(by.budgets, dp_budget_bit(2));
	/* more names push the budgeted one out: its budget stays with the address */
	for (uint64_t n = 13; n < 15; n++)
		t_learn(b, 0, &t_shared, n, 0, 1);
	assert_false(dp_bind_has_name(b, 0, &t_shared, 12, 10));
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 10, &g), dp_budget_bit(2));
	/* the neighbour, the same address: its own bindings */
	t_learn(b, 1, &t_shared, 11, 0, 1);
	assert_int_equal(dp_bind_budgets(b, 1, &t_shared, 10, &g), 0);
	/* another generation numbers budgets anew: what it learns, not the old set */
	g.id = 2;
	t_learn(b, 0, &t_shared, 16, 1, 2);
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 10, &g), dp_budget_bit(1));
	/* a VM without budgets has none, whatever its names say */
	vms[0].budgets = 0;
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 10, &g), 0);
	vms[0].budgets = 2;
	/* expired, or another address: nothing */
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 1000, &g), 0);
	t_learn(b, 0, &t_other, 21, 0, 2);
	assert_int_equal(dp_bind_budgets(b, 0, &t_other, 10, &g), 0);
	dp_binds_free(b);
}

/* Address i: IPv4 for even i, IPv6 for odd, all distinct below 2^24. */
static struct pol_addr
t_nth_addr(uint32_t i)
{
	struct pol_addr a = { .family = i % 2 ? 6 : 4 };
	/*
	 * Scrambled, one to one below 2^24: CRC is linear, and a run of consecutive keys can
	 * land in as many distinct buckets under some seeds, where no key ever has to move.
	 */
	uint32_t x = i * 0x9e3779u & 0xffffff;

	x ^= x >> 11;
	a.a[0] = a.family == 4 ? 10 : 0x20;
	a.a[1] = (uint8_t)(x >> 16);
	a.a[2] = (uint8_t)(x >> 8);
	a.a[3] = (uint8_t)x;
	if (a.family == 6)
		a.a[15] = 1;
	return a;
}

/* Learn address i for vm under name 1000 + i until expires: the table's answer. */
static int
t_learn_nth(struct dp_binds *b, uint16_t vm, uint32_t i, uint64_t expires, uint32_t max_per_vm)
{
	struct pol_ports p = { .nallow = 1 };
	struct pol_addr a = t_nth_addr(i);

	p.allow[0] = 443;
	return dp_bind_learn(b, vm, &a, 1000 + i, &p, 1, expires, max_per_vm);
}

static bool
t_bound_nth(struct dp_binds *b, uint16_t vm, uint32_t i)
{
	struct pol_addr a = t_nth_addr(i);

	return dp_bind_has_name(b, vm, &a, 1000 + i, T_NOW);
}

/* Sweep passes of budget bindings a slice until a whole pass is done; how many went. */
static unsigned int
t_sweep(struct dp_binds *b, uint64_t now, const struct dp_gen *g, unsigned int budget,
    unsigned int *slices)
{
	uint32_t cursor = 0;
	unsigned int deleted = 0;

	*slices = 0;
	do {
		deleted += dp_binds_sweep(b, now, g, budget, &cursor);
		++*slices;
	} while (cursor != 0);
	return deleted;
}

static void
test_fills_to_cap(void **state)
{
	struct dp_binds *b = dp_binds_create("t_fill", T_CAP, 2, q, SOCKET_ID_ANY);

	(void)state;
	assert_non_null(b);
	for (uint32_t i = 0; i < T_CAP; i++)
		assert_int_equal(t_learn_nth(b, i % 2, i, 100, T_CAP), 0);
	assert_int_equal(dp_binds_count(b, 0) + dp_binds_count(b, 1), T_CAP);
	for (uint32_t i = 0; i < T_CAP; i++) {
		assert_true(t_bound_nth(b, i % 2, i));
		assert_false(t_bound_nth(b, 1 - i % 2, i));	/* the neighbour's address */
	}
	assert_false(t_bound_nth(b, 0, T_CAP));
	/* full: a new address is refused, a known one still learns a name */
	assert_int_equal(t_learn_nth(b, 0, T_CAP, 100, T_CAP), -ENOSPC);
	assert_int_equal(t_learn_nth(b, 0, 0, 200, T_CAP), 0);
	assert_int_equal(dp_binds_count(b, 0), T_CAP / 2);
	dp_binds_free(b);
}

static void
test_share_per_vm(void **state)
{
	struct dp_binds *b = dp_binds_create("t_share", 64, 2, q, SOCKET_ID_ANY);

	(void)state;
	assert_non_null(b);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(t_learn_nth(b, 0, i, 100, 8), 0);
	assert_int_equal(t_learn_nth(b, 0, 8, 100, 8), -EDQUOT);
	assert_int_equal(t_learn_nth(b, 0, 3, 100, 8), 0);		/* a known address */
	assert_int_equal(t_learn_nth(b, 1, 8, 100, 8), 0);		/* the neighbour's share */
	assert_int_equal(dp_binds_count(b, 0), 8);
	assert_int_equal(dp_binds_count(b, 1), 1);
	dp_binds_free(b);
}

static void
test_sweep_and_grace(void **state)
{
	struct dp_vm vms[2] = { { .present = true }, { .present = false } };
	struct dp_gen g = { .id = 1, .vms = vms, .max_vms = 1 };
	struct dp_binds *b = dp_binds_create("t_sweep", 64, 2, q, SOCKET_ID_ANY);
	unsigned int slices;

	(void)state;
	assert_non_null(b);
	/* VM 0: even ones until 50, odd ones until 100; VM 1: 8 until 100 */
	for (uint32_t i = 0; i < 56; i++)
		assert_int_equal(t_learn_nth(b, 0, i, i % 2 ? 100 : 50, T_SHARE), 0);
	for (uint32_t i = 56; i < 64; i++)
		assert_int_equal(t_learn_nth(b, 1, i, 100, T_SHARE), 0);
	/* before any expiry and without the generation: nothing goes, in slices of 5 */
	assert_int_equal(t_sweep(b, 40, NULL, 5, &slices), 0);
	assert_true(slices >= 64 / 5);
	/* the even ones expire: 28 go, VM 1 stays until the generation says it is gone */
	assert_int_equal(t_sweep(b, 60, NULL, 5, &slices), 28);
	assert_int_equal(dp_binds_count(b, 0), 28);
	assert_int_equal(dp_binds_count(b, 1), 8);
	assert_int_equal(t_sweep(b, 60, &g, 5, &slices), 8);
	assert_int_equal(dp_binds_count(b, 1), 0);
	for (uint32_t i = 0; i < 56; i++)
		assert_int_equal(t_bound_nth(b, 0, i), i % 2 == 1);
	/* the deleted entries wait for this worker's quiescent point before reuse */
	assert_int_equal(t_learn_nth(b, 0, 100, 100, T_SHARE), -ENOSPC);
	rte_rcu_qsbr_quiescent(q, 0);
	for (uint32_t i = 100; i < 136; i++)
		assert_int_equal(t_learn_nth(b, 0, i, 100, T_SHARE), 0);
	assert_int_equal(t_learn_nth(b, 0, 136, 100, T_SHARE), -ENOSPC);
	for (uint32_t i = 100; i < 136; i++)
		assert_true(t_bound_nth(b, 0, i));
	for (uint32_t i = 0; i < 56; i++)		/* reused entries left nothing behind */
		assert_int_equal(t_bound_nth(b, 0, i), i % 2 == 1);
	assert_int_equal(dp_binds_count(b, 0), 64);
	dp_binds_free(b);
}

/* dp_binds_mem(), which sizes EAL, against what the heap gives the table. */
static void
test_mem_covers_heap(void **state)
{
	static const uint32_t caps[] = { 1, 1000, 100000 };

	(void)state;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct rte_malloc_socket_stats was, is;
		uint64_t used, estimate = dp_binds_mem(caps[i], 300);
		struct dp_binds *b;

		assert_int_equal(rte_malloc_get_socket_stats(0, &was), 0);
		assert_non_null(b = dp_binds_create("t_mem", caps[i], 300, q, 0));
		assert_int_equal(rte_malloc_get_socket_stats(0, &is), 0);
		used = is.heap_allocsz_bytes - was.heap_allocsz_bytes;
		print_message("cap %u: heap %llu, estimate %llu\n", caps[i],
		    (unsigned long long)used, (unsigned long long)estimate);
		/* an element's remainder too small to split stays in it: a page of slack */
		assert_true(estimate + 4096 >= used);
		assert_true(estimate <= used + used / 100 + 4096);
		dp_binds_free(b);
	}
}

#define T_RACE_STABLE	1024	/* bindings the reader must always find */
#define T_RACE_CHURN	5504	/* around them: 80 % of the index, where keys move */
#define T_RACE_ROUNDS	100

struct t_race {
	struct dp_binds *b;
	atomic_bool stop;
	atomic_ulong passes, misses;
};

/* Worker 1: look every stable binding up, again and again, while the table changes. */
static void *
t_race_reader(void *arg)
{
	struct t_race *r = arg;

	rte_rcu_qsbr_thread_register(q, 1);
	rte_rcu_qsbr_thread_online(q, 1);
	while (!atomic_load(&r->stop)) {
		for (uint32_t i = 0; i < T_RACE_STABLE; i++)
			if (!t_bound_nth(r->b, 0, i))
				atomic_fetch_add(&r->misses, 1);
		atomic_fetch_add(&r->passes, 1);
		rte_rcu_qsbr_quiescent(q, 1);
	}
	rte_rcu_qsbr_thread_offline(q, 1);
	rte_rcu_qsbr_thread_unregister(q, 1);
	return NULL;
}

/*
 * A reader beside the writer: while keys are learned into a nearly full index (moving
 * others to their other bucket to make room) and swept, no stable binding is ever missed.
 * A move between the reader's two bucket reads is a window of nanoseconds: this catches
 * a move or an update that loses a key, seldom a missing re-read of the move count.
 */
static void
test_reader_beside_writer(void **state)
{
	struct t_race r = { .b = dp_binds_create("t_race", T_RACE_STABLE + T_RACE_CHURN, 1, q,
		SOCKET_ID_ANY) };
	unsigned int slices, learned = 0;
	pthread_t reader;

	(void)state;
	assert_non_null(r.b);
	for (uint32_t i = 0; i < T_RACE_STABLE; i++)
		assert_int_equal(t_learn_nth(r.b, 0, i, 1000000, UINT32_MAX), 0);
	assert_int_equal(pthread_create(&reader, NULL, t_race_reader, &r), 0);
	for (uint32_t round = 0; round < T_RACE_ROUNDS; round++) {
		uint32_t first = T_RACE_STABLE + round * T_RACE_CHURN;	/* new keys, new places */

		for (uint32_t i = first; i < first + T_RACE_CHURN; i++) {
			int rc = t_learn_nth(r.b, 0, i, 100 + round, UINT32_MAX);

			assert_true(rc == 0 || rc == -ENOSPC);	/* the index found no room */
			learned += rc == 0;
		}
		t_sweep(r.b, 100 + round, NULL, 512, &slices);
		/* the reader's grace period, so that the next round refills the table */
		rte_rcu_qsbr_thread_offline(q, 0);
		rte_rcu_qsbr_check(q, rte_rcu_qsbr_start(q), true);
		rte_rcu_qsbr_thread_online(q, 0);
	}
	atomic_store(&r.stop, true);
	assert_int_equal(pthread_join(reader, NULL), 0);
	print_message("%lu reader passes, %u learned, %u moves\n", atomic_load(&r.passes),
	    learned, __atomic_load_n(&r.b->ft.moved, __ATOMIC_RELAXED));
	assert_true(r.b->ft.moved > 0);
	assert_true(atomic_load(&r.passes) > 0);
	assert_int_equal(atomic_load(&r.misses), 0);
	dp_binds_free(r.b);
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
		cmocka_unit_test(test_every_bound_name_counts),
		cmocka_unit_test(test_allows_by_generation),
		cmocka_unit_test(test_allows_first_name),
		cmocka_unit_test(test_allows_other_bucket),
		cmocka_unit_test(test_fills_to_cap),
		cmocka_unit_test(test_share_per_vm),
		cmocka_unit_test(test_sweep_and_grace),
		cmocka_unit_test(test_mem_covers_heap),
		cmocka_unit_test(test_reader_beside_writer),
		cmocka_unit_test(test_key_every_byte),
		cmocka_unit_test(test_key_same_slot),
	};
	int rc;

	if (t_eal_init("test_dp_bind", "256") != 0 || dp_hash_init() != 0)
		return 1;
	q = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(2), RTE_CACHE_LINE_SIZE);
	if (q == NULL || rte_rcu_qsbr_init(q, 2) != 0)
		return 1;
	rte_rcu_qsbr_thread_register(q, 0);
	rte_rcu_qsbr_thread_online(q, 0);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_free(q);
	return t_eal_done(rc);
}
