/*
 * Requests waiting for approval, as the main lcore knows them. A request is the worker's
 * held query (worker, slot, seq); its ID here is what the operator types. The worker
 * decides when it ends (released, denied, timed out) and says so; this table only
 * mirrors it, so a lost record costs a stale line for approval.timeout, never a query.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_events.h"
#include "ctl_grants.h"
#include "ctl_webhook.h"
#include "dp.h"
#include "dp_approval.h"
#include "dp_control.h"
#include "dp_grants.h"
#include "dp_worker.h"
#include "policy/load.h"

#define DP_APPROVALS_MAX	1024	/* DP_WORKERS_MAX workers' tables, 64 each */
#define DP_APPROVAL_SLACK	3	/* s past the timeout, then a lost end is assumed */

struct dp_request {
	uint64_t id;			/* 0: free */
	unsigned int worker;
	uint32_t slot;
	uint64_t seq;
	uint16_t qtype;
	bool decided;			/* approved or denied: not pending, not yet ended */
	int64_t first_seen;		/* UTC seconds */
	int64_t forget_at;		/* CLOCK_MONOTONIC seconds */
	char vm[POL_VM_NAME_MAX + 1];
	char name[DP_EVT_NAME_MAX + 1];
};

struct dp_approvals {
	struct dp_request r[DP_APPROVALS_MAX];
	uint64_t next_id;
	_Atomic uint64_t lost;		/* announcements with no room here */
	_Atomic unsigned int waiting;	/* undecided requests: the gauge */
	struct ctl_webhook *hook;	/* approval.webhook, or NULL */
	char *hook_url;			/* the URL hook posts to */
};

static int64_t
dp_approval_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

int
dp_approval_start(struct dp_control *c)
{
	if ((c->approvals = calloc(1, sizeof(*c->approvals))) == NULL)
		return -ENOMEM;
	c->approvals->next_id = 1;
	return 0;
}

void
dp_approval_stop(struct dp_control *c)
{
	if (c->approvals == NULL)
		return;
	ctl_webhook_free(c->approvals->hook);
	free(c->approvals->hook_url);
	free(c->approvals);
	c->approvals = NULL;
}

/* The webhook for the configuration in force (a reload may change or drop its URL). */
static void
dp_approval_hook_sync(struct dp_control *c)
{
	struct dp_approvals *a = c->approvals;
	const char *url = (*c->cfgp)->approval_webhook;

	if (a->hook_url == NULL ? url == NULL : url != NULL && strcmp(url, a->hook_url) == 0)
		return;
	/* a scrape reads the hook's counters under gen_lock: swap it under the lock too */
	pthread_mutex_lock(&c->gen_lock);
	ctl_webhook_free(a->hook);
	free(a->hook_url);
	a->hook = NULL;
	a->hook_url = NULL;
	if (url != NULL &&
	    ((a->hook_url = strdup(url)) == NULL || (a->hook = ctl_webhook_new(url)) == NULL))
		fprintf(stderr, "namegate: approval.webhook %s: cannot be set up\n", url);
	pthread_mutex_unlock(&c->gen_lock);
}

