/*
 * What the three files of the grants in force share (ctl_grants_live.c: the table, its
 * generation and gauge; ctl_grants_peer.c: the HA peer and the fleet store;
 * ctl_grants_cmd.c: the control socket).
 */
#ifndef CTL_GRANTS_LIVE_INT_H
#define CTL_GRANTS_LIVE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_grants_int.h"
#include "ctl_grants_live.h"
#include "policy/load.h"

/* namegate_vm_grants: a copy the scrape thread reads under its own lock */
struct ctl_grants_gauge {
	pthread_mutex_t lock;
	size_t n;
	char (*vm)[POL_VM_NAME_MAX + 1];
	uint32_t *live;
};

struct ctl_grants_live {
	struct pol_config *const *cfgp;	/* the configuration in force */
	struct ctl_events *events;	/* NULL: no event log */
	const struct dp_plane *plane;
	struct ctl_grants *table;
	struct ctl_overlay ov;		/* what the running generation was built from */
	struct ctl_grants_gauge gauge;
	int64_t ticked;			/* the second of the last tick */
	bool stale;			/* the table changed, the generation has not yet */
	bool closing;			/* a grant ended, no generation has yet been put out */
	/* a fleet's store (ctl_grants_live_set_store()): its name, and who hears revokes */
	const char *fleet;
	ctl_grants_revoked_fn *revoked;
	void *revoked_arg;
	ctl_grants_pair_fn *pair;	/* the HA peer's (ctl_grants_live_set_pair()) */
	void *pair_arg;
};

/* The wall clock's second: grants are kept in it. */
int64_t ctl_gl_now(void);

/* The event of g (grant, grant_revoked...); by: the client, NULL for the daemon itself. */
void ctl_gl_event(struct ctl_grants_live *gr, const char *event, const struct ctl_grant *g,
    const struct ctl_peer *by);

/* A new generation for the grants live now (closing: it ends or narrows one). */
int ctl_gl_apply(struct ctl_grants_live *gr, bool closing, FILE *err);

/* ctl_gl_apply() for a change of the table, remembering what is not yet in force. */
int ctl_gl_put(struct ctl_grants_live *gr, bool closing, FILE *err);

/* The table on disk (its old revokes pruned first). */
void ctl_gl_save(struct ctl_grants_live *gr);

#endif
