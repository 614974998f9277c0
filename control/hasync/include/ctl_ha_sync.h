/*
 * The HA pair's sync stream, connected (namegate(8), HA PAIR; the wire in ctl_ha_wire.h).
 * Each box with ha.sync_peer connects to its peer and sends what its own workers learn,
 * after its whole state (a bulk resync) each time the connection is made; each box with
 * ha.sync_listen accepts its peer's stream and hands the records to the event loop, which
 * installs them and says so, and the acknowledgements that go back give the sender its
 * lag without the two clocks agreeing. The standby's workers learn nothing (its gate drops
 * every frame), so only the active box's stream carries bindings as they are learned.
 *
 * Two threads (the sender, the listener), so neither a slow peer nor a dead one ever
 * holds up the event loop; they meet it in two bounded queues.
 */
#ifndef CTL_HA_SYNC_H
#define CTL_HA_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_ha_wire.h"

#define CTL_HA_SYNC_QUEUE	65536	/* records waiting, each way */

/* Called from the stream's threads when the event loop has work: records, a resync. */
typedef void ctl_ha_sync_wake_fn(void *arg);

struct ctl_ha_sync_conf {
	const char *peer;		/* ha.sync_peer, "ADDR:PORT" ("[V6]:PORT"), or NULL */
	const char *listen;		/* ha.sync_listen, likewise, or NULL */
	const char *key_file;		/* ha.sync_key_file (ctl_ha_psk_read()), or NULL: */
	uint8_t psk[CTL_HA_PSK_BYTES];	/* this key */
	ctl_ha_sync_wake_fn *wake;
	void *arg;
};

/* A record with its strings in it. */
struct ctl_ha_sync_item {
	struct ctl_ha_rec r;		/* r.vm and r.name point into the item */
	char vm[CTL_HA_VM_MAX];
	char name[CTL_HA_NAME_MAX];
};

struct ctl_ha_sync;
struct json_object;

/*
 * Starts the threads; the listener's socket is bound before this returns. NULL with a
 * one-line reason in err when an address does not parse or cannot be bound, or the key
 * file cannot be read.
 */
struct ctl_ha_sync *ctl_ha_sync_start(const struct ctl_ha_sync_conf *conf, char *err,
    size_t errlen);

/* Stops the threads, closes the connections, frees s. NULL is a no-op. */
void ctl_ha_sync_stop(struct ctl_ha_sync *s);

/*
 * Event loop: queues r (copied) for the peer. False while no connection is open (the
 * resync on the next one carries it) or when the queue is full (counted; the connection
 * is dropped so that a resync follows).
 */
bool ctl_ha_sync_send(struct ctl_ha_sync *s, const struct ctl_ha_rec *r);

/*
 * Event loop: room left in the queue to the peer, 0 while no connection is open. The
 * sender then wakes the event loop once it has taken what is queued, so a resync goes on
 * in steps as the peer takes it.
 */
size_t ctl_ha_sync_room(struct ctl_ha_sync *s);

/* Event loop: hands what was queued since the last call to the sender. */
void ctl_ha_sync_flush(struct ctl_ha_sync *s);

/*
 * Event loop: true once after each new connection: the caller sends RESYNC_BEGIN, its
 * whole state, RESYNC_END (ctl_ha_sync_send()), then flushes.
 */
bool ctl_ha_sync_resync_wanted(struct ctl_ha_sync *s);

/*
 * Event loop: up to n records received, oldest first; *conn says which connection they
 * came on, for ctl_ha_sync_applied() once they are installed.
 */
size_t ctl_ha_sync_take(struct ctl_ha_sync *s, struct ctl_ha_sync_item *out, size_t n,
    uint64_t *conn);

/*
 * Event loop: this box's table may have missed what the peer sent (it stalled): the
 * listener drops the peer's stream, so that the peer connects again and resyncs. Returns
 * the connection dropped (as ctl_ha_sync_take()'s conn): a RESYNC_END taken on a later
 * one says this box has the peer's whole state again.
 */
uint64_t ctl_ha_sync_redo(struct ctl_ha_sync *s);

/* Event loop: n more records of connection conn installed: acknowledged to the peer. */
void ctl_ha_sync_applied(struct ctl_ha_sync *s, uint64_t conn, size_t n);

/*
 * How long a peer that connected may keep this box from leading without sending (a
 * resync that stalls, a stream that never opens): past it the peer counts as gone, and a
 * box alone must be able to lead.
 */
#define CTL_HA_BEHIND_QUIET_MS	2000
/* The peer's records received and not yet installed past which this box is behind. */
#define CTL_HA_BEHIND_BACKLOG	4096

/*
 * Whether this box is behind on sync, so may not lead (namegatectl ha --check), with why
 * into why: its peer's stream is open and the peer's resync on it is not all installed
 * yet, while the peer sent within CTL_HA_BEHIND_QUIET_MS; or more than
 * CTL_HA_BEHIND_BACKLOG of the peer's records wait to be installed; or this box reached
 * its peer less than CTL_HA_BEHIND_QUIET_MS ago and the peer's stream has not opened yet.
 * Lag of this box's own records (the acks) is the peer's being behind, not this box's.
 */
bool ctl_ha_sync_behind(struct ctl_ha_sync *s, char *why, size_t len);

/*
 * The stream's state for namegatectl ha (a new object, the caller's):
 *   {"peer":"10.0.9.2:7400","peer_state":"open","sent":12,"acked":12,"resyncs":1,
 *    "lag_ms":0.8,"listen":"10.0.9.1:7400","inbound":"open","received":40,
 *    "applied":40,"refused":0,"dropped":0,"resync_in":"done","behind":false}
 * peer_state and inbound: "off" (not configured), "connecting" / "listening", "open".
 * lag_ms: the last acknowledgement's, -1 before any. resync_in: the peer's resync on the
 * open inbound stream, "receiving" until its end is installed, then "done"; "none" while
 * no inbound stream is open. behind: ctl_ha_sync_behind().
 */
struct json_object *ctl_ha_sync_json(struct ctl_ha_sync *s);

/* namegate_ha_sync_lag_seconds (histogram) and the stream's counters (any thread). */
void ctl_ha_sync_render(struct ctl_ha_sync *s, FILE *out);

#endif
