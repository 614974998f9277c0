/*
 * The fleet agent's life (start, stop), the state its threads share, and what it shows:
 * the metrics and the control socket's fleet command. The loop's work is ctl_fleet_loop.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_approval.h"
#include "ctl_fleet_int.h"
#include "ctl_grants_live.h"
#include "ctl_sock.h"
#include "policy/load.h"

#define CTL_FLEET_PASSWORD_MAX	1024

void
ctl_fleet_nap(struct ctl_fleet *f, unsigned int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	if (!f->sh.stop)
		pthread_cond_timedwait(&f->sh.kick, &f->sh.lock, &until);
}

void
ctl_fleet_verdict_free(struct ctl_fleet_verdict *v)
{
	if (v == NULL)
		return;
	pol_config_free(v->res.cfg);
	ctl_fleet_bundle_clear(&v->b);
	free(v);
}

/* fleet.password_file's first line: the file is the secret, so it must be there. */
static int
ctl_fleet_password(const char *path, char **out, char *why, size_t whylen)
{
	char *buf;
	size_t len;
	int rc;

	if ((rc = ctl_bundle_read(path, CTL_FLEET_PASSWORD_MAX, &buf, &len)) != 0) {
		snprintf(why, whylen, "fleet.password_file %s: %s", path, strerror(-rc));
		return rc;
	}
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (len == 0) {
		free(buf);
		snprintf(why, whylen, "fleet.password_file %s: empty", path);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

static int
ctl_fleet_clients(struct ctl_fleet *f, char *why, size_t whylen)
{
	const struct pol_config *cfg = f->boot;
	struct ctl_etcd_opts o = { .endpoints = (const char *const *)cfg->fleet_endpoints,
		.n_endpoints = cfg->nfleet_endpoints, .user = cfg->fleet_user };
	char *password = NULL;
	int rc;

	if (cfg->fleet_password_file != NULL &&
	    (rc = ctl_fleet_password(cfg->fleet_password_file, &password, why, whylen)) != 0)
		return rc;
	o.password = password;
	f->watch_etcd = ctl_etcd_new(&o);
	f->write_etcd = ctl_etcd_new(&o);
	if (password != NULL) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	if (f->watch_etcd == NULL || f->write_etcd == NULL) {
		snprintf(why, whylen, "fleet: etcd client: %s", strerror(errno));
		return -ENOMEM;
	}
	return 0;
}

static int
ctl_fleet_alloc(struct ctl_fleet *f)
{
	struct ctl_fleet_shared *sh = &f->sh;
	pthread_condattr_t ca;

	pthread_mutex_init(&sh->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->kick, &ca);
	pthread_condattr_destroy(&ca);
	sh->grants = calloc(CTL_FLEET_STORE_GRANTS, sizeof(sh->grants[0]));
	sh->revoked = calloc(CTL_FLEET_REVOKED_MAX, sizeof(sh->revoked[0]));
	sh->gw_name = calloc(CTL_FLEET_GATEWAYS_MAX, sizeof(sh->gw_name[0]));
	sh->gw_status = calloc(CTL_FLEET_GATEWAYS_MAX, sizeof(sh->gw_status[0]));
	sh->ops = calloc(CTL_FLEET_OPS_MAX, sizeof(sh->ops[0]));
	sh->pending = calloc(CTL_FLEET_PENDING_MAX, sizeof(sh->pending[0]));
	f->applied = calloc(CTL_FLEET_STORE_GRANTS, sizeof(f->applied[0]));
	f->local_revoked = calloc(CTL_FLEET_REVOKED_MAX, sizeof(f->local_revoked[0]));
	f->prev = calloc(CTL_FLEET_REVOKED_MAX, sizeof(f->prev[0]));
	return sh->grants && sh->revoked && sh->gw_name && sh->gw_status && sh->ops &&
	    sh->pending && f->applied && f->local_revoked && f->prev ? 0 : -ENOMEM;
}

struct ctl_fleet *
ctl_fleet_start(struct pol_config **cfgp, struct ctl_events *events,
    struct ctl_grants_live *grants, struct ctl_reload *reload, struct ctl_approvals *approvals,
    void (*wake)(void), char *why, size_t whylen)
{
	const struct pol_config *cfg = *cfgp;
	struct ctl_fleet *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		snprintf(why, whylen, "fleet: out of memory");
		return NULL;
	}
	*f = (struct ctl_fleet){ .cfgp = cfgp, .boot = cfg, .events = events, .grants = grants,
		.reload = reload, .approvals = approvals, .wake = wake,
		.nkeys = cfg->nfleet_bundle_keys };
	if (ctl_fleet_alloc(f) != 0) {
		snprintf(why, whylen, "fleet: out of memory");
		goto fail;
	}
	/* the keys and the fleet: keys are the running file's; a restart changes them */
	if ((f->boot = ctl_fleet_boot_copy(cfg)) == NULL) {
		snprintf(why, whylen, "fleet: out of memory");
		goto fail;
	}
	if (ctl_bundle_keys_load(f->boot, f->keys, why, whylen) != 0 ||
	    ctl_fleet_clients(f, why, whylen) != 0)
		goto fail;
	ctl_fleet_status_init(f);
	ctl_fleet_cache_start(f);
	ctl_fleet_revokes_load(f);
	ctl_grants_live_set_store(grants, f->boot->fleet_name, ctl_fleet_revoked_here, f);
	ctl_approval_set_listener(approvals, ctl_fleet_request_here, f);
	if (pthread_create(&f->watcher, NULL, ctl_fleet_watch_main, f) != 0) {
		snprintf(why, whylen, "fleet: cannot start its watcher");
		goto fail;
	}
	f->watcher_up = true;
	if (pthread_create(&f->writer, NULL, ctl_fleet_write_main, f) != 0) {
		snprintf(why, whylen, "fleet: cannot start its writer");
		goto fail;
	}
	f->writer_up = true;
	return f;
fail:
	ctl_fleet_stop(f);
	return NULL;
}

void
ctl_fleet_stop(struct ctl_fleet *f)
{
	if (f == NULL)
		return;
	if (f->grants != NULL)
		ctl_grants_live_set_store(f->grants, NULL, NULL, NULL);
	if (f->approvals != NULL)
		ctl_approval_set_listener(f->approvals, NULL, NULL);
	pthread_mutex_lock(&f->sh.lock);
	f->sh.stop = true;
	pthread_cond_broadcast(&f->sh.kick);
	pthread_mutex_unlock(&f->sh.lock);
	if (f->watch_etcd != NULL)
		ctl_etcd_cancel(f->watch_etcd);
	if (f->write_etcd != NULL)
		ctl_etcd_cancel(f->write_etcd);
	if (f->watcher_up)
		pthread_join(f->watcher, NULL);
	if (f->writer_up)
		pthread_join(f->writer, NULL);
	ctl_etcd_free(f->watch_etcd);
	ctl_etcd_free(f->write_etcd);
	ctl_fleet_verdict_free(f->sh.verdict);
	for (size_t i = 0; i < f->sh.ngw; i++)
		free(f->sh.gw_status[i]);
	free(f->sh.gw_status);
	free(f->sh.gw_name);
	free(f->sh.grants);
	free(f->sh.revoked);
	for (size_t i = 0; i < f->sh.nops; i++)
		free(f->sh.ops[i].val);
	free(f->sh.ops);
	free(f->sh.pending);
	free(f->applied);
	free(f->local_revoked);
	free(f->prev);
	if (f->boot != *f->cfgp)
		pol_config_free((struct pol_config *)f->boot);
	pthread_cond_destroy(&f->sh.kick);
	pthread_mutex_destroy(&f->sh.lock);
	free(f);
}

static const double ctl_fleet_apply_le[] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	30 };

