/*
 * Approval on the control loop: the requests the workers announce (DP_EVT_ASK records)
 * kept until they end (DP_EVT_ASK_END), each under an ID of its own; namegatectl pending
 * lists them, approve turns one into a grant (ctl_grants_live_make(): a new generation in
 * which the workers find the name allowed and send the held query on), deny tells its
 * worker, through the plane, to refuse it. Events for each step, the webhook for each new
 * request. The control loop's thread only, except ctl_approval_render().
 */
#ifndef CTL_APPROVAL_H
#define CTL_APPROVAL_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#define CTL_APPROVAL_DEFAULT_FOR	"1h"	/* an approval's grant, without --for */

struct ctl_approvals;
struct ctl_events;
struct ctl_grants_live;
struct ctl_sock;
struct dp_evt;
struct dp_plane;
struct pol_config;

/* cfgp, events (may be NULL), plane and grants are kept. NULL when out of memory. */
struct ctl_approvals *ctl_approval_start(struct pol_config *const *cfgp,
    struct ctl_events *events, const struct dp_plane *plane, struct ctl_grants_live *grants);
void ctl_approval_stop(struct ctl_approvals *a);

/* A DP_EVT_ASK or DP_EVT_ASK_END record of worker w, for the VM named vm (NULL: none). */
void ctl_approval_record(struct ctl_approvals *a, unsigned int w, const char *vm,
    const struct dp_evt *e, const struct timespec *now);

/*
 * Once a second or so: forget requests whose end never came (its record was lost on a
 * full ring; the worker answered it at its timeout all the same).
 */
void ctl_approval_tick(struct ctl_approvals *a);

/*
 * Are webhook POSTs in flight (moved on by this call)? Then the loop should turn again
 * within CTL_WEBHOOK_TICK_MS.
 */
bool ctl_approval_busy(const struct ctl_approvals *a);

/* A request as the fleet store shows it (control/fleet): strings valid during the call. */
struct ctl_approval_req {
	uint64_t id;
	const char *vm, *name;
	uint16_t qtype;
	int64_t first_seen;		/* UTC seconds */
	int64_t expires;		/* UTC seconds: approval.timeout answers it then */
};

/*
 * Called with open when a request begins to wait, and without when it stops waiting
 * (answered, approved, denied, timed out or forgotten).
 */
typedef void ctl_approval_listen_fn(void *arg, const struct ctl_approval_req *r, bool open);

/* One listener (NULL: none); the fleet agent's, which puts requests in the store. */
void ctl_approval_set_listener(struct ctl_approvals *a, ctl_approval_listen_fn *fn,
    void *arg);

/*
 * Deny request id, as decided elsewhere in the fleet by user (uid -1: unknown): its held
 * query is answered REFUSED, the event names the user. 0, or -ENOENT when no undecided
 * request has that id.
 */
int ctl_approval_deny(struct ctl_approvals *a, uint64_t id, int64_t uid, const char *user);

/* The name undecided request id waits for, or NULL. */
const char *ctl_approval_name(const struct ctl_approvals *a, uint64_t id);

/* namegate_approval_pending and namegate_approval_webhook_total: any thread. */
void ctl_approval_render(struct ctl_approvals *a, FILE *out);

/* Serve pending, approve and deny on s. 0 or -errno (ctl_sock_serve()). */
int ctl_approval_serve(struct ctl_approvals *a, struct ctl_sock *s);

#endif
