/*
 * What the event log's files share (ctl_events.c: the log and the VMs' rates;
 * ctl_events_ctl.c: the control side's lines).
 */
#ifndef CTL_EVENTS_INT_H
#define CTL_EVENTS_INT_H

#include <stdint.h>
#include <time.h>

#include "ctl_jsonl.h"

struct ev_vm {
	char *name;
	uint64_t tokens;	/* in token-nanoseconds: EV_NS of them make one event */
	int64_t last_ns;	/* when tokens was last refilled */
	uint64_t suppressed;	/* blocks counted, not logged, since the VM's last line */
};

struct ctl_events {
	struct ctl_logfile *lf;
	_Atomic uint64_t unbuilt;	/* lines lost before the write: no memory to build them */
	uint32_t rate, burst;
	struct ev_vm *vms;	/* in the order first seen, for a stable flush */
	size_t nvms, capvms;
	uint32_t *slots;	/* index into vms + 1; 0 is empty */
	size_t nslots;		/* a power of two, at least twice nvms */
	struct ctl_jsonl line;
};

/* Starts a line: {"ts":...,"vm":...,"event":... (vm may be NULL). */
void ctl_ev_begin(struct ctl_events *ev, const struct timespec *now, const char *vm,
    const char *event);

/* Ends the line and appends it whole; 0 or -errno, the line lost and counted. */
int ctl_ev_end(struct ctl_events *ev);

/* Reopens when logrotate renamed or removed the file, looked at once a second at most. */
int ctl_ev_rotate(struct ctl_events *ev, const struct timespec *now);

#endif
