/*
 * control/nft/ctl_mirror.c, the bindings the main lcore lists and feeds nftables from:
 * one VM slot filling its share loses its own new bindings while a neighbour's still go
 * in; expiry gives the share back; churn far past the table's size never makes it "full"
 * with room to spare (tombstones are rebuilt away); a slot forgotten leaves its
 * neighbours' bindings; and what a walk lists is what is live.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_mirror.h"

static const char name_a[] = "a.example", name_b[] = "b.example";
static const struct dp_evt_ports any = { .all = 1 };

/* the i-th IPv4 address 10.x.y.z */
static int
t_bind(struct ctl_mirror *m, uint16_t slot, uint32_t i, const char *name, uint64_t expires)
{
	uint8_t addr[16] = { 10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i };

	return ctl_mirror_bind(m, slot, 4, addr, name, expires, 1, &any);
}

static void
t_count(const struct ctl_mirror_ent *e, void *arg)
{
	(void)e;
	(*(unsigned int *)arg)++;
}

static unsigned int
t_walk(const struct ctl_mirror *m, int slot, uint64_t now)
{
	unsigned int n = 0;

	if (slot < 0)
		ctl_mirror_walk_all(m, now, t_count, &n);
	else
		ctl_mirror_walk(m, (uint16_t)slot, now, t_count, &n);
	return n;
}

static void
test_one_slot_fills_only_its_share(void **state)
{
	struct ctl_mirror *m = ctl_mirror_create(1000, 300);

	(void)state;
	assert_non_null(m);
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_bind(m, 7, i, name_a, 100), 0);
	/* its next binding is its own loss; the same one again only refreshes */
	assert_int_equal(t_bind(m, 7, 300, name_a, 100), -ENOSPC);
	assert_int_equal(t_bind(m, 7, 299, name_b, 100), -ENOSPC);
	assert_int_equal(t_bind(m, 7, 10, name_a, 200), 0);
	assert_int_equal(ctl_mirror_count(m, 7), 300);
	/* a neighbour still binds, up to its own share */
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_bind(m, 8, i, name_a, 100), 0);
	assert_int_equal(t_walk(m, 7, 50), 300);
	assert_int_equal(t_walk(m, 8, 50), 300);
	/* the table's own cap still holds with every slot in its share */
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_bind(m, 9, i, name_a, 100), 0);
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(t_bind(m, 10, i, name_a, 100), 0);
	assert_int_equal(t_bind(m, 11, 0, name_a, 100), -ENOSPC);
	assert_int_equal(t_walk(m, -1, 50), 1000);
	ctl_mirror_free(m);
}

static void
test_expiry_gives_the_share_back(void **state)
{
	struct ctl_mirror *m = ctl_mirror_create(1000, 100);

	(void)state;
	assert_non_null(m);
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(t_bind(m, 1, i, name_a, i < 50 ? 10 : 100), 0);
	assert_int_equal(t_bind(m, 1, 100, name_a, 100), -ENOSPC);
	assert_int_equal(t_walk(m, 1, 20), 50);	/* expired ones are not listed */
	ctl_mirror_expire(m, 20, 1u << 20);
	assert_int_equal(ctl_mirror_count(m, 1), 50);
	for (uint32_t i = 100; i < 150; i++)
		assert_int_equal(t_bind(m, 1, i, name_a, 100), 0);
	assert_int_equal(t_bind(m, 1, 150, name_a, 100), -ENOSPC);
	ctl_mirror_free(m);
}

/*
 * Bind and expire, over and over, 50 times the table's keys: with tombstones never
 * cleared, a key whose run held none found the table full once they filled it.
 */
static void
test_churn_never_fills_it(void **state)
{
	struct ctl_mirror *m = ctl_mirror_create(512, 512);
	uint64_t now = 1;

	(void)state;
	assert_non_null(m);
	for (uint32_t round = 0; round < 100; round++, now++) {
		for (uint32_t i = 0; i < 500; i++)
			assert_int_equal(t_bind(m, 3, round * 500 + i, name_a, now + 1), 0);
		ctl_mirror_expire(m, now + 1, 1u << 20);
		assert_int_equal(ctl_mirror_count(m, 3), 0);
	}
	ctl_mirror_free(m);
}

static void
test_forget_slot_leaves_neighbours(void **state)
{
	struct ctl_mirror *m = ctl_mirror_create(1000, 1000);

	(void)state;
	assert_non_null(m);
	for (uint32_t i = 0; i < 200; i++) {
		assert_int_equal(t_bind(m, 4, i, name_a, 100), 0);
		assert_int_equal(t_bind(m, 5, i, name_a, 100), 0);
	}
	ctl_mirror_forget_slot(m, 4);
	assert_int_equal(ctl_mirror_count(m, 4), 0);
	assert_int_equal(t_walk(m, 4, 0), 0);
	assert_int_equal(t_walk(m, 5, 0), 200);
	/* the slot starts again from nothing: its old bindings are not found again */
	assert_int_equal(t_bind(m, 4, 0, name_a, 100), 0);
	assert_int_equal(t_walk(m, 4, 0), 1);
	ctl_mirror_free(m);
}

/* A walk in steps of 7 places sees every live binding once, as one walk does. */
static void
test_walk_in_steps(void **state)
{
	struct ctl_mirror *m = ctl_mirror_create(1024, 1024);
	unsigned int n = 0, steps = 0;
	uint32_t at = 0;

	(void)state;
	assert_non_null(m);
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_bind(m, 1, i, name_a, i < 100 ? 5 : 50), 0);
	do {
		at = ctl_mirror_walk_some(m, 10, at, 7, t_count, &n);
		steps++;
	} while (at != 0);
	assert_int_equal(n, 200);		/* the 100 expired at 10 left out */
	assert_int_equal(n, t_walk(m, -1, 10));
	assert_true(steps > 200 / 7);
	ctl_mirror_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_slot_fills_only_its_share),
		cmocka_unit_test(test_walk_in_steps),
		cmocka_unit_test(test_expiry_gives_the_share_back),
		cmocka_unit_test(test_churn_never_fills_it),
		cmocka_unit_test(test_forget_slot_leaves_neighbours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
