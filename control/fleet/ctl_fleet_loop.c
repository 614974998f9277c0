/*
 * The control loop's side of the fleet agent: what the threads learned, put in force.
 * Grants through ctl_grants_live_store_sync() (one generation for a whole change), a
 * judged bundle through ctl_reload_policy() and then into the cache, the cache at start,
 * events on every change of state, and the status the writer carries to the store.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_approval.h"
#include "ctl_events.h"
#include "ctl_fleet_int.h"
#include "ctl_grants_live.h"
#include "ctl_reload.h"
#include "ctl_sock.h"
#include "policy/load.h"

static char *
cfl_dup(const char *s, bool *ok)
{
	char *d = s != NULL ? strdup(s) : NULL;

	*ok = *ok && (s == NULL || d != NULL);
	return d;
}

static char **
cfl_dup_list(char *const *v, size_t n, bool *ok)
{
	char **d = n > 0 ? calloc(n, sizeof(d[0])) : NULL;

	*ok = *ok && (n == 0 || d != NULL);
	for (size_t i = 0; d != NULL && i < n; i++)
		d[i] = cfl_dup(v[i], ok);
	return d;
}

struct pol_config *
ctl_fleet_boot_copy(const struct pol_config *cfg)
{
	struct pol_config *c = calloc(1, sizeof(*c));
	bool ok = c != NULL;

	if (c == NULL)
		return NULL;
	c->path = cfl_dup(cfg->path, &ok);
	c->fleet_name = cfl_dup(cfg->fleet_name, &ok);
	c->fleet_shard = cfl_dup(cfg->fleet_shard, &ok);
	c->fleet_gateway = cfl_dup(cfg->fleet_gateway, &ok);
	c->fleet_cache = cfl_dup(cfg->fleet_cache, &ok);
	c->fleet_prefix = cfl_dup(cfg->fleet_prefix, &ok);
	c->fleet_user = cfl_dup(cfg->fleet_user, &ok);
	c->fleet_password_file = cfl_dup(cfg->fleet_password_file, &ok);
	c->fleet_bundle_keys = cfl_dup_list(cfg->fleet_bundle_keys, cfg->nfleet_bundle_keys,
	    &ok);
	c->nfleet_bundle_keys = c->fleet_bundle_keys != NULL ? cfg->nfleet_bundle_keys : 0;
	c->fleet_endpoints = cfl_dup_list(cfg->fleet_endpoints, cfg->nfleet_endpoints, &ok);
	c->nfleet_endpoints = c->fleet_endpoints != NULL ? cfg->nfleet_endpoints : 0;
	if (!ok) {
		pol_config_free(c);
		return NULL;
	}
	return c;
}

static void
cfl_event(struct ctl_fleet *f, const struct ctl_ev_fleet *e)
{
	struct timespec now;

	if (f->events == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_fleet(f->events, &now, e);
}

/* The writer has a new status to carry (under lock). */
static void
cfl_status_changed(struct ctl_fleet *f)
{
	f->sh.status_ver++;
	pthread_cond_broadcast(&f->sh.kick);
}

void
ctl_fleet_status_init(struct ctl_fleet *f)
{
	struct ctl_fleet_status *s = &f->sh.status;
	char *text;
	size_t len;

	snprintf(s->gateway, sizeof(s->gateway), "%s", f->boot->fleet_gateway);
	snprintf(s->fleet, sizeof(s->fleet), "%s", f->boot->fleet_name);
	snprintf(s->shard, sizeof(s->shard), "%s", f->boot->fleet_shard);
	s->source = "file";
	if (ctl_bundle_read(f->boot->path, CTL_BUNDLE_FILE_MAX, &text, &len) == 0) {
		ctl_fleet_digest(text, len, s->digest);
		free(text);
	}
}

