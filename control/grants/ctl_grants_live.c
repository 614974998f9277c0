/*
 * Grants on the control loop: every change (grant, revoke, expiry, reload) ends in one new
 * generation built from the configuration with the live grants on top, put out through
 * the plane as a reload puts one out, so the workers need nothing new: they judge a flow
 * opened under a grant against the generation without it and cut it. The HA peer's and
 * the fleet store's side is ctl_grants_peer.c; the control socket's commands are
 * ctl_grants_cmd.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/dp_plane.h"
#include "ctl_events.h"
#include "ctl_grants_live.h"
#include "ctl_grants_live_int.h"
#include "ctl_sock.h"
#include "policy/load.h"

int64_t
ctl_gl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/* by: the client that made or revoked it; NULL when the daemon ended it itself. */
void
ctl_gl_event(struct ctl_grants_live *gr, const char *event, const struct ctl_grant *g,
    const struct ctl_peer *by)
{
	struct ctl_ev_who who = { 0 };
	struct ctl_ev_grant e = { .event = event, .id = g->id, .vm = g->vm, .host = g->host,
		.expires = g->expires, .reason = g->reason };
	struct timespec now;

	if (gr->events == NULL)
		return;
	if (by != NULL) {
		who = (struct ctl_ev_who){ .uid = by->uid, .pid = by->pid, .user = by->user };
		e.who = &who;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_grant(gr->events, &now, &e);
}

static void
ctl_gl_expired(const struct ctl_grant *g, void *arg)
{
	ctl_gl_event(arg, "grant_expired", g, NULL);
}

static void
ctl_gl_dropped(const struct ctl_grant *g, void *arg)
{
	ctl_gl_event(arg, "grant_revoked", g, NULL);
}

/* The gauge's counts for the VMs of the view in force, swapped in under its lock. */
static void
ctl_gl_count(struct ctl_grants_live *gr)
{
	const struct pol_config *view = &gr->ov.view;
	struct ctl_grants_gauge *ga = &gr->gauge;
	char (*vm)[POL_VM_NAME_MAX + 1] = calloc(view->nvms + 1, sizeof(vm[0]));
	uint32_t *live = calloc(view->nvms + 1, sizeof(live[0]));

	if (vm == NULL || live == NULL) {
		free(vm);
		free(live);
		return;			/* the gauge shows the counts before */
	}
	for (size_t i = 0; i < view->nvms; i++) {
		snprintf(vm[i], sizeof(vm[i]), "%s", view->vms[i].name);
		live[i] = (uint32_t)ctl_grants_count_vm(gr->table, view->vms[i].name);
	}
	pthread_mutex_lock(&ga->lock);
	free(ga->vm);
	free(ga->live);
	ga->vm = vm;
	ga->live = live;
	ga->n = view->nvms;
	pthread_mutex_unlock(&ga->lock);
}

/* ov's view is in force (the slow path's table follows it): keep ov, follow it with the gauge. */
static void
ctl_gl_in_force(struct ctl_grants_live *gr, struct ctl_overlay *ov)
{
	ctl_overlay_free(&gr->ov);
	gr->ov = *ov;
	ctl_gl_count(gr);
}

/*
 * A closing whose generation could not be built (the grants that stay would not fit):
 * the configuration alone, every grant out of force until the caller's retry puts the
 * live ones back. A closing never waits on an opening. 1, or -errno.
 */
static int
ctl_gl_close_all(struct ctl_grants_live *gr, FILE *err)
{
	struct ctl_overlay none = { .view = **gr->cfgp };	/* no set: the view is cfg */
	int rc;

	if ((rc = gr->plane->generation(gr->plane->dp, *gr->cfgp, true, err)) != 0)
		return rc;
	ctl_gl_in_force(gr, &none);
	fputs("namegate: grants: none in force until the live ones can be; retrying\n", err);
	return 1;
}

/*
 * A new generation for the grants live now, on the running configuration. Names learned
 * so far are drained first so each is judged under it; the slow path's table is rebuilt
 * with it, so its elements follow too. closing: the change ends or narrows a grant, so it
 * takes effect whatever room there is (the plane, ctl_gl_close_all()). 0; 1 when
 * only the closing is in force; -errno when nothing changed.
 */
int
ctl_gl_apply(struct ctl_grants_live *gr, bool closing, FILE *err)
{
	struct ctl_overlay ov;
	int rc;

	if ((rc = ctl_overlay_build(gr->table, *gr->cfgp, ctl_gl_now(), &ov)) == 0) {
		if ((rc = gr->plane->generation(gr->plane->dp, &ov.view, closing, err)) == 0)
			ctl_gl_in_force(gr, &ov);
		else
			ctl_overlay_free(&ov);
	}
	if (rc < 0 && closing)
		rc = ctl_gl_close_all(gr, err);
	return rc;
}

/*
 * ctl_gl_apply() for a change of the table, remembering what is not yet in force: a
 * closing stays one until a generation is out, the live grants stale until all are in.
 */
int
ctl_gl_put(struct ctl_grants_live *gr, bool closing, FILE *err)
{
	int rc;

	gr->closing = gr->closing || closing;
	rc = ctl_gl_apply(gr, gr->closing, err);
	if (rc >= 0)
		gr->closing = false;
	gr->stale = rc != 0;
	return rc;
}

void
ctl_gl_save(struct ctl_grants_live *gr)
{
	char err[512];

	ctl_grants_tomb_prune(gr->table, ctl_gl_now());
	if (ctl_grants_save(gr->table, err, sizeof(err)) < 0)
		fprintf(stderr, "namegate: grants: %s (the grants in force are not on disk)\n",
		    err);
}

struct ctl_grants_live *
ctl_grants_live_start(struct pol_config *const *cfgp, struct ctl_events *events,
    const struct dp_plane *plane, FILE *log)
{
	const struct pol_config *cfg = *cfgp;
	struct ctl_grants_live *gr;
	char err[512];
	size_t ended;

	if ((gr = calloc(1, sizeof(*gr))) == NULL ||
	    (gr->table = ctl_grants_new(cfg->grants_state)) == NULL) {
		free(gr);
		return NULL;
	}
	*gr = (struct ctl_grants_live){ .cfgp = cfgp, .events = events, .plane = plane,
		.table = gr->table, .gauge.lock = PTHREAD_MUTEX_INITIALIZER,
		.ov = { .view = *cfg } };
	if (ctl_grants_load(gr->table, err, sizeof(err)) < 0) {
		struct timespec now;

		fprintf(log, "namegate: grants: %s; granting nothing (fail closed)\n", err);
		clock_gettime(CLOCK_REALTIME, &now);
		if (events != NULL)
			ctl_events_log_grants_damaged(events, &now, cfg->grants_state, err);
	}
	ended = ctl_grants_expire(gr->table, ctl_gl_now(), ctl_gl_expired, gr) +
	    ctl_grants_drop_unknown(gr->table, cfg, ctl_gl_dropped, gr);
	if (ended > 0)
		ctl_gl_save(gr);
	if (ctl_grants_count(gr->table) > 0) {
		if (ctl_gl_apply(gr, false, log) != 0)
			fputs("namegate: grants: not in force\n", log);
		else
			fprintf(log, "namegate: grants: %zu in force from %s\n",
			    ctl_grants_count(gr->table), cfg->grants_state);
	}
	if (gr->ov.set == NULL)
		ctl_gl_count(gr);	/* none in force: every VM's gauge reads 0 */
	return gr;
}

void
ctl_grants_live_stop(struct ctl_grants_live *gr)
{
	if (gr == NULL)
		return;
	ctl_overlay_free(&gr->ov);
	ctl_grants_free(gr->table);
	free(gr->gauge.vm);
	free(gr->gauge.live);
	free(gr);
}

void
ctl_grants_live_tick(struct ctl_grants_live *gr)
{
	int64_t now = ctl_gl_now();

	if (gr == NULL || now == gr->ticked)
		return;
	gr->ticked = now;
	if (ctl_grants_next_expiry(gr->table) <= now &&
	    ctl_grants_expire(gr->table, now, ctl_gl_expired, gr) > 0) {
		ctl_gl_save(gr);
		gr->stale = gr->closing = true;
	}
	if (!gr->stale)
		return;
	/* what could not be put in force yet: try every second */
	if (ctl_gl_put(gr, false, stderr) != 0)
		fputs("namegate: grants: the change could not be put in force; retrying\n",
		    stderr);
	fflush(stderr);
}

int
ctl_grants_live_make(struct ctl_grants_live *gr, const char *vm, const char *host,
    const char *dur, const char *reason, const struct ctl_peer *by, struct ctl_grant *out,
    char *why, size_t whylen)
{
	char err[512];
	int rc;

	if (gr == NULL) {
		snprintf(why, whylen, "grants are not available");
		return -ENOTSUP;
	}
	if ((rc = ctl_grants_add(gr->table, *gr->cfgp, vm, host, dur, reason, ctl_gl_now(),
	    out, why, whylen)) < 0)
		return rc;
	ctl_grants_set_maker(gr->table, out->id, by->uid, by->user, out);
	(void)ctl_grants_tomb_clear(gr->table, vm, host);	/* a new decision */
	/* on disk before in force: a grant the next start would not know is never made */
	if ((rc = ctl_grants_save(gr->table, err, sizeof(err))) < 0) {
		ctl_grants_revoke(gr->table, out->id, NULL);
		snprintf(why, whylen, "grant not made: %s", err);
		return rc;
	}
	if ((rc = ctl_gl_apply(gr, false, stderr)) < 0) {
		ctl_grants_revoke(gr->table, out->id, NULL);
		ctl_gl_save(gr);
		snprintf(why, whylen, "grant not made: no generation with it: %s", strerror(-rc));
		return rc;
	}
	ctl_gl_event(gr, "grant", out, by);
	if (gr->pair != NULL && gr->fleet == NULL)
		gr->pair(gr->pair_arg, out->vm, out->host, (uint32_t)(out->expires - out->created));
	return 0;
}

int
ctl_grants_live_overlay(const struct ctl_grants_live *gr, const struct pol_config *next,
    struct ctl_overlay *ov)
{
	return ctl_overlay_build(gr != NULL ? gr->table : NULL, next, ctl_gl_now(), ov);
}

void
ctl_grants_live_adopt(struct ctl_grants_live *gr, struct ctl_overlay *ov)
{
	if (gr == NULL) {
		ctl_overlay_free(ov);
		return;
	}
	ctl_overlay_free(&gr->ov);
	gr->ov = *ov;
	memset(ov, 0, sizeof(*ov));
	/* the new file's VMs: a grant for one it dropped has nothing left to apply to */
	if (ctl_grants_drop_unknown(gr->table, &gr->ov.view, ctl_gl_dropped, gr) > 0)
		ctl_gl_save(gr);
	ctl_gl_count(gr);
}

const struct pol_config *
ctl_grants_live_view(const struct ctl_grants_live *gr)
{
	return gr->ov.set != NULL ? &gr->ov.view : *gr->cfgp;
}

void
ctl_grants_live_render(struct ctl_grants_live *gr, FILE *out)
{
	struct ctl_grants_gauge *ga = &gr->gauge;

	fputs("# HELP namegate_vm_grants Live grants (namegatectl grant) of each VM\n"
	    "# TYPE namegate_vm_grants gauge\n", out);
	pthread_mutex_lock(&ga->lock);
	for (size_t i = 0; i < ga->n; i++)
		fprintf(out, "namegate_vm_grants{vm=\"%s\"} %u\n", ga->vm[i], ga->live[i]);
	pthread_mutex_unlock(&ga->lock);
}

int
ctl_grants_live_revoke(struct ctl_grants_live *gr, uint64_t id, const struct ctl_peer *by,
    struct ctl_grant *out)
{
	if (ctl_grants_revoke(gr->table, id, out) < 0)
		return -ENOENT;
	/* the peer may have missed it: its resync must not bring the grant back */
	if (!out->fleet && gr->pair != NULL && gr->fleet == NULL &&
	    ctl_grants_tomb_add(gr->table, out->vm, out->host, out->expires, ctl_gl_now()) < 0)
		fprintf(stderr, "namegate: grants: the revoke of %s for %s is not kept against the "
		    "HA peer's resync: out of memory\n", out->vm, out->host);
	ctl_gl_save(gr);
	ctl_gl_event(gr, "grant_revoked", out, by);
	if (out->fleet && gr->revoked != NULL)	/* on its way to every gateway */
		gr->revoked(gr->revoked_arg, out, by);
	else if (!out->fleet && gr->pair != NULL && gr->fleet == NULL)	/* and to the peer */
		gr->pair(gr->pair_arg, out->vm, out->host, 0);
	if (ctl_gl_put(gr, true, stderr) < 0) {
		fputs("namegate: grants: a revoke could not be put in force; retrying\n", stderr);
		return -EAGAIN;
	}
	return 0;
}