/* {id, vm, name, type, first_seen} to the webhook, if there is one. */
static void
dp_approval_announce(struct dp_control *c, const struct dp_request *r)
{
	struct json_object *o;
	char seen[32];

	dp_approval_hook_sync(c);
	if (c->approvals->hook == NULL || (o = json_object_new_object()) == NULL)
		return;
	ctl_grant_time(r->first_seen, seen, sizeof(seen));
	if (json_object_object_add(o, "id", json_object_new_uint64(r->id)) == 0 &&
	    json_object_object_add(o, "vm", json_object_new_string(r->vm)) == 0 &&
	    json_object_object_add(o, "name", json_object_new_string(r->name)) == 0 &&
	    json_object_object_add(o, "type", json_object_new_int(r->qtype)) == 0 &&
	    json_object_object_add(o, "first_seen", json_object_new_string(seen)) == 0)
		(void)ctl_webhook_post(c->approvals->hook, json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

bool
dp_approval_busy(const struct dp_control *c)
{
	return c->approvals != NULL && c->approvals->hook != NULL &&
	    ctl_webhook_poll(c->approvals->hook) > 0;
}

void
dp_approval_render(const struct dp_control *c, FILE *out)
{
	struct ctl_webhook_counters k = { 0 };

	if (c->approvals == NULL)
		return;
	ctl_webhook_counters(c->approvals->hook, &k);
	fprintf(out, "# HELP namegate_approval_pending DNS queries waiting for approval\n"
	    "# TYPE namegate_approval_pending gauge\n"
	    "namegate_approval_pending %u\n"
	    "# HELP namegate_approval_webhook_total approval.webhook POSTs, by outcome\n"
	    "# TYPE namegate_approval_webhook_total counter\n"
	    "namegate_approval_webhook_total{result=\"sent\"} %llu\n"
	    "namegate_approval_webhook_total{result=\"failed\"} %llu\n",
	    atomic_load(&c->approvals->waiting), (unsigned long long)k.sent,
	    (unsigned long long)k.failed);
}

static void
dp_approval_log(struct dp_control *c, const char *event, const struct dp_request *r,
    uint64_t grant)
{
	struct timespec now;

	if (c->events == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_approval(c->events, &now, event, r->vm, r->id, r->name, r->qtype, grant);
}

static struct dp_request *
dp_approval_find(struct dp_approvals *a, unsigned int w, uint32_t slot, uint64_t seq)
{
	for (unsigned int i = 0; i < DP_APPROVALS_MAX; i++)
		if (a->r[i].id != 0 && a->r[i].worker == w && a->r[i].slot == slot &&
		    a->r[i].seq == seq)
			return &a->r[i];
	return NULL;
}

void
dp_approval_evt(struct dp_control *c, unsigned int w, const struct dp_evt *e,
    const struct timespec *now)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	struct dp_approvals *a = c->approvals;
	struct dp_request *r;

	if (a == NULL || e->vm >= g->nvms)
		return;
	if (e->type == DP_EVT_ASK_END) {
		if ((r = dp_approval_find(a, w, e->ttl, e->expires)) == NULL)
			return;
		/* approve and deny logged themselves; a release nobody here decided is quiet */
		if (e->reason == DP_ASK_END_TIMEOUT)
			dp_approval_log(c, "approval_timeout", r, 0);
		if (!r->decided)
			atomic_fetch_sub(&a->waiting, 1);
		r->id = 0;
		return;
	}
	for (unsigned int i = 0; i < DP_APPROVALS_MAX; i++) {
		if (a->r[i].id != 0)
			continue;
		r = &a->r[i];
		*r = (struct dp_request){ .id = a->next_id++, .worker = w, .slot = e->ttl,
			.seq = e->expires, .qtype = e->port, .first_seen = (int64_t)now->tv_sec,
			.forget_at = dp_approval_mono() + (*c->cfgp)->approval_timeout +
			    DP_APPROVAL_SLACK };
		snprintf(r->vm, sizeof(r->vm), "%s", g->vms[e->vm].name);
		memcpy(r->name, e->name, e->name_len);
		r->name[e->name_len] = '\0';
		dp_approval_log(c, "approval_pending", r, 0);
		atomic_fetch_add(&a->waiting, 1);
		dp_approval_announce(c, r);
		return;
	}
	atomic_fetch_add(&a->lost, 1);
}

void
dp_approval_tick(struct dp_control *c)
{
	int64_t now = dp_approval_mono();

	if (c->approvals == NULL)
		return;
	for (unsigned int i = 0; i < DP_APPROVALS_MAX; i++) {
		struct dp_request *r = &c->approvals->r[i];

		if (r->id == 0 || r->forget_at > now)
			continue;
		if (!r->decided)
			atomic_fetch_sub(&c->approvals->waiting, 1);
		r->id = 0;
	}
	ctl_webhook_poll(c->approvals->hook);
}

static const char *
dp_approval_type(uint16_t t, char *buf, size_t len)
{
	switch (t) {
	case 1: return "A";
	case 5: return "CNAME";
	case 28: return "AAAA";
	case 64: return "SVCB";
	case 65: return "HTTPS";
	default:
		snprintf(buf, len, "TYPE%u", (unsigned int)t);
		return buf;
	}
}

/* {"id":N,"vm":V,"name":H} and, with detail, the rest a listing shows; NULL: no memory. */
static struct json_object *
dp_request_json(const struct dp_control *c, const struct dp_request *r, bool detail)
{
	struct json_object *o = json_object_new_object();
	int64_t now = (int64_t)time(NULL), age = now > r->first_seen ? now - r->first_seen : 0;
	int64_t timeout = (*c->cfgp)->approval_timeout;
	char seen[32], type[16];

	if (o == NULL)
		return NULL;
	ctl_grant_time(r->first_seen, seen, sizeof(seen));
	if (json_object_object_add(o, "id", json_object_new_uint64(r->id)) < 0 ||
	    json_object_object_add(o, "vm", json_object_new_string(r->vm)) < 0 ||
	    json_object_object_add(o, "name", json_object_new_string(r->name)) < 0 ||
	    (detail && (json_object_object_add(o, "type", json_object_new_int(r->qtype)) < 0 ||
	    json_object_object_add(o, "type_name", json_object_new_string(
	    dp_approval_type(r->qtype, type, sizeof(type)))) < 0 ||
	    json_object_object_add(o, "first_seen", json_object_new_string(seen)) < 0 ||
	    json_object_object_add(o, "age", json_object_new_int64(age)) < 0 ||
	    json_object_object_add(o, "left", json_object_new_int64(age < timeout ?
	    timeout - age : 0)) < 0))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int
dp_approval_cs_pending(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct dp_control *c = arg;
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	struct dp_request *v[DP_APPROVALS_MAX];
	unsigned int n = 0;

	if (o == NULL || list == NULL || json_object_object_add(o, "pending", list) < 0) {
		json_object_put(list);
		json_object_put(o);
		return -ENOMEM;
	}
	if (vm != NULL && pol_config_vm(*c->cfgp, vm) == NULL) {
		json_object_put(o);
		fprintf(out, "unknown VM '%s'", vm);
		return -ENOENT;
	}
	dp_control_drain(c);	/* what the workers announced up to now */
	for (unsigned int i = 0; c->approvals != NULL && i < DP_APPROVALS_MAX; i++) {
		struct dp_request *r = &c->approvals->r[i];

		if (r->id != 0 && !r->decided && (vm == NULL || strcmp(vm, r->vm) == 0))
			v[n++] = r;
	}
	/* oldest first: IDs grow with time */
	for (unsigned int i = 1; i < n; i++)
		for (unsigned int j = i; j > 0 && v[j - 1]->id > v[j]->id; j--) {
			struct dp_request *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (unsigned int i = 0; i < n; i++) {
		struct json_object *e = dp_request_json(c, v[i], true);

		if (e == NULL || json_object_array_add(list, e) < 0) {
			json_object_put(e);
			json_object_put(o);
			return -ENOMEM;
		}
	}
	return dp_json_reply(out, NULL, o);
}

/* The undecided request id names in *rp: 0, or -EINVAL / -ENOENT with the reason on out. */
static int
dp_approval_lookup(struct dp_control *c, FILE *out, const char *id, struct dp_request **rp)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(id, &end, 10);
	if (id[0] < '0' || id[0] > '9' || *end != '\0' || errno != 0 || v == 0) {
		fprintf(out, "bad request id \"%.32s\" (a number from namegatectl pending)", id);
		return -EINVAL;
	}
	dp_control_drain(c);	/* a request that just ended is not approved */
	for (unsigned int i = 0; c->approvals != NULL && i < DP_APPROVALS_MAX; i++)
		if (c->approvals->r[i].id == v && !c->approvals->r[i].decided) {
			*rp = &c->approvals->r[i];
			return 0;
		}
	fprintf(out, "no request %" PRIu64 " waits for approval", v);
	return -ENOENT;
}

static int
dp_approval_cs_approve(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id, *dur = req->dur;
	struct dp_control *c = arg;
	struct json_object *o;
	struct dp_request *r, copy;
	struct ctl_grant g;
	char why[512], reason[64];
	int rc;

	if ((rc = dp_approval_lookup(c, out, id, &r)) < 0)
		return rc;
	copy = *r;
	r->decided = true;	/* dp_grants_make() drains: the request may end meanwhile */
	atomic_fetch_sub(&c->approvals->waiting, 1);
	snprintf(reason, sizeof(reason), "approved request %" PRIu64, copy.id);
	if ((rc = dp_grants_make(c, copy.vm, copy.name, dur != NULL ? dur : DP_APPROVAL_DEFAULT_FOR,
	    reason, &g, why, sizeof(why))) < 0) {
		if (r->id == copy.id) {
			r->decided = false;
			atomic_fetch_add(&c->approvals->waiting, 1);
		}
		fputs(why, out);
		return rc;
	}
	dp_approval_log(c, "approval_approved", &copy, g.id);
	o = json_object_new_object();
	if (o == NULL || json_object_object_add(o, "approved",
	    dp_request_json(c, &copy, false)) < 0 ||
	    json_object_object_add(o, "grant", json_object_new_uint64(g.id)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return dp_json_reply(out, NULL, o);
}

static int
dp_approval_cs_deny(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	struct dp_control *c = arg;
	struct json_object *o;
	struct dp_request *r;
	int rc;

	if ((rc = dp_approval_lookup(c, out, id, &r)) < 0)
		return rc;
	r->decided = true;
	atomic_fetch_sub(&c->approvals->waiting, 1);
	dp_worker_ask_deny(c->ctx->workers[r->worker], r->slot, r->seq);
	dp_approval_log(c, "approval_denied", r, 0);
	o = json_object_new_object();
	if (o == NULL || json_object_object_add(o, "denied", dp_request_json(c, r, false)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return dp_json_reply(out, NULL, o);
}

static const struct ctl_cmd dp_approval_cmds[] = {
	{ "pending", CTL_ARG_VM, dp_approval_cs_pending },
	{ "approve", CTL_ARG_ID | CTL_ARG_FOR_OPT, dp_approval_cs_approve },
	{ "deny", CTL_ARG_ID, dp_approval_cs_deny },
};

int
dp_approval_serve(struct ctl_sock *s, struct dp_control *c)
{
	return ctl_sock_serve(s, dp_approval_cmds, sizeof(dp_approval_cmds) / sizeof(dp_approval_cmds[0]), c);
}
