/*
 * dataplane/main/dp_names_ring.c: the HA pair's kept DNS questions share their pool by VM.
 * A VM asking without end pushes out only its own questions; the others' stay for the
 * resync, whatever order they came in; a VM holding few takes from the one holding most
 * when the pool is full, till they hold as many; windows that ended free their places.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dp_names_ring.h"

#define POOL	64
#define VMS	4
#define PER	60

static int
keep(struct dp_names_ring *q, uint16_t slot, uint64_t now, unsigned int i)
{
	char vm[8], name[32];
	struct ctl_ha_rec r = { .type = CTL_HA_REC_NAMES, .qtype = 1, .suffix_len = 8 };

	r.vm_len = (uint8_t)snprintf(vm, sizeof(vm), "vm%u", slot);
	r.name_len = (uint8_t)snprintf(name, sizeof(name), "n%u.vm%u.example", i, slot);
	r.vm = vm;
	r.name = name;
	return dp_names_ring_keep(q, slot, now, PER, &r);
}

/* How many live questions of slot's VM, and whether the one named n<i> is among them. */
static unsigned int
live_of(const struct dp_names_ring *q, uint16_t slot, uint64_t now, int i)
{
	char want[32];
	unsigned int count = 0, found = 0;

	snprintf(want, sizeof(want), "n%d.vm%u.example", i, slot);
	for (uint32_t at = 0; at < dp_names_ring_size(q); at++) {
		const struct dp_names_entry *n = dp_names_ring_live(q, at, now, PER);

		if (n == NULL || n->slot != slot)
			continue;
		count++;
		found += n->name_len == strlen(want) && memcmp(n->name, want, n->name_len) == 0;
	}
	return i < 0 ? count : found;
}

static void
flood_pushes_out_only_its_own(void **state)
{
	struct dp_names_ring *q = dp_names_ring_new(POOL, VMS);
	unsigned int room = POOL - 10 * (VMS - 1);
	int lost = 0;

	(void)state;
	assert_non_null(q);
	for (unsigned int i = 0; i < 10; i++)
		for (uint16_t s = 1; s < VMS; s++)
			assert_int_equal(keep(q, s, 5, i), 0);
	for (unsigned int i = 0; i < 10000; i++)	/* VM 0 asks on and on */
		lost += keep(q, 0, 5 + i / 1000, i);
	for (uint16_t s = 1; s < VMS; s++) {
		assert_int_equal(live_of(q, s, 20, -1), 10);
		for (int i = 0; i < 10; i++)
			assert_int_equal(live_of(q, s, 20, i), 1);
	}
	/* VM 0 holds the rest, its youngest; what it pushed out of its own is counted */
	assert_int_equal(dp_names_ring_held(q, 0), room);
	assert_int_equal(live_of(q, 0, 20, -1), room);
	assert_int_equal(live_of(q, 0, 20, 9999), 1);
	assert_int_equal(live_of(q, 0, 20, (int)(10000 - room - 1)), 0);
	assert_int_equal(lost, 10000 - room);
	dp_names_ring_free(q);
}

static void
quiet_vms_take_from_the_one_holding_most(void **state)
{
	struct dp_names_ring *q = dp_names_ring_new(POOL, VMS);
	int lost = 0;

	(void)state;
	/* VM 1 keeps a few while VM 2 fills the rest */
	for (unsigned int i = 0; i < POOL; i++)
		assert_int_equal(keep(q, i < 4 ? 1 : 2, 1, i), 0);
	/* VM 3 then takes VM 2's oldest, one after the other, never VM 1's */
	for (unsigned int i = 0; i < 10; i++)
		lost += keep(q, 3, 2, i);
	assert_int_equal(lost, 10);
	assert_int_equal(dp_names_ring_held(q, 1), 4);
	assert_int_equal(dp_names_ring_held(q, 2), POOL - 14);
	assert_int_equal(live_of(q, 2, 2, 4), 0);
	assert_int_equal(live_of(q, 2, 2, 14), 1);
	/* and VM 0, asking on, takes from VM 2 till they hold as many, then from its own:
	 * VMs 1 and 3 keep all theirs */
	for (unsigned int i = 0; i < POOL; i++)
		keep(q, 0, 3, i);
	assert_int_equal(dp_names_ring_held(q, 1), 4);
	assert_int_equal(dp_names_ring_held(q, 3), 10);
	assert_int_equal(dp_names_ring_held(q, 0), (POOL - 14) / 2);
	assert_int_equal(dp_names_ring_held(q, 2), (POOL - 14) / 2);
	assert_int_equal(live_of(q, 0, 3, POOL - 1), 1);
	dp_names_ring_free(q);
}

static void
ended_windows_free_their_places(void **state)
{
	struct dp_names_ring *q = dp_names_ring_new(POOL, VMS);

	(void)state;
	for (unsigned int i = 0; i < POOL; i++)
		assert_int_equal(keep(q, 2, 1, i), 0);
	assert_int_equal(keep(q, 2, 1, POOL), 1);	/* its own oldest: it holds most */
	assert_int_equal(live_of(q, 2, 1 + PER - 1, -1), POOL);
	assert_int_equal(live_of(q, 2, 1 + PER, -1), 0);	/* the window is over */
	/* after it, VM 1 fills the pool, and nothing is counted lost: those had ended */
	for (unsigned int i = 0; i < POOL; i++)
		assert_int_equal(keep(q, 1, 1 + PER, 100 + i), 0);
	assert_int_equal(dp_names_ring_held(q, 1), POOL);
	assert_int_equal(dp_names_ring_held(q, 2), 0);
	/* VM 2, which held most and holds none now, asks again: it takes VM 1's oldest */
	assert_int_equal(keep(q, 2, 2 + PER, 200), 1);
	assert_int_equal(dp_names_ring_held(q, 1), POOL - 1);
	assert_int_equal(live_of(q, 1, 2 + PER, 100), 0);
	assert_int_equal(live_of(q, 2, 2 + PER, 200), 1);
	dp_names_ring_free(q);
}

static void
refuses_what_it_cannot_hold(void **state)
{
	struct dp_names_ring *q = dp_names_ring_new(POOL, VMS);
	struct ctl_ha_rec r = { .type = CTL_HA_REC_NAMES, .vm = "vm0", .vm_len = 3,
		.name = "x.example", .name_len = 9, .suffix_len = 7 };

	(void)state;
	assert_int_equal(dp_names_ring_keep(q, VMS, 1, PER, &r), -1);
	r.vm_len = CTL_HA_VM_MAX + 1;
	assert_int_equal(dp_names_ring_keep(q, 0, 1, PER, &r), -1);
	assert_int_equal(dp_names_ring_held(q, 0), 0);
	assert_int_equal(dp_names_ring_keep(NULL, 0, 1, PER, &r), -1);
	dp_names_ring_free(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flood_pushes_out_only_its_own),
		cmocka_unit_test(quiet_vms_take_from_the_one_holding_most),
		cmocka_unit_test(ended_windows_free_their_places),
		cmocka_unit_test(refuses_what_it_cannot_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
