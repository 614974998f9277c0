/*
 * Grants on the main lcore: every change (grant, revoke, expiry, reload) ends in one new
 * generation built from the configuration with the live grants on top, published as a
 * reload publishes, so the workers need nothing new: dp_flow_still_allowed() judges a
 * flow opened under a grant against the generation without it and cuts it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_events.h"
#include "ctl_grants.h"
#include "dp.h"
#include "dp_control.h"
#include "dp_grants.h"
#include "dp_reload.h"
#include "policy/load.h"

struct dp_grants {
	struct dp_control *c;
	struct ctl_grants *table;
	struct ctl_overlay ov;		/* what the running generation was built from */
	uint32_t live[DP_VM_SLOTS];	/* per VM slot, for the gauge; under c->gen_lock */
	int64_t ticked;			/* the second of the last tick */
	bool stale;			/* the table changed, the generation has not yet */
	bool closing;			/* a grant ended, no generation has yet been put out */
};

static int64_t
dp_grants_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

static void
dp_grants_event(struct dp_grants *gr, const char *event, const struct ctl_grant *g)
{
	struct ctl_ev_grant e = { .event = event, .id = g->id, .vm = g->vm, .host = g->host,
		.expires = g->expires, .reason = g->reason };
	struct timespec now;

	if (gr->c->events == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_grant(gr->c->events, &now, &e);
}

static void
dp_grants_expired(const struct ctl_grant *g, void *arg)
{
	dp_grants_event(arg, "grant_expired", g);
}

static void
dp_grants_dropped(const struct ctl_grant *g, void *arg)
{
	dp_grants_event(arg, "grant_revoked", g);
}

/* The gauge's counts for the running generation's slots; gen_lock held. */
static void
dp_grants_count(struct dp_grants *gr)
{
	const struct dp_gen *g = atomic_load_explicit(&gr->c->ctx->gen, memory_order_acquire);

	memset(gr->live, 0, sizeof(gr->live));
	for (uint16_t s = 0; s < g->nvms && s < DP_VM_SLOTS; s++)
		if (g->vms[s].present)
			gr->live[s] = (uint32_t)ctl_grants_count_vm(gr->table, g->vms[s].name);
}

/* ov's view is in force: keep ov, follow it with the gauge and the slow path's table. */
static void
dp_grants_in_force(struct dp_grants *gr, struct ctl_overlay *ov, FILE *err)
{
	struct dp_control *c = gr->c;

	ctl_overlay_free(&gr->ov);
	gr->ov = *ov;
	dp_grants_count(gr);
	if (c->nft != NULL && dp_control_nft_open(c, err) != 0)
		fputs("namegate: grants: the slow path's table could not be rebuilt\n", err);
}

/*
 * A closing whose generation could not be built (the grants that stay would not fit):
 * the configuration alone, every grant out of force until the caller's retry puts the
 * live ones back. A closing never waits on an opening. 1, or -errno.
 */
static int
dp_grants_close_all(struct dp_grants *gr, FILE *err)
{
	struct ctl_overlay none = { .view = **gr->c->cfgp };	/* no set: the view is cfg */
	int rc;

	if ((rc = dp_publish(gr->c->ctx, *gr->c->cfgp, gr->c->names, true, err)) != 0)
		return rc;
	dp_grants_in_force(gr, &none, err);
	fputs("namegate: grants: none in force until the live ones can be; retrying\n", err);
	return 1;
}

/*
 * A new generation for the grants live now, on the running configuration. Names learned
 * so far are drained first so each is judged under it; the slow path's table is rebuilt
 * with it, so its elements follow too. closing: the change ends or narrows a grant, so it
 * takes effect whatever room there is (dp_publish(), dp_grants_close_all()). 0; 1 when
 * only the closing is in force; -errno when nothing changed.
 */
static int
dp_grants_apply(struct dp_grants *gr, bool closing, FILE *err)
{
	struct dp_control *c = gr->c;
	struct ctl_overlay ov;
	int rc;

	dp_control_drain(c);
	pthread_mutex_lock(&c->gen_lock);
	if ((rc = ctl_overlay_build(gr->table, *c->cfgp, dp_grants_now(), &ov)) == 0) {
		if ((rc = dp_publish(c->ctx, &ov.view, c->names, closing, err)) == 0)
			dp_grants_in_force(gr, &ov, err);
		else
			ctl_overlay_free(&ov);
	}
	if (rc < 0 && closing)
		rc = dp_grants_close_all(gr, err);
	pthread_mutex_unlock(&c->gen_lock);
	return rc;
}

/*
 * dp_grants_apply() for a change of the table, remembering what is not yet in force: a
 * closing stays one until a generation is out, the live grants stale until all are in.
 */
static int
dp_grants_put(struct dp_grants *gr, bool closing, FILE *err)
{
	int rc;

	gr->closing = gr->closing || closing;
	rc = dp_grants_apply(gr, gr->closing, err);
	if (rc >= 0)
		gr->closing = false;
	gr->stale = rc != 0;
	return rc;
}

static void
dp_grants_save(struct dp_grants *gr)
{
	char err[512];

	if (ctl_grants_save(gr->table, err, sizeof(err)) < 0)
		fprintf(stderr, "namegate: grants: %s (the grants in force are not on disk)\n",
		    err);
}

int
dp_grants_start(struct dp_control *c, FILE *log)
{
	const struct pol_config *cfg = *c->cfgp;
	struct dp_grants *gr;
	char err[512];
	size_t ended;

	if ((gr = calloc(1, sizeof(*gr))) == NULL ||
	    (gr->table = ctl_grants_new(cfg->grants_state)) == NULL) {
		free(gr);
		return -ENOMEM;
	}
	gr->c = c;
	c->grants = gr;
	if (ctl_grants_load(gr->table, err, sizeof(err)) < 0) {
		struct timespec now;

		fprintf(log, "namegate: grants: %s; granting nothing (fail closed)\n", err);
		clock_gettime(CLOCK_REALTIME, &now);
		if (c->events != NULL)
			ctl_events_log_grants_damaged(c->events, &now, cfg->grants_state, err);
	}
	ended = ctl_grants_expire(gr->table, dp_grants_now(), dp_grants_expired, gr) +
	    ctl_grants_drop_unknown(gr->table, cfg, dp_grants_dropped, gr);
	if (ended > 0)
		dp_grants_save(gr);
	if (ctl_grants_count(gr->table) > 0) {
		if (dp_grants_apply(gr, false, log) != 0)
			fputs("namegate: grants: not in force\n", log);
		else
			fprintf(log, "namegate: grants: %zu in force from %s\n",
			    ctl_grants_count(gr->table), cfg->grants_state);
	}
	return 0;
}

void
dp_grants_stop(struct dp_control *c)
{
	struct dp_grants *gr = c->grants;

	if (gr == NULL)
		return;
	c->grants = NULL;
	ctl_overlay_free(&gr->ov);
	ctl_grants_free(gr->table);
	free(gr);
}

int64_t
dp_grants_next_expiry(const struct dp_control *c)
{
	return c->grants != NULL ? ctl_grants_next_expiry(c->grants->table) : INT64_MAX;
}

void
dp_grants_tick(struct dp_control *c)
{
	struct dp_grants *gr = c->grants;
	int64_t now = dp_grants_now();

	if (gr == NULL || now == gr->ticked)
		return;
	gr->ticked = now;
	if (ctl_grants_next_expiry(gr->table) <= now &&
	    ctl_grants_expire(gr->table, now, dp_grants_expired, gr) > 0) {
		dp_grants_save(gr);
		gr->stale = gr->closing = true;
	}
	if (!gr->stale)
		return;
	/* what could not be put in force yet: try every second */
	if (dp_grants_put(gr, false, stderr) != 0)
		fputs("namegate: grants: the change could not be put in force; retrying\n",
		    stderr);
	fflush(stderr);
}

int
dp_grants_make(struct dp_control *c, const char *vm, const char *host, const char *dur,
    const char *reason, struct ctl_grant *out, char *why, size_t whylen)
{
	struct dp_grants *gr = c->grants;
	char err[512];
	int rc;

	if (gr == NULL) {
		snprintf(why, whylen, "grants are not available");
		return -ENOTSUP;
	}
	if ((rc = ctl_grants_add(gr->table, *c->cfgp, vm, host, dur, reason, dp_grants_now(),
	    out, why, whylen)) < 0)
		return rc;
	/* on disk before in force: a grant the next start would not know is never made */
	if ((rc = ctl_grants_save(gr->table, err, sizeof(err))) < 0) {
		ctl_grants_revoke(gr->table, out->id, NULL);
		snprintf(why, whylen, "grant not made: %s", err);
		return rc;
	}
	if ((rc = dp_grants_apply(gr, false, stderr)) < 0) {
		ctl_grants_revoke(gr->table, out->id, NULL);
		dp_grants_save(gr);
		snprintf(why, whylen, "grant not made: no generation with it: %s", strerror(-rc));
		return rc;
	}
	dp_grants_event(gr, "grant", out);
	return 0;
}

int
dp_grants_overlay(struct dp_grants *gr, const struct pol_config *next, struct ctl_overlay *ov)
{
	return ctl_overlay_build(gr != NULL ? gr->table : NULL, next, dp_grants_now(), ov);
}

void
dp_grants_adopt(struct dp_grants *gr, struct ctl_overlay *ov)
{
	if (gr == NULL) {
		ctl_overlay_free(ov);
		return;
	}
	ctl_overlay_free(&gr->ov);
	gr->ov = *ov;
	memset(ov, 0, sizeof(*ov));
	/* the new file's VMs: a grant for one it dropped has nothing left to apply to */
	if (ctl_grants_drop_unknown(gr->table, &gr->ov.view, dp_grants_dropped, gr) > 0)
		dp_grants_save(gr);
	dp_grants_count(gr);
}

const struct pol_config *
dp_grants_view(const struct dp_control *c)
{
	return c->grants != NULL && c->grants->ov.set != NULL ? &c->grants->ov.view : *c->cfgp;
}

void
dp_grants_render(const struct dp_control *c, FILE *out)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);

	fputs("# HELP namegate_vm_grants Live grants (namegatectl grant) of each VM\n"
	    "# TYPE namegate_vm_grants gauge\n", out);
	for (uint16_t s = 0; s < g->nvms && s < DP_VM_SLOTS; s++)
		if (g->vms[s].present)
			fprintf(out, "namegate_vm_grants{vm=\"%s\"} %u\n", g->vms[s].name,
			    c->grants != NULL ? c->grants->live[s] : 0);
}

