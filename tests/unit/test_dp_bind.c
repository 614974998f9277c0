/*
 * dataplane/worker/dp_bind.c: the budgets of an address (issue 23). Every name bound to
 * it counts, whichever the VM resolved first; a budgeted name pushed out of the entry by
 * newer names keeps counting while the address is bound; one VM's names are not its
 * neighbour's; another generation's indexes bring none along. dp_gen_name_ports() is a fake below: no name table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_gen.h"
#include "dp_hash.h"

const struct pol_ports *
dp_gen_name_ports(const struct dp_gen *g, uint16_t slot, uint64_t name_hash)
{
	(void)g, (void)slot, (void)name_hash;
	return NULL;
}

static struct rte_rcu_qsbr *q;		/* this thread plays the one worker */
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

static void
test_every_bound_name_counts(void **state)
{
	struct dp_vm vms[2] = { { .present = true, .budgets = 2 },
		{ .present = true, .budgets = 2 } };
	struct dp_gen g = { .id = 1, .vms = vms };
	struct dp_binds *b = dp_binds_create("t_binds", 16, 2, q, SOCKET_ID_ANY);
	uint64_t hash = 0;
	uint8_t set = 0;

	(void)state;
	assert_non_null(b);
	/* the unbudgeted name first, then the budgeted one: both count, by either name */
	t_learn(b, 0, &t_shared, 11, 0, 1);
	assert_int_equal(dp_bind_budgets(b, 0, &t_shared, 10, &g), 0);
	t_learn(b, 0, &t_shared, 12, 2, 1);
	assert_true(dp_bind_allows(b, 0, &t_shared, 443, 10, &g, &hash, &set));
	assert_int_equal(hash, 11);		/* the first name still admits */
	assert_int_equal(set, dp_budget_bit(2));
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

int
main(void)
{
	char prefix[40];
	char *eal[] = {
		(char *)"test_dp_bind", (char *)"--no-huge", (char *)"-m", (char *)"256",
		(char *)"--no-pci", (char *)"--file-prefix", prefix, (char *)"-l", (char *)"0",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_bound_name_counts),
	};
	int rc;

	snprintf(prefix, sizeof(prefix), "test_dp_bind_%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0 || dp_hash_init() != 0)
		return 1;
	q = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	if (q == NULL || rte_rcu_qsbr_init(q, 1) != 0)
		return 1;
	rte_rcu_qsbr_thread_register(q, 0);
	rte_rcu_qsbr_thread_online(q, 0);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_free(q);
	rte_eal_cleanup();
	return rc;
}
