/*
 * Revocations the HA peer must not undo (namegate(8), HA PAIR). Two boxes without a fleet
 * store each keep their grants; a revoke made on one while the pair could not talk is
 * known to it alone, and the other's resync would bring the grant back. So a box keeps
 * what it revoked, by VM and host pattern, until the grant would have ended, in its state
 * file: a resync's grant that matches one is refused and answered with the revoke. A
 * grant made since (here, or live from the peer) is a new decision and clears it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "ctl_grants_int.h"

static ssize_t
ctl_tomb_find(const struct ctl_grants *g, const char *vm, const char *host)
{
	for (size_t i = 0; i < g->ntombs; i++)
		if (strcmp(g->tombs[i].vm, vm) == 0 && strcmp(g->tombs[i].host, host) == 0)
			return (ssize_t)i;
	return -1;
}

static void
ctl_tomb_drop(struct ctl_grants *g, size_t i)
{
	g->tombs[i] = g->tombs[--g->ntombs];
}

void
ctl_grants_tomb_prune(struct ctl_grants *g, int64_t now)
{
	for (size_t i = 0; i < g->ntombs;)
		if (g->tombs[i].until <= now)
			ctl_tomb_drop(g, i);
		else
			i++;
}

int
ctl_grants_tomb_add(struct ctl_grants *g, const char *vm, const char *host, int64_t until,
    int64_t now)
{
	size_t vlen = strlen(vm), hlen = strlen(host), soonest = 0;
	ssize_t at;

	if (vlen == 0 || vlen > POL_VM_NAME_MAX || hlen == 0 || hlen > CTL_GRANT_HOST_MAX)
		return -EINVAL;
	if (until <= now)
		return 0;		/* the grant was over anyway: nothing to bring back */
	if ((at = ctl_tomb_find(g, vm, host)) >= 0) {
		if (g->tombs[at].until < until)
			g->tombs[at].until = until;
		return 0;
	}
	ctl_grants_tomb_prune(g, now);
	if (g->ntombs == CTL_GRANTS_MAX) {
		/* as many as grants can be live: the one nearest its end makes room */
		for (size_t i = 1; i < g->ntombs; i++)
			if (g->tombs[i].until < g->tombs[soonest].until)
				soonest = i;
		ctl_tomb_drop(g, soonest);
	}
	if (g->ntombs == g->tombcap) {
		size_t cap = g->tombcap ? 2 * g->tombcap : 8;
		struct ctl_grant_tomb *v = realloc(g->tombs, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		g->tombs = v;
		g->tombcap = cap;
	}
	memcpy(g->tombs[g->ntombs].vm, vm, vlen + 1);
	memcpy(g->tombs[g->ntombs].host, host, hlen + 1);
	g->tombs[g->ntombs++].until = until;
	return 0;
}

bool
ctl_grants_tomb_live(const struct ctl_grants *g, const char *vm, const char *host,
    int64_t now)
{
	ssize_t at = ctl_tomb_find(g, vm, host);

	return at >= 0 && g->tombs[at].until > now;
}

bool
ctl_grants_tomb_clear(struct ctl_grants *g, const char *vm, const char *host)
{
	ssize_t at = ctl_tomb_find(g, vm, host);

	if (at < 0)
		return false;
	ctl_tomb_drop(g, (size_t)at);
	return true;
}

size_t
ctl_grants_tomb_count(const struct ctl_grants *g)
{
	return g->ntombs;
}

const struct ctl_grant_tomb *
ctl_grants_tomb_at(const struct ctl_grants *g, size_t i)
{
	return i < g->ntombs ? &g->tombs[i] : NULL;
}