/* One grant as the control socket shows it; NULL when out of memory. */
static struct json_object *
dp_grant_json(const struct ctl_grant *g, int64_t now)
{
	struct json_object *o = json_object_new_object();
	char created[32], until[32];

	if (o == NULL)
		return NULL;
	ctl_grant_time(g->created, created, sizeof(created));
	ctl_grant_time(g->expires, until, sizeof(until));
	if (json_object_object_add(o, "id", json_object_new_uint64(g->id)) < 0 ||
	    json_object_object_add(o, "vm", json_object_new_string(g->vm)) < 0 ||
	    json_object_object_add(o, "host", json_object_new_string(g->host)) < 0 ||
	    json_object_object_add(o, "created", json_object_new_string(created)) < 0 ||
	    json_object_object_add(o, "until", json_object_new_string(until)) < 0 ||
	    json_object_object_add(o, "expires", json_object_new_int64(g->expires)) < 0 ||
	    json_object_object_add(o, "left", json_object_new_int64(g->expires > now ?
	    g->expires - now : 0)) < 0 ||
	    json_object_object_add(o, "reason", json_object_new_string(g->reason)) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int
dp_json_reply(FILE *out, const char *key, struct json_object *value)
{
	struct json_object *o = value;

	if (value == NULL)
		return -ENOMEM;
	if (key != NULL && ((o = json_object_new_object()) == NULL ||
	    json_object_object_add(o, key, value) < 0)) {
		json_object_put(value);
		json_object_put(o);
		return -ENOMEM;
	}
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE), out);
	json_object_put(o);
	return 0;
}

