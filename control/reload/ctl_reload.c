/*
 * Reload: the unwinding order of STYLE s5 (parse, validate, build, swap, retire); the
 * build and the swap of the workers' generation are the plane's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/dp_plane.h"
#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_grants.h"
#include "ctl_grants_live.h"
#include "ctl_names.h"
#include "ctl_notify.h"
#include "ctl_reload.h"
#include "ctl_sock.h"
#include "policy/load.h"

struct ctl_reload {
	struct pol_config **cfgp;
	struct ctl_events *events;	/* NULL: no event log */
	const struct dp_plane *plane;
	struct ctl_grants_live *grants;	/* NULL: none */
	const struct ctl_names *names;
	pthread_mutex_t lock;		/* ok and ok_at against a scrape */
	bool ok;			/* the last load took effect */
	double ok_at;			/* UTC seconds of the last that did */
	/* a fleet bundle's policy in force over the file's (ctl_reload_policy()), or NULL */
	char *policy, *policy_name;
	size_t policy_len;
};

struct ctl_reload *
ctl_reload_new(struct pol_config **cfgp, struct ctl_events *events,
    const struct dp_plane *plane, struct ctl_grants_live *grants,
    const struct ctl_names *names, const struct timespec *loaded)
{
	struct ctl_reload *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	*r = (struct ctl_reload){ .cfgp = cfgp, .events = events, .plane = plane,
		.grants = grants, .names = names, .ok = true,
		.ok_at = ctl_seconds(loaded) };
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void
ctl_reload_free(struct ctl_reload *r)
{
	if (r == NULL)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r->policy);
	free(r->policy_name);
	free(r);
}

static bool
ctl_str_differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") != 0;
}

/* Settings the running process cannot change: say so, and go on with the rest. */
static void
ctl_reload_restart_only(const struct pol_config *old, const struct pol_config *next, FILE *err)
{
	bool eal = old->neal != next->neal;

	for (size_t i = 0; !eal && i < old->neal; i++)
		eal = strcmp(old->eal[i], next->eal[i]) != 0;
	if (eal || ctl_str_differs(old->vm_port, next->vm_port) ||
	    ctl_str_differs(old->uplink_port, next->uplink_port) ||
	    old->workers != next->workers || old->max_vms != next->max_vms ||
	    old->max_flows != next->max_flows ||
	    old->max_bindings != next->max_bindings || old->mbufs != next->mbufs)
		fprintf(err, "namegate: reload: dataplane ports, EAL options, workers and table "
		    "sizes (max_vms, max_flows, max_bindings, mbufs) change only on restart; the "
		    "running ones stay\n");
}

/* The bundle's policy in place of next's own; errors (with where) to errs. 0 or -1. */
static int
ctl_reload_take_policy(const struct ctl_reload *r, struct pol_config *next,
    struct pol_errs *errs)
{
	struct pol_config *bundle = pol_load_buffer(r->policy, r->policy_len, r->policy_name,
	    errs);
	char why[256];

	if (bundle == NULL)
		return -1;
	if (pol_config_take_policy(next, bundle, why, sizeof(why)) != 0) {
		pol_err_add(errs, r->policy_name, 1, 1, "%s", why);
		pol_config_free(bundle);
		return -1;
	}
	pol_config_free(bundle);
	return 0;
}

/*
 * Load (*cfgp)->path again, with the fleet bundle's policy in force over its own if one is. On success the new generation (the file's policies with the
 * live grants on top) is in force on every worker, the old *cfgp is freed and *cfgp is
 * the new configuration: 0. On failure nothing changes: -errno, the file's errors on errs.
 */
static int
ctl_reload_swap(struct ctl_reload *r, struct pol_errs *errs, FILE *err)
{
	const struct dp_plane *p = r->plane;
	struct pol_config *old = *r->cfgp, *next;
	struct ctl_overlay ov;
	int rc;

	if ((next = pol_load_file(old->path, errs)) == NULL ||
	    (r->policy != NULL && ctl_reload_take_policy(r, next, errs) != 0)) {
		pol_errs_print(err, errs);
		fprintf(err, "namegate: reload of %s rejected; generation %u stays in force\n",
		    next == NULL ? old->path : r->policy_name, p->generation_id(p->dp));
		pol_config_free(next);
		return -EINVAL;
	}
	ctl_reload_restart_only(old, next, err);
	/* the new file's policies, with the live grants on top: one generation, no gap */
	if ((rc = ctl_grants_live_overlay(r->grants, next, &ov)) < 0) {
		fprintf(err, "namegate: reload: grants: %s; generation %u stays in force\n",
		    strerror(-rc), p->generation_id(p->dp));
		pol_config_free(next);
		return rc;
	}
	if ((rc = p->generation(p->dp, &ov.view, true, err)) != 0) {
		ctl_overlay_free(&ov);
		pol_config_free(next);
		return rc;
	}
	ctl_grants_live_adopt(r->grants, &ov);
	pol_config_free(old);
	*r->cfgp = next;
	fprintf(err, "namegate: reload: generation %u in force: %zu VMs%s\n",
	    p->generation_id(p->dp), next->nvms, ctl_names_overflowed(r->names) ?
	    " (name table full: flows through names it lost are cut)" : "");
	return 0;
}

