/*
 * What the FIFO reader (ctl_ha_fifo.c) and the concern (ctl_ha.c) share. The reader's
 * thread writes the role and queues each change under lock; the event loop takes them.
 */
#ifndef CTL_HA_INT_H
#define CTL_HA_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#include "ctl_ha.h"

#define CTL_HA_CHANGES_MAX	64	/* changes waiting for the event loop's log */
#define CTL_HA_POLL_MS		100	/* the reader's longest wait: stop and FIFO replacement */
/*
 * How long a start without a role read says no (ctl_ha_healthy()): longer than
 * keepalived's script interval times fall in the sample, so keepalived sees a failure.
 */
#define CTL_HA_START_GRACE_MS	3000

struct ctl_ha_change {
	enum ctl_ha_role from, to;
	struct timespec at;		/* CLOCK_REALTIME */
};

struct ctl_ha {
	char *fifo, *instance;
	uint32_t heartbeat_ms;
	ctl_ha_role_fn *on_role;
	ctl_ha_beat_fn *beat;
	ctl_ha_veto_fn *veto;
	void *arg;
	struct ctl_events *events;
	struct {			/* ctl_ha_extra(): the event loop's own */
		const char *key;
		ctl_ha_json_fn *fn;
		void *arg;
	} extra[CTL_HA_EXTRAS];
	ctl_ha_behind_fn *behind;	/* ctl_ha_behind(): the event loop's own */
	void *behind_arg;

	pthread_t thread;
	bool running;
	atomic_bool stop;
	int64_t started_ms;		/* CLOCK_MONOTONIC at ctl_ha_start() */
	int fd;				/* the reader's */
	ino_t ino;			/* the FIFO it has open; keepalived makes a new one on reload */
	char line[CTL_HA_LINE_MAX];	/* a line being read */
	size_t llen;
	bool skipping;			/* past CTL_HA_LINE_MAX: dropped to its newline */

	/* below: under lock */
	pthread_mutex_t lock;
	_Atomic(enum ctl_ha_role) role;	/* also read without it (the metrics, the gate) */
	struct timespec since;		/* CLOCK_REALTIME of the last change, or the start */
	uint64_t changes, lines, ignored, malformed, reopened;
	struct ctl_ha_change q[CTL_HA_CHANGES_MAX];
	unsigned int qhead, qlen;
	uint64_t qlost;			/* changes the log never saw: the queue was full */
	bool became_master;		/* since the last tick */
};

/*
 * Opens the FIFO at h->fifo into h->fd, making it when create and it does not exist.
 * 0, or -errno with a reason in err.
 */
int ctl_ha_fifo_open(struct ctl_ha *h, bool create, char *err, size_t errlen);

/* The reader's thread (pthread_create's start routine): until h->stop. */
void *ctl_ha_fifo_run(void *arg);

#endif
