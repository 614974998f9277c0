/*
 * Grants (namegatectl grant VM HOST[:PORT] --for D): an operator lets one VM reach one more
 * host pattern for a while, live, without editing the configuration. A grant is an extra
 * allow pattern of that VM's policy; the policy's deny patterns still win over it.
 *
 * This module is the table and its state file, no DPDK: the daemon (dataplane/main/
 * dp_grants.c) builds each generation through ctl_overlay_build() and publishes it as a
 * reload does, so what a grant admitted is re-judged, and cut, when it ends.
 *
 * Times are CLOCK_REALTIME seconds (UTC): a grant's end is a wall-clock time that must
 * mean the same after a restart. Not thread-safe: the control event loop owns the table.
 *
 * State file (JSON, written whole to PATH.tmp, fsync'ed, renamed over PATH, directory
 * fsync'ed, on every change, so a crash leaves the old file or the new one, never half):
 *
 *   {"version":1,"next_id":4,"grants":[{"id":3,"vm":"agent1","host":"pypi.org:443",
 *     "created":1764590000,"expires":1764593600,"reason":"pip needs it",
 *     "uid":1000,"user":"alice"}]}
 *
 * uid and user (who made the grant) come together or not at all: files written before
 * they were recorded load with the maker unknown. "fleet":true marks a grant that came
 * from the fleet's store (issue 27): the file is then its cache, so a gateway that starts
 * cut off from the store keeps enforcing it until it ends.
 */
#ifndef CTL_GRANTS_H
#define CTL_GRANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/load.h"

#define CTL_GRANTS_MAX		1024		/* live grants, all VMs together */
#define CTL_GRANT_SECONDS_MAX	(30u * 86400)	/* the longest --for: 30 days */
#define CTL_GRANT_REASON_MAX	200		/* bytes of --reason */
#define CTL_GRANT_HOST_MAX	(POL_NAME_MAX + 8)	/* a pattern as written, ":65535" too */
#define CTL_GRANT_USER_MAX	64		/* bytes of the maker's user name */
#define CTL_GRANTS_FILE_MAX	(1u << 20)	/* a state file larger than this is damaged */
#define CTL_GRANTS_FILE_VERSION	1

struct ctl_grant {
	uint64_t id;			/* from 1, never reused by one state file */
	char vm[POL_VM_NAME_MAX + 1];
	char host[CTL_GRANT_HOST_MAX + 1];	/* the pattern as the operator wrote it */
	struct pol_pattern pattern;	/* host compiled */
	int64_t created, expires;	/* UTC seconds; live while now < expires */
	char reason[CTL_GRANT_REASON_MAX + 1];	/* "" when none was given */
	int64_t uid;			/* who made it (SO_PEERCRED); -1: not known */
	char user[CTL_GRANT_USER_MAX + 1];	/* their user name; "" with uid -1 */
	bool fleet;			/* from the fleet's store (id: its create revision) */
};


/*
 * A revoke the HA peer must not undo (ctl_grants_tomb.c): vm's grants for host were
 * revoked here and would have lasted until (UTC seconds). Kept in the state file.
 */
struct ctl_grant_tomb {
	char vm[POL_VM_NAME_MAX + 1];
	char host[CTL_GRANT_HOST_MAX + 1];
	int64_t until;
};

struct ctl_grants;

/* An empty table whose state file is path (copied). NULL and errno on failure. */
struct ctl_grants *ctl_grants_new(const char *path);
void ctl_grants_free(struct ctl_grants *g);

const char *ctl_grants_path(const struct ctl_grants *g);
size_t ctl_grants_count(const struct ctl_grants *g);
/* Grant i (0 .. count-1) in the order made, or NULL. Valid until the table changes. */
const struct ctl_grant *ctl_grants_at(const struct ctl_grants *g, size_t i);
/* Live grants of the VM called vm. */
size_t ctl_grants_count_vm(const struct ctl_grants *g, const char *vm);
/* The earliest end of any grant, or INT64_MAX without one. */
int64_t ctl_grants_next_expiry(const struct ctl_grants *g);

/*
 * "90s", "30m", "2h", "1d", "1h30m", or plain seconds "600": whole units in the order
 * d h m s, each at most once, 1 s .. CTL_GRANT_SECONDS_MAX. Returns 0 with *secs, or
 * -EINVAL (-ERANGE when out of range) with a message in why (whylen bytes).
 */
int ctl_duration_parse(const char *text, uint32_t *secs, char *why, size_t whylen);

