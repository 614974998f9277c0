/*
 * The table of queries waiting for approval (dataplane/worker/dp_ask.h): retransmissions
 * fold into one entry that keeps the latest frame, a VM is held to its share while its
 * neighbours still get room, deadlines, and a deny reaches only the request it names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dp_ask.h"

static struct dp_ask table;

/* A question for name (dotted text) of type qtype, as dns_msg_parse() leaves it. */
static struct dns_msg
question(const char *name, uint16_t qtype)
{
	struct dns_msg q = { .qtype = qtype, .qclass = 1, .has_question = true };
	size_t n = 0;

	for (const char *l = name; *l != '\0';) {
		size_t len = strcspn(l, ".");

		q.qname[n++] = (uint8_t)len;
		memcpy(q.qname + n, l, len);
		n += len;
		l += len + (l[len] == '.');
	}
	q.qname[n++] = 0;
	q.qname_len = (uint8_t)n;
	return q;
}

/* A distinct fake frame pointer: the table never looks inside. */
static void *
frame(uintptr_t i)
{
	return (void *)(i * 16 + 16);
}

static enum dp_ask_hold
hold(uint16_t vm, const char *name, uint16_t qtype, uintptr_t f, uint64_t now, uint32_t max,
    struct dp_ask_entry **e, void **old)
{
	struct dns_msg q = question(name, qtype);

	return dp_ask_hold(&table, vm, &q, frame(f), now, 8, max, 1, e, old);
}

static int
setup(void **state)
{
	(void)state;
	dp_ask_init(&table);
	return 0;
}

static void
test_retransmits_fold_into_one_entry_with_the_latest_frame(void **state)
{
	struct dp_ask_entry *e, *again;
	void *old;

	(void)state;
	assert_int_equal(hold(1, "pypi.org", 1, 1, 100, 4, &e, &old), DP_ASK_NEW);
	assert_null(old);
	assert_ptr_equal(e->frame, frame(1));
	assert_int_equal(e->first_seen, 100);
	assert_int_equal(e->deadline, 108);
	/* the same VM, name (any case) and type: the same request */
	assert_int_equal(hold(1, "PyPI.org", 1, 2, 103, 4, &again, &old), DP_ASK_AGAIN);
	assert_ptr_equal(again, e);
	assert_ptr_equal(old, frame(1));		/* the caller frees the older frame */
	assert_ptr_equal(e->frame, frame(2));
	assert_int_equal(e->absorbed, 1);
	assert_int_equal(e->first_seen, 100);		/* no longer a wait for retransmits */
	assert_int_equal(e->deadline, 108);
	assert_int_equal(dp_ask_count(&table, 1), 1);
	/* another type, another VM, another name: requests of their own */
	assert_int_equal(hold(1, "pypi.org", 28, 3, 103, 4, &again, &old), DP_ASK_NEW);
	assert_int_equal(hold(2, "pypi.org", 1, 4, 103, 4, &again, &old), DP_ASK_NEW);
	assert_int_equal(hold(1, "pypi.org.example", 1, 5, 103, 4, &again, &old), DP_ASK_NEW);
	assert_int_equal(dp_ask_count(&table, 1), 3);
	assert_int_equal(dp_ask_count(&table, 2), 1);
}

static void
test_a_vm_is_held_to_its_share_and_neighbours_still_fit(void **state)
{
	struct dp_ask_entry *e;
	char name[32];
	void *old;

	(void)state;
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "n%d.ask.test", i);
		assert_int_equal(hold(1, name, 1, (uintptr_t)i, 10, 3, &e, &old), DP_ASK_NEW);
	}
	assert_int_equal(hold(1, "n3.ask.test", 1, 9, 10, 3, &e, &old), DP_ASK_VM_LIMIT);
	assert_null(e);
	/* at its limit a VM's retransmits are still absorbed: nothing new is held */
	assert_int_equal(hold(1, "n0.ask.test", 1, 10, 11, 3, &e, &old), DP_ASK_AGAIN);
	assert_int_equal(dp_ask_count(&table, 1), 3);
	/* its neighbours fill the rest of the table, then the table is full for everyone */
	for (unsigned int i = 3; i < DP_ASK_SLOTS; i++) {
		snprintf(name, sizeof(name), "m%u.ask.test", i);
		assert_int_equal(hold((uint16_t)(2 + i), name, 1, i, 10, 3, &e, &old), DP_ASK_NEW);
	}
	assert_int_equal(hold(500, "late.ask.test", 1, 99, 10, 3, &e, &old), DP_ASK_FULL);
	/* one ends: its slot serves the next, with a new sequence number */
	e = &table.e[0];
	uint64_t seq = e->seq;

	dp_ask_forget(&table, e);
	assert_int_equal(hold(500, "late.ask.test", 1, 99, 10, 3, &e, &old), DP_ASK_NEW);
	assert_ptr_equal(e, &table.e[0]);
	assert_true(e->seq > seq);
}

static void
test_deadline_and_deny_name_one_request(void **state)
{
	struct dp_ask_entry *a, *b;
	uint64_t seq_a;
	void *old;

	(void)state;
	assert_int_equal(hold(1, "a.ask.test", 1, 1, 50, 4, &a, &old), DP_ASK_NEW);
	assert_int_equal(hold(1, "b.ask.test", 1, 2, 52, 4, &b, &old), DP_ASK_NEW);
	assert_false(dp_ask_expired(a, 57));
	assert_true(dp_ask_expired(a, 58));		/* 50 + 8 */
	assert_false(dp_ask_expired(b, 59));
	assert_true(dp_ask_expired(b, 60));
	/* a deny names (slot, seq): b is untouched */
	dp_ask_deny(&table, (uint32_t)(a - table.e), a->seq);
	assert_true(dp_ask_denied(&table, a));
	assert_false(dp_ask_denied(&table, b));
	/* a late deny of an ended request never hits the next one in its slot */
	seq_a = a->seq;
	dp_ask_forget(&table, a);
	assert_false(dp_ask_expired(a, 1000));		/* free entries never expire */
	assert_int_equal(hold(3, "c.ask.test", 1, 3, 60, 4, &a, &old), DP_ASK_NEW);
	assert_ptr_equal(a, &table.e[0]);
	assert_false(dp_ask_denied(&table, a));
	dp_ask_deny(&table, 0, seq_a);
	assert_false(dp_ask_denied(&table, a));
	dp_ask_deny(&table, DP_ASK_SLOTS, a->seq);	/* out of range: ignored */
	assert_false(dp_ask_denied(&table, a));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_retransmits_fold_into_one_entry_with_the_latest_frame,
		    setup),
		cmocka_unit_test_setup(test_a_vm_is_held_to_its_share_and_neighbours_still_fit,
		    setup),
		cmocka_unit_test_setup(test_deadline_and_deny_name_one_request, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
