/*
 * The HA pair's beacon (namegate(8), HA PAIR): a small frame each box sends out of both
 * data ports a few times a second, saying its priority and whether it forwards, so that
 * two boxes VRRP made both MASTER (their HA link cut) agree which one forwards: the one
 * of lower priority shuts its gate while a fresh beacon says the other forwards.
 *
 * Ethertype 0x88B5, IEEE 802's first local experimental one: no registered protocol uses
 * it, so no host stack takes the frame and every switch forwards it as any other; the
 * magic below tells namegate's from another local use. Untagged, to a locally
 * administered group address, which bridges flood to both boxes.
 *
 *   dst[6] src[6] type 0x88B5 | "NGHA" | u8 version (1) | u8 flags | u8 priority | u8 0
 *   | u64 epoch | u64 counter | tag[32]
 *
 * flags: bit 0 the sender forwards, bit 1 it is held (stalled or starting, waiting for
 * its peer's resync). epoch: the sender's start, in milliseconds of the realtime clock
 * shifted up 16 bits, with 16 random bits below; counter: from 1, one more per beacon.
 * tag: crypto_auth (HMAC-SHA-512-256) of the bytes from the magic to the counter, keyed
 * with a key derived (crypto_kdf, context "ngbeacon") from the pair's sync key, so no VM
 * forges one. A receiver keeps the highest (epoch, counter) it accepted and takes only a
 * newer one, so a VM replaying captured beacons changes nothing; a restarted peer's
 * epoch is higher than its last (unless the clock went back past its downtime).
 */
#ifndef CTL_HA_BEACON_H
#define CTL_HA_BEACON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_HA_BEACON_TYPE	0x88b5
#define CTL_HA_BEACON_LEN	70	/* the whole frame: past Ethernet's 60-byte minimum */
#define CTL_HA_BEACON_KEY	32
#define CTL_HA_BEACON_FORWARDS	0x01
#define CTL_HA_BEACON_HELD	0x02

/* What a beacon says. */
struct ctl_ha_beacon {
	uint8_t flags;			/* CTL_HA_BEACON_* */
	uint8_t priority;		/* ha.priority */
	uint64_t epoch, counter;
};

/* What a box knows of its peer from the beacons it took. */
struct ctl_ha_peer {
	bool seen;			/* one was taken */
	struct ctl_ha_beacon last;	/* the newest taken */
	int64_t at_ms;			/* CLOCK_MONOTONIC when it was */
	uint64_t taken, stale, bad, self;	/* frames by ctl_ha_beacon_take()'s answer */
};

enum ctl_ha_beacon_rc {
	CTL_HA_BEACON_TAKEN,		/* newer than any before: in *peer */
	CTL_HA_BEACON_STALE,		/* genuine, not newer: a replay, or a late copy */
	CTL_HA_BEACON_BAD,		/* not a beacon with this pair's key */
	CTL_HA_BEACON_SELF,		/* this box's own (its epoch) */
};

/* The beacons' key from the pair's pre-shared key (CTL_HA_PSK_BYTES). */
void ctl_ha_beacon_key(uint8_t *key, const uint8_t *psk);

/* A new epoch: the clock now, and random bits. */
uint64_t ctl_ha_beacon_epoch(void);

/* Writes the frame from src (6 bytes) into buf (CTL_HA_BEACON_LEN): its length. */
size_t ctl_ha_beacon_encode(uint8_t *buf, const uint8_t *key, const uint8_t *src,
    const struct ctl_ha_beacon *b);

/*
 * Judges the len bytes at frame (the whole frame, Ethernet header first) against key,
 * this box's own epoch and what peer holds, and takes a newer one into peer (at_ms now).
 * Reads only frame[0 .. len).
 */
enum ctl_ha_beacon_rc ctl_ha_beacon_take(struct ctl_ha_peer *peer, const uint8_t *key,
    uint64_t own_epoch, const uint8_t *frame, size_t len, int64_t now_ms);

#endif