int
ctl_fleet_write_file(const char *path, const char *buf, size_t len)
{
	char tmp[4096];
	ssize_t w = 0;
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return -errno;
	for (size_t off = 0; off < len && w >= 0; off += (size_t)w)
		w = write(fd, buf + off, len - off);
	if (w < 0 || fsync(fd) != 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	/* the rename itself, on disk: else a crash may leave the old file (an old revokes list) */
	{
		char dir[4096], *slash;
		int dfd;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else if (slash != NULL)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
		if (fsync(dfd) != 0)
			rc = -errno;
		close(dfd);
	}
	return rc;
}

/*
 * The cache: a crash between the two renames leaves a pair whose signature does not
 * verify, which a start refuses (never an unverified cache), never a wrong one taken.
 */
static int
cfl_cache_write(const struct ctl_fleet *f, const struct ctl_fleet_bundle *b)
{
	char sig[4096];
	int rc;

	if ((size_t)snprintf(sig, sizeof(sig), "%s.minisig", f->boot->fleet_cache) >= sizeof(sig))
		return -ENAMETOOLONG;
	if ((rc = ctl_fleet_write_file(f->boot->fleet_cache, b->policy, b->policy_len)) == 0)
		rc = ctl_fleet_write_file(sig, b->minisig, b->minisig_len);
	return rc;
}

/* The policy in force is now a bundle's (under no lock). */
static void
cfl_running(struct ctl_fleet *f, const struct ctl_bundle_meta *m, const char *text,
    size_t len, const char *source)
{
	pthread_mutex_lock(&f->sh.lock);
	f->sh.have_running = true;
	f->sh.running_serial = m->serial;
	f->sh.status.serial = m->serial;
	ctl_fleet_digest(text, len, f->sh.status.digest);
	f->sh.status.source = source;
	cfl_status_changed(f);
	pthread_mutex_unlock(&f->sh.lock);
	f->grants_seen_ver = 0;		/* its VMs may be others: offer the grants again */
}

void
ctl_fleet_cache_start(struct ctl_fleet *f)
{
	struct ctl_ev_fleet e = { .event = "bundle_cache" };
	struct ctl_bundle_meta meta;
	char why[CTL_FLEET_WHY_MAX], sigpath[4096], name[4200], when[32];
	struct ctl_fleet_bundle b = { 0 };
	uint64_t serial;
	int rc = ctl_bundle_cache_serial(f->boot, f->keys, f->nkeys, &serial, why, sizeof(why));

	if (rc == 0)
		return;		/* no cache: the file's policy until the store's bundle */
	_Static_assert(POL_FLEET_CACHE_MAX + sizeof(".minisig") <= sizeof(sigpath),
	    "the loader's bound on the cache's path leaves FILE.minisig whole");
	snprintf(sigpath, sizeof(sigpath), "%s.minisig", f->boot->fleet_cache);
	if (rc > 0 && (ctl_bundle_read(f->boot->fleet_cache, CTL_BUNDLE_FILE_MAX, &b.policy,
	    &b.policy_len) != 0 || ctl_bundle_read(sigpath, CTL_BUNDLE_SIG_FILE_MAX, &b.minisig,
	    &b.minisig_len) != 0 || ctl_bundle_verify(f->keys, f->nkeys, b.policy,
	    b.policy_len, b.minisig, b.minisig_len, &meta, why, sizeof(why)) != 0)) {
		rc = -1;
		snprintf(why, sizeof(why), "%s: changed while read", f->boot->fleet_cache);
	}
	snprintf(name, sizeof(name), "cache:%s", f->boot->fleet_cache);
	if (rc > 0 && ctl_reload_policy(f->reload, b.policy, b.policy_len, name, stderr) != 0) {
		rc = -1;
		snprintf(why, sizeof(why), "%s: its policy does not compile here",
		    f->boot->fleet_cache);
	}
	if (rc < 0) {
		fprintf(stderr, "namegate: fleet: the cache is not used: %s\n", why);
		e.reason = why;
		cfl_event(f, &e);
		ctl_fleet_bundle_clear(&b);
		return;
	}
	cfl_running(f, &meta, b.policy, b.policy_len, "cache");
	e.have_serial = true;
	e.serial = meta.serial;
	e.digest = f->sh.status.digest;
	if (meta.not_after <= time(NULL)) {
		/* not_after guards what is taken from the store, not what this box last had */
		pthread_mutex_lock(&f->sh.lock);	/* the scrape reads it */
		f->cache_expired = true;
		pthread_mutex_unlock(&f->sh.lock);
		ctl_bundle_time_str(meta.not_after, when, sizeof(when));
		snprintf(why, sizeof(why), "past its not_after %s: in force until the store has a "
		    "newer one", when);
		e.reason = why;
	}
	fprintf(stderr, "namegate: fleet: serial %" PRIu64 " in force from the cache%s%s\n",
	    meta.serial, e.reason != NULL ? ", " : "", e.reason != NULL ? e.reason : "");
	cfl_event(f, &e);
	ctl_fleet_bundle_clear(&b);
}

bool
ctl_fleet_op_push(struct ctl_fleet *f, const char *key, char *val, int64_t ttl)
{
	struct ctl_fleet_op *op;

	if (f->sh.nops == CTL_FLEET_OPS_MAX) {
		free(val);
		return false;
	}
	op = &f->sh.ops[f->sh.nops++];
	snprintf(op->key, sizeof(op->key), "%s", key);
	op->val = val;
	op->ttl = ttl;
	pthread_cond_broadcast(&f->sh.kick);
	return true;
}

void
ctl_fleet_revoke_queue(struct ctl_fleet *f, const struct ctl_fleet_revoke *r)
{
	char key[CTL_FLEET_KEY_MAX], id[24], *val;
	int64_t now = time(NULL);

	if (f->nlocal_revoked == CTL_FLEET_REVOKED_MAX)	/* the oldest are in the store */
		memmove(f->local_revoked, f->local_revoked + 1,
		    --f->nlocal_revoked * sizeof(f->local_revoked[0]));
	f->local_revoked[f->nlocal_revoked++] = r->id;
	snprintf(id, sizeof(id), "%" PRIu64, r->id);
	ctl_fleet_key(key, f->boot->fleet_prefix, "revoked/", id);
	val = ctl_fleet_revoked_encode(r->id, r->user, r->uid, f->boot->fleet_gateway, now);
	pthread_mutex_lock(&f->sh.lock);
	/* the record outlives the grant a little, so no gateway can take it again */
	if (val == NULL || !ctl_fleet_op_push(f, key, val, (r->expires > now ? r->expires - now :
	    0) + CTL_FLEET_RECORD_SLACK))
		fprintf(stderr, "namegate: fleet: grant %" PRIu64 " is revoked here only: the "
		    "store's queue is full\n", r->id);
	pthread_mutex_unlock(&f->sh.lock);
}

void
ctl_fleet_revoked_here(void *arg, const struct ctl_grant *g, const struct ctl_peer *by)
{
	struct ctl_fleet *f = arg;
	struct ctl_fleet_revoke r = { .id = g->id, .expires = g->expires,
		.uid = by != NULL ? (int64_t)by->uid : -1 };

	if (by != NULL)
		snprintf(r.user, sizeof(r.user), "%s", by->user);
	ctl_fleet_revokes_add(f, &r);	/* on disk first: a restart must not forget it */
	ctl_fleet_revoke_queue(f, &r);
}

void
ctl_fleet_request_here(void *arg, const struct ctl_approval_req *r, bool open)
{
	struct ctl_fleet *f = arg;
	struct ctl_fleet_pending p = { .id = r->id, .qtype = r->qtype,
		.first_seen = r->first_seen, .expires = r->expires };
	char key[CTL_FLEET_KEY_MAX], tail[POL_FLEET_WORD_MAX + 24], *val = NULL;
	int64_t now = time(NULL);

	snprintf(tail, sizeof(tail), "%s/%" PRIu64, f->boot->fleet_gateway, r->id);
	ctl_fleet_key(key, f->boot->fleet_prefix, "pending/", tail);
	if (open) {
		snprintf(p.gateway, sizeof(p.gateway), "%s", f->boot->fleet_gateway);
		snprintf(p.vm, sizeof(p.vm), "%s", r->vm);
		snprintf(p.name, sizeof(p.name), "%s", r->name);
		if ((val = ctl_fleet_pending_encode(&p)) == NULL)
			return;
	}
	pthread_mutex_lock(&f->sh.lock);
	if (!ctl_fleet_op_push(f, key, val, open ? (r->expires > now ? r->expires - now : 0) +
	    CTL_FLEET_RECORD_SLACK : 0))
		fprintf(stderr, "namegate: fleet: request %" PRIu64 " not shown in the store: its "
		    "queue is full\n", r->id);
	pthread_mutex_unlock(&f->sh.lock);
}

static bool
cfl_has(const uint64_t *v, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* A judged bundle: in force and cached, or refused with its reason (under no lock). */
static void
cfl_bundle(struct ctl_fleet *f, struct ctl_fleet_verdict *v)
{
	struct ctl_bundle_result *res = &v->res;
	struct ctl_ev_fleet e = { .event = "bundle_refused", .have_serial = res->have_meta,
		.serial = res->meta.serial };
	char name[128], *msg = NULL;
	size_t msglen = 0;
	FILE *err;
	int rc;

	pthread_mutex_lock(&f->sh.lock);
	if (res->verdict == CTL_BUNDLE_ACCEPTED && f->sh.have_running &&
	    res->meta.serial <= f->sh.running_serial) {	/* another came first */
		res->verdict = CTL_BUNDLE_OLD_SERIAL;
		snprintf(res->reason, sizeof(res->reason), "serial %" PRIu64 " is not above the "
		    "running %" PRIu64, res->meta.serial, f->sh.running_serial);
	}
	pthread_mutex_unlock(&f->sh.lock);
	if (res->verdict == CTL_BUNDLE_ACCEPTED) {
		snprintf(name, sizeof(name), "bundle:%s#%" PRIu64, res->meta.shard,
		    res->meta.serial);
		if ((err = open_memstream(&msg, &msglen)) == NULL)
			return;
		rc = ctl_reload_policy(f->reload, v->b.policy, v->b.policy_len, name, err);
		fclose(err);
		if (rc == 0) {
			struct timespec now;

			cfl_running(f, &res->meta, v->b.policy, v->b.policy_len, "bundle");
			if ((rc = cfl_cache_write(f, &v->b)) != 0)
				fprintf(stderr, "namegate: fleet: cache %s not written: %s\n",
				    f->boot->fleet_cache, strerror(-rc));
			clock_gettime(CLOCK_REALTIME, &now);
			ctl_fleet_observe_apply(f, (double)now.tv_sec + now.tv_nsec / 1e9 -
			    (double)v->b.put_ms / 1e3);
			e = (struct ctl_ev_fleet){ .event = "bundle_accepted", .have_serial = true,
				.serial = res->meta.serial, .digest = f->sh.status.digest };
			cfl_event(f, &e);
			fprintf(stderr, "namegate: fleet: bundle serial %" PRIu64 " in force\n",
			    res->meta.serial);
			pthread_mutex_lock(&f->sh.lock);
			f->sh.status.have_refused = false;
			f->cache_expired = false;
			pthread_mutex_unlock(&f->sh.lock);
			free(msg);
			return;
		}
		res->verdict = CTL_BUNDLE_BAD_POLICY;
		snprintf(res->reason, sizeof(res->reason), "not put in force: %.*s",
		    (int)strcspn(msg != NULL ? msg : "", "\n"), msg != NULL ? msg : "");
		free(msg);
	}
	fprintf(stderr, "namegate: fleet: bundle refused: %s\n", res->reason);
	e.reason = res->reason;
	cfl_event(f, &e);
	pthread_mutex_lock(&f->sh.lock);
	f->refused_total++;
	f->sh.status.have_refused = true;
	f->sh.status.refused_serial = res->have_meta ? res->meta.serial : 0;
	snprintf(f->sh.status.refused_reason, sizeof(f->sh.status.refused_reason), "%s",
	    res->reason);
	cfl_status_changed(f);
	pthread_mutex_unlock(&f->sh.lock);
}

/* The store's live grants, less the revoked, into want (put_ms beside): under lock. */
static size_t
cfl_want(const struct ctl_fleet *f, struct ctl_grant *want, int64_t *put_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < f->sh.ngrants; i++) {
		const struct ctl_fleet_grant *fg = &f->sh.grants[i].fg;

		if (cfl_has(f->sh.revoked, f->sh.nrevoked, fg->g.id) ||
		    cfl_has(f->local_revoked, f->nlocal_revoked, fg->g.id))
			continue;	/* a revoke wins, wherever it was made */
		want[n] = fg->g;
		put_ms[n++] = fg->put_ms;
	}
	return n;
}

/* Grants seen in force here for the first time: their put-to-applied time. */
static void
cfl_observe_grants(struct ctl_fleet *f, const struct ctl_grant *want, const int64_t *put_ms,
    size_t n)
{
	struct timespec now;
	double t;

	clock_gettime(CLOCK_REALTIME, &now);
	t = (double)now.tv_sec + now.tv_nsec / 1e9;
	for (size_t i = 0; i < n; i++) {
		if (cfl_has(f->applied, f->napplied, want[i].id) || want[i].expires <= now.tv_sec ||
		    pol_config_vm(*f->cfgp, want[i].vm) == NULL)
			continue;
		if (f->napplied == CTL_FLEET_STORE_GRANTS)
			f->napplied = 0;	/* forgotten: at worst observed twice */
		f->applied[f->napplied++] = want[i].id;
		ctl_fleet_observe_apply(f, t - (double)put_ms[i] / 1e3);
	}
}

/* Denies decided elsewhere for this gateway's requests: each for the request it names. */
static void
cfl_denies(struct ctl_fleet *f, const struct ctl_fleet_deny *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *name = ctl_approval_name(f->approvals, d[i].id);

		/* IDs start again at a restart: the name says it is the same request */
		if (name != NULL && strcmp(name, d[i].name) == 0)
			ctl_approval_deny(f->approvals, d[i].id, d[i].uid, d[i].user);
	}
}

