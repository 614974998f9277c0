/*
 * Requests waiting for approval, as the control loop knows them. A request is the worker's
 * held query (worker, slot, seq); its ID here is what the operator types. The worker
 * decides when it ends (released, denied, timed out) and says so; this table only
 * mirrors it, so a lost record costs a stale line for approval.timeout, never a query.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "api/dp_api.h"
#include "api/dp_plane.h"
#include "ctl_approval.h"
#include "ctl_events.h"
#include "ctl_grants.h"
#include "ctl_grants_live.h"
#include "ctl_sock.h"
#include "ctl_webhook.h"
#include "policy/load.h"

#define CTL_APPROVALS_MAX	1024	/* DP_WORKERS_MAX workers' tables, 64 each */
#define CTL_APPROVAL_SLACK	3	/* s past the timeout, then a lost end is assumed */

struct ctl_request {
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

struct ctl_approvals {
	struct pol_config *const *cfgp;	/* the configuration in force */
	struct ctl_events *events;	/* NULL: no event log */
	const struct dp_plane *plane;
	struct ctl_grants_live *grants;	/* what approve makes */
	pthread_mutex_t hook_lock;	/* a scrape reads the hook's counters */
	struct ctl_request r[CTL_APPROVALS_MAX];
	uint64_t next_id;
	_Atomic uint64_t lost;		/* announcements with no room here */
	_Atomic unsigned int waiting;	/* undecided requests: the gauge */
	struct ctl_webhook *hook;	/* approval.webhook, or NULL */
	char *hook_url;			/* the URL hook posts to */
	ctl_approval_listen_fn *listen;	/* the fleet agent, or NULL */
	void *listen_arg;
};

void
ctl_approval_set_listener(struct ctl_approvals *a, ctl_approval_listen_fn *fn, void *arg)
{
	a->listen = fn;
	a->listen_arg = arg;
}

/* r begins (open) or stops waiting: tell the listener. */
static void
ctl_ap_tell(const struct ctl_approvals *a, const struct ctl_request *r, bool open)
{
	struct ctl_approval_req q = { .id = r->id, .vm = r->vm, .name = r->name,
		.qtype = r->qtype, .first_seen = r->first_seen,
		.expires = r->first_seen + (*a->cfgp)->approval_timeout };

	if (a->listen != NULL)
		a->listen(a->listen_arg, &q, open);
}

static int64_t
ctl_ap_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

struct ctl_approvals *
ctl_approval_start(struct pol_config *const *cfgp, struct ctl_events *events,
    const struct dp_plane *plane, struct ctl_grants_live *grants)
{
	struct ctl_approvals *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->cfgp = cfgp;
	a->events = events;
	a->plane = plane;
	a->grants = grants;
	a->next_id = 1;
	pthread_mutex_init(&a->hook_lock, NULL);
	return a;
}

void
ctl_approval_stop(struct ctl_approvals *a)
{
	if (a == NULL)
		return;
	ctl_webhook_free(a->hook);
	free(a->hook_url);
	pthread_mutex_destroy(&a->hook_lock);
	free(a);
}

/* The webhook for the configuration in force (a reload may change or drop its URL). */
static void
ctl_ap_hook_sync(struct ctl_approvals *a)
{
	const char *url = (*a->cfgp)->approval_webhook;

	if (a->hook_url == NULL ? url == NULL : url != NULL && strcmp(url, a->hook_url) == 0)
		return;
	/* a scrape reads the hook's counters: swap it under their lock */
	pthread_mutex_lock(&a->hook_lock);
	ctl_webhook_free(a->hook);
	free(a->hook_url);
	a->hook = NULL;
	a->hook_url = NULL;
	if (url != NULL &&
	    ((a->hook_url = strdup(url)) == NULL || (a->hook = ctl_webhook_new(url)) == NULL))
		fprintf(stderr, "namegate: approval.webhook %s: cannot be set up\n", url);
	pthread_mutex_unlock(&a->hook_lock);
}

/* {id, vm, name, type, first_seen} to the webhook, if there is one. */
static void
ctl_ap_announce(struct ctl_approvals *a, const struct ctl_request *r)
{
	struct json_object *o;
	char seen[32];

	ctl_ap_hook_sync(a);
	if (a->hook == NULL || (o = json_object_new_object()) == NULL)
		return;
	ctl_grant_time(r->first_seen, seen, sizeof(seen));
	if (json_object_object_add(o, "id", json_object_new_uint64(r->id)) == 0 &&
	    json_object_object_add(o, "vm", json_object_new_string(r->vm)) == 0 &&
	    json_object_object_add(o, "name", json_object_new_string(r->name)) == 0 &&
	    json_object_object_add(o, "type", json_object_new_int(r->qtype)) == 0 &&
	    json_object_object_add(o, "first_seen", json_object_new_string(seen)) == 0)
		(void)ctl_webhook_post(a->hook, json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

bool
ctl_approval_busy(const struct ctl_approvals *a)
{
	return a != NULL && a->hook != NULL && ctl_webhook_poll(a->hook) > 0;
}

void
ctl_approval_render(struct ctl_approvals *a, FILE *out)
{
	struct ctl_webhook_counters k = { 0 };

	pthread_mutex_lock(&a->hook_lock);
	ctl_webhook_counters(a->hook, &k);
	pthread_mutex_unlock(&a->hook_lock);
	fprintf(out, "# HELP namegate_approval_pending DNS queries waiting for approval\n"
	    "# TYPE namegate_approval_pending gauge\n"
	    "namegate_approval_pending %u\n"
	    "# HELP namegate_approval_webhook_total approval.webhook POSTs, by outcome\n"
	    "# TYPE namegate_approval_webhook_total counter\n"
	    "namegate_approval_webhook_total{result=\"sent\"} %llu\n"
	    "namegate_approval_webhook_total{result=\"failed\"} %llu\n",
	    atomic_load(&a->waiting), (unsigned long long)k.sent,
	    (unsigned long long)k.failed);
}

/* by: the client that decided; NULL when nobody did (pending, timeout). */
static void
ctl_ap_log(struct ctl_approvals *a, const char *event, const struct ctl_request *r,
    uint64_t grant, const struct ctl_peer *by)
{
	struct ctl_ev_who who = { 0 };
	struct timespec now;

	if (a->events == NULL)
		return;
	if (by != NULL)
		who = (struct ctl_ev_who){ .uid = by->uid, .pid = by->pid, .user = by->user };
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_approval(a->events, &now, event, r->vm, r->id, r->name, r->qtype, grant,
	    by != NULL ? &who : NULL);
}

static struct ctl_request *
ctl_ap_find(struct ctl_approvals *a, unsigned int w, uint32_t slot, uint64_t seq)
{
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++)
		if (a->r[i].id != 0 && a->r[i].worker == w && a->r[i].slot == slot &&
		    a->r[i].seq == seq)
			return &a->r[i];
	return NULL;
}

void
ctl_approval_record(struct ctl_approvals *a, unsigned int w, const char *vm,
    const struct dp_evt *e, const struct timespec *now)
{
	struct ctl_request *r;

	if (a == NULL || vm == NULL)
		return;
	if (e->type == DP_EVT_ASK_END) {
		if ((r = ctl_ap_find(a, w, e->ttl, e->expires)) == NULL)
			return;
		/* approve and deny logged themselves; a release nobody here decided is quiet */
		if (e->reason == DP_ASK_END_TIMEOUT)
			ctl_ap_log(a, "approval_timeout", r, 0, NULL);
		if (!r->decided) {
			atomic_fetch_sub(&a->waiting, 1);
			ctl_ap_tell(a, r, false);
		}
		r->id = 0;
		return;
	}
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++) {
		if (a->r[i].id != 0)
			continue;
		r = &a->r[i];
		*r = (struct ctl_request){ .id = a->next_id++, .worker = w, .slot = e->ttl,
			.seq = e->expires, .qtype = e->port, .first_seen = (int64_t)now->tv_sec,
			.forget_at = ctl_ap_mono() + (*a->cfgp)->approval_timeout +
			    CTL_APPROVAL_SLACK };
		snprintf(r->vm, sizeof(r->vm), "%s", vm);
		memcpy(r->name, e->name, e->name_len);
		r->name[e->name_len] = '\0';
		ctl_ap_log(a, "approval_pending", r, 0, NULL);
		atomic_fetch_add(&a->waiting, 1);
		ctl_ap_announce(a, r);
		ctl_ap_tell(a, r, true);
		return;
	}
	atomic_fetch_add(&a->lost, 1);
}

void
ctl_approval_tick(struct ctl_approvals *a)
{
	int64_t now = ctl_ap_mono();

	if (a == NULL)
		return;
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++) {
		struct ctl_request *r = &a->r[i];

		if (r->id == 0 || r->forget_at > now)
			continue;
		if (!r->decided) {
			atomic_fetch_sub(&a->waiting, 1);
			ctl_ap_tell(a, r, false);
		}
		r->id = 0;
	}
	ctl_webhook_poll(a->hook);
}

