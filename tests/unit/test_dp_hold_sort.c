/*
 * dp_hold_sort(): held segments in stream order, the order of arrival kept among equal
 * offsets, whether the inline test lets it skip the sort (one segment, two in order) or
 * not. Held to a plain stable sort over random sets of up to DP_HOLD_SEGS segments, few
 * offsets, so that equal ones are common.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>

#include "dp_hold.h"

#define ROUNDS	20000

static struct dp_hold hold;

/* The reference: each segment's rank by (offset, arrival), arrival being its tag's index. */
static void
check_sorted(const struct dp_hold *h, const uint32_t *off, const uint32_t *end, uint16_t n,
    struct rte_mbuf *const *tag)
{
	uint16_t at = 0;

	assert_int_equal(h->nsegs, n);
	for (uint32_t o = 0; o < 8; o++)
		for (uint16_t i = 0; i < n; i++) {
			if (off[i] != o)
				continue;
			assert_ptr_equal(h->segs[at], tag[i]);
			assert_int_equal(h->off[at], off[i]);
			assert_int_equal(h->end[at], end[i]);
			at++;
		}
	assert_int_equal(at, n);
}

static void
test_sort_random(void **state)
{
	static struct rte_mbuf tags[DP_HOLD_SEGS];
	struct rte_mbuf *tag[DP_HOLD_SEGS];
	uint32_t off[DP_HOLD_SEGS], end[DP_HOLD_SEGS];

	(void)state;
	srand(2323);
	for (int r = 0; r < ROUNDS; r++) {
		/* mostly the few segments a hello takes, now and then many */
		uint16_t n = (uint16_t)(rand() % 4 == 0 ? rand() % (DP_HOLD_SEGS + 1) : rand() % 4);

		for (uint16_t i = 0; i < n; i++) {
			tag[i] = &tags[i];
			off[i] = (uint32_t)(rand() % 8);
			end[i] = off[i] + (uint32_t)(rand() % 3);
			hold.segs[i] = tag[i];
			hold.off[i] = off[i];
			hold.end[i] = end[i];
		}
		hold.nsegs = n;
		dp_hold_sort(&hold);
		check_sorted(&hold, off, end, n, tag);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
