/*
 * dp_flow aging under a real EAL (--no-huge, no devices): a sweep closes idle flows (a SYN
 * that never sent a byte too) and those of VMs the configuration removed, slice by slice
 * from where the last slice stopped, wrapping round the table's end; a full table reclaims
 * an idle flow on open, within the credit aging gave, never a live one; the closed report
 * is called only for a flow that has something to report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <unistd.h>

#include "dp_flow.h"
#include "dp_hash.h"
#include "t_eal.h"
#include "t_flow_key.h"

#define CAP	64

static unsigned int released;

static void
count_release(struct dp_flow *f, void *arg)
{
	(void)f;
	(void)arg;
	released++;
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
	f[0]->peer_hold = 1;		/* a resolver's bytes held: the release's to free */
	released = 0;
	/* SYN_SENT flows go after 30 s idle; only one holding bytes is released first */
	assert_int_equal(dp_flows_age(t, 129, CAP, NULL, NULL, count_release, NULL), 0);
	assert_int_equal(dp_flows_age(t, 130, CAP, NULL, NULL, count_release, NULL), 2);
	assert_int_equal(released, 1);
	assert_null(dp_flow_lookup(t, &k[0]));
	assert_null(dp_flow_lookup(t, &k[1]));
	assert_non_null(dp_flow_lookup(t, &k[2]));
	assert_non_null(dp_flow_lookup(t, &k[3]));
	assert_int_equal(dp_flows_count(t, 1), 2);
	dp_flows_free(t);
}

/*
 * A reload dropped VM 1: its flows close at the next sweep however fresh they are (no
 * frame finds them again, and its slot waits for them), but a held hello stays its
 * judge's; VM 2's flows stay.
 */
static void
test_aging_closes_removed_vms_flows(void **state)
{
	struct dp_flows *t = dp_flows_create("t_gone", CAP, 4, SOCKET_ID_ANY);
	struct dp_vm vms[5] = { [1] = { .present = false }, [2] = { .present = true },
		[4] = { .present = true } };
	struct dp_gen g = { .vms = vms, .max_vms = 4, .nvms = 3 };
	struct dp_flow_key k[4] = { key(1, 1), key(1, 2), key(2, 1), key(1, 3) };
	struct dp_flow *f[4];

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < 4; i++)
		assert_non_null(f[i] = dp_flow_open(t, &k[i], CAP, 100));
	f[3]->tls = DP_TLS_PENDING;
	f[3]->hold = 1;
	/* without a generation nothing that fresh goes */
	assert_int_equal(dp_flows_age(t, 101, CAP, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(dp_flows_age(t, 101, CAP, NULL, &g, NULL, NULL), 2);
	assert_null(dp_flow_lookup(t, &k[0]));
	assert_null(dp_flow_lookup(t, &k[1]));
	assert_non_null(dp_flow_lookup(t, &k[2]));
	assert_non_null(dp_flow_lookup(t, &k[3]));
	assert_int_equal(dp_flows_count(t, 1), 1);
	assert_int_equal(dp_flows_count(t, 2), 1);
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
		struct dp_flow *f;

		k = key(2, i);
		assert_non_null(f = dp_flow_open(t, &k, CAP, i < 8 ? 10 : 30));
		f->hold = i < 4;	/* bytes held (not a pending hello's): released first */
	}
	/* full and nothing idle at 35: refused, and no live flow of another VM was taken */
	assert_int_equal(dp_flows_age(t, 35, 1, NULL, NULL, NULL, NULL), 0);
	k = key(3, 9999);
	assert_null(dp_flow_open(t, &k, CAP, 35));
	assert_int_equal(dp_flows_count(t, 2), CAP);
	/* a lap of credit at 38 (nothing idle yet); at 40 the first 8 are idle: reclaimed */
	assert_int_equal(dp_flows_age(t, 38, CAP, NULL, NULL, NULL, NULL), 0);
	released = 0;
	for (uint16_t i = 0; i < 8; i++) {
		k = key(3, (uint16_t)(9000 + i));
		assert_non_null(dp_flow_open(t, &k, CAP, 40));
	}
	k = key(3, 8999);
	assert_null(dp_flow_open(t, &k, CAP, 40));	/* the rest are live */
	assert_int_equal(released, 4);
	assert_int_equal(dp_flows_count(t, 2), CAP - 8);
	assert_int_equal(dp_flows_count(t, 3), 8);
	dp_flows_free(t);
}