/* The policy event for a reload that took (rc 0) or was refused. */
static void
ctl_reload_log(const struct ctl_reload *r, int rc, const struct pol_errs *errs,
    const struct timespec *now, uint32_t generation, const struct ctl_ev_who *who)
{
	const struct pol_config *cfg = *r->cfgp;

	if (r->events == NULL)
		return;
	if (rc == 0)
		ctl_events_log_policy(r->events, now, generation, (uint32_t)cfg->nvms, cfg->path,
		    who);
	else if (errs->n > 0)
		ctl_events_log_policy_rejected(r->events, now, generation, errs->v[0].file,
		    errs->v[0].line, errs->v[0].col, errs->v[0].msg, errs->n + errs->dropped, who);
	else	/* the file was right; the new generation was not built */
		ctl_events_log_policy_rejected(r->events, now, generation, cfg->path, 0, 0,
		    strerror(-rc), 1, who);
}

/* A reload asked for by who (NULL: nobody known). */
static int
ctl_reload_by(struct ctl_reload *r, FILE *err, const struct ctl_ev_who *who)
{
	struct pol_errs errs = { 0 };
	struct timespec now;
	uint32_t generation;
	int rc;

	ctl_notify_reloading();
	rc = ctl_reload_swap(r, &errs, err);
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&r->lock);
	r->ok = rc == 0;
	if (rc == 0)
		r->ok_at = ctl_seconds(&now);
	pthread_mutex_unlock(&r->lock);
	generation = r->plane->generation_id(r->plane->dp);
	ctl_reload_log(r, rc, &errs, &now, generation, who);
	pol_errs_free(&errs);
	ctl_notify_reloaded(rc == 0, generation, (uint32_t)(*r->cfgp)->nvms);
	return rc;
}

int
ctl_reload_run(struct ctl_reload *r, FILE *err, const struct ctl_ev_who *who)
{
	return ctl_reload_by(r, err, who);
}

int
ctl_reload_policy(struct ctl_reload *r, const char *text, size_t len, const char *name,
    FILE *err)
{
	char *old = r->policy, *old_name = r->policy_name;
	size_t old_len = r->policy_len;
	int rc;

	if ((r->policy = malloc(len + 1)) == NULL || (r->policy_name = strdup(name)) == NULL) {
		free(r->policy);
		r->policy = old;
		r->policy_name = old_name;
		return -ENOMEM;
	}
	memcpy(r->policy, text, len);
	r->policy[len] = '\0';
	r->policy_len = len;
	if ((rc = ctl_reload_by(r, err, NULL)) != 0) {	/* the policy in force stays */
		free(r->policy);
		free(r->policy_name);
		r->policy = old;
		r->policy_name = old_name;
		r->policy_len = old_len;
		return rc;
	}
	free(old);
	free(old_name);
	return 0;
}

void
ctl_reload_render(struct ctl_reload *r, FILE *out)
{
	bool ok;
	double at;

	pthread_mutex_lock(&r->lock);
	ok = r->ok;
	at = r->ok_at;
	pthread_mutex_unlock(&r->lock);
	fprintf(out, "# HELP namegate_config_last_reload_successful Whether the last load of the "
	    "configuration file (at start, SIGHUP or namegatectl reload) took effect\n"
	    "# TYPE namegate_config_last_reload_successful gauge\n"
	    "namegate_config_last_reload_successful %d\n"
	    "# HELP namegate_config_last_reload_success_timestamp_seconds When the configuration "
	    "in force was loaded\n"
	    "# TYPE namegate_config_last_reload_success_timestamp_seconds gauge\n"
	    "namegate_config_last_reload_success_timestamp_seconds %.3f\n", ok ? 1 : 0, at);
}

static int
ctl_reload_cmd(FILE *out, const struct ctl_req *req, void *arg)
{
	const struct ctl_ev_who who = { .uid = req->peer->uid, .pid = req->peer->pid,
		.user = req->peer->user };
	struct ctl_reload *r = arg;
	struct json_object *o;
	int rc;

	if ((rc = ctl_reload_by(r, out, &who)) != 0)
		return rc;
	/* the reload wrote its progress to out: the reply is the new generation only */
	rewind(out);
	if ((o = json_object_new_object()) == NULL ||
	    json_object_object_add(o, "ok", json_object_new_boolean(1)) < 0 ||
	    json_object_object_add(o, "generation",
	    json_object_new_uint64(r->plane->generation_id(r->plane->dp))) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return ctl_sock_reply_json(out, NULL, o);
}

static const struct ctl_cmd ctl_reload_cmds[] = {
	{ "reload", 0, ctl_reload_cmd },
};

int
ctl_reload_serve(struct ctl_reload *r, struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_reload_cmds, sizeof(ctl_reload_cmds) /
	    sizeof(ctl_reload_cmds[0]), r);
}
