/*
 * The daemon's side of the HA pair (control/ha/include/ctl_ha.h): the workers' gate set
 * from the FIFO reader's thread, the workers' heartbeat for the health check, and a new
 * master's announcements, written out of both ports through the workers' queues. Main
 * lcore only, but for the gate.
 */
#ifndef DP_HA_H
#define DP_HA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dp_ha_guard.h"

struct ctl_events;
struct ctl_ha;
struct ctl_sock;
struct dp_ctx;
struct dp_hasync;
struct pol_config;

struct dp_ha {
	struct dp_ctx *ctx;
	struct pol_config **cfgp;
	struct ctl_ha *ha;		/* NULL: no ha:, the gate always open */
	bool announce;			/* ha.announce, as at start */
	bool running;			/* the workers were launched */
	bool asked;			/* a grace period (token) the workers have yet to pass */
	uint64_t token;
	int64_t beat_ms;		/* CLOCK_MONOTONIC of the last one passed; -1: none */
	int64_t stations_ms;		/* CLOCK_MONOTONIC of the last stations' announcement */
	size_t vm_next;			/* the next VM a takeover announces */
	bool vms_pending;		/* VMs left to announce: the queue was full */
	struct dp_ha_guard guard;	/* the split-brain guard and the stall's hold */
};

/*
 * With ha: in *cfgp, shuts the gate, opens the FIFO and serves "ha" on sock. 0, or -1
 * after saying why on err. Without ha:, only an "ha" that says there is none.
 */
int dp_ha_start(struct dp_ha *d, struct dp_ctx *ctx, struct pol_config **cfgp,
    struct ctl_events *events, struct ctl_sock *sock, FILE *err);

/*
 * The sync stream started (sync may be off): the guard holds the gate until the peer's
 * resync, and a stall holds it again. Before the workers run.
 */
void dp_ha_sync(struct dp_ha *d, struct dp_hasync *sync);

/* The workers run now: their heartbeat counts from here. */
void dp_ha_running(struct dp_ha *d);

/*
 * The event loop's turn: the heartbeat asked again, role changes logged, a takeover
 * announced, and while master the uplink's stations again each DP_HA_STATIONS_MS.
 */
void dp_ha_tick(struct dp_ha *d);

/*
 * Before the workers stop: with ha.track_file, tells keepalived this box may not lead,
 * and while it is master, waits (up to DP_HA_LEAVE_MS) for keepalived to take the role
 * away, forwarding meanwhile, so the peer takes over before this box stops.
 */
void dp_ha_leave(struct dp_ha *d);

/* Whether announcements wait for room in the queue: the event loop should turn again soon. */
bool dp_ha_busy(const struct dp_ha *d);

/* The event loop's longest sleep, ms, given what it would sleep otherwise: a beacon's due. */
int dp_ha_next_ms(const struct dp_ha *d, int ms);

/*
 * One frame of len bytes out of port (DP_PORT_SLOW_UP: the uplink; _VM: the VM port),
 * through worker 0's queue from the kernel. Main lcore only.
 */
void dp_ha_out(struct dp_ctx *ctx, const uint8_t *frame, size_t len, uint16_t port);

/* Stops the reader (after the workers stopped). */
void dp_ha_stop(struct dp_ha *d);

#endif
