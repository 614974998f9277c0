/*
 * A flow whose index slot a move took to its key's other bucket is still dropped from the
 * index when it closes: its close finds the place it kept taken by another key or free
 * (dp_ft_delete_at() refuses it) and drops its slot where the move put it, by its key's
 * hash (dp_flow_unindex_moved()). Without that, each such close leaves a slot behind
 * that no flow owns, and the index fills with them. The table is filled to its cap at
 * 80 % of the index's slots until moves have happened, then emptied: no slot may stay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dp_flow.h"
#include "dp_flow_int.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "t_eal.h"
#include "t_flow_key.h"

#define CAP	102	/* 16 buckets of 8: 128 slots, 80 % of them taken when full */
#define ROUNDS	64

/* Slots of the index in use: tags not zero. */
static uint32_t
t_slots_used(const struct dp_flows *t)
{
	uint32_t used = 0;

	for (uint32_t b = 0; b <= t->ft.mask; b++)
		for (int s = 0; s < DP_FT_WAYS; s++)
			used += t->ft.b[b].tag[s] != 0;
	return used;
}

static void
test_moved_flows_leave_no_slot(void **state)
{
	struct dp_flows *t = dp_flows_create("t_moved", CAP, 4, SOCKET_ID_ANY);
	struct dp_flow *open[CAP];
	uint32_t rounds_moved = 0;

	(void)state;
	assert_non_null(t);
	assert_int_equal(t->ft.mask + 1, 16);
	for (uint16_t round = 0; round < ROUNDS; round++) {
		uint32_t moved = __atomic_load_n(&t->ft.moved, __ATOMIC_RELAXED), n = 0;

		for (uint16_t i = 0; i < CAP; i++) {
			struct dp_flow_key k = key((uint16_t)(1 + round % 3),
			    (uint16_t)(1024 + round * CAP + i));

			if ((open[n] = dp_flow_open(t, &k, CAP, 0)) != NULL)
				n++;
		}
		assert_true(n >= CAP - 2);	/* a full bucket pair may refuse one or two */
		assert_int_equal(t_slots_used(t), n);
		rounds_moved += __atomic_load_n(&t->ft.moved, __ATOMIC_RELAXED) != moved;
		/* every other first, then the rest: a flow's bucket changes under the closes */
		for (uint32_t i = 0; i < n; i += 2)
			dp_flow_close(t, open[i]);
		for (uint32_t i = 1; i < n; i += 2)
			dp_flow_close(t, open[i]);
		assert_int_equal(t_slots_used(t), 0);
	}
	print_message("rounds with a move: %u of %u\n", rounds_moved, ROUNDS);
	assert_true(rounds_moved > 0);
	dp_flows_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moved_flows_leave_no_slot),
	};

	return T_EAL_RUN_AFTER("test_dp_flow_moved", "128", tests, dp_hash_init());
}
