/*
 * The HA pair's split-brain guard (dp_ha_guard.h).
 *
 * keepalived elects; the guard only stops the one case VRRP cannot see, both boxes
 * MASTER because the HA link is cut: a box forwards only if no fresh beacon from a peer
 * of higher configured priority says that peer forwards. Equal priorities (a
 * misconfiguration) fall to the earlier start (the lower epoch), so the two still agree.
 * The beacons go over the data ports, the very segments a double forwarder would loop.
 *
 * The hold: a box whose loop stopped for a while (SIGSTOP, a paused VM, a starved core)
 * comes back with a table that missed what its peer learned meanwhile, and keepalived,
 * which may have been stopped with it, may still say MASTER. It forwards nothing until
 * the peer's resync on a new connection is installed; the health check says no meanwhile,
 * so keepalived leaves the peer master. A peer that sends no beacon for
 * DP_HA_GUARD_FRESH intervals is gone (nothing to wait for), and ha.resync_timeout_ms
 * bounds the wait whatever happens, so a box alone is never shut for good.
 */
#include <string.h>

#include <json-c/json.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_ha_wire.h"
#include "dp.h"
#include "dp_ha.h"
#include "dp_ha_guard.h"
#include "dp_hasync.h"
#include "policy/load.h"

_Static_assert(DP_HA_ETH_BEACON == CTL_HA_BEACON_TYPE, "the workers take the beacons out");

#define DP_HA_GUARD_STALL_MIN_MS	100	/* above a worker's longest nap and its slack */
#define DP_HA_GUARD_TAKE		32	/* beacons taken per worker per turn */

int
dp_ha_guard_start(struct dp_ha_guard *g, struct dp_ctx *ctx, const struct pol_config *cfg,
    struct ctl_events *events, FILE *err)
{
	uint8_t psk[CTL_HA_PSK_BYTES];
	struct rte_ether_addr a;
	char why[256];

	*g = (struct dp_ha_guard){ .ctx = ctx, .events = events,
		.required = cfg->ha_guard == POL_HA_GUARD_REQUIRED,
		.priority = (uint8_t)cfg->ha_priority, .interval_ms = cfg->ha_beacon_ms,
		.resync_timeout_ms = cfg->ha_resync_timeout_ms,
		.stall_ms = cfg->ha_heartbeat_ms > DP_HA_GUARD_STALL_MIN_MS ?
		    cfg->ha_heartbeat_ms : DP_HA_GUARD_STALL_MIN_MS, .state = "clear" };
	if (cfg->ha_sync_key == NULL)
		return 0;		/* guard: off without a key: no beacons (pol_ha.c) */
	if (ctl_ha_psk_read(cfg->ha_sync_key, psk, why, sizeof(why)) != 0) {
		fprintf(err, "namegate: ha.sync_key_file: %s\n", why);
		return -1;
	}
	ctl_ha_beacon_key(g->key, psk);
	memset(psk, 0, sizeof(psk));
	for (int p = 0; p < 2; p++) {
		if (rte_eth_macaddr_get(ctx->port[p == 0 ? DP_PORT_VM : DP_PORT_UPLINK], &a) != 0)
			memset(&a, 0, sizeof(a));
		memcpy(g->mac[p], a.addr_bytes, 6);
	}
	g->own = (struct ctl_ha_beacon){ .priority = g->priority,
		.epoch = ctl_ha_beacon_epoch() };
	g->on = true;
	return 0;
}

void
dp_ha_guard_sync(struct dp_ha_guard *g, struct dp_hasync *sync)
{
	if (!dp_hasync_on(sync))
		return;		/* nothing to resync from: no hold, no stall looked for */
	g->sync = sync;
	g->held = true;		/* the first resync: its ticket 0, any connection's counts */
	g->holds++;
	atomic_fetch_or(&g->ctx->ha_shut, DP_HA_SHUT_HELD);
	snprintf(g->reason, sizeof(g->reason), "starting: waiting for the peer's resync");
	g->ctx->ha_stall_tsc = g->ctx->tsc_hz * g->stall_ms / 1000;
}

/* The beacon out of both ports, saying what the gate does now. */
static void
dp_ha_guard_send(struct dp_ha_guard *g, int64_t now)
{
	uint32_t shut = atomic_load(&g->ctx->ha_shut);
	uint8_t f[CTL_HA_BEACON_LEN];

	g->own.flags = (shut == 0 ? CTL_HA_BEACON_FORWARDS : 0) |
	    (shut & DP_HA_SHUT_HELD ? CTL_HA_BEACON_HELD : 0);
	g->own.counter++;
	dp_ha_out(g->ctx, f, ctl_ha_beacon_encode(f, g->key, g->mac[0], &g->own),
	    DP_PORT_SLOW_VM);
	dp_ha_out(g->ctx, f, ctl_ha_beacon_encode(f, g->key, g->mac[1], &g->own),
	    DP_PORT_SLOW_UP);
	g->sent_ms = now;
}

