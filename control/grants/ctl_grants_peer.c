/*
 * The grants that come from elsewhere: the HA peer's (each grant and revoke made on one
 * gateway of a pair is made on the other; a resync sends them all) and a fleet store's
 * (the store's grants are the gateway's, synced whole). See ctl_grants_live.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_grants_int.h"
#include "ctl_grants_live.h"
#include "ctl_grants_live_int.h"
#include "ctl_sock.h"
#include "policy/load.h"

void
ctl_grants_live_set_pair(struct ctl_grants_live *gr, ctl_grants_pair_fn *fn, void *arg)
{
	gr->pair = fn;
	gr->pair_arg = arg;
}

void
ctl_grants_live_each(const struct ctl_grants_live *gr, ctl_grants_pair_fn *fn, void *arg)
{
	int64_t now = ctl_gl_now();

	for (size_t i = 0; gr->fleet == NULL && i < ctl_grants_tomb_count(gr->table); i++) {
		const struct ctl_grant_tomb *t = ctl_grants_tomb_at(gr->table, i);

		if (t->until > now)	/* the revokes first: the peer may have missed them */
			fn(arg, t->vm, t->host, 0);
	}
	for (size_t i = 0; gr->fleet == NULL && i < ctl_grants_count(gr->table); i++) {
		const struct ctl_grant *g = ctl_grants_at(gr->table, i);

		if (!g->fleet && g->expires > now)
			fn(arg, g->vm, g->host, (uint32_t)(g->expires - now));
	}
}

/* The peer's revoke: every grant of vm for host ends. */
static int
ctl_gl_peer_revoke(struct ctl_grants_live *gr, const char *vm, const char *host)
{
	size_t ended = 0;

	for (size_t i = 0; i < ctl_grants_count(gr->table);) {
		const struct ctl_grant *g = ctl_grants_at(gr->table, i);
		struct ctl_grant gone;

		if (g->fleet || strcmp(g->vm, vm) != 0 || strcmp(g->host, host) != 0) {
			i++;
			continue;
		}
		ctl_grants_revoke(gr->table, g->id, &gone);
		ctl_gl_event(gr, "grant_revoked", &gone, NULL);
		ended++;
	}
	if (ended == 0)
		return 0;
	ctl_gl_save(gr);
	if (ctl_gl_put(gr, true, stderr) < 0)
		fputs("namegate: grants: the peer's revoke could not be put in force; retrying\n",
		    stderr);
	return 0;
}

int
ctl_grants_live_peer(struct ctl_grants_live *gr, const char *vm, const char *host,
    uint32_t left, bool resync, char *why, size_t whylen)
{
	int64_t now = ctl_gl_now(), tomb_until = 0;
	struct ctl_grant g;
	char dur[16], err[512];
	int rc;

	if (gr->fleet != NULL) {
		snprintf(why, whylen, "grants come from fleet %s's store", gr->fleet);
		return -EPERM;
	}
	if (left == 0)
		return ctl_gl_peer_revoke(gr, vm, host);
	if (resync && ctl_grants_tomb_live(gr->table, vm, host, now)) {
		/* revoked here while the peer did not hear: the revoke wins, on both boxes */
		if (gr->pair != NULL)
			gr->pair(gr->pair_arg, vm, host, 0);
		snprintf(why, whylen, "revoked here while the peer could not hear it; the revoke "
		    "is sent back");
		return -ECANCELED;
	}
	for (size_t i = 0; i < ctl_grants_count(gr->table); i++) {
		const struct ctl_grant *o = ctl_grants_at(gr->table, i);

		if (!o->fleet && o->expires > now && strcmp(o->vm, vm) == 0 &&
		    strcmp(o->host, host) == 0)
			return 0;	/* the resync of one this box has */
	}
	snprintf(dur, sizeof(dur), "%u", left);
	if ((rc = ctl_grants_add(gr->table, *gr->cfgp, vm, host, dur, NULL, now, &g, why,
	    whylen)) < 0)
		return rc;
	/* made since the revoke here (not a resync): a new decision, once it is made */
	for (size_t i = 0; i < ctl_grants_tomb_count(gr->table); i++) {
		const struct ctl_grant_tomb *t = ctl_grants_tomb_at(gr->table, i);

		if (strcmp(t->vm, vm) == 0 && strcmp(t->host, host) == 0)
			tomb_until = t->until;
	}
	(void)ctl_grants_tomb_clear(gr->table, vm, host);
	if ((rc = ctl_grants_save(gr->table, err, sizeof(err))) < 0) {
		ctl_grants_revoke(gr->table, g.id, NULL);
		(void)ctl_grants_tomb_add(gr->table, vm, host, tomb_until, now);
		snprintf(why, whylen, "not saved: %s", err);
		return rc;
	}
	if ((rc = ctl_gl_apply(gr, false, stderr)) < 0) {
		ctl_grants_revoke(gr->table, g.id, NULL);
		(void)ctl_grants_tomb_add(gr->table, vm, host, tomb_until, now);
		ctl_gl_save(gr);
		snprintf(why, whylen, "no generation with it: %s", strerror(-rc));
		return rc;
	}
	ctl_gl_event(gr, "grant", &g, NULL);
	return 0;
}