/* A table of 8 flows, all open since 0 (VM 1's, ports 0..7). */
static struct dp_flows *
full_table8(const char *name)
{
	struct dp_flows *t = dp_flows_create(name, 8, 4, SOCKET_ID_ANY);
	struct dp_flow_key k;

	assert_non_null(t);
	for (uint16_t i = 0; i < 8; i++) {
		k = key(1, i);
		assert_non_null(dp_flow_open(t, &k, CAP, 0));
	}
	return t;
}

/* Without aging's credit an open examines nothing: a full table costs a VM's SYN little. */
static void
test_reclaim_needs_credit(void **state)
{
	struct dp_flows *t = full_table8("t_credit");
	struct dp_flow_key k;

	(void)state;
	k = key(1, 100);
	assert_null(dp_flow_open(t, &k, CAP, 1000));	/* all idle, but no credit yet */
	dp_flows_age(t, 0, 2, NULL, NULL, NULL, NULL);	/* closes none (not idle at 0) */
	assert_non_null(dp_flow_open(t, &k, CAP, 1000));
	dp_flows_free(t);
}

/* Which of the table's 8 entries are open, entry i as bit i. */
static unsigned int
open_entries(const struct dp_flows *t)
{
	unsigned int m = 0;

	for (uint32_t i = 0; i < dp_flows_cap(t); i++)
		m |= (unsigned int)dp_flows_entry(t, i)->in_use << i;
	return m;
}

/*
 * Aging in slices examines budget entries from where the last slice stopped, round the
 * array's end and on, each once however the budget falls: the open ones it passes close.
 */
static void
test_aging_slices_wrap(void **state)
{
	struct dp_flows *t = full_table8("t_slices");
	unsigned int at, calls;
	struct dp_flow_key k;

	(void)state;
	assert_int_equal(open_entries(t), 0xff);
	assert_int_equal(dp_flows_age(t, 1000, 5, NULL, NULL, NULL, NULL), 5);
	assert_int_equal(open_entries(t), 0xe0);
	assert_int_equal(dp_flows_age(t, 1000, 2, NULL, NULL, NULL, NULL), 2);
	assert_int_equal(open_entries(t), 0x80);
	k = key(1, 100);			/* into a freed entry behind the cursor */
	assert_non_null(dp_flow_open(t, &k, CAP, 1000));
	assert_int_equal(dp_flows_age(t, 1000, 3, NULL, NULL, NULL, NULL), 1);	/* 7, 0, 1 */
	assert_int_equal(dp_flows_count(t, 1), 1);
	/* on from entry 2, one at a time: the open one closes when its turn comes */
	at = (unsigned int)__builtin_ctz(open_entries(t));
	for (calls = 1; dp_flows_age(t, 2000, 1, NULL, NULL, NULL, NULL) == 0; calls++)
		assert_true(calls < 8);
	assert_int_equal(calls, (at + 8 - 2) % 8 + 1);
	/* a budget past the table's size is one lap */
	k = key(1, 101);
	assert_non_null(dp_flow_open(t, &k, CAP, 2000));
	assert_int_equal(dp_flows_age(t, 3000, 100, NULL, NULL, NULL, NULL), 1);
	assert_int_equal(open_entries(t), 0);
	assert_int_equal(dp_flows_age(t, 2000, 0, NULL, NULL, NULL, NULL), 0);
	dp_flows_free(t);
}

/*
 * A sweep finds an open flow wherever it is among free entries: each of a 10-entry
 * table's (free ones are skipped four at a time, and 10 is no multiple of 4), the sweep
 * starting at each of the first four entries, and past the array's end.
 */
