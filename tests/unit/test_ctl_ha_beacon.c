/*
 * control/hasync: the pair's beacon. One written is taken whole; what must change nothing
 * does not: the same beacon again (a VM's replay), an older one, one of an earlier epoch,
 * the box's own, one altered or cut, one with another pair's key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_ha_beacon.h"
#include "ctl_ha_wire.h"

static const uint8_t psk[CTL_HA_PSK_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0xa };

static size_t
beacon(uint8_t *f, const uint8_t *key, uint8_t flags, uint64_t epoch, uint64_t counter)
{
	struct ctl_ha_beacon b = { .flags = flags, .priority = 200, .epoch = epoch,
		.counter = counter };

	return ctl_ha_beacon_encode(f, key, mac, &b);
}

static void
test_taken(void **state)
{
	uint8_t key[CTL_HA_BEACON_KEY], f[CTL_HA_BEACON_LEN + 8] = { 0 };
	struct ctl_ha_peer p = { 0 };
	size_t n;

	(void)state;
	ctl_ha_beacon_key(key, psk);
	n = beacon(f, key, CTL_HA_BEACON_FORWARDS, 77, 1);
	assert_int_equal(n, CTL_HA_BEACON_LEN);
	assert_int_equal(f[0] & 1, 1);		/* a group address: flooded */
	assert_int_equal(f[12] << 8 | f[13], CTL_HA_BEACON_TYPE);
	assert_memory_equal(f + 6, mac, 6);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, n, 1000), CTL_HA_BEACON_TAKEN);
	assert_true(p.seen);
	assert_int_equal(p.last.priority, 200);
	assert_int_equal(p.last.flags, CTL_HA_BEACON_FORWARDS);
	assert_int_equal(p.last.epoch, 77);
	assert_int_equal(p.last.counter, 1);
	assert_int_equal(p.at_ms, 1000);
	/* padded by a NIC: the same */
	n = beacon(f, key, 0, 77, 2);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, n + 8, 1100), CTL_HA_BEACON_TAKEN);
	assert_int_equal(p.last.flags, 0);
	/* a restarted peer: a higher epoch, its counter from 1 again */
	n = beacon(f, key, CTL_HA_BEACON_HELD, 78, 1);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, n, 1200), CTL_HA_BEACON_TAKEN);
	assert_int_equal(p.last.flags, CTL_HA_BEACON_HELD);
	assert_int_equal(p.taken, 3);
}

static void
test_replays_change_nothing(void **state)
{
	uint8_t key[CTL_HA_BEACON_KEY], f[CTL_HA_BEACON_LEN], old[CTL_HA_BEACON_LEN];
	uint8_t older_epoch[CTL_HA_BEACON_LEN];
	struct ctl_ha_peer p = { 0 }, before;

	(void)state;
	ctl_ha_beacon_key(key, psk);
	(void)beacon(older_epoch, key, CTL_HA_BEACON_FORWARDS, 76, 900);
	(void)beacon(old, key, CTL_HA_BEACON_FORWARDS, 77, 9);
	(void)beacon(f, key, 0, 77, 10);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, sizeof(f), 1000), CTL_HA_BEACON_TAKEN);
	before = p;
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, sizeof(f), 2000), CTL_HA_BEACON_STALE);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, old, sizeof(old), 2000),
	    CTL_HA_BEACON_STALE);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, older_epoch, sizeof(older_epoch), 2000),
	    CTL_HA_BEACON_STALE);
	assert_int_equal(p.stale, 3);
	p.stale = 0;
	assert_memory_equal(&p, &before, sizeof(p));
}

static void
test_refused(void **state)
{
	uint8_t key[CTL_HA_BEACON_KEY], other[CTL_HA_BEACON_KEY], f[CTL_HA_BEACON_LEN];
	uint8_t psk2[CTL_HA_PSK_BYTES] = { 9 };
	struct ctl_ha_peer p = { 0 };

	(void)state;
	ctl_ha_beacon_key(key, psk);
	ctl_ha_beacon_key(other, psk2);
	assert_memory_not_equal(key, psk, sizeof(key));	/* derived, not the sync key */
	(void)beacon(f, other, CTL_HA_BEACON_FORWARDS, 77, 1);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, sizeof(f), 0), CTL_HA_BEACON_BAD);
	(void)beacon(f, key, CTL_HA_BEACON_FORWARDS, 77, 1);
	for (size_t len = 0; len < sizeof(f); len++)
		assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, len, 0), CTL_HA_BEACON_BAD);
	for (size_t i = 12; i < sizeof(f); i++) {	/* every byte past the addresses counts */
		f[i] ^= 0x10;
		assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, sizeof(f), 0),
		    CTL_HA_BEACON_BAD);
		f[i] ^= 0x10;
	}
	assert_false(p.seen);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 77, f, sizeof(f), 0), CTL_HA_BEACON_SELF);
	assert_false(p.seen);
	assert_int_equal(ctl_ha_beacon_take(&p, key, 5, f, sizeof(f), 0), CTL_HA_BEACON_TAKEN);
}

static void
test_epoch(void **state)
{
	uint64_t a = ctl_ha_beacon_epoch(), b = ctl_ha_beacon_epoch();

	(void)state;
	/* the clock's milliseconds above: a later start's is not lower */
	assert_true(b >> 16 >= a >> 16);
	assert_true(a >> 16 > 1700000000000ULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_taken),
		cmocka_unit_test(test_replays_change_nothing),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_epoch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