static int
dp_grants_cs_grant(FILE *out, const struct ctl_req *req, void *arg)
{
	struct ctl_grant g;
	char why[512];
	int rc;

	if ((rc = dp_grants_make(arg, req->vm, req->host, req->dur, req->reason, &g, why,
	    sizeof(why))) < 0) {
		fputs(why, out);
		return rc;
	}
	return dp_json_reply(out, NULL, dp_grant_json(&g, dp_grants_now()));
}

static int
dp_grants_cs_list(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct dp_control *c = arg;
	struct json_object *list = json_object_new_array();
	int64_t now = dp_grants_now();
	size_t n;

	if (vm != NULL && pol_config_vm(*c->cfgp, vm) == NULL) {
		json_object_put(list);
		fprintf(out, "unknown VM '%s'", vm);
		return -ENOENT;
	}
	n = c->grants != NULL ? ctl_grants_count(c->grants->table) : 0;
	for (size_t i = 0; list != NULL && i < n; i++) {
		const struct ctl_grant *g = ctl_grants_at(c->grants->table, i);
		struct json_object *o;

		if (vm != NULL && strcmp(g->vm, vm) != 0)
			continue;
		if ((o = dp_grant_json(g, now)) == NULL || json_object_array_add(list, o) < 0) {
			json_object_put(o);
			json_object_put(list);
			return -ENOMEM;
		}
	}
	return dp_json_reply(out, "grants", list);
}

static int
dp_grants_cs_revoke(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *id = req->id;
	struct dp_control *c = arg;
	struct dp_grants *gr = c->grants;
	struct ctl_grant g;
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(id, &end, 10);
	if (id[0] < '0' || id[0] > '9' || *end != '\0' || errno != 0 || v == 0) {
		fprintf(out, "bad grant id \"%.32s\" (a number from namegatectl grants)", id);
		return -EINVAL;
	}
	if (gr == NULL || ctl_grants_revoke(gr->table, v, &g) < 0) {
		fprintf(out, "no live grant %" PRIu64, v);
		return -ENOENT;
	}
	dp_grants_save(gr);
	dp_grants_event(gr, "grant_revoked", &g);
	if (dp_grants_put(gr, true, stderr) < 0) {
		fputs("namegate: grants: a revoke could not be put in force; retrying\n", stderr);
		fprintf(out, "grant %" PRIu64 " revoked, but no generation without it is in "
		    "force yet (retried every second)", v);
		return -EAGAIN;
	}
	return dp_json_reply(out, "revoked", dp_grant_json(&g, dp_grants_now()));
}

static const struct ctl_cmd dp_grants_cmds[] = {
	{ "grant", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST | CTL_ARG_FOR, dp_grants_cs_grant },
	{ "grants", CTL_ARG_VM, dp_grants_cs_list },
	{ "revoke", CTL_ARG_ID, dp_grants_cs_revoke },
};

int
dp_grants_serve(struct ctl_sock *s, struct dp_control *c)
{
	return ctl_sock_serve(s, dp_grants_cmds, sizeof(dp_grants_cmds) / sizeof(dp_grants_cmds[0]), c);
}
