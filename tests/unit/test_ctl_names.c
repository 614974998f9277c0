/*
 * control/names/ctl_names.c: the (VM slot, name) set a publish judges again. It holds
 * what it was made for and no more: each generation's names table takes every name in
 * it, and EAL has room for two of max_bindings, so a set past its cap (it once took the
 * index's half, up to twice the cap) would fail a publish for memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_names.h"

static int
t_add(struct ctl_names *n, uint16_t slot, uint32_t i)
{
	char name[32];

	snprintf(name, sizeof(name), "n%u.wild.test", i);
	return ctl_names_add(n, slot, name, strlen(name), NULL);
}

static void
test_holds_its_cap_and_no_more(void **state)
{
	/* a power of two and counts just over one, where the index's half is near twice */
	static const uint32_t caps[] = { 1, 1000, 1024, 1025, 70000 };

	(void)state;
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct ctl_names *n = ctl_names_create(caps[c], caps[c]);

		assert_non_null(n);
		for (uint32_t i = 0; i < caps[c]; i++)
			assert_int_equal(t_add(n, (uint16_t)(i % 3), i), 0);
		assert_false(ctl_names_overflowed(n));
		assert_int_equal(t_add(n, 0, 0), 0);		/* known: no room needed */
		assert_int_equal(t_add(n, 0, caps[c]), -ENOSPC);
		assert_true(ctl_names_overflowed(n));
		assert_int_equal(ctl_names_count(n), caps[c]);
		ctl_names_free(n);
	}
}

/*
 * Names are never forgotten, so a VM that resolves name after name would fill the set for
 * every VM without a share of its own: past its share it loses its own new names only.
 */
static void
test_one_slot_cannot_fill_it_for_all(void **state)
{
	struct ctl_names *n = ctl_names_create(1000, 300);

	(void)state;
	assert_non_null(n);
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_add(n, 1, i), 0);
	for (uint32_t i = 300; i < 2000; i++)
		assert_int_equal(t_add(n, 1, i), -ENOSPC);
	assert_int_equal(t_add(n, 1, 7), 0);		/* known: no room needed */
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(t_add(n, 2, i), 0);	/* the neighbour has all its share */
	assert_int_equal(ctl_names_count(n), 600);
	ctl_names_free(n);
}

/*
 * A flow keeps its name's hash only: the flow log finds the name by it, per slot, and not
 * after the slot's VM left (its names went with it, and the entries are taken again).
 */
static void
test_found_by_key_per_slot_until_forgotten(void **state)
{
	struct ctl_names *n = ctl_names_create(1000, 1000);
	char name[32];
	size_t len = 0;

	(void)state;
	assert_non_null(n);
	for (uint32_t i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "n%u.keyed.test", i);
		assert_int_equal(ctl_names_add_keyed(n, (uint16_t)(i % 2), name, strlen(name),
		    1000 + i, NULL), 0);
	}
	assert_int_equal(ctl_names_add(n, 0, "plain.test", 10, NULL), 0);
	for (uint32_t i = 0; i < 500; i++) {
		const char *got = ctl_names_by_key(n, (uint16_t)(i % 2), 1000 + i, &len);

		snprintf(name, sizeof(name), "n%u.keyed.test", i);
		assert_non_null(got);
		assert_int_equal(len, strlen(name));
		assert_memory_equal(got, name, len);
		/* the same key under the other slot is not this name */
		assert_null(ctl_names_by_key(n, (uint16_t)((i + 1) % 2), 1000 + i, &len));
	}
	assert_null(ctl_names_by_key(n, 0, 0, &len));
	/* a name first added unkeyed is keyed when it is added again with its key */
	assert_null(ctl_names_by_key(n, 0, 77, &len));
	assert_int_equal(ctl_names_add_keyed(n, 0, "plain.test", 10, 77, NULL), 0);
	assert_non_null(ctl_names_by_key(n, 0, 77, &len));
	assert_int_equal(ctl_names_forget(n, 1), 0);
	assert_null(ctl_names_by_key(n, 1, 1001, &len));
	assert_non_null(ctl_names_by_key(n, 0, 1000, &len));
	assert_non_null(ctl_names_by_key(n, 0, 77, &len));
	/* a forgotten entry taken again unkeyed is not found by the old key */
	assert_int_equal(ctl_names_add(n, 1, "again.test", 10, NULL), 0);
	assert_null(ctl_names_by_key(n, 1, 1001, &len));
	ctl_names_free(n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds_its_cap_and_no_more),
		cmocka_unit_test(test_one_slot_cannot_fill_it_for_all),
		cmocka_unit_test(test_found_by_key_per_slot_until_forgotten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
