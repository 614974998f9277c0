/*
 * The watcher thread: a list of the prefix, then a watch from the list's revision, a new
 * list after any end of the stream (so what was missed while away is found by
 * difference, not replayed). The store's records become the shared model; this shard's
 * bundle is judged here, off the control loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_fleet_int.h"
#include "policy/load.h"

/* Under lock: forget every record (before a list). */
static void
fw_clear(struct ctl_fleet_shared *sh)
{
	sh->ngrants = 0;
	sh->nrevoked = 0;
	for (size_t i = 0; i < sh->ngw; i++)
		free(sh->gw_status[i]);
	sh->ngw = 0;
	sh->npending = 0;
	sh->grants_ver++;
}

/* P/pending/GW/ID: the fleet's waiting requests, shown by the fleet command. */
static void
fw_pending(struct ctl_fleet_shared *sh, const char *tail, size_t tlen,
    const struct ctl_etcd_kv *kv, bool put)
{
	char gw[POL_FLEET_WORD_MAX + 1], why[CTL_FLEET_WHY_MAX];
	struct ctl_fleet_pending p;
	uint64_t id;
	size_t i;

	if (ctl_fleet_gw_id_parse(tail, tlen, gw, sizeof(gw), &id) != 0)
		return;
	for (i = 0; i < sh->npending && (sh->pending[i].id != id ||
	    strcmp(sh->pending[i].gateway, gw) != 0); i++)
		;
	if (!put) {
		if (i < sh->npending)
			sh->pending[i] = sh->pending[--sh->npending];
		return;
	}
	if (ctl_fleet_pending_decode(kv->value, kv->value_len, &p, why, sizeof(why)) != 0 ||
	    p.id != id || strcmp(p.gateway, gw) != 0 ||
	    (i == sh->npending && sh->npending == CTL_FLEET_PENDING_MAX))
		return;		/* a record not at its own key is nobody's */
	sh->pending[i] = p;
	sh->npending += i == sh->npending;
}

/* P/decisions/GW/ID for this gateway: a deny for the loop to put in force. */
static void
fw_decision(struct ctl_fleet *f, const char *tail, size_t tlen, const struct ctl_etcd_kv *kv)
{
	struct ctl_fleet_shared *sh = &f->sh;
	char gw[POL_FLEET_WORD_MAX + 1], why[CTL_FLEET_WHY_MAX];
	struct ctl_fleet_deny d = { 0 };

	if (ctl_fleet_gw_id_parse(tail, tlen, gw, sizeof(gw), &d.id) != 0 ||
	    strcmp(gw, f->boot->fleet_gateway) != 0)
		return;
	if (ctl_fleet_decision_decode(kv->value, kv->value_len, d.name, sizeof(d.name), d.user,
	    sizeof(d.user), &d.uid, why, sizeof(why)) != 0) {
		fprintf(stderr, "namegate: fleet: %.*s: %s\n", (int)kv->key_len, kv->key, why);
		return;
	}
	if (sh->ndenies < CTL_FLEET_DENIES_MAX)
		sh->denies[sh->ndenies++] = d;
}

static void
fw_grant_put(struct ctl_fleet *f, const char *tail, size_t tlen, const struct ctl_etcd_kv *kv)
{
	struct ctl_fleet_shared *sh = &f->sh;
	struct ctl_fleet_sgrant sg = { 0 };
	char why[CTL_FLEET_WHY_MAX];
	size_t i;

	if (tlen > CTL_FLEET_GRANT_KEY_LEN || kv->create_rev <= 0 ||
	    ctl_fleet_grant_decode(kv->value, kv->value_len, (uint64_t)kv->create_rev, &sg.fg,
	    why, sizeof(why)) != 0) {
		fprintf(stderr, "namegate: fleet: %.*s: not a grant record: %s\n",
		    (int)kv->key_len, kv->key, tlen > CTL_FLEET_GRANT_KEY_LEN ? "key too long" :
		    why);
		return;
	}
	memcpy(sg.key, tail, tlen);
	for (i = 0; i < sh->ngrants && strcmp(sh->grants[i].key, sg.key) != 0; i++)
		;
	if (i == sh->ngrants && sh->ngrants == CTL_FLEET_STORE_GRANTS) {
		fprintf(stderr, "namegate: fleet: more than %d grant records: %s ignored\n",
		    CTL_FLEET_STORE_GRANTS, sg.key);
		return;
	}
	sh->grants[i] = sg;
	sh->ngrants += i == sh->ngrants;
	sh->grants_ver++;
}

