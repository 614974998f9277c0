/*
 * What the stream's threads (ctl_ha_sync_net.c) and its event-loop side (ctl_ha_sync.c)
 * share. Everything below the lock is under it; the threads' own sockets are theirs.
 */
#ifndef CTL_HA_SYNC_INT_H
#define CTL_HA_SYNC_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "ctl_ha_sync.h"

/* namegate_ha_sync_lag_seconds's buckets: a LAN's sub-millisecond to a stalled peer's. */
#define CTL_HA_LAG_BUCKETS(X) X(0.001) X(0.002) X(0.005) X(0.01) X(0.02) X(0.05) X(0.1) \
	X(0.25) X(0.5) X(1) X(2.5) X(5)
#define CTL_HA_SENT_RING	65536	/* send times kept for the lag (a power of 2) */

struct ctl_ha_syncq {
	struct ctl_ha_sync_item *q;
	size_t head, len;
};

struct ctl_ha_sync {
	char *peer, *listen;
	uint8_t psk[CTL_HA_PSK_BYTES];
	ctl_ha_sync_wake_fn *wake;
	void *arg;
	atomic_bool stop;
	int out_efd;			/* the sender's: records queued, or stop */
	int ack_efd;			/* the listener's: records applied, or stop */
	int lfd;			/* the listener's socket, bound at start */
	pthread_t sender, listener;
	bool sender_running, listener_running;

	pthread_mutex_t lock;
	struct ctl_ha_syncq out, in;
	bool out_open;			/* the sender's connection is open */
	bool in_open;			/* the listener's is */
	bool resync_wanted;
	bool want_room;			/* the event loop waits for the queue to empty */
	bool redo;			/* ctl_ha_sync_redo(): the listener drops its stream */
	uint64_t out_queued;		/* since the last flush */
	uint64_t in_conn;		/* the listener's connection, counted from 1 */
	uint64_t sent, acked, resyncs, connects, dropped;
	uint64_t received, applied, accepts, refused;
	uint64_t in_end;		/* the number of the peer's RESYNC_END, 0 before it */
	int64_t in_last_ms;		/* the peer's last record (or connection), monotonic */
	int64_t out_open_ms;		/* when the sender's connection opened */
	double lag_last;		/* seconds, -1 before any */
	uint64_t lag_count, lag_bucket[16];
	double lag_sum;
};

/* Pushes item onto q (lock held); false when full. */
bool ctl_ha_syncq_push(struct ctl_ha_syncq *q, const struct ctl_ha_sync_item *it);

/* Pops into *it (lock held); false when empty. Its strings are repointed into *it. */
bool ctl_ha_syncq_pop(struct ctl_ha_syncq *q, struct ctl_ha_sync_item *it);

/* One acknowledged record's lag, in seconds (lock held). */
void ctl_ha_sync_lag(struct ctl_ha_sync *s, double lag);

/* The threads (pthread_create's start routines): until s->stop. */
void *ctl_ha_sync_sender(void *arg);
void *ctl_ha_sync_listener(void *arg);

/* "ADDR:PORT" or "[V6]:PORT" into *sa. 0, or -1 with a reason in err. */
struct sockaddr_storage;
int ctl_ha_sync_addr(const char *text, struct sockaddr_storage *sa, unsigned int *salen,
    char *err, size_t errlen);

#endif
