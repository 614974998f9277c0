/* See dp_ctx_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "dp_ctx_fixture.h"
#include "policy/load.h"

static int
dpf_start(const char *name, const char *config, struct dp_ctx *ctx, struct pol_config **cfg)
{
	char prefix[32];
	char *argv[] = {
		(char *)name, (char *)"--no-huge", (char *)"-m", (char *)"256",
		(char *)"--no-pci", (char *)"--file-prefix", prefix, (char *)"-l", (char *)"0-1",
		(char *)"--vdev", (char *)"net_null0", (char *)"--vdev", (char *)"net_null1",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	struct pol_errs errs = { 0 };

	snprintf(prefix, sizeof(prefix), "%s_%d", name, (int)getpid());
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0)
		return -1;
	if ((*cfg = pol_load_buffer(config, strlen(config), "t.yaml", &errs)) == NULL) {
		pol_errs_print(stderr, &errs);
		return -1;
	}
	if (dp_ctx_setup(ctx, *cfg) != 0)
		return -1;
	ctx->workers[0]->now = dp_now(ctx);
	/* this thread plays worker 0 */
	rte_rcu_qsbr_thread_register(ctx->qsbr, 0);
	rte_rcu_qsbr_thread_online(ctx->qsbr, 0);
	return 0;
}

int
dpf_run(const char *name, const char *config, struct dp_ctx *ctx, struct dp_worker **w,
    const struct CMUnitTest *tests, size_t n)
{
	struct pol_config *cfg;
	int rc;

	if (dpf_start(name, config, ctx, &cfg) != 0)
		return 1;
	*w = ctx->workers[0];
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	dp_ctx_teardown(ctx);
	pol_config_free(cfg);
	rte_eal_cleanup();
	return rc;
}
