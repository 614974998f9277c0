/*
 * libFuzzer target for the HA pair's beacon (control/hasync/ctl_ha_beacon.c), a frame any
 * host on either segment can send. The input is taken as a frame (an exact-size copy, so
 * ASan sees a read past it), and its first bytes also make a genuine beacon, so the
 * checks past the tag run too. Promises checked (abort() when one breaks):
 *
 *  - A frame is taken only if it begins with what ctl_ha_beacon_encode() writes for what
 *    was taken: nothing unsigned gets in.
 *  - The same frame again is never taken (a replay), and nothing changes the peer but a
 *    taken one.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_ha_beacon.h"
#include "ctl_ha_wire.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
take_checked(struct ctl_ha_peer *p, const uint8_t *key, const uint8_t *f, size_t len)
{
	struct ctl_ha_peer before = *p;
	uint8_t again[CTL_HA_BEACON_LEN];

	switch (ctl_ha_beacon_take(p, key, 1, f, len, 7)) {
	case CTL_HA_BEACON_TAKEN:
		check(len >= CTL_HA_BEACON_LEN && p->taken == before.taken + 1);
		check(ctl_ha_beacon_encode(again, key, f + 6, &p->last) == CTL_HA_BEACON_LEN);
		check(memcmp(again, f, CTL_HA_BEACON_LEN) == 0);
		before = *p;
		check(ctl_ha_beacon_take(p, key, 1, f, len, 8) == CTL_HA_BEACON_STALE);
		check(p->seen && p->last.epoch == before.last.epoch &&
		    p->last.counter == before.last.counter && p->at_ms == before.at_ms);
		break;
	default:
		check(p->seen == before.seen && p->last.epoch == before.last.epoch &&
		    p->last.counter == before.last.counter && p->at_ms == before.at_ms);
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t psk[CTL_HA_PSK_BYTES] = { 7, 7, 7 };
	struct input in = { .p = data, .len = size };
	uint8_t key[CTL_HA_BEACON_KEY], mine[CTL_HA_BEACON_LEN], src[6] = { 2 };
	uint8_t *frame = malloc(size > 0 ? size : 1);
	struct ctl_ha_beacon b = { 0 };
	struct ctl_ha_peer peer = { 0 };

	if (frame == NULL)
		return 0;
	memcpy(frame, data, size);
	ctl_ha_beacon_key(key, psk);
	if (take(&in, &b.flags, 1) && take(&in, &b.priority, 1) && take(&in, &b.epoch, 8) &&
	    take(&in, &b.counter, 8)) {
		(void)ctl_ha_beacon_encode(mine, key, src, &b);
		take_checked(&peer, key, mine, sizeof(mine));
	}
	take_checked(&peer, key, frame, size);
	free(frame);
	return 0;
}