static const char *
ctl_ap_type(uint16_t t, char *buf, size_t len)
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
ctl_request_json(const struct ctl_approvals *a, const struct ctl_request *r, bool detail)
{
	struct json_object *o = json_object_new_object();
	int64_t now = (int64_t)time(NULL), age = now > r->first_seen ? now - r->first_seen : 0;
	int64_t timeout = (*a->cfgp)->approval_timeout;
	char seen[32], type[16];

	if (o == NULL)
		return NULL;
	ctl_grant_time(r->first_seen, seen, sizeof(seen));
	if (json_object_object_add(o, "id", json_object_new_uint64(r->id)) < 0 ||
	    json_object_object_add(o, "vm", json_object_new_string(r->vm)) < 0 ||
	    json_object_object_add(o, "name", json_object_new_string(r->name)) < 0 ||
	    (detail && (json_object_object_add(o, "type", json_object_new_int(r->qtype)) < 0 ||
	    json_object_object_add(o, "type_name", json_object_new_string(
	    ctl_ap_type(r->qtype, type, sizeof(type)))) < 0 ||
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
ctl_ap_cmd_pending(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct ctl_approvals *a = arg;
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	struct ctl_request *v[CTL_APPROVALS_MAX];
	unsigned int n = 0;

	if (o == NULL || list == NULL || json_object_object_add(o, "pending", list) < 0) {
		json_object_put(list);
		json_object_put(o);
		return -ENOMEM;
	}
	if (vm != NULL && pol_config_vm(*a->cfgp, vm) == NULL) {
		json_object_put(o);
		fprintf(out, "unknown VM '%s'", vm);
		return -ENOENT;
	}
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++) {
		struct ctl_request *r = &a->r[i];

		if (r->id != 0 && !r->decided && (vm == NULL || strcmp(vm, r->vm) == 0))
			v[n++] = r;
	}
	/* oldest first: IDs grow with time */
	for (unsigned int i = 1; i < n; i++)
		for (unsigned int j = i; j > 0 && v[j - 1]->id > v[j]->id; j--) {
			struct ctl_request *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (unsigned int i = 0; i < n; i++) {
		struct json_object *e = ctl_request_json(a, v[i], true);

		if (e == NULL || json_object_array_add(list, e) < 0) {
			json_object_put(e);
			json_object_put(o);
			return -ENOMEM;
		}
	}
	return ctl_sock_reply_json(out, NULL, o);
}

/* The undecided request id names in *rp: 0, or -EINVAL / -ENOENT with the reason on out. */
static int
ctl_ap_lookup(struct ctl_approvals *a, FILE *out, const char *id, struct ctl_request **rp)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(id, &end, 10);
	if (id[0] < '0' || id[0] > '9' || *end != '\0' || errno != 0 || v == 0) {
		fprintf(out, "bad request id \"%.32s\" (a number from namegatectl pending)", id);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++)
		if (a->r[i].id == v && !a->r[i].decided) {
			*rp = &a->r[i];
			return 0;
		}
	fprintf(out, "no request %" PRIu64 " waits for approval", v);
	return -ENOENT;
}

static int
ctl_ap_cmd_approve(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id, *dur = req->dur;
	struct ctl_approvals *a = arg;
	struct json_object *o;
	struct ctl_request *r, copy;
	struct ctl_grant g;
	char why[512], reason[64];
	int rc;

	if ((rc = ctl_ap_lookup(a, out, id, &r)) < 0)
		return rc;
	copy = *r;
	r->decided = true;	/* making the grant drains: the request may end meanwhile */
	atomic_fetch_sub(&a->waiting, 1);
	ctl_ap_tell(a, &copy, false);
	snprintf(reason, sizeof(reason), "approved request %" PRIu64, copy.id);
	if ((rc = ctl_grants_live_make(a->grants, copy.vm, copy.name,
	    dur != NULL ? dur : CTL_APPROVAL_DEFAULT_FOR, reason, req->peer, &g, why,
	    sizeof(why))) < 0) {
		if (r->id == copy.id) {
			r->decided = false;
			atomic_fetch_add(&a->waiting, 1);
			ctl_ap_tell(a, r, true);
		}
		fputs(why, out);
		return rc;
	}
	ctl_ap_log(a, "approval_approved", &copy, g.id, req->peer);
	o = json_object_new_object();
	if (o == NULL || json_object_object_add(o, "approved",
	    ctl_request_json(a, &copy, false)) < 0 ||
	    json_object_object_add(o, "grant", json_object_new_uint64(g.id)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return ctl_sock_reply_json(out, NULL, o);
}

static void
ctl_ap_deny(struct ctl_approvals *a, struct ctl_request *r, const struct ctl_peer *by)
{
	r->decided = true;
	atomic_fetch_sub(&a->waiting, 1);
	a->plane->deny_ask(a->plane->dp, r->worker, r->slot, r->seq);
	ctl_ap_log(a, "approval_denied", r, 0, by);
	ctl_ap_tell(a, r, false);
}

const char *
ctl_approval_name(const struct ctl_approvals *a, uint64_t id)
{
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++)
		if (a->r[i].id == id && !a->r[i].decided)
			return a->r[i].name;
	return NULL;
}

int
ctl_approval_deny(struct ctl_approvals *a, uint64_t id, int64_t uid, const char *user)
{
	struct ctl_peer by = { .uid = uid >= 0 ? (uint32_t)uid : UINT32_MAX };

	snprintf(by.user, sizeof(by.user), "%s", user);
	for (unsigned int i = 0; i < CTL_APPROVALS_MAX; i++)
		if (a->r[i].id == id && !a->r[i].decided) {
			ctl_ap_deny(a, &a->r[i], &by);
			return 0;
		}
	return -ENOENT;
}

static int
ctl_ap_cmd_deny(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	struct ctl_approvals *a = arg;
	struct json_object *o;
	struct ctl_request *r;
	int rc;

	if ((rc = ctl_ap_lookup(a, out, id, &r)) < 0)
		return rc;
	ctl_ap_deny(a, r, req->peer);
	o = json_object_new_object();
	if (o == NULL || json_object_object_add(o, "denied", ctl_request_json(a, r, false)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return ctl_sock_reply_json(out, NULL, o);
}

static const struct ctl_cmd ctl_ap_cmds[] = {
	{ "pending", CTL_ARG_VM, ctl_ap_cmd_pending },
	{ "approve", CTL_ARG_ID | CTL_ARG_FOR_OPT, ctl_ap_cmd_approve },
	{ "deny", CTL_ARG_ID, ctl_ap_cmd_deny },
};

int
ctl_approval_serve(struct ctl_approvals *a, struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_ap_cmds, sizeof(ctl_ap_cmds) /
	    sizeof(ctl_ap_cmds[0]), a);
}
