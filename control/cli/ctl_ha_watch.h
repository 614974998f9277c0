/*
 * namegatectl ha --watch: keepalived's fast word on a crash or a hang, in a track_file of
 * the watcher's own (namegate(8), HA PAIR). The vrrp_script check runs in whole seconds;
 * a crash needs no timeout at all (a pidfd on the daemon says when it exits) and a stopped
 * daemon none either (/proc says so), so only a hang in the daemon's own code waits for a
 * bound, one long enough that a loaded machine's stalls do not trip it.
 */
#ifndef CTL_HA_WATCH_H
#define CTL_HA_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* --watch's default bound: past the 1 to 2 s stalls two daemons on 2 loaded cores show */
#define CTL_HA_WATCH_BOUND_MS	2000
#define CTL_HA_WATCH_POLL_MS	100	/* between two looks at the daemon */
#define CTL_HA_WATCH_REPLY_MS	250	/* one request's wait; the silence bound does the rest */

/* What one look at the daemon found. */
struct ctl_ha_watch_seen {
	bool gone;		/* exited (the pidfd), or none listens on the socket */
	bool stopped;		/* SIGSTOP or a tracer's stop (/proc/PID/stat) */
	bool answered;		/* "ha" got a reply */
	bool healthy;		/* its "healthy" */
	int64_t beat_ms;	/* its heartbeat_age_ms; -1 none yet */
	int64_t silent_ms;	/* unanswered for so long, counting the watcher's own time only */
};

struct ctl_ha_watch {
	int64_t bound_ms;	/* --timeout */
	bool fault;		/* the value the track_file holds (it starts at 1) */
	char why[160];		/* the last fault's reason */
};

/*
 * The watcher's decision: true when the track_file must change (w->fault is the new
 * value, w->why the reason of a fault). Faults at once on a daemon gone or stopped, and on
 * a heartbeat or a silence past the bound; clears only when the daemon answers healthy.
 * Anything else (starting, behind on sync) leaves the value as it is: the vrrp_script
 * check decides those.
 */
bool ctl_ha_watch_decide(struct ctl_ha_watch *w, const struct ctl_ha_watch_seen *s);

/*
 * The pid on the far end of the control socket at path (SO_PEERCRED); 0 when its backlog
 * is full (someone listens: not gone); -1 when none listens. Never waits.
 */
pid_t ctl_ha_watch_peer(const char *path);

/* A pidfd on pid (pidfd_open(2)), or -1. */
int ctl_ha_watch_pidfd(pid_t pid);

/* Waits up to ms for the process behind pidfd to exit: true when it has. */
bool ctl_ha_watch_exited(int pidfd, int ms);

/* Whether pid is stopped (state T or t in /proc/PID/stat). */
bool ctl_ha_watch_stopped(pid_t pid);

/*
 * Runs until a signal ends the process: watches the daemon at socket and writes file,
 * 1 first unless it says 0 already. Returns only on an error writing file (the exit
 * status, said on stderr).
 */
int ctl_ha_watch_run(const char *socket, const char *file, int64_t bound_ms);

#endif
