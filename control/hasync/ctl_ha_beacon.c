/*
 * The HA pair's beacon (ctl_ha_beacon.h): written, checked, and the peer's newest kept.
 */
#include <string.h>
#include <time.h>

#include <sodium/crypto_auth.h>
#include <sodium/crypto_kdf.h>
#include <sodium/randombytes.h>

#include "ctl_ha_beacon.h"
#include "ctl_ha_wire.h"

#define BEACON_BODY	14		/* after the Ethernet header */
#define BEACON_SIGNED	24		/* magic to counter */
#define BEACON_VERSION	1

_Static_assert(BEACON_BODY + BEACON_SIGNED + crypto_auth_BYTES == CTL_HA_BEACON_LEN,
    "the beacon's length");
_Static_assert(CTL_HA_PSK_BYTES == crypto_kdf_KEYBYTES, "the sync key derives the beacon's");
_Static_assert(CTL_HA_BEACON_KEY == crypto_auth_KEYBYTES, "the beacon's key");

/* 03:...: group and locally administered; "ngha" after it, so a capture says whose. */
static const uint8_t beacon_dst[6] = { 0x03, 0x00, 'n', 'g', 'h', 'a' };
static const uint8_t beacon_magic[4] = { 'N', 'G', 'H', 'A' };

void
ctl_ha_beacon_key(uint8_t *key, const uint8_t *psk)
{
	(void)crypto_kdf_derive_from_key(key, CTL_HA_BEACON_KEY, 1, "ngbeacon", psk);
}

uint64_t
ctl_ha_beacon_epoch(void)
{
	struct timespec t;
	uint16_t r;

	clock_gettime(CLOCK_REALTIME, &t);
	randombytes_buf(&r, sizeof(r));
	return ((uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000) << 16 | r;
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

size_t
ctl_ha_beacon_encode(uint8_t *buf, const uint8_t *key, const uint8_t *src,
    const struct ctl_ha_beacon *b)
{
	uint8_t *p = buf + BEACON_BODY;

	memcpy(buf, beacon_dst, 6);
	memcpy(buf + 6, src, 6);
	buf[12] = CTL_HA_BEACON_TYPE >> 8;
	buf[13] = CTL_HA_BEACON_TYPE & 0xff;
	memcpy(p, beacon_magic, 4);
	p[4] = BEACON_VERSION;
	p[5] = b->flags & (CTL_HA_BEACON_FORWARDS | CTL_HA_BEACON_HELD);
	p[6] = b->priority;
	p[7] = 0;
	put64(p + 8, b->epoch);
	put64(p + 16, b->counter);
	crypto_auth(p + BEACON_SIGNED, p, BEACON_SIGNED, key);
	return CTL_HA_BEACON_LEN;
}

enum ctl_ha_beacon_rc
ctl_ha_beacon_take(struct ctl_ha_peer *peer, const uint8_t *key, uint64_t own_epoch,
    const uint8_t *frame, size_t len, int64_t now_ms)
{
	const uint8_t *p = frame + BEACON_BODY;
	struct ctl_ha_beacon b;

	/* a NIC may pad the frame; anything shorter, or another local use, is not ours */
	if (len < CTL_HA_BEACON_LEN || frame[12] != CTL_HA_BEACON_TYPE >> 8 ||
	    frame[13] != (CTL_HA_BEACON_TYPE & 0xff) || memcmp(p, beacon_magic, 4) != 0 ||
	    p[4] != BEACON_VERSION || crypto_auth_verify(p + BEACON_SIGNED, p, BEACON_SIGNED,
	    key) != 0) {
		peer->bad++;
		return CTL_HA_BEACON_BAD;
	}
	b = (struct ctl_ha_beacon){ .flags = p[5], .priority = p[6], .epoch = get64(p + 8),
		.counter = get64(p + 16) };
	if (b.epoch == own_epoch) {
		peer->self++;
		return CTL_HA_BEACON_SELF;
	}
	if (peer->seen && (b.epoch < peer->last.epoch ||
	    (b.epoch == peer->last.epoch && b.counter <= peer->last.counter))) {
		peer->stale++;
		return CTL_HA_BEACON_STALE;
	}
	peer->seen = true;
	peer->last = b;
	peer->at_ms = now_ms;
	peer->taken++;
	return CTL_HA_BEACON_TAKEN;
}