void
ctl_fleet_observe_apply(struct ctl_fleet *f, double seconds)
{
	size_t i;

	if (seconds < 0)
		seconds = 0;	/* another clock behind ours */
	pthread_mutex_lock(&f->sh.lock);
	for (i = 0; i < sizeof(ctl_fleet_apply_le) / sizeof(ctl_fleet_apply_le[0]) &&
	    seconds > ctl_fleet_apply_le[i]; i++)
		;
	f->apply_bucket[i]++;
	f->apply_sum += seconds;
	f->apply_count++;
	pthread_mutex_unlock(&f->sh.lock);
}

void
ctl_fleet_render(struct ctl_fleet *f, FILE *out)
{
	const size_t nle = sizeof(ctl_fleet_apply_le) / sizeof(ctl_fleet_apply_le[0]);
	struct ctl_fleet_status s;
	uint64_t cum = 0;

	pthread_mutex_lock(&f->sh.lock);
	s = f->sh.status;
	fprintf(out, "# HELP namegate_fleet_connected Whether the fleet's store is reached (a "
	    "watch in place and the last write taken)\n"
	    "# TYPE namegate_fleet_connected gauge\n"
	    "namegate_fleet_connected %d\n", f->sh.watching && f->sh.writing);
	fputs("# HELP namegate_fleet_apply_seconds From a grant or bundle put in the store (the "
	    "writer's clock) to in force here\n"
	    "# TYPE namegate_fleet_apply_seconds histogram\n", out);
	for (size_t i = 0; i <= nle; i++) {
		cum += f->apply_bucket[i];
		if (i < nle)
			fprintf(out, "namegate_fleet_apply_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			    ctl_fleet_apply_le[i], cum);
		else
			fprintf(out, "namegate_fleet_apply_seconds_bucket{le=\"+Inf\"} %" PRIu64
			    "\n", cum);
	}
	fprintf(out, "namegate_fleet_apply_seconds_sum %.6f\n"
	    "namegate_fleet_apply_seconds_count %" PRIu64 "\n", f->apply_sum, f->apply_count);
	fprintf(out, "# HELP namegate_fleet_bundles_refused_total Bundles of this shard refused "
	    "(signature, target, serial, expiry or policy)\n"
	    "# TYPE namegate_fleet_bundles_refused_total counter\n"
	    "namegate_fleet_bundles_refused_total %" PRIu64 "\n"
	    "# HELP namegate_fleet_cache_expired Whether the policy in force came from the cache "
	    "past its bundle's not_after\n"
	    "# TYPE namegate_fleet_cache_expired gauge\n"
	    "namegate_fleet_cache_expired %d\n", f->refused_total, f->cache_expired);
	pthread_mutex_unlock(&f->sh.lock);
	fprintf(out, "# HELP namegate_policy_info The policy in force: its bundle's serial (0: "
	    "this box's file) and its text's SHA-256\n"
	    "# TYPE namegate_policy_info gauge\n"
	    "namegate_policy_info{serial=\"%" PRIu64 "\",digest=\"%s\"} 1\n",
	    s.serial, s.digest);
}

/* "pending":[{gateway,id,vm,name,type,first_seen,expires}...] into o (under lock). */
static bool
ctl_fleet_pending_json(const struct ctl_fleet *f, struct json_object *o)
{
	struct json_object *list = json_object_new_array();

	if (list == NULL || json_object_object_add(o, "pending", list) != 0) {
		json_object_put(list);
		return false;
	}
	for (size_t i = 0; i < f->sh.npending; i++) {
		const struct ctl_fleet_pending *p = &f->sh.pending[i];
		char *text = ctl_fleet_pending_encode(p);
		struct json_object *r = text != NULL ? json_tokener_parse(text) : NULL;

		free(text);
		if (r == NULL || json_object_array_add(list, r) != 0) {
			json_object_put(r);
			return false;
		}
	}
	return true;
}

/*
 * {"fleet":F,"shard":S,"gateway":G,"connected":B,"reason":R,"gateways":[status...],
 *  "pending":[request...]}
 */
static int
ctl_fleet_cmd(FILE *out, const struct ctl_req *req, void *arg)
{
	struct ctl_fleet *f = arg;
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	bool ok = o != NULL && list != NULL;

	(void)req;
	pthread_mutex_lock(&f->sh.lock);
	ok = ok && json_object_object_add(o, "fleet",
	    json_object_new_string(f->boot->fleet_name)) == 0 &&
	    json_object_object_add(o, "shard", json_object_new_string(f->boot->fleet_shard)) == 0 &&
	    json_object_object_add(o, "gateway",
	    json_object_new_string(f->boot->fleet_gateway)) == 0 &&
	    json_object_object_add(o, "connected",
	    json_object_new_boolean(f->sh.watching && f->sh.writing)) == 0 &&
	    json_object_object_add(o, "reason", json_object_new_string(f->sh.down_why)) == 0 &&
	    json_object_object_add(o, "serial",
	    json_object_new_uint64(f->sh.status.serial)) == 0 &&
	    json_object_object_add(o, "source",
	    json_object_new_string(f->sh.status.source)) == 0;
	for (size_t i = 0; ok && i < f->sh.ngw; i++) {
		struct json_object *s = json_tokener_parse(f->sh.gw_status[i]);

		if (s == NULL || !json_object_is_type(s, json_type_object)) {
			json_object_put(s);	/* not a status: shown as its name alone */
			s = json_object_new_object();
			ok = s != NULL && json_object_object_add(s, "gateway",
			    json_object_new_string(f->sh.gw_name[i])) == 0;
		}
		ok = ok && json_object_array_add(list, s) == 0;
	}
	ok = ok && ctl_fleet_pending_json(f, o);
	pthread_mutex_unlock(&f->sh.lock);
	if (!ok || json_object_object_add(o, "gateways", list) != 0) {
		json_object_put(list);
		json_object_put(o);
		return -ENOMEM;
	}
	return ctl_sock_reply_json(out, NULL, o);
}

static const struct ctl_cmd ctl_fleet_cmds[] = {
	{ "fleet", 0, ctl_fleet_cmd },
};

int
ctl_fleet_serve(struct ctl_fleet *f, struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_fleet_cmds, 1, f);
}