void
ctl_fleet_tick(struct ctl_fleet *f)
{
	struct ctl_fleet_deny denies[CTL_FLEET_DENIES_MAX];
	size_t ndenies;
	struct ctl_grant *want = NULL;
	int64_t *put_ms = NULL;
	struct ctl_fleet_verdict *v;
	char why[CTL_FLEET_WHY_MAX];
	bool connected, take = false;
	size_t n = 0;

	if (f == NULL)
		return;
	pthread_mutex_lock(&f->sh.lock);
	connected = f->sh.watching && f->sh.writing;
	snprintf(why, sizeof(why), "%s", f->sh.down_why);
	if (f->sh.grants_ver != f->grants_seen_ver &&
	    (want = calloc(f->sh.ngrants + 1, sizeof(want[0]))) != NULL &&
	    (put_ms = calloc(f->sh.ngrants + 1, sizeof(put_ms[0]))) != NULL) {
		take = true;
		f->grants_seen_ver = f->sh.grants_ver;
		n = cfl_want(f, want, put_ms);
	}
	v = f->sh.verdict;
	f->sh.verdict = NULL;
	ndenies = f->sh.ndenies;
	memcpy(denies, f->sh.denies, ndenies * sizeof(denies[0]));
	f->sh.ndenies = 0;
	if (connected != f->connected)
		cfl_status_changed(f);
	pthread_mutex_unlock(&f->sh.lock);
	if (connected != f->connected) {
		struct ctl_ev_fleet e = { .event = connected ? "fleet_connected" :
			"fleet_disconnected", .reason = connected ? NULL : why };

		f->connected = connected;
		fprintf(stderr, "namegate: fleet: store %s%s%s\n", connected ? "reached" :
		    "not reached, the last verified policy and grants stay in force",
		    connected ? "" : ": ", connected ? "" : why);
		cfl_event(f, &e);
	}
	if (v != NULL) {
		cfl_bundle(f, v);
		ctl_fleet_verdict_free(v);
	}
	if (take && f->nprev > 0) {
		pthread_mutex_lock(&f->sh.lock);
		ctl_fleet_revokes_seen(f, f->sh.revoked, f->sh.nrevoked);
		pthread_mutex_unlock(&f->sh.lock);
	}
	if (take && ctl_grants_live_store_sync(f->grants, want, n, stderr) >= 0) {
		cfl_observe_grants(f, want, put_ms, n);
		pthread_mutex_lock(&f->sh.lock);
		f->sh.status.grants = (uint32_t)n;
		cfl_status_changed(f);
		pthread_mutex_unlock(&f->sh.lock);
	}
	free(want);
	free(put_ms);
	cfl_denies(f, denies, ndenies);
	fflush(stderr);
}