static void
test_aging_finds_each_entry(void **state)
{
	struct dp_flow_key k;
	struct dp_flow *f[10];

	(void)state;
	for (unsigned int start = 0; start < 4; start++)
		for (unsigned int at = 0; at < 10; at++) {
			struct dp_flows *t = dp_flows_create("t_each", 10, 4, SOCKET_ID_ANY);

			assert_non_null(t);
			for (uint16_t i = 0; i < 10; i++) {
				k = key(1, i);
				assert_non_null(f[i] = dp_flow_open(t, &k, CAP, 0));
				assert_ptr_equal(f[i], dp_flows_entry(t, i));
			}
			for (unsigned int i = 0; i < 10; i++)
				if (i != at)
					dp_flow_close(t, f[i]);
			/* the cursor to start: nothing idle at 0 */
			assert_int_equal(dp_flows_age(t, 0, start, NULL, NULL, NULL, NULL), 0);
			assert_int_equal(dp_flows_age(t, 1000, 10, NULL, NULL, NULL, NULL), 1);
			assert_int_equal(dp_flows_count(t, 1), 0);
			assert_false(f[at]->in_use);
			dp_flows_free(t);
		}
}

static unsigned int reported;

static void
count_closed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg)
{
	(void)f;
	(void)a;
	(void)arg;
	reported++;
}

/*
 * The closed report: with no flow log, only a flow the HA peer was told of has an end to
 * report, and the others close without the call; with one (closed_every), every flow.
 */
static void
test_aging_reports_only_what_reports(void **state)
{
	(void)state;
	for (int every = 0; every < 2; every++) {
		struct dp_flows *t = dp_flows_create("t_report", CAP, 4, SOCKET_ID_ANY);
		struct dp_flow_key k[3] = { key(1, 1), key(1, 2), key(1, 3) };
		struct dp_flow *f[3];

		assert_non_null(t);
		dp_flows_on_report(t, count_closed, NULL, NULL, every != 0);
		for (int i = 0; i < 3; i++)
			assert_non_null(f[i] = dp_flow_open(t, &k[i], CAP, 100));
		f[1]->ha = DP_FLOW_HA_SYNCED;
		f[2]->ha = DP_FLOW_HA_ENDED;	/* its end already told */
		reported = 0;
		assert_int_equal(dp_flows_age(t, 1000, CAP, NULL, NULL, NULL, NULL), 3);
		assert_int_equal(reported, every ? 3 : 1);
		dp_flows_free(t);
	}
}

/*
 * A table filled to the load its index is sized for (80 % of its slots: some keys go to
 * their other bucket), aged out whole: each flow's slot is dropped where the flow keeps
 * it to be, so no key is found afterwards and the table takes them all again.
 */
static void
test_aging_drops_moved_slots(void **state)
{
	const uint32_t cap = 1638;	/* 256 buckets of 8: 2,048 slots */
	struct dp_flows *t = dp_flows_create("t_moved", cap, 2, SOCKET_ID_ANY);
	struct dp_flow_key k;

	(void)state;
	assert_non_null(t);
	for (int round = 0; round < 2; round++) {
		for (uint16_t i = 0; i < cap; i++) {
			k = key(1, (uint16_t)(1 + i));
			assert_non_null(dp_flow_open(t, &k, cap, 1000 * (uint64_t)round));
		}
		assert_int_equal(dp_flows_age(t, 1000 * (uint64_t)round + 100, cap, NULL, NULL,
		    NULL, NULL), cap);
		for (uint16_t i = 0; i < cap; i++) {
			k = key(1, (uint16_t)(1 + i));
			assert_null(dp_flow_lookup(t, &k));
		}
	}
	dp_flows_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aging_closes_idle),
		cmocka_unit_test(test_aging_closes_removed_vms_flows),
		cmocka_unit_test(test_full_table_reclaims_idle_only),
		cmocka_unit_test(test_reclaim_needs_credit),
		cmocka_unit_test(test_aging_slices_wrap),
		cmocka_unit_test(test_aging_finds_each_entry),
		cmocka_unit_test(test_aging_reports_only_what_reports),
		cmocka_unit_test(test_aging_drops_moved_slots),
	};

	return T_EAL_RUN_AFTER("test_dp_flow_age", "128", tests, dp_hash_init());
}
