/*
 * The HA pair's split-brain guard (namegate(8), HA PAIR), on the main lcore: this box's
 * beacons out of both data ports, its peer's taken from the workers' rings, and two of
 * the gate's reasons to stay shut (dp.h, DP_HA_SHUT_*): a fresh beacon from a peer of
 * higher priority that forwards (only with ha.guard: required), and a hold after a stall
 * or at start, until the peer's resync is in, the peer is gone, or ha.resync_timeout_ms.
 */
#ifndef DP_HA_GUARD_H
#define DP_HA_GUARD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_ha_beacon.h"

struct ctl_events;
struct dp_ctx;
struct dp_hasync;
struct json_object;
struct pol_config;

/* A peer's beacon is fresh for this many of its intervals (the same on both boxes). */
#define DP_HA_GUARD_FRESH	3

struct dp_ha_guard {
	struct dp_ctx *ctx;
	struct ctl_events *events;
	struct dp_hasync *sync;		/* NULL or off: nothing to hold for */
	bool on;			/* beacons go out and come in: the pair has a key */
	bool required;			/* ha.guard: a forwarding peer above shuts the gate */
	uint8_t priority;
	uint32_t interval_ms, resync_timeout_ms, stall_ms;
	uint8_t key[CTL_HA_BEACON_KEY];
	uint8_t mac[2][6];		/* the VM port's, the uplink's: the beacons' sources */
	struct ctl_ha_beacon own;	/* the last sent */
	int64_t sent_ms, tick_ms;	/* CLOCK_MONOTONIC: the last beacon, the last turn */
	struct ctl_ha_peer peer;
	bool yielded;			/* DP_HA_SHUT_PEER is this guard's doing */
	bool held;			/* DP_HA_SHUT_HELD: until the resync */
	int64_t held_ms;		/* when the hold began (0: at the first turn) */
	uint64_t ticket;		/* dp_hasync_redo()'s */
	uint64_t stalls;		/* the workers' stalls seen */
	uint64_t yields, holds;		/* times each began */
	const char *state;		/* "clear", "yield", "hold": the last logged */
	char reason[160];		/* why, in words */
};

/*
 * Reads ha.sync_key_file (when set) for the beacons' key, and the ports' addresses. 0,
 * or -1 after saying why on err.
 */
int dp_ha_guard_start(struct dp_ha_guard *g, struct dp_ctx *ctx, const struct pol_config *cfg,
    struct ctl_events *events, FILE *err);

/*
 * The sync stream is up (or not): with it, this box holds its gate until the peer's first
 * resync, and looks for stalls from now on.
 */
void dp_ha_guard_sync(struct dp_ha_guard *g, struct dp_hasync *sync);

/* The event loop's turn: beacons in and out, the hold and the yield judged, logged. */
void dp_ha_guard_tick(struct dp_ha_guard *g);

/* Milliseconds until the next beacon is due (INT32_MAX without beacons). */
int dp_ha_guard_next_ms(const struct dp_ha_guard *g);

/* Why this box may not lead now (the health check), or NULL. */
const char *dp_ha_guard_veto(const struct dp_ha_guard *g);

/* The guard for namegatectl ha (a new object, the caller's). */
struct json_object *dp_ha_guard_json(void *g);

#endif
