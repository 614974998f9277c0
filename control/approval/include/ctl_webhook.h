/*
 * approval.webhook: each new approval request POSTed as JSON to one URL, off the hot path
 * and without blocking the main loop. libcurl's multi interface does the transfers; the
 * loop calls ctl_webhook_poll() on every turn (a non-blocking curl_multi_perform) and,
 * while transfers run, turns again within CTL_WEBHOOK_TICK_MS. No thread: the loop owns
 * the handle, as it owns every other socket, and a slow receiver costs a transfer slot
 * until its timeout, never a turn of the loop. Failures (no connection, timeout, a non-2xx
 * status, too many in flight) are counted, never retried: the request still waits, and
 * namegatectl pending lists it.
 */
#ifndef CTL_WEBHOOK_H
#define CTL_WEBHOOK_H

#include <stdint.h>

#define CTL_WEBHOOK_INFLIGHT	16	/* transfers at once; more are failures */
#define CTL_WEBHOOK_TIMEOUT_MS	5000	/* one POST, connection included */
#define CTL_WEBHOOK_TICK_MS	5	/* the loop's turn while transfers run */

struct ctl_webhook;

struct ctl_webhook_counters {
	uint64_t sent;		/* answered 2xx */
	uint64_t failed;	/* anything else */
};

/* A webhook posting to url (copied); NULL and errno on failure. */
struct ctl_webhook *ctl_webhook_new(const char *url);

/* Start POSTing body (copied; Content-Type: application/json). 0, or -errno (counted). */
int ctl_webhook_post(struct ctl_webhook *w, const char *body);

/* Move the transfers on without blocking and reap the finished. Returns those still running. */
unsigned int ctl_webhook_poll(struct ctl_webhook *w);

void ctl_webhook_counters(const struct ctl_webhook *w, struct ctl_webhook_counters *out);

/* Abandons transfers still running. NULL is a no-op. */
void ctl_webhook_free(struct ctl_webhook *w);

#endif
