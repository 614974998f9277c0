/*
 * Event log (SPEC s6): one JSON object per line, appended with one write(2) each so that
 * `tail -f` and `namegatectl events --follow` see whole lines as they happen.
 *
 *   {"ts":"2026-11-29T12:00:00.123Z","vm":"agent1","event":"block","reason":"sni_denied",
 *    "proto":"tcp","dst":"203.0.113.5:443","name":"collect.example.invalid"}
 *
 * Blocks are rate-limited per VM by a token bucket; what the bucket refuses is counted and
 * the count rides on the VM's next logged block ("suppressed":N) or is written by
 * ctl_events_flush(). Policy changes, start and stop are never limited. Lines are written by
 * ctl_logfile.h: whole or not at all, a lost one counted (ctl_events_lost()) and said once on
 * stderr, and the file reopened when it is renamed or removed (logrotate), noticed at most
 * once per second. The path may also be "-" (stdout) or "unix:PATH" (a datagram socket).
 *
 * Every time is passed in as `now` (CLOCK_REALTIME): it is the event's "ts" and the clock of
 * the rate limiter and the rotation check, so tests replay exact sequences. Not thread-safe:
 * the control event loop owns a struct ctl_events. No DPDK.
 */
#ifndef CTL_EVENTS_H
#define CTL_EVENTS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ctl_logfile.h"

#define CTL_EVENTS_RATE		20	/* default: blocks logged per second per VM */
#define CTL_EVENTS_BURST	50	/* default: blocks logged at once after a quiet spell */
#define CTL_EVENTS_MODE		0640	/* a file we create; an existing file keeps its mode */

struct ctl_events;

/* One blocked packet or query, as the dataplane reports it. Strings are NUL-terminated. */
struct ctl_ev_block {
	const char *vm;
	const char *reason;	/* a SPEC s6 reason label: "sni_denied", "no_binding", ... */
	uint8_t proto;		/* IP protocol number: "tcp", "udp", "icmp", "icmpv6" or "N" */
	int family;		/* AF_INET, AF_INET6, or AF_UNSPEC for no "dst" */
	uint8_t addr[16];	/* network order; IPv4 in the first 4 bytes */
	uint16_t port;		/* host order; 0: "dst" is the address alone */
	const char *name;	/* SNI or DNS name, any bytes; NULL for no "name" */
};

/*
 * Opens (creating with CTL_EVENTS_MODE) path for appending. rate blocks per second per VM
 * may be logged, burst at once; rate 0 logs every block. Returns the log, or NULL with
 * errno set and a one-line reason in err (errlen bytes, may be 0). Free with
 * ctl_events_close().
 */
struct ctl_events *ctl_events_open(const char *path, uint32_t rate, uint32_t burst, char *err,
    size_t errlen);

/* Closes the file and frees the log, writing nothing; NULL is a no-op. */
void ctl_events_close(struct ctl_events *ev);

/*
 * Logs b unless its VM's bucket is empty, in which case it is only counted. Returns 0
 * (logged or counted) or -errno when the write failed; the event is then lost (counted in
 * ctl_events_lost()), and the next call tries again.
 */
int ctl_events_log_block(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_block *b);

/*
 * Who did an operator action: the control socket's client, as the kernel names it
 * (SO_PEERCRED), and its user name (the uid in decimal when it has none). An event with
 * a who gets ,"uid":U,"pid":P,"user":N; one without (NULL: the daemon's own doing, a
 * timer or a signal) gets none of them.
 */
struct ctl_ev_who {
	uint32_t uid;
	int32_t pid;
	const char *user;
};

/*
 * {"event":"policy","generation":G,"vms":N,"file":FILE}: a new policy took effect. file
 * and who may be NULL. Returns 0 or -errno.
 */
int ctl_events_log_policy(struct ctl_events *ev, const struct timespec *now,
    uint64_t generation, uint32_t vms, const char *file, const struct ctl_ev_who *who);

/*
 * {"event":"policy_rejected","generation":G,"file":FILE,"line":L,"col":C,"message":M,
 * "errors":N}: a reload found FILE wrong (the first of its N errors, where it is); G, the
 * generation in force, stays. who may be NULL. Returns 0 or -errno.
 */
int ctl_events_log_policy_rejected(struct ctl_events *ev, const struct timespec *now,
    uint64_t generation, const char *file, uint32_t line, uint32_t col, const char *message,
    size_t errors, const struct ctl_ev_who *who);

/* A grant made, revoked or ended by itself; strings NUL-terminated, reason may be "". */
struct ctl_ev_grant {
	const char *event;	/* "grant", "grant_revoked", "grant_expired" */
	uint64_t id;
	const char *vm;
	const char *host;	/* the pattern as written */
	int64_t expires;	/* UTC seconds */
	const char *reason;
	const struct ctl_ev_who *who;	/* who made or revoked it; NULL when it expired */
};