static void
fw_grant_del(struct ctl_fleet_shared *sh, const char *tail, size_t tlen)
{
	for (size_t i = 0; i < sh->ngrants; i++)
		if (strlen(sh->grants[i].key) == tlen && memcmp(sh->grants[i].key, tail, tlen) == 0) {
			sh->grants[i] = sh->grants[--sh->ngrants];
			sh->grants_ver++;
			return;
		}
}

static void
fw_revoked(struct ctl_fleet_shared *sh, const char *tail, size_t tlen, bool put)
{
	uint64_t id;
	size_t i;

	if (ctl_fleet_id_parse(tail, tlen, &id) != 0)
		return;
	for (i = 0; i < sh->nrevoked && sh->revoked[i] != id; i++)
		;
	if (put && i == sh->nrevoked && sh->nrevoked < CTL_FLEET_REVOKED_MAX)
		sh->revoked[sh->nrevoked++] = id;
	else if (!put && i < sh->nrevoked)
		sh->revoked[i] = sh->revoked[--sh->nrevoked];
	else
		return;
	sh->grants_ver++;
}

static void
fw_status(struct ctl_fleet_shared *sh, const char *tail, size_t tlen,
    const struct ctl_etcd_kv *kv, bool put)
{
	size_t i;
	char *copy;

	if (tlen > POL_FLEET_WORD_MAX)
		return;
	for (i = 0; i < sh->ngw && (strlen(sh->gw_name[i]) != tlen ||
	    memcmp(sh->gw_name[i], tail, tlen) != 0); i++)
		;
	if (!put) {
		if (i < sh->ngw) {
			free(sh->gw_status[i]);
			sh->gw_status[i] = sh->gw_status[--sh->ngw];
			memcpy(sh->gw_name[i], sh->gw_name[sh->ngw], sizeof(sh->gw_name[i]));
		}
		return;
	}
	if ((i == sh->ngw && sh->ngw == CTL_FLEET_GATEWAYS_MAX) ||
	    (copy = strndup(kv->value, kv->value_len)) == NULL)
		return;
	if (i == sh->ngw) {
		memcpy(sh->gw_name[i], tail, tlen);
		sh->gw_name[i][tlen] = '\0';
		sh->gw_status[i] = NULL;
		sh->ngw++;
	}
	free(sh->gw_status[i]);
	sh->gw_status[i] = copy;
}

/* This shard's bundle: judged without the lock (it compiles), its verdict left for the loop. */
static void
fw_bundle(struct ctl_fleet *f, const struct ctl_etcd_kv *kv)
{
	const struct pol_config *cfg = f->boot;
	struct ctl_fleet_verdict *v = calloc(1, sizeof(*v));
	struct ctl_bundle_want want = { .keys = f->keys, .nkeys = f->nkeys,
		.fleet = cfg->fleet_name, .shard = cfg->fleet_shard, .now = time(NULL) };
	char name[CTL_FLEET_KEY_MAX + 32];

	if (v == NULL)
		return;
	if (kv->mod_rev == f->bundle_rev) {	/* judged already (a list after a watch) */
		free(v);
		return;
	}
	f->bundle_rev = v->rev = kv->mod_rev;
	pthread_mutex_lock(&f->sh.lock);
	want.have_running = f->sh.have_running;
	want.running = f->sh.running_serial;
	pthread_mutex_unlock(&f->sh.lock);
	snprintf(name, sizeof(name), "%.*s@%" PRId64, (int)kv->key_len, kv->key, kv->mod_rev);
	if (ctl_fleet_bundle_decode(kv->value, kv->value_len, &v->b, v->res.reason,
	    sizeof(v->res.reason)) != 0)
		v->res.verdict = CTL_BUNDLE_MALFORMED;
	else
		ctl_bundle_judge(&want, v->b.policy, v->b.policy_len, name, v->b.minisig,
		    v->b.minisig_len, false, &v->res);
	pthread_mutex_lock(&f->sh.lock);
	ctl_fleet_verdict_free(f->sh.verdict);
	f->sh.verdict = v;
	pthread_mutex_unlock(&f->sh.lock);
}