void
ctl_grants_live_set_store(struct ctl_grants_live *gr, const char *fleet,
    ctl_grants_revoked_fn *fn, void *arg)
{
	gr->fleet = fleet;
	gr->revoked = fn;
	gr->revoked_arg = arg;
}

/* Is a fleet grant with id among want's n? */
static bool
ctl_gl_wanted(const struct ctl_grant *want, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (want[i].id == id)
			return true;
	return false;
}

static const struct ctl_grant *
ctl_gl_find_fleet(const struct ctl_grants *t, uint64_t id)
{
	for (size_t i = 0; i < ctl_grants_count(t); i++) {
		const struct ctl_grant *g = ctl_grants_at(t, i);

		if (g->fleet && g->id == id)
			return g;
	}
	return NULL;
}

int
ctl_grants_live_store_sync(struct ctl_grants_live *gr, const struct ctl_grant *want, size_t n,
    FILE *err)
{
	const struct pol_config *cfg = *gr->cfgp;
	size_t ended = 0, added = 0;
	int64_t now = ctl_gl_now();
	char why[512];

	for (size_t i = 0; i < ctl_grants_count(gr->table);) {
		const struct ctl_grant *g = ctl_grants_at(gr->table, i);
		struct ctl_grant gone;

		if (!g->fleet || ctl_gl_wanted(want, n, g->id)) {
			i++;
			continue;
		}
		ctl_grants_revoke(gr->table, g->id, &gone);
		ctl_gl_event(gr, "grant_revoked", &gone, NULL);
		ended++;
	}
	for (size_t i = 0; i < n; i++) {
		struct ctl_grant g = want[i];
		struct ctl_peer maker = { .uid = (uint32_t)g.uid };
		int rc;

		snprintf(maker.user, sizeof(maker.user), "%s", g.user);
		if (ctl_gl_find_fleet(gr->table, g.id) != NULL || g.expires <= now ||
		    pol_config_vm(cfg, g.vm) == NULL)
			continue;	/* in force, over, or for a VM behind another gateway */
		g.fleet = true;
		if ((rc = ctl_grant_check(&g, cfg, why, sizeof(why))) < 0 ||
		    (rc = ctl_grants_put(gr->table, &g)) < 0) {
			fprintf(err, "namegate: fleet: grant %" PRIu64 " not taken: %s\n", g.id,
			    rc == -EINVAL ? why : strerror(-rc));
			continue;
		}
		ctl_gl_event(gr, "grant", &g, g.uid >= 0 ? &maker : NULL);
		added++;
	}
	if (ended + added == 0)
		return 0;
	ctl_gl_save(gr);
	if (ctl_gl_put(gr, ended > 0, err) < 0)
		fputs("namegate: fleet: the store's grants could not be put in force; retrying\n",
		    err);
	return (int)(ended + added);
}