/*
 * {"vm":V,"event":E,"id":N,"host":H,"until":"2026-12-01T14:05:00Z"[,"reason":R]} and who,
 * never rate-limited: each is an operator's decision or its end. Returns 0 or -errno.
 */
int ctl_events_log_grant(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_grant *g);

/* What the fleet agent saw happen (control/fleet); members NULL or false when not known. */
struct ctl_ev_fleet {
	const char *event;	/* fleet_connected, fleet_disconnected, bundle_accepted,
				   bundle_refused, bundle_cache */
	bool have_serial;
	uint64_t serial;
	const char *digest;	/* the policy's SHA-256 */
	const char *reason;	/* why refused or disconnected; a cache's expiry */
};

/*
 * {"event":E[,"serial":N][,"digest":D][,"reason":R]}, never rate-limited. Returns 0 or
 * -errno.
 */
int ctl_events_log_fleet(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_fleet *f);

/*
 * {"event":"grants_damaged","file":F,"error":E}: the grants' state file could not be used
 * and nothing it held is granted. Returns 0 or -errno.
 */
int ctl_events_log_grants_damaged(struct ctl_events *ev, const struct timespec *now,
    const char *file, const char *error);

/* A VM's egress budget changed state (SPEC s8), as the main lcore's window saw it. */
struct ctl_ev_budget {
	const char *vm;
	const char *rule;	/* the budget's host pattern, as written */
	const char *state;	/* "warning" (80 %), "exhausted" (100 %), "available" (freed) */
	uint64_t used, limit;	/* bytes in the window, and the budget */
	uint32_t per;		/* the window, seconds */
};

/*
 * {"vm":V,"event":"budget","state":S,"rule":R,"used":N,"limit":N,"per":S}. Never rate
 * limited: each is a crossing, at most three per window. Returns 0 or -errno.
 */
int ctl_events_log_budget(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_budget *b);

/*
 * A query waiting for approval, or its end: {"event":E,"vm":V,"id":N,"name":H,"type":T}
 * plus ,"grant":G when an approval made grant G, and who decided (NULL: nobody did).
 * event: "approval_pending", "approval_approved", "approval_denied", "approval_timeout".
 * Returns 0 or -errno.
 */
int ctl_events_log_approval(struct ctl_events *ev, const struct timespec *now, const char *event,
    const char *vm, uint64_t id, const char *name, uint16_t qtype, uint64_t grant,
    const struct ctl_ev_who *who);

/*
 * {"event":"ha_role","role":R,"from":F[,"instance":I]}: keepalived gave the HA pair's box
 * role R ("master", "backup", "fault", "stop"), after F. Never rate-limited. Returns 0 or
 * -errno.
 */
int ctl_events_log_ha(struct ctl_events *ev, const struct timespec *now, const char *role,
    const char *from, const char *instance);

/*
 * {"event":"ha_guard","state":S,"from":F,"reason":R}: the HA pair's split-brain guard went
 * from state F to S ("clear": keepalived's role alone decides; "yield": a peer of higher
 * priority forwards, this box does not; "hold": stalled or starting, nothing forwarded
 * until the peer's resync), R in words. Never rate-limited. Returns 0 or -errno.
 */
int ctl_events_log_ha_guard(struct ctl_events *ev, const struct timespec *now,
    const char *state, const char *from, const char *reason);

/* {"event":"start","version":V,"pid":P}. Returns 0 or -errno. */
int ctl_events_log_start(struct ctl_events *ev, const struct timespec *now, const char *version);

/* Flushes suppressed counts, then {"event":"stop"}. Returns 0 or the first -errno. */
int ctl_events_log_stop(struct ctl_events *ev, const struct timespec *now);

/*
 * For each VM with blocks suppressed since its last logged line, in the order the VMs were
 * first seen: {"vm":V,"event":"suppressed","suppressed":N}. Call it about once a second,
 * so a flood that stops is still accounted for. Returns 0 or the first -errno.
 */
int ctl_events_flush(struct ctl_events *ev, const struct timespec *now);

/*
 * Reopens the path now (SIGUSR2, after an external rotation). On failure the old file
 * stays in use and -errno is returned.
 */
int ctl_events_reopen(struct ctl_events *ev);

/*
 * Lines lost since open: writes that failed (a full disk, a collector not there) and lines
 * that could not be built (out of memory). Any thread; NULL: 0.
 */
uint64_t ctl_events_lost(const struct ctl_events *ev);

/*
 * Copies path to out from its first byte. With follow, keeps copying what is appended, like
 * `tail -F`: after a rename or removal it drains the old file, then reads the new one from
 * its start once it appears; a truncated file is read again from its start. Returns 0 at
 * the end of the file (follow false) or once *stop is set (stop may be NULL: never), or
 * -errno when path cannot be opened at the start or reading or writing fails.
 */
int ctl_events_follow(const char *path, FILE *out, bool follow, volatile sig_atomic_t *stop);

#endif /* CTL_EVENTS_H */
