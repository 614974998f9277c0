/*
 * DNS name budgets: the two-window arithmetic against a brute-force count, and the
 * per-VM memory of names (seen names stay free, a full region refuses only its own VM).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dp_dns_budget.h"
#include "dp_hash.h"
#include "t_eal.h"

/* What dp_name_budget_charge() does for a new name: roll, and count it if there is room. */
static bool
admit(struct dp_window *w, uint32_t count, uint32_t per, uint64_t now)
{
	dp_window_roll(w, per, now);
	if (!dp_window_room(w, count, now))
		return false;
	w->cur++;
	return true;
}

#define T_QTYPE_A	1

/* dp_name_budget_charge() for a NUL-terminated name's A question. */
static enum dp_name_budget_verdict
charge(struct dp_name_budget *t, uint16_t vm, const char *name, size_t suffix_len,
    uint32_t count, uint32_t per, uint64_t now)
{
	return dp_name_budget_charge(t, vm, name, strlen(name), T_QTYPE_A, suffix_len, count,
	    per, now);
}

/* The weighted estimate at each second of a window, by hand: prev 10, per 100. */
static void
test_window_weights(void **state)
{
	struct dp_window w = { 0 };

	(void)state;
	dp_window_roll(&w, 100, 50);
	assert_int_equal(w.k, 0);
	w.cur = 10;
	dp_window_roll(&w, 100, 100);		/* the next window: cur becomes prev */
	assert_int_equal(w.k, 1);
	assert_int_equal(w.prev, 10);
	assert_int_equal(w.cur, 0);
	/* at 100, prev weighs all of its 10: a count of 10 is full, 11 has room for one */
	assert_false(dp_window_room(&w, 10, 100));
	assert_true(dp_window_room(&w, 11, 100));
	/* at 150 it weighs 5: 5 more fit under 10, the sixth does not */
	for (int i = 0; i < 5; i++)
		assert_true(admit(&w, 10, 100, 150));
	assert_false(admit(&w, 10, 100, 150));
	assert_int_equal(w.cur, 5);
	/* at 190 prev weighs 1 (10 * 10 / 100): 5 + 1 < 10, room for 4 more */
	for (int i = 0; i < 4; i++)
		assert_true(admit(&w, 10, 100, 190));
	assert_false(admit(&w, 10, 100, 190));
	/* two windows later nothing weighs: a gap forgets both */
	dp_window_roll(&w, 100, 300);
	assert_int_equal(w.prev, 0);
	assert_int_equal(w.cur, 0);
	assert_false(dp_window_live(&w, 300));
	w.cur = 1;
	assert_true(dp_window_live(&w, 399));
	assert_true(dp_window_live(&w, 499));	/* as prev it still weighs */
	assert_false(dp_window_live(&w, 500));
	/* a reload with another window length starts the counts again */
	w.cur = 7;
	dp_window_roll(&w, 60, 420);
	assert_int_equal(w.per, 60);
	assert_int_equal(w.k, 7);
	assert_int_equal(w.cur + w.prev, 0);
}

/*
 * Offer a name every `gap` seconds (several at once when gap is 0, a burst) for a long
 * time, and count what was admitted in every span of per seconds: never more than
 * 2 * count (the bound in dp_dns_budget.h); each fixed window at most count; and at a
 * steady rate below the budget everything passes.
 */
static void
check_spans(uint32_t count, uint32_t per, const uint32_t *offers, size_t seconds)
{
	static uint32_t admitted[4096];
	struct dp_window w = { 0 };
	uint64_t span = 0, fixed = 0, worst = 0;

	assert_true(seconds <= 4096);
	memset(admitted, 0, sizeof(admitted));
	for (size_t t = 0; t < seconds; t++)
		for (uint32_t i = 0; i < offers[t]; i++)
			if (admit(&w, count, per, t))
				admitted[t]++;
	for (size_t t = 0; t < seconds; t++) {
		span += admitted[t];
		if (t >= per)
			span -= admitted[t - per];
		if (span > worst)
			worst = span;
		fixed = t % per == 0 ? admitted[t] : fixed + admitted[t];
		assert_true(fixed <= count);
	}
	assert_true(worst <= 2ull * count);
}

