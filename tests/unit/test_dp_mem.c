/*
 * What namegate --check says the tables need (dp_eal_tables()) against what EAL's heap
 * really gives them: the whole set-up of the daemon (dp_ctx_setup on net_null ports) and
 * a reload's two generations, at three sizes. The estimate must never be short (a start
 * would fail with EAL sized from it) and never far over (-m would waste the host's memory).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "dp.h"
#include "dp_eal.h"
#include "dp_gen.h"
#include "dp_gen_build.h"
#include "dp_run.h"
#include "policy/load.h"

#define T_MIB	(1024ull * 1024)
#define T_PORTS	T_MIB	/* two net_null ports' queues and ethdev state */

static uint64_t
t_heap_used(void)
{
	struct rte_malloc_socket_stats st;

	assert_int_equal(rte_malloc_get_socket_stats(0, &st), 0);
	return st.heap_allocsz_bytes;
}

/* The heap dp_ctx_setup() and a reload's peak (two generations with names) take for cfg. */
static uint64_t
t_measure(const struct pol_config *cfg)
{
	struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
		RTE_MAX_ETHPORTS } };
	uint64_t before = t_heap_used(), used;
	struct dp_gen *g[2];

	assert_int_equal(dp_ctx_setup(&ctx, cfg), 0);
	for (int i = 0; i < 2; i++) {
		g[i] = dp_gen_create(cfg, 100 + (uint32_t)i, ctx.nworkers, NULL, NULL);
		assert_non_null(g[i]);
		assert_int_equal(dp_gen_names_init(g[i], cfg->max_bindings + 1), 0);
	}
	used = t_heap_used() - before;
	for (int i = 0; i < 2; i++)
		dp_gen_free(g[i]);
	dp_ctx_teardown(&ctx);
	return used;
}

static void
t_compare(const char *sizes)
{
	char text[1024];
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	uint64_t used, estimate;

	snprintf(text, sizeof(text),
	    "dataplane: {vm_port: net_null0, uplink_port: net_null1, %s}\n"
	    "slow_path: {enabled: false}\n"
	    "policies:\n"
	    "  web: {allow: [pypi.org]}\n"
	    "vms:\n"
	    "  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n",
	    sizes);
	cfg = pol_load_buffer(text, strlen(text), "t.yaml", &errs);
	if (cfg == NULL)
		pol_errs_print(stderr, &errs);
	assert_non_null(cfg);
	used = t_measure(cfg);
	estimate = dp_eal_tables(cfg);
	print_message("{%s}: heap %llu KiB, estimate %llu KiB (x%.4f)\n", sizes,
	    (unsigned long long)(used / 1024), (unsigned long long)(estimate / 1024),
	    (double)estimate / (double)used);
	/* the tables, and the ports' queues, which DP_EAL_BASE holds: 1 MiB is plenty */
	assert_true(estimate + T_PORTS >= used);
	assert_true(estimate <= used + used / 10 + 4 * T_MIB);
	pol_config_free(cfg);
}

static const struct {
	const char *name, *sizes;
} t_sizes[] = {
	{ "small", "max_flows: 4096, max_flows_per_vm: 1024, max_bindings: 1024" },
	{ "default", "workers: 1" },	/* what a file that sizes nothing gets */
	{ "two_workers", "workers: 2, max_flows: 300000, max_bindings: 200000" },
	/* every per-VM table grows with max_vms, and the estimate with them */
	{ "vms_4096", "workers: 2, max_vms: 4096, max_flows: 4096, max_flows_per_vm: 1024, "
	    "max_bindings: 1024" },
};

static const char *t_which;

static void
test_estimate_covers_heap(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(t_sizes) / sizeof(t_sizes[0]); i++)
		if (strcmp(t_sizes[i].name, t_which) == 0)
			return t_compare(t_sizes[i].sizes);
	fail_msg("no size named %s", t_which);
}

/* test_dp_mem SIZE: one set-up per process (EAL sets up its ports once). */
int
main(int argc, char **argv)
{
	char prefix[32];
	char *eal[] = {
		(char *)"test_dp_mem", (char *)"--no-huge", (char *)"-m", (char *)"3072",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"--lcores",
		(char *)"(0-2)@(0)", (char *)"--vdev", (char *)"net_null0", (char *)"--vdev",
		(char *)"net_null1", (char *)"--log-level", (char *)"*:error", NULL,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate_covers_heap),
	};
	int rc;

	if (argc != 2) {
		fputs("usage: test_dp_mem small|default|two_workers|vms_4096\n", stderr);
		return 2;
	}
	t_which = argv[1];
	snprintf(prefix, sizeof(prefix), "test_dp_mem_%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return rc;
}