/* The workers' beacons: each judged (ctl_ha_beacon_take()), then freed. */
static void
dp_ha_guard_take(struct dp_ha_guard *g, int64_t now)
{
	struct rte_mbuf *m[DP_HA_GUARD_TAKE];

	for (unsigned int w = 0; w < g->ctx->nworkers; w++) {
		unsigned int n = rte_ring_sc_dequeue_burst(g->ctx->workers[w]->ha_in, (void **)m,
		    DP_HA_GUARD_TAKE, NULL);

		for (unsigned int i = 0; i < n; i++) {
			if (g->on && rte_pktmbuf_is_contiguous(m[i]))
				(void)ctl_ha_beacon_take(&g->peer, g->key, g->own.epoch,
				    rte_pktmbuf_mtod(m[i], const uint8_t *),
				    rte_pktmbuf_data_len(m[i]), now);
			else
				g->peer.bad++;
			rte_pktmbuf_free(m[i]);
		}
	}
}

/* Whether the peer's last beacon is fresh. */
static bool
dp_ha_guard_fresh(const struct dp_ha_guard *g, int64_t now)
{
	return g->peer.seen && now - g->peer.at_ms <= (int64_t)g->interval_ms * DP_HA_GUARD_FRESH;
}

/* Whether the peer ranks above this box: its priority, then the earlier start. */
static bool
dp_ha_guard_outranked(const struct dp_ha_guard *g)
{
	return g->peer.last.priority > g->priority ||
	    (g->peer.last.priority == g->priority && g->peer.last.epoch < g->own.epoch);
}

/* A stall (of who, away gap ms; -1: not known): shut until the peer's resync. */
static void
dp_ha_guard_hold(struct dp_ha_guard *g, int64_t now, int64_t gap, const char *who)
{
	atomic_fetch_or(&g->ctx->ha_shut, DP_HA_SHUT_HELD);
	if (!g->held)
		g->holds++;
	g->held = true;
	g->held_ms = now;
	g->ticket = dp_hasync_redo(g->sync);	/* the resync a new connection brings */
	if (gap >= 0)
		snprintf(g->reason, sizeof(g->reason), "stalled: %s was away %lld ms (limit "
		    "%u); waiting for the peer's resync", who, (long long)gap, g->stall_ms);
	else
		snprintf(g->reason, sizeof(g->reason), "stalled: %s was away over %u ms; "
		    "waiting for the peer's resync", who, g->stall_ms);
}

/* The hold ends (g->reason says why). */
static void
dp_ha_guard_release(struct dp_ha_guard *g)
{
	g->held = false;
	atomic_fetch_and(&g->ctx->ha_shut, ~(uint32_t)DP_HA_SHUT_HELD);
}

/* A stall of this loop or a worker's: hold. Else whether the hold may end. */
static void
dp_ha_guard_judge_hold(struct dp_ha_guard *g, int64_t now)
{
	uint64_t stalls = 0;
	int64_t quiet;

	for (unsigned int w = 0; w < g->ctx->nworkers; w++)
		stalls += atomic_load_explicit(&g->ctx->workers[w]->ha_stalls,
		    memory_order_relaxed);
	if (g->tick_ms != 0 && now - g->tick_ms > (int64_t)g->stall_ms)
		dp_ha_guard_hold(g, now, now - g->tick_ms, "the main lcore's loop");
	else if (stalls != g->stalls)
		dp_ha_guard_hold(g, now, -1, "a worker's loop");
	g->stalls = stalls;
	g->tick_ms = now;
	if (!g->held)
		return;
	if (g->held_ms == 0)
		g->held_ms = now;	/* the start's hold counts from the first turn */
	quiet = now - (g->peer.seen && g->peer.at_ms > g->held_ms ? g->peer.at_ms : g->held_ms);
	if (dp_hasync_resynced(g->sync, g->ticket))
		snprintf(g->reason, sizeof(g->reason), "resynced: the peer's whole state is in "
		    "after %lld ms", (long long)(now - g->held_ms));
	else if (quiet > (int64_t)g->interval_ms * DP_HA_GUARD_FRESH)
		snprintf(g->reason, sizeof(g->reason), "the peer is gone: no beacon for %lld ms",
		    (long long)quiet);
	else if (now - g->held_ms >= (int64_t)g->resync_timeout_ms)
		snprintf(g->reason, sizeof(g->reason), "no resync within ha.resync_timeout_ms "
		    "(%u ms): forwards on what it has", g->resync_timeout_ms);
	else
		return;
	dp_ha_guard_release(g);
}

