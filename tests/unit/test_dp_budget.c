/*
 * dataplane/worker: an egress budget as a worker sees it. Which budget a name or address
 * counts in (the most specific pattern of the VM's policy, none for a policy without
 * budgets), and the per-worker, per-VM cells: counted always, refused past the allowance
 * the main lcore published, spent reset by a new epoch, one VM or worker never charged
 * for another's bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dp_budget.h"
#include "policy/load.h"

#define CONFIG	"policies:\n  up:\n    allow: [\"*.github.com\", 198.51.100.0/24]\n" \
		"    budgets:\n      - {host: \"*.github.com\", upload: 1MB, per: 1h}\n" \
		"      - {host: api.github.com, upload: 2MB, per: 1h}\n" \
		"      - {host: 198.51.100.0/25, upload: 3MB, per: 1h}\n" \
		"  plain:\n    allow: [\"*.github.com\"]\n" \
		"vms:\n  - {name: vm1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: up}\n" \
		"  - {name: vm2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: plain}\n"

#define T_WORKERS	3
#define T_SLOTS		9	/* max_vms 8, and "unknown" */

/* The workers' cells ([slot][budget] each), as dp_worker_create() allocates them. */
static struct dp_budget_cell t_cells[T_WORKERS][T_SLOTS * DP_BUDGETS_MAX];
#define CELL(k, vm, i)	(t_cells[k][(vm) * DP_BUDGETS_MAX + (i)])

/* What the main lcore publishes: allowance bytes for worker k, VM slot vm, budget b. */
static void
publish(unsigned int k, uint16_t vm, uint8_t b, uint32_t epoch, uint64_t allowance)
{
	atomic_store(&CELL(k, vm, b - 1).allow, DP_BUDGET_PUBLISHED |
	    (uint64_t)epoch << DP_BUDGET_EPOCH_SHIFT | allowance);
}

static void
test_which_budget(void **state)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg = pol_load_buffer(CONFIG, strlen(CONFIG), "ng.yaml", &errs);
	struct dp_vm vms[2] = {
		{ .name = "vm1", .present = true, .policy = 0, .budgets = 3 },
		{ .name = "vm2", .present = true, .policy = 1, .budgets = 0 },
	};
	struct dp_gen g = { .budget_set = NULL, .vms = vms };
	const uint8_t in[4] = { 198, 51, 100, 7 }, out[4] = { 198, 51, 100, 200 };

	(void)state;
	assert_non_null(cfg);
	g.budget_set = cfg->budget_set;
	assert_int_equal(dp_budget_of_name(&g, 0, "uploads.github.com", 18), 1);
	assert_int_equal(dp_budget_of_name(&g, 0, "API.GitHub.com.", 15), 2);
	assert_int_equal(dp_budget_of_name(&g, 0, "github.com", 10), 0);
	assert_int_equal(dp_budget_of_name(&g, 1, "uploads.github.com", 18), 0);
	assert_int_equal(dp_budget_of_addr(&g, 0, 4, in), 3);
	assert_int_equal(dp_budget_of_addr(&g, 0, 4, out), 0);
	pol_config_free(cfg);
	pol_errs_free(&errs);
}

static void
test_cells(void **state)
{
	struct dp_worker w0 = { .id = 0, .budget_cells = t_cells[0] },
	    w1 = { .id = 1, .budget_cells = t_cells[1] };

	(void)state;
	/* never published (a budget the main lcore has not seen yet): counted, allowed */
	assert_true(dp_budget_charge(&w0, 5, 1, 1500));
	assert_false(dp_budget_spent(&w0, 5, 1));
	assert_int_equal(CELL(0, 5, 0).bytes, 1500);

	publish(0, 5, 1, 1, 1000);
	assert_true(dp_budget_charge(&w0, 5, 1, 600));
	assert_true(dp_budget_charge(&w0, 5, 1, 400));	/* exactly the allowance */
	assert_true(dp_budget_spent(&w0, 5, 1));
	assert_false(dp_budget_charge(&w0, 5, 1, 52));	/* past it: the flow is cut */
	assert_int_equal(CELL(0, 5, 0).bytes, 1500 + 1052);	/* all counted */
	/* the neighbour VM, another budget, another worker: untouched */
	assert_false(dp_budget_spent(&w0, 6, 1));
	assert_false(dp_budget_spent(&w0, 5, 2));
	assert_false(dp_budget_spent(&w1, 5, 1));
	assert_int_equal(CELL(1, 5, 0).bytes, 0);
	assert_int_equal(CELL(0, 6, 0).bytes, 0);

	/* the next second: a new epoch with what the window has left for this worker */
	publish(0, 5, 1, 2, 100);
	assert_false(dp_budget_spent(&w0, 5, 1));
	assert_true(dp_budget_charge(&w0, 5, 1, 100));
	assert_false(dp_budget_charge(&w0, 5, 1, 1));
	publish(0, 5, 1, 3, 0);				/* the window is spent */
	assert_true(dp_budget_spent(&w0, 5, 1));
	assert_false(dp_budget_charge(&w0, 5, 1, 40));
	publish(0, 5, 1, 4, 1 << 20);			/* freed */
	assert_false(dp_budget_spent(&w0, 5, 1));
	assert_true(dp_budget_charge(&w0, 5, 1, 1 << 19));
	/* the same epoch again does not give back what was spent in it */
	publish(0, 5, 1, 4, 1 << 20);
	assert_false(dp_budget_charge(&w0, 5, 1, (1 << 19) + 1));
}

/* A set of budgets: each charged with every byte, refused when any one is spent. */
static void
test_sets(void **state)
{
	struct dp_worker w = { .id = 2, .budget_cells = t_cells[2] };
	const uint8_t set = dp_budget_bit(1) | dp_budget_bit(3) | dp_budget_bit(8);

	(void)state;
	assert_int_equal(dp_budget_bit(0), 0);
	assert_int_equal(dp_budget_bit(1), 0x01);
	assert_int_equal(dp_budget_bit(8), 0x80);
	assert_true(dp_budget_charge_set(&w, 7, 0, 1500));	/* none: nothing to count */
	publish(2, 7, 1, 1, 1 << 20);
	publish(2, 7, 3, 1, 1000);
	publish(2, 7, 8, 1, 1 << 20);
	assert_true(dp_budget_charge_set(&w, 7, set, 1000));
	assert_true(dp_budget_set_spent(&w, 7, set));		/* budget 3 is */
	assert_false(dp_budget_set_spent(&w, 7, dp_budget_bit(1) | dp_budget_bit(8)));
	assert_false(dp_budget_charge_set(&w, 7, set, 10));
	/* every budget of the set counted every byte, the one that refused included */
	assert_int_equal(CELL(2, 7, 0).bytes, 1010);
	assert_int_equal(CELL(2, 7, 2).bytes, 1010);
	assert_int_equal(CELL(2, 7, 7).bytes, 1010);
	assert_int_equal(CELL(2, 7, 1).bytes, 0);	/* not in the set */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_which_budget),
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_sets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
