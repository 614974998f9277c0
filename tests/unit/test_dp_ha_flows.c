/*
 * dp_ha_flows: the HA pair's flow table under a real EAL (--no-huge, no devices): a record
 * kept, replaced and dropped by key; a VM held to its share and the table to its size,
 * each refusal counted; a walk in steps sees every record once; records lapse when their
 * time is past, and only then.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "dp_flow.h"
#include "dp_ha_flows.h"
#include "dp_hash.h"
#include "t_eal.h"

static struct dp_ha_flow
rec(uint16_t vm, uint16_t port, uint32_t v)
{
	struct dp_ha_flow r = { .key = { .vm = vm, .family = 4, .proto = 6, .vm_port = port,
		.peer_port = 443, .peer = { 192, 0, 2, 1 } }, .name_hash = 7, .isn = v,
		.vm_nxt = v, .peer_ack = v, .peer_wnd = v, .peer_isn = v, .how = DP_ADMIT_BINDING };

	return r;
}

static void
test_put_get_del(void **state)
{
	struct dp_ha_flows *t = dp_ha_flows_create(16, 16, 4, SOCKET_ID_ANY);
	struct dp_ha_flow r = rec(1, 1000, 5), out;

	(void)state;
	assert_non_null(t);
	assert_false(dp_ha_flows_get(t, &r.key, &out));
	assert_int_equal(dp_ha_flows_put(t, &r), 0);
	assert_true(dp_ha_flows_get(t, &r.key, &out));
	assert_memory_equal(&out, &r, sizeof(r));
	r = rec(1, 1000, 9);			/* the same key: replaced, not added */
	assert_int_equal(dp_ha_flows_put(t, &r), 0);
	assert_int_equal(dp_ha_flows_count(t), 1);
	assert_true(dp_ha_flows_get(t, &r.key, &out));
	assert_int_equal(out.vm_nxt, 9);
	r.key.vm_port++;			/* another connection: not found */
	assert_false(dp_ha_flows_get(t, &r.key, &out));
	r.key.vm_port--;
	dp_ha_flows_del(t, &r.key);
	assert_false(dp_ha_flows_get(t, &r.key, &out));
	assert_int_equal(dp_ha_flows_count(t), 0);
	dp_ha_flows_del(t, &r.key);		/* gone already: nothing */
	dp_ha_flows_free(t);
}

static void
test_share_and_size(void **state)
{
	struct dp_ha_flows *t = dp_ha_flows_create(6, 2, 4, SOCKET_ID_ANY);
	struct dp_ha_flow r;
	uint64_t lost[2];

	(void)state;
	assert_non_null(t);
	for (uint16_t p = 0; p < 2; p++) {
		r = rec(1, p, p);
		assert_int_equal(dp_ha_flows_put(t, &r), 0);
	}
	r = rec(1, 2, 2);			/* VM 1 holds its share */
	assert_int_equal(dp_ha_flows_put(t, &r), -EDQUOT);
	for (uint16_t vm = 2; vm < 4; vm++)
		for (uint16_t p = 0; p < 2; p++) {
			r = rec(vm, p, p);
			assert_int_equal(dp_ha_flows_put(t, &r), 0);
		}
	r = rec(0, 0, 0);			/* six held: full */
	assert_int_equal(dp_ha_flows_put(t, &r), -ENOSPC);
	dp_ha_flows_refused(t, lost);
	assert_int_equal(lost[0], 1);
	assert_int_equal(lost[1], 1);
	r = rec(2, 0, 0);
	dp_ha_flows_del(t, &r.key);		/* room again */
	r = rec(0, 0, 0);
	assert_int_equal(dp_ha_flows_put(t, &r), 0);
	assert_int_equal(dp_ha_flows_count(t), 6);
	dp_ha_flows_free(t);
}

static void
count_seen(const struct dp_ha_flow *r, void *arg)
{
	uint32_t *seen = arg;

	seen[r->key.vm_port]++;
}

static void
test_walk_in_steps(void **state)
{
	struct dp_ha_flows *t = dp_ha_flows_create(64, 64, 4, SOCKET_ID_ANY);
	uint32_t seen[40] = { 0 }, at = 0, calls = 0;
	struct dp_ha_flow r;

	(void)state;
	assert_non_null(t);
	for (uint16_t p = 0; p < 40; p++) {
		r = rec(1, p, p);
		assert_int_equal(dp_ha_flows_put(t, &r), 0);
	}
	for (uint16_t p = 0; p < 40; p += 4) {	/* holes in the entries */
		r = rec(1, p, p);
		dp_ha_flows_del(t, &r.key);
	}
	do {
		at = dp_ha_flows_walk_some(t, at, 7, count_seen, seen);
		calls++;
	} while (at != 0 && calls < 100);
	assert_int_equal(at, 0);
	for (uint16_t p = 0; p < 40; p++)
		assert_int_equal(seen[p], p % 4 == 0 ? 0 : 1);
	dp_ha_flows_free(t);
}

static void
test_expire(void **state)
{
	struct dp_ha_flows *t = dp_ha_flows_create(64, 64, 4, SOCKET_ID_ANY);
	struct dp_ha_flow r, out;
	uint32_t cursor = 0, gone = 0, calls = 0;

	(void)state;
	assert_non_null(t);
	for (uint16_t p = 0; p < 20; p++) {
		r = rec(1, p, p);
		r.expires = p % 2 == 0 ? 100 : 200;
		assert_int_equal(dp_ha_flows_put(t, &r), 0);
	}
	do {
		gone += dp_ha_flows_expire(t, 100, 5, &cursor);
		calls++;
	} while (cursor != 0 && calls < 100);
	assert_int_equal(gone, 10);
	for (uint16_t p = 0; p < 20; p++) {
		r = rec(1, p, p);
		assert_int_equal(dp_ha_flows_get(t, &r.key, &out), p % 2 == 1);
	}
	assert_int_equal(dp_ha_flows_count(t), 10);
	dp_ha_flows_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_del),
		cmocka_unit_test(test_share_and_size),
		cmocka_unit_test(test_walk_in_steps),
		cmocka_unit_test(test_expire),
	};

	return T_EAL_RUN_AFTER("test_dp_ha_flows", "64", tests, dp_hash_init());
}