static void
dp_ha_guard_judge_peer(struct dp_ha_guard *g, int64_t now)
{
	bool yield = g->required && dp_ha_guard_fresh(g, now) &&
	    (g->peer.last.flags & CTL_HA_BEACON_FORWARDS) && dp_ha_guard_outranked(g);

	if (yield == g->yielded)
		return;
	g->yielded = yield;
	if (yield) {
		g->yields++;
		atomic_fetch_or(&g->ctx->ha_shut, DP_HA_SHUT_PEER);
		if (!g->held)
			snprintf(g->reason, sizeof(g->reason), "the peer (priority %u) "
			    "forwards", g->peer.last.priority);
		return;
	}
	atomic_fetch_and(&g->ctx->ha_shut, ~(uint32_t)DP_HA_SHUT_PEER);
	if (!g->held)
		snprintf(g->reason, sizeof(g->reason), "%s", !dp_ha_guard_fresh(g, now) ?
		    "the peer's beacons stopped" : "the peer no longer forwards");
}

/* An event for each change of the guard's state. */
static void
dp_ha_guard_log(struct dp_ha_guard *g)
{
	const char *state = g->held ? "hold" : g->yielded ? "yield" : "clear";
	struct timespec t;

	if (strcmp(state, g->state) == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &t);
	if (g->events != NULL)
		(void)ctl_events_log_ha_guard(g->events, &t, state, g->state, g->reason);
	g->state = state;
}

void
dp_ha_guard_tick(struct dp_ha_guard *g)
{
	int64_t now = ctl_now_ms();
	bool forwards;

	dp_ha_guard_take(g, now);
	if (g->sync != NULL)
		dp_ha_guard_judge_hold(g, now);
	dp_ha_guard_judge_peer(g, now);
	dp_ha_guard_log(g);
	forwards = atomic_load(&g->ctx->ha_shut) == 0;
	/* at once when the gate changed: the peer yields or stops yielding without a wait */
	if (g->on && (now - g->sent_ms >= (int64_t)g->interval_ms ||
	    forwards != ((g->own.flags & CTL_HA_BEACON_FORWARDS) != 0)))
		dp_ha_guard_send(g, now);
}

int
dp_ha_guard_next_ms(const struct dp_ha_guard *g)
{
	int64_t left = g->sent_ms + (int64_t)g->interval_ms - ctl_now_ms();

	if (!g->on)
		return INT32_MAX;
	return left < 1 ? 1 : (int)left;
}

const char *
dp_ha_guard_veto(const struct dp_ha_guard *g)
{
	return g->held ? g->reason : NULL;
}

struct json_object *
dp_ha_guard_json(void *arg)
{
	struct dp_ha_guard *g = arg;
	struct json_object *o = json_object_new_object(), *p = json_object_new_object();
	int64_t now = ctl_now_ms();

	if (o == NULL || p == NULL) {
		json_object_put(o);
		json_object_put(p);
		return NULL;
	}
	json_object_object_add(o, "mode", json_object_new_string(g->required ? "required" :
	    "off"));
	json_object_object_add(o, "state", json_object_new_string(g->held ? "hold" :
	    g->yielded ? "yield" : "clear"));
	json_object_object_add(o, "reason", json_object_new_string(g->reason));
	json_object_object_add(o, "forwarding", json_object_new_boolean(
	    atomic_load(&g->ctx->ha_shut) == 0));
	json_object_object_add(o, "priority", json_object_new_int(g->priority));
	json_object_object_add(o, "beacons", json_object_new_boolean(g->on));
	json_object_object_add(o, "epoch", json_object_new_uint64(g->own.epoch));
	json_object_object_add(o, "counter", json_object_new_uint64(g->own.counter));
	json_object_object_add(o, "yields", json_object_new_uint64(g->yields));
	json_object_object_add(o, "holds", json_object_new_uint64(g->holds));
	json_object_object_add(p, "seen", json_object_new_boolean(g->peer.seen));
	if (g->peer.seen) {
		json_object_object_add(p, "priority", json_object_new_int(g->peer.last.priority));
		json_object_object_add(p, "forwards", json_object_new_boolean(
		    (g->peer.last.flags & CTL_HA_BEACON_FORWARDS) != 0));
		json_object_object_add(p, "held", json_object_new_boolean(
		    (g->peer.last.flags & CTL_HA_BEACON_HELD) != 0));
		json_object_object_add(p, "fresh", json_object_new_boolean(
		    dp_ha_guard_fresh(g, now)));
		json_object_object_add(p, "age_ms", json_object_new_int64(now - g->peer.at_ms));
		json_object_object_add(p, "epoch", json_object_new_uint64(g->peer.last.epoch));
		json_object_object_add(p, "counter", json_object_new_uint64(
		    g->peer.last.counter));
	}
	json_object_object_add(p, "taken", json_object_new_uint64(g->peer.taken));
	json_object_object_add(p, "stale", json_object_new_uint64(g->peer.stale));
	json_object_object_add(p, "bad", json_object_new_uint64(g->peer.bad));
	json_object_object_add(o, "peer", p);
	return o;
}