static void
test_window_bounds(void **state)
{
	static uint32_t offers[4096];

	(void)state;
	/* a flood: 50 names a second, budget 20 per 60 s */
	for (size_t t = 0; t < 4096; t++)
		offers[t] = 50;
	check_spans(20, 60, offers, 4096);
	/* bursts just before each window ends, then silence */
	memset(offers, 0, sizeof(offers));
	for (size_t t = 59; t < 4096; t += 60)
		offers[t] = 1000;
	check_spans(20, 60, offers, 4096);

	/* a steady rate under the budget is never refused: 1 name each 6 s, 20 per 100 s */
	{
		struct dp_window w = { 0 };

		for (uint64_t t = 0; t < 4000; t += 6)
			assert_true(admit(&w, 20, 100, t));
	}
	/* and a steady rate over it is held to the budget: 1 a second, 20 per 100 s */
	{
		struct dp_window w = { 0 };
		unsigned int in_last = 0;

		for (uint64_t t = 0; t < 1000; t++)
			if (admit(&w, 20, 100, t) && t >= 900)
				in_last++;
		assert_true(in_last >= 19 && in_last <= 21);
	}
}

static void
test_names_seen_and_spent(void **state)
{
	struct dp_name_budget *t = dp_name_budget_create(4, SOCKET_ID_ANY);
	const char *sfx = "githubusercontent.com";
	size_t sl = strlen(sfx);
	char name[64];

	(void)state;
	assert_non_null(t);
	/* 5 per 60 s: five new names in, the sixth refused */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "n%d.%s", i, sfx);
		assert_int_equal(charge(t, 1, name, sl, 5, 60, 10), DP_NB_OK);
	}
	assert_int_equal(charge(t, 1, "n5.githubusercontent.com", sl, 5, 60, 11), DP_NB_SPENT);
	/* a name seen keeps resolving, in any case, and costs nothing */
	assert_int_equal(charge(t, 1, "N0.GitHubUserContent.com", sl, 5, 60, 12), DP_NB_OK);
	/* another suffix has its own budget, another VM its own everything */
	assert_int_equal(charge(t, 1, "a.example.org", 11, 5, 60, 12), DP_NB_OK);
	assert_int_equal(charge(t, 2, "n5.githubusercontent.com", sl, 5, 60, 12), DP_NB_OK);
	/*
	 * At 71 (window 1, 11 s in) the first window's 5 weigh 5 * 49/60 = 4.08: room for one.
	 * n0, asked at 12, is remembered until 72 and costs nothing; n1, last asked at 10, was
	 * forgotten at 70 and is new again, taking the room; n7 finds none (1 + 4.08 >= 5).
	 */
	assert_int_equal(charge(t, 1, "n0.githubusercontent.com", sl, 5, 60, 71), DP_NB_OK);
	assert_int_equal(charge(t, 1, "n1.githubusercontent.com", sl, 5, 60, 71), DP_NB_OK);
	assert_int_equal(charge(t, 1, "n7.githubusercontent.com", sl, 5, 60, 71), DP_NB_SPENT);
	/* at 119 they weigh 5 * 1/60: 1 + 0.08, room again */
	assert_int_equal(charge(t, 1, "n7.githubusercontent.com", sl, 5, 60, 119), DP_NB_OK);
	/* out-of-range input fails closed */
	assert_int_equal(charge(t, 5, "x.example.org", 11, 5, 60, 1), DP_NB_FULL);
	assert_int_equal(charge(t, 1, "example.org", 11, 5, 60, 1), DP_NB_FULL);
	dp_name_budget_free(t);
}

/*
 * The question counts, not the name: a name seen once is not free again under another
 * type (16 bits the VM chooses per query); the same question asked again is.
 */
