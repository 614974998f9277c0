/*
 * control/budgets/ctl_budget_win.c: an egress budget's sliding window. used and left, the
 * 80 % warning once per climb, exhaustion at the limit, freeing as old bytes slide out,
 * long windows in coarser buckets, the HA peer's counts merged, and used against a
 * brute-force sum of random sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_budget_win.h"

static void
test_climb_and_free(void **state)
{
	struct ctl_budget_win w;

	(void)state;
	ctl_budget_win_init(&w, 1000, 3, 10);
	assert_int_equal(w.width, 1);
	assert_int_equal(w.nb, 3);
	assert_int_equal(ctl_budget_win_step(&w, 10, 500), 0);
	assert_true(w.used == 500 && ctl_budget_win_left(&w) == 500);
	assert_int_equal(ctl_budget_win_step(&w, 10, 299), 0);		/* 79.9 % */
	assert_int_equal(ctl_budget_win_step(&w, 11, 1), CTL_BUDGET_WARN);	/* 80 % */
	assert_int_equal(ctl_budget_win_step(&w, 11, 100), 0);		/* warned once */
	assert_int_equal(ctl_budget_win_step(&w, 12, 99), 0);		/* 999: under */
	assert_int_equal(ctl_budget_win_left(&w), 1);
	assert_int_equal(ctl_budget_win_step(&w, 12, 51), CTL_BUDGET_EXHAUSTED);
	assert_true(w.used == 1050 && ctl_budget_win_left(&w) == 0 && w.over);
	assert_int_equal(ctl_budget_win_step(&w, 12, 10), 0);		/* still over */
	/* second 13: what second 10 sent (799) leaves; 261 stay: freed, under 80 % again */
	assert_int_equal(ctl_budget_win_step(&w, 13, 0), CTL_BUDGET_FREED);
	assert_true(w.used == 261 && !w.over && !w.warned);
	assert_int_equal(ctl_budget_win_step(&w, 14, 0), 0);		/* 11's 101 leave */
	assert_int_equal(w.used, 160);
	assert_int_equal(ctl_budget_win_step(&w, 15, 0), 0);
	assert_int_equal(w.used, 0);
	assert_int_equal(ctl_budget_win_left(&w), 1000);
	/* re-armed: a new climb warns again, and straight past the limit says both */
	assert_int_equal(ctl_budget_win_step(&w, 16, 5000), CTL_BUDGET_WARN | CTL_BUDGET_EXHAUSTED);
	/* a jump of a window or more empties it at once */
	assert_int_equal(ctl_budget_win_step(&w, 1000, 0), CTL_BUDGET_FREED);
	assert_int_equal(w.used, 0);
}

/* Hovering around 80 % warns on each climb from under it, not on each step above it. */
static void
test_warn_once_per_crossing(void **state)
{
	struct ctl_budget_win w;
	unsigned int warns = 0;

	(void)state;
	ctl_budget_win_init(&w, 100, 2, 0);
	for (uint64_t t = 0; t < 10; t++)
		warns += (ctl_budget_win_step(&w, t, 41) & CTL_BUDGET_WARN) != 0;	/* 82 % */
	assert_int_equal(warns, 1);
	assert_false(w.over);
	ctl_budget_win_step(&w, 12, 0);					/* all gone */
	assert_int_equal(ctl_budget_win_step(&w, 13, 80), CTL_BUDGET_WARN);
}

/* An hour in 2-minute buckets: a byte leaves 3600 s after its bucket began. */
static void
test_long_window(void **state)
{
	struct ctl_budget_win w;

	(void)state;
	ctl_budget_win_init(&w, 1000000, 3600, 0);
	assert_int_equal(w.width, 120);
	assert_int_equal(w.nb, 30);
	ctl_budget_win_step(&w, 0, 700);
	ctl_budget_win_step(&w, 119, 300);	/* the same bucket */
	ctl_budget_win_step(&w, 120, 5);
	assert_int_equal(ctl_budget_win_step(&w, 3599, 0), 0);
	assert_int_equal(w.used, 1005);
	ctl_budget_win_step(&w, 3600, 0);
	assert_int_equal(w.used, 5);
	ctl_budget_win_step(&w, 3720, 0);
	assert_int_equal(w.used, 0);
	/* a window that does not divide into 30: 100 s in 4 s buckets, 25 of them */
	ctl_budget_win_init(&w, 1, 100, 0);
	assert_true(w.width == 4 && w.nb == 25);
	ctl_budget_win_init(&w, 1, 1, 7);
	assert_true(w.width == 1 && w.nb == 1);
	ctl_budget_win_step(&w, 7, 3);
	assert_int_equal(ctl_budget_win_step(&w, 8, 0), CTL_BUDGET_FREED);
}

/* A reload that keeps the window but changes the limit: bytes stay, judged anew. */
static void
test_relimit(void **state)
{
	struct ctl_budget_win w;

	(void)state;
	ctl_budget_win_init(&w, 1000, 10, 0);
	ctl_budget_win_step(&w, 0, 900);
	ctl_budget_win_relimit(&w, 800);
	assert_int_equal(ctl_budget_win_left(&w), 0);
	assert_int_equal(ctl_budget_win_step(&w, 1, 0), CTL_BUDGET_EXHAUSTED);
	ctl_budget_win_relimit(&w, 10000);
	assert_int_equal(ctl_budget_win_step(&w, 2, 0), CTL_BUDGET_FREED);
	assert_int_equal(ctl_budget_win_left(&w), 9100);
}