/*
 * Checks everything an operator (or anyone who reaches the control socket) gave, and makes
 * the grant: vm must be one of cfg's VMs, host a SPEC s3 allow pattern, dur as
 * ctl_duration_parse(), reason (NULL: none) at most CTL_GRANT_REASON_MAX bytes of UTF-8
 * without control characters. The table changes in memory only: save it, and
 * ctl_grants_revoke() the grant again if that fails. Returns 0 with the grant in *out, or
 * -EINVAL, -ERANGE, -ENOSPC (CTL_GRANTS_MAX live), -ENOMEM with a message in why.
 */
int ctl_grants_add(struct ctl_grants *g, const struct pol_config *cfg, const char *vm,
    const char *host, const char *dur, const char *reason, int64_t now, struct ctl_grant *out,
    char *why, size_t whylen);

/*
 * Records who made grant id (its uid, and user, cut to CTL_GRANT_USER_MAX bytes), in the
 * table and in *out (may be NULL): 0, or -ENOENT.
 */
int ctl_grants_set_maker(struct ctl_grants *g, uint64_t id, uint32_t uid, const char *user,
    struct ctl_grant *out);

/* Ends grant id, copying it to *out (may be NULL) first: 0, or -ENOENT. */
int ctl_grants_revoke(struct ctl_grants *g, uint64_t id, struct ctl_grant *out);

typedef void ctl_grant_fn(const struct ctl_grant *gr, void *arg);

/* Ends every grant whose time is up at now, calling fn (may be NULL) for each first. */
size_t ctl_grants_expire(struct ctl_grants *g, int64_t now, ctl_grant_fn *fn, void *arg);

/* Ends every grant for a VM cfg no longer has, calling fn first. Returns how many. */
size_t ctl_grants_drop_unknown(struct ctl_grants *g, const struct pol_config *cfg,
    ctl_grant_fn *fn, void *arg);

/*
 * Reads the state file into the (empty) table. No file: 0, nothing granted. A file that
 * is not exactly what ctl_grants_save() writes (unreadable, too large, bad JSON, a bad
 * field, a pattern that no longer parses, two grants with one id) grants nothing at all:
 * the table stays empty, the file is renamed to PATH.damaged for the operator, and -EINVAL
 * (or -errno) comes back with the reason in err. Grants already ended are kept: expire
 * them next, so each gets its event.
 */
int ctl_grants_load(struct ctl_grants *g, char *err, size_t errlen);

/* Writes the table atomically (see above). 0, or -errno with the reason in err. */
int ctl_grants_save(const struct ctl_grants *g, char *err, size_t errlen);

/* "2026-12-01T14:05:00Z" into buf (at least 21 bytes). */
void ctl_grant_time(int64_t t, char *buf, size_t len);

/*
 * The policies a generation is built from: cfg's, and for each VM with live grants a
 * policy of its own, its configured policy's patterns plus its grants' (rules marked
 * grant, their key the text check prints: grant 3 until 14:05Z, "reason").
 */
struct ctl_overlay {
	struct pol_set *set;		/* owned; NULL: no grant is live, view is *cfg */
	struct pol_vm *vms;		/* owned; cfg's VMs, names aliased, policies into set */
	struct pol_config view;		/* *cfg with set and vms replaced; never freed as one */
};

/*
 * Builds *ov for cfg from the grants live at now. ov->view is valid as long as cfg and ov.
 * Returns 0, or -ENOMEM / -EINVAL (*ov then empty, nothing to free).
 */
int ctl_overlay_build(const struct ctl_grants *g, const struct pol_config *cfg, int64_t now,
    struct ctl_overlay *ov);
void ctl_overlay_free(struct ctl_overlay *ov);

/*
 * The revokes the HA peer must not undo: add one (a later until wins; one over by now is
 * not kept; 0, -EINVAL, -ENOMEM), whether one for vm and host holds at now, clear it (a
 * new grant: whether there was one), drop those over by now, and walk them. At most
 * CTL_GRANTS_MAX: past that the one nearest its end goes.
 */
int ctl_grants_tomb_add(struct ctl_grants *g, const char *vm, const char *host, int64_t until,
    int64_t now);
bool ctl_grants_tomb_live(const struct ctl_grants *g, const char *vm, const char *host,
    int64_t now);
bool ctl_grants_tomb_clear(struct ctl_grants *g, const char *vm, const char *host);
void ctl_grants_tomb_prune(struct ctl_grants *g, int64_t now);
size_t ctl_grants_tomb_count(const struct ctl_grants *g);
const struct ctl_grant_tomb *ctl_grants_tomb_at(const struct ctl_grants *g, size_t i);

#endif /* CTL_GRANTS_H */
