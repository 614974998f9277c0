/*
 * dataplane/worker/dp_bind.c. The budgets of an address (issue 23): every name bound to
 * it counts, whichever the VM resolved first; a budgeted name pushed out of the entry by
 * newer names keeps counting while the address is bound; one VM's names are not its
 * neighbour's; another generation's indexes bring none along. The table: every binding
 * learned up to cap is found (through both buckets of the index, dp_flow_tab.h), and only
 * by its own VM; past cap a new address is refused, and past a VM's share too; the sweep
 * deletes the expired and the orphaned in slices that resume at their cursor; a deleted
 * entry is reused only after every worker has passed a quiescent point (RCU), never while
 * one may still read it; dp_binds_mem() covers what the heap gives a table. What
 * dp_bind_allows() answers, and a key told from its neighbours: test_dp_bind_allow.c. The
 * fixture (dp_gen_name_ports() a fake: no name table): t_bind.h.
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

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp_bind.h"
#include "dp_bind_int.h"
#include "dp_budget.h"
#include "dp_gen.h"
#include "t_bind.h"

#define T_SHARE		128	/* more than the sweep test's table holds */

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_bound_name_counts),
		cmocka_unit_test(test_fills_to_cap),
		cmocka_unit_test(test_share_per_vm),
		cmocka_unit_test(test_sweep_and_grace),
		cmocka_unit_test(test_mem_covers_heap),
		cmocka_unit_test(test_reader_beside_writer),
	};

	return t_bind_run("test_dp_bind", tests, sizeof(tests) / sizeof(tests[0]));
}
