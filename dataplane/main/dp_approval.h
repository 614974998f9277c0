/*
 * Approval on the main lcore: the requests the workers announce (DP_EVT_ASK) kept until
 * they end (DP_EVT_ASK_END), each under an ID of its own; namegatectl pending lists them,
 * approve turns one into a grant (dp_grants_make(): a new generation in which the
 * workers find the name allowed and send the held query on), deny tells its worker to
 * refuse it. Events for each step. Main lcore only.
 */
#ifndef DP_APPROVAL_H
#define DP_APPROVAL_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "api/dp_api.h"
#include "ctl_sock.h"

#define DP_APPROVAL_DEFAULT_FOR	"1h"	/* an approval's grant, without --for */

struct dp_control;
struct dp_approvals;

/* Sets c->approvals; 0 or -ENOMEM. */
int dp_approval_start(struct dp_control *c);
void dp_approval_stop(struct dp_control *c);

/* A DP_EVT_ASK or DP_EVT_ASK_END record from worker w. */
void dp_approval_evt(struct dp_control *c, unsigned int w, const struct dp_evt *e,
    const struct timespec *now);

/*
 * Once a second or so: forget requests whose end never came (its record was lost on a
 * full ring; the worker answered it at its timeout all the same).
 */
void dp_approval_tick(struct dp_control *c);

/*
 * Are webhook POSTs in flight (moved on by this call)? Then the loop should turn again
 * within CTL_WEBHOOK_TICK_MS.
 */
bool dp_approval_busy(const struct dp_control *c);

/* namegate_approval_pending and namegate_approval_webhook_total (metrics thread). */
void dp_approval_render(const struct dp_control *c, FILE *out);

/* Serve pending, approve and deny on s. 0 or -errno (ctl_sock_serve()). */
int dp_approval_serve(struct ctl_sock *s, struct dp_control *c);

#endif
