/*
 * The real dataplane for a unit test (test_dp_burst.c, test_dp_dns_room.c): EAL on two
 * net_null ports, the test's configuration loaded, dp_ctx_setup()'s context, and this
 * thread playing worker 0. Called from main(), around cmocka's run.
 */
#ifndef DP_CTX_FIXTURE_H
#define DP_CTX_FIXTURE_H

#include <stddef.h>

#include "dp_run.h"
#include "policy/load.h"

/* 0, or -1 with what failed on stderr; *cfg is the loaded configuration. */
int dpf_start(const char *name, const char *config, struct dp_ctx *ctx,
    struct pol_config **cfg);

void dpf_stop(struct dp_ctx *ctx, struct pol_config *cfg);

#endif