/* One record put or deleted; the bundle is judged by the caller, without the lock. */
static bool
fw_apply(struct ctl_fleet *f, const struct ctl_etcd_kv *kv, bool put)
{
	const char *tail;
	size_t tlen;
	struct ctl_fleet_shared *sh = &f->sh;

	switch (ctl_fleet_key_kind(f->boot->fleet_prefix, kv->key, kv->key_len, &tail, &tlen)) {
	case CTL_FLEET_K_GRANT:
		if (put)
			fw_grant_put(f, tail, tlen, kv);
		else
			fw_grant_del(sh, tail, tlen);
		return false;
	case CTL_FLEET_K_REVOKED:
		fw_revoked(sh, tail, tlen, put);
		return false;
	case CTL_FLEET_K_STATUS:
		fw_status(sh, tail, tlen, kv, put);
		return false;
	case CTL_FLEET_K_PENDING:
		fw_pending(sh, tail, tlen, kv, put);
		return false;
	case CTL_FLEET_K_DECISION:
		if (put)
			fw_decision(f, tail, tlen, kv);
		return false;
	case CTL_FLEET_K_BUNDLE:	/* a deleted bundle leaves the policy in force */
		return put && strlen(f->boot->fleet_shard) == tlen &&
		    memcmp(tail, f->boot->fleet_shard, tlen) == 0;
	case CTL_FLEET_K_OTHER:
		break;
	}
	return false;
}

static void
fw_list(struct ctl_fleet *f, const struct ctl_etcd_kvs *kvs)
{
	const struct ctl_etcd_kv *bundle = NULL;

	pthread_mutex_lock(&f->sh.lock);
	fw_clear(&f->sh);
	for (size_t i = 0; i < kvs->n; i++)
		if (fw_apply(f, &kvs->kv[i], true))
			bundle = &kvs->kv[i];
	pthread_mutex_unlock(&f->sh.lock);
	if (bundle != NULL)
		fw_bundle(f, bundle);
	f->wake();
}

static int
fw_events(void *arg, const struct ctl_etcd_event *ev, size_t n, int64_t rev)
{
	struct ctl_fleet *f = arg;
	const struct ctl_etcd_kv *bundle = NULL;

	(void)rev;
	pthread_mutex_lock(&f->sh.lock);
	if (n == 0) {			/* the watch is in place: the store is reached */
		f->sh.watching = true;
		f->sh.down_why[0] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		if (fw_apply(f, &ev[i].kv, ev[i].type == CTL_ETCD_PUT))
			bundle = &ev[i].kv;	/* the last of a batch is the one that counts */
	pthread_mutex_unlock(&f->sh.lock);
	if (bundle != NULL)
		fw_bundle(f, bundle);
	f->wake();
	return 0;
}

static void
fw_down(struct ctl_fleet *f, const char *why)
{
	pthread_mutex_lock(&f->sh.lock);
	f->sh.watching = false;
	snprintf(f->sh.down_why, sizeof(f->sh.down_why), "%s", why);
	pthread_mutex_unlock(&f->sh.lock);
	f->wake();
}

void *
ctl_fleet_watch_main(void *arg)
{
	struct ctl_fleet *f = arg;
	const char *prefix = f->boot->fleet_prefix;

	for (;;) {
		struct ctl_etcd_kvs kvs;
		int64_t next_rev;
		int rc;

		if ((rc = ctl_etcd_range(f->watch_etcd, prefix, &kvs)) == 0) {
			fw_list(f, &kvs);
			next_rev = kvs.rev + 1;
			ctl_etcd_kvs_free(&kvs);
			rc = ctl_etcd_watch(f->watch_etcd, prefix, &next_rev, fw_events, f);
		}
		if (rc == -ECANCELED)
			break;
		fw_down(f, ctl_etcd_error(f->watch_etcd));
		pthread_mutex_lock(&f->sh.lock);
		ctl_fleet_nap(f, CTL_FLEET_RETRY_MS);
		if (f->sh.stop) {
			pthread_mutex_unlock(&f->sh.lock);
			break;
		}
		pthread_mutex_unlock(&f->sh.lock);
	}
	return NULL;
}
