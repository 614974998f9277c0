/*
 * Inside the grant table: shared by the table (ctl_grants.c), its state file
 * (ctl_grants_file.c) and the overlay builder (ctl_grants_set.c).
 */
#ifndef CTL_GRANTS_INT_H
#define CTL_GRANTS_INT_H

#include "ctl_grants.h"

struct ctl_grants {
	char *path;		/* the state file */
	struct ctl_grant *v;	/* in the order made */
	size_t n, cap;
	uint64_t next_id;
	struct ctl_grant_tomb *tombs;	/* ctl_grants_tomb.c */
	size_t ntombs, tombcap;
};

/*
 * Checks a grant's VM (against cfg; NULL: any name), host pattern and reason, as
 * ctl_grants_add() does for a new one and the loader for one read back. 0 or -EINVAL.
 */
int ctl_grant_check(const struct ctl_grant *gr, const struct pol_config *cfg, char *why,
    size_t whylen);

/* Appends *gr (its id raises next_id past it): 0, -ENOSPC, -ENOMEM. */
int ctl_grants_put(struct ctl_grants *g, const struct ctl_grant *gr);

/*
 * The state file's text (len bytes, need not be NUL-terminated) into the empty table g.
 * 0, or -errno with why; on failure g may hold part of it: the caller empties it.
 */
int ctl_grants_parse(struct ctl_grants *g, const char *buf, size_t len, char *why,
    size_t whylen);

#endif /* CTL_GRANTS_INT_H */
