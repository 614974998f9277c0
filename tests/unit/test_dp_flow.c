/*
 * dp_flow: the per-worker flow table under a real EAL (--no-huge, no devices): a burst's
 * lookup agrees with one at a time, the epoch tells a burst its answers went stale, aging
 * closes idle flows (a SYN that never sent a byte too), and a full table reclaims an idle
 * flow on open, within the credit aging gave, never a live one.
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

#include "dp_flow.h"
#include "dp_hash.h"

#define CAP	64

static struct dp_flow_key
key(uint16_t vm, uint16_t port)
{
	struct dp_flow_key k = { .vm = vm, .family = 4, .proto = 6, .vm_port = port,
		.peer_port = 443, .peer = { 192, 0, 2, 1 } };

	return k;
}

static unsigned int released;

static void
count_release(struct dp_flow *f, void *arg)
{
	(void)f;
	(void)arg;
	released++;
}

static void
test_burst_lookup_agrees(void **state)
{
	struct dp_flows *t = dp_flows_create("t_burst", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *out[DP_BURST];
	uint32_t epoch;

	(void)state;
	assert_non_null(t);
	for (uint16_t i = 0; i < DP_BURST; i++) {
		keys[i] = key(1, (uint16_t)(1000 + i));
		if (i % 2 == 0)
			assert_non_null(dp_flow_open(t, &keys[i], CAP, 0));
	}
	epoch = dp_flows_epoch(t);
	dp_flow_lookup_burst(t, keys, DP_BURST, out);
	for (unsigned int i = 0; i < DP_BURST; i++) {
		assert_ptr_equal(out[i], dp_flow_lookup(t, &keys[i]));
		assert_true((out[i] != NULL) == (i % 2 == 0));
		if (out[i] != NULL)
			assert_memory_equal(&out[i]->key, &keys[i], sizeof(keys[i]));
	}
	assert_int_equal(dp_flows_epoch(t), epoch);	/* lookups change nothing */
	dp_flow_close(t, out[0]);
	assert_int_not_equal(dp_flows_epoch(t), epoch);
	epoch = dp_flows_epoch(t);
	assert_non_null(dp_flow_open(t, &keys[1], CAP, 0));
	assert_int_not_equal(dp_flows_epoch(t), epoch);
	dp_flows_free(t);
}

static void
test_aging_closes_idle(void **state)
{
	struct dp_flows *t = dp_flows_create("t_age", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key k[4] = { key(1, 1), key(1, 2), key(1, 3), key(1, 4) };
	struct dp_flow *f[4];

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < 4; i++)
		assert_non_null(f[i] = dp_flow_open(t, &k[i], CAP, 100));
	f[1]->tls = DP_TLS_PENDING;	/* a SYN to a TLS port: no hello yet, nothing held */
	f[2]->tls = DP_TLS_PENDING;	/* a hello being held: dp_tls_expire's to cut */
	f[2]->hold = 1;
	f[3]->last_seen = 125;		/* seen since */
	released = 0;
	/* SYN_SENT flows go after 30 s idle */
	assert_int_equal(dp_flows_age(t, 129, CAP, NULL, count_release, NULL), 0);
	assert_int_equal(dp_flows_age(t, 130, CAP, NULL, count_release, NULL), 2);
	assert_int_equal(released, 2);
	assert_null(dp_flow_lookup(t, &k[0]));
	assert_null(dp_flow_lookup(t, &k[1]));
	assert_non_null(dp_flow_lookup(t, &k[2]));
	assert_non_null(dp_flow_lookup(t, &k[3]));
	assert_int_equal(dp_flows_count(t, 1), 2);
	dp_flows_free(t);
}

static void
test_full_table_reclaims_idle_only(void **state)
{
	struct dp_flows *t = dp_flows_create("t_full", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow_key k;

	(void)state;
	assert_non_null(t);
	dp_flows_on_release(t, count_release, NULL);
	for (uint16_t i = 0; i < CAP; i++) {
		k = key(2, i);
		assert_non_null(dp_flow_open(t, &k, CAP, i < 8 ? 10 : 30));
	}
	/* full and nothing idle at 35: refused, and no live flow of another VM was taken */
	assert_int_equal(dp_flows_age(t, 35, 1, NULL, NULL, NULL), 0);
	k = key(3, 9999);
	assert_null(dp_flow_open(t, &k, CAP, 35));
	assert_int_equal(dp_flows_count(t, 2), CAP);
	/* a lap of credit at 38 (nothing idle yet); at 40 the first 8 are idle: reclaimed */
	assert_int_equal(dp_flows_age(t, 38, CAP, NULL, NULL, NULL), 0);
	released = 0;
	for (uint16_t i = 0; i < 8; i++) {
		k = key(3, (uint16_t)(9000 + i));
		assert_non_null(dp_flow_open(t, &k, CAP, 40));
	}
	k = key(3, 8999);
	assert_null(dp_flow_open(t, &k, CAP, 40));	/* the rest are live */
	assert_int_equal(released, 8);
	assert_int_equal(dp_flows_count(t, 2), CAP - 8);
	assert_int_equal(dp_flows_count(t, 3), 8);
	dp_flows_free(t);
}

/* Without aging's credit an open examines nothing: a full table costs a VM's SYN little. */
static void
test_reclaim_needs_credit(void **state)
{
	struct dp_flows *t = dp_flows_create("t_credit", 8, 4, SOCKET_ID_ANY);
	struct dp_flow_key k;

	(void)state;
	assert_non_null(t);
	for (uint16_t i = 0; i < 8; i++) {
		k = key(1, i);
		assert_non_null(dp_flow_open(t, &k, CAP, 0));
	}
	k = key(1, 100);
	assert_null(dp_flow_open(t, &k, CAP, 1000));	/* all idle, but no credit yet */
	dp_flows_age(t, 0, 2, NULL, NULL, NULL);	/* closes none (not idle at 0) */
	assert_non_null(dp_flow_open(t, &k, CAP, 1000));
	dp_flows_free(t);
}

int
main(void)
{
	char prefix[64];
	char *argv[] = {
		(char *)"test_dp_flow", (char *)"--no-huge", (char *)"-m", (char *)"128",
		(char *)"--no-pci", (char *)"--file-prefix", prefix, (char *)"-l", (char *)"0",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_lookup_agrees),
		cmocka_unit_test(test_aging_closes_idle),
		cmocka_unit_test(test_full_table_reclaims_idle_only),
		cmocka_unit_test(test_reclaim_needs_credit),
	};
	int rc;

	snprintf(prefix, sizeof(prefix), "test_dp_flow_%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0 ||
	    dp_hash_init() != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