/* used is the sum of what was sent in the window's buckets, whatever the pattern. */
struct seen {
	uint32_t age[CTL_BUDGET_BUCKETS];
	uint64_t bytes[CTL_BUDGET_BUCKETS];
	unsigned int n;
};

static void
seen_one(uint32_t age, uint64_t bytes, void *arg)
{
	struct seen *s = arg;

	s->age[s->n] = age;
	s->bytes[s->n++] = bytes;
}

/*
 * The HA peer's counts: a live one adds to the bucket of its age, a resync's raises it,
 * ages past the window count nothing; a box's buckets walked out (ctl_budget_win_each)
 * and merged into another box's window whose clock reads otherwise give the same used,
 * and leave it when they would have left the first.
 */
static void
test_peer_merge(void **state)
{
	struct ctl_budget_win a, b;
	struct seen s = { .n = 0 };

	(void)state;
	ctl_budget_win_init(&a, 1000, 10, 100);
	ctl_budget_win_step(&a, 100, 300);
	ctl_budget_win_step(&a, 104, 200);
	ctl_budget_win_step(&a, 107, 100);
	ctl_budget_win_each(&a, 107, seen_one, &s);
	assert_int_equal(s.n, 3);
	assert_true(s.age[0] == 0 && s.bytes[0] == 100);
	assert_true(s.age[1] == 3 && s.bytes[1] == 200);
	assert_true(s.age[2] == 7 && s.bytes[2] == 300);
	/* box b's clock started elsewhere: 5000 there is 107 on a */
	ctl_budget_win_init(&b, 1000, 10, 4990);
	for (unsigned int i = 0; i < s.n; i++)
		ctl_budget_win_merge(&b, 5000, s.age[i], s.bytes[i], false);
	assert_int_equal(b.used, 600);
	/* the same resync again: raised to what it is, not added */
	for (unsigned int i = 0; i < s.n; i++)
		ctl_budget_win_merge(&b, 5000, s.age[i], s.bytes[i], false);
	assert_int_equal(b.used, 600);
	/* a live count adds; 400 more reach the limit */
	assert_int_equal(ctl_budget_win_merge(&b, 5000, 0, 200, true), CTL_BUDGET_WARN);
	assert_int_equal(ctl_budget_win_merge(&b, 5001, 0, 200, true), CTL_BUDGET_EXHAUSTED);
	assert_int_equal(ctl_budget_win_left(&b), 0);
	/* too old to count, and a smaller count than b holds, change nothing */
	assert_int_equal(ctl_budget_win_merge(&b, 5001, 10, 999, true), 0);
	assert_int_equal(ctl_budget_win_merge(&b, 5001, 1, 50, false), 0);
	assert_int_equal(b.used, 1000);
	/* a's second 100 leaves a's window at 110: b's at 5003, as its age says */
	ctl_budget_win_step(&b, 5002, 0);
	assert_int_equal(b.used, 1000);
	assert_int_equal(ctl_budget_win_step(&b, 5003, 0), CTL_BUDGET_FREED);
	assert_int_equal(b.used, 700);
}

static void
test_against_brute_force(void **state)
{
	static const uint32_t pers[] = { 1, 3, 29, 30, 31, 59, 100, 3600 };
	uint64_t sent[8000];

	(void)state;
	srand(7);
	for (size_t i = 0; i < sizeof(pers) / sizeof(pers[0]); i++) {
		struct ctl_budget_win w;
		uint64_t t = 5, left;

		memset(sent, 0, sizeof(sent));
		ctl_budget_win_init(&w, 1u << 20, pers[i], t);
		while (t < 7900) {
			uint64_t b = (uint64_t)(rand() % 1000), sum = 0, head;
			unsigned int changed;
			bool was_over = w.over;

			t += rand() % 4 == 0 ? (uint64_t)rand() % (2 * pers[i] + 2) :
			    (uint64_t)(rand() % 2);
			if (t >= 7900)
				break;
			sent[t] += b;
			changed = ctl_budget_win_step(&w, t, b);
			head = t / w.width;
			for (uint64_t s = 0; s <= t; s++)
				if (s / w.width + w.nb > head)
					sum += sent[s];
			if (w.used != sum)
				fail_msg("per %u at %llu: used %llu, sum %llu", pers[i],
				    (unsigned long long)t, (unsigned long long)w.used,
				    (unsigned long long)sum);
			left = ctl_budget_win_left(&w);
			assert_true(left == (sum < w.limit ? w.limit - sum : 0));
			assert_true(!!(changed & CTL_BUDGET_EXHAUSTED) == (!was_over && w.over));
			assert_true(!!(changed & CTL_BUDGET_FREED) == (was_over && !w.over));
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_climb_and_free),
		cmocka_unit_test(test_warn_once_per_crossing),
		cmocka_unit_test(test_long_window),
		cmocka_unit_test(test_relimit),
		cmocka_unit_test(test_peer_merge),
		cmocka_unit_test(test_against_brute_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
