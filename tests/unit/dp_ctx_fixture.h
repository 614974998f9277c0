/*
 * The real dataplane for a unit test (test_dp_burst.c, test_dp_dns_room.c): EAL on two
 * net_null ports, the test's configuration loaded, dp_ctx_setup()'s context, and this
 * thread playing worker 0, around cmocka's run of the tests.
 */
#ifndef DP_CTX_FIXTURE_H
#define DP_CTX_FIXTURE_H

#include <stddef.h>

#include "dp_run.h"

struct CMUnitTest;

/*
 * Runs the n tests of program name on the dataplane config sets up in ctx, *w its worker 0;
 * cmocka's exit status, or 1 when the dataplane cannot start (why on stderr).
 */
int dpf_run(const char *name, const char *config, struct dp_ctx *ctx, struct dp_worker **w,
    const struct CMUnitTest *tests, size_t n);

#endif