static void
test_questions_not_names(void **state)
{
	struct dp_name_budget *t = dp_name_budget_create(4, SOCKET_ID_ANY);
	const char *name = "x.githubusercontent.com";
	size_t sl = strlen("githubusercontent.com"), len = strlen(name);

	(void)state;
	assert_non_null(t);
	for (uint16_t qtype = 1; qtype <= 5; qtype++)	/* A, NS, MD, MF, CNAME: five new */
		assert_int_equal(dp_name_budget_charge(t, 1, name, len, qtype, sl, 5, 60, 10),
		    DP_NB_OK);
	assert_int_equal(dp_name_budget_charge(t, 1, name, len, 28, sl, 5, 60, 10), DP_NB_SPENT);
	assert_int_equal(dp_name_budget_charge(t, 1, name, len, 200, sl, 5, 60, 10), DP_NB_SPENT);
	/* asked again, in another spelling: seen */
	assert_int_equal(dp_name_budget_charge(t, 1, "X.GitHubUserContent.com", len, 1, sl, 5,
	    60, 11), DP_NB_OK);
	dp_name_budget_free(t);
}

/* A VM whose region is full is refused (FULL); its neighbour is not touched. */
static void
test_names_full_region(void **state)
{
	struct dp_name_budget *t = dp_name_budget_create(2, SOCKET_ID_ANY);
	unsigned int ok = 0, full = 0, first_full = 0;
	char name[64];

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < 3 * DP_NAMES_PER_VM; i++) {
		snprintf(name, sizeof(name), "x%d.example.org", i);
		switch (charge(t, 0, name, 11, 1000000, 3600, 5)) {
		case DP_NB_OK:
			ok++;
			break;
		case DP_NB_FULL:
			if (full++ == 0)
				first_full = ok;
			break;
		default:
			fail_msg("spent with a budget of a million");
		}
	}
	/* the emptier of two buckets: most of the region fills before the first refusal */
	assert_true(ok <= DP_NAMES_PER_VM);
	assert_true(first_full >= DP_NAMES_PER_VM * 7 / 10);
	assert_true(ok >= DP_NAMES_PER_VM * 9 / 10);
	assert_int_equal(ok + full, 3 * DP_NAMES_PER_VM);
	/* the names it has are still its own, and VM 1 has all of its region */
	assert_int_equal(charge(t, 0, "x0.example.org", 11, 1000000, 3600, 6), DP_NB_OK);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "y%d.example.org", i);
		assert_int_equal(charge(t, 1, name, 11, 1000000, 3600, 6), DP_NB_OK);
	}
	/* once the window passes, its forgotten names make room again */
	assert_int_equal(charge(t, 0, "fresh.example.org", 11, 1000000, 3600,
	    5 + 3600), DP_NB_OK);
	dp_name_budget_free(t);
}

/* More live suffixes than a VM's counters: FULL for that VM until one stops weighing. */
static void
test_names_suffixes(void **state)
{
	struct dp_name_budget *t = dp_name_budget_create(1, SOCKET_ID_ANY);
	char name[64];

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < DP_SUFFIXES_PER_VM; i++) {
		int n = snprintf(name, sizeof(name), "a.s%02d.example", i);

		assert_int_equal(charge(t, 0, name, (size_t)n - 2, 10, 60, 0), DP_NB_OK);
	}
	assert_int_equal(charge(t, 0, "a.other.example", 13, 10, 60, 1), DP_NB_FULL);
	assert_int_equal(charge(t, 1, "a.other.example", 13, 10, 60, 1), DP_NB_OK);
	/* two windows on, the old counters weigh nothing and are taken again */
	assert_int_equal(charge(t, 0, "a.other.example", 13, 10, 60, 120), DP_NB_OK);
	dp_name_budget_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_weights),
		cmocka_unit_test(test_window_bounds),
		cmocka_unit_test(test_names_seen_and_spent),
		cmocka_unit_test(test_questions_not_names),
		cmocka_unit_test(test_names_full_region),
		cmocka_unit_test(test_names_suffixes),
	};

	return T_EAL_RUN_AFTER("test_dp_dns_budget", "128", tests, dp_hash_init());
}
