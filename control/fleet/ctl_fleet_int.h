/*
 * Inside the fleet agent: the state its threads and the control loop share (under lock),
 * and each side's entry points. ctl_fleet.h has the model.
 */
#ifndef CTL_FLEET_INT_H
#define CTL_FLEET_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_bundle.h"
#include "ctl_etcd.h"
#include "ctl_fleet.h"
#include "ctl_fleet_rec.h"

struct ctl_peer;

#define CTL_FLEET_STORE_GRANTS	(4 * CTL_GRANTS_MAX)	/* records kept; more are refused */
#define CTL_FLEET_REVOKED_MAX	(4 * CTL_GRANTS_MAX)
#define CTL_FLEET_GATEWAYS_MAX	4096

/* A grant record in the store, by its key. */
struct ctl_fleet_sgrant {
	char key[CTL_FLEET_GRANT_KEY_LEN + 1];
	struct ctl_fleet_grant fg;
};

/* A bundle the watcher judged, for the loop to put in force (accepted) or report. */
struct ctl_fleet_verdict {
	struct ctl_bundle_result res;	/* res.cfg never kept: the loop compiles again */
	struct ctl_fleet_bundle b;	/* its texts */
	int64_t rev;			/* the record's mod revision */
};

#define CTL_FLEET_RECORD_SLACK	60	/* seconds a record's lease outlives what it says */
#define CTL_FLEET_OPS_MAX	4096	/* writes waiting for the store */
#define CTL_FLEET_PENDING_MAX	4096	/* requests of the fleet's gateways shown */
#define CTL_FLEET_DENIES_MAX	256

/* A write on its way to the store: a put (val, under a lease of ttl s, 0: none) or a delete. */
struct ctl_fleet_op {
	char key[CTL_FLEET_KEY_MAX];
	char *val;			/* NULL: delete key */
	int64_t ttl;
};

/* A revocation made here: kept until the store shows it back. */
struct ctl_fleet_revoke {
	uint64_t id;
	int64_t expires;		/* the grant's: past it, nothing to keep */
	int64_t uid;
	char user[CTL_GRANT_USER_MAX + 1];
};

/* A deny decided elsewhere for a request of this gateway. */
struct ctl_fleet_deny {
	uint64_t id;
	char name[POL_NAME_MAX + 1];
	char user[CTL_GRANT_USER_MAX + 1];
	int64_t uid;
};

/* What the threads and the loop share: everything below lock. */
struct ctl_fleet_shared {
	pthread_mutex_t lock;
	pthread_cond_t kick;		/* the writer's: something to write, or stop */
	bool stop;

	/* watcher -> loop */
	bool watching;			/* a watch is in place on a fresh list */
	char down_why[CTL_FLEET_WHY_MAX];
	struct ctl_fleet_sgrant *grants;	/* the store's grant records */
	size_t ngrants;
	uint64_t *revoked;		/* ids with a P/revoked/ record */
	size_t nrevoked;
	uint64_t grants_ver;		/* moved on each change of either */
	struct ctl_fleet_verdict *verdict;	/* the latest bundle judged, NULL: none */
	char (*gw_name)[POL_FLEET_WORD_MAX + 1];	/* P/status/ records, raw */
	char **gw_status;
	size_t ngw;
	struct ctl_fleet_pending *pending;	/* every gateway's waiting requests */
	size_t npending;
	struct ctl_fleet_deny denies[CTL_FLEET_DENIES_MAX];	/* for this gateway's */
	size_t ndenies;

	/* loop -> watcher: what a new bundle must beat */
	bool have_running;
	uint64_t running_serial;

	/* loop -> writer */
	struct ctl_fleet_status status;
	uint64_t status_ver;
	struct ctl_fleet_op *ops;	/* in order */
	size_t nops;

	/* writer -> loop */
	bool writing;			/* the last write reached the store */
};

struct ctl_fleet {
	struct pol_config **cfgp;
	const struct pol_config *boot;	/* the fleet keys, as at start (restart to change) */
	struct ctl_events *events;
	struct ctl_grants_live *grants;
	struct ctl_reload *reload;
	struct ctl_approvals *approvals;
	void (*wake)(void);
	struct ctl_bundle_key keys[POL_FLEET_KEYS_MAX];
	size_t nkeys;
	struct ctl_etcd *watch_etcd, *write_etcd;
	pthread_t watcher, writer;
	bool watcher_up, writer_up;
	struct ctl_fleet_shared sh;
	int64_t bundle_rev;		/* the watcher's: the bundle record it judged last */

	/* the loop's own */
	uint64_t grants_seen_ver;
	uint64_t *applied;		/* store grant ids already put in force once */
	size_t napplied;
	uint64_t *local_revoked;	/* revoked here, maybe not yet in the store */
	size_t nlocal_revoked;
	struct ctl_fleet_revoke *prev;	/* ...and not yet seen back from it (on disk) */
	size_t nprev;
	bool connected;			/* as last reported (events on change) */
	bool cache_expired;
	uint64_t refused_total;
	/* namegate_fleet_apply_seconds: bucket counts, sum, count (under sh.lock) */
	uint64_t apply_bucket[12];
	double apply_sum;
	uint64_t apply_count;
};

/* ctl_fleet_watch.c: the watcher thread's body. */
void *ctl_fleet_watch_main(void *arg);

/* ctl_fleet_write.c: the writer thread's body. */
void *ctl_fleet_write_main(void *arg);

/* ctl_fleet_loop.c */
/* A configuration holding only cfg's fleet keys (the agent's, for its life), or NULL. */
struct pol_config *ctl_fleet_boot_copy(const struct pol_config *cfg);
/* The status before anything came from the store: the file's policy and its digest. */
void ctl_fleet_status_init(struct ctl_fleet *f);
/* The verified cache in force, if there is one (start). */
void ctl_fleet_cache_start(struct ctl_fleet *f);
/* ctl_grants_revoked_fn: a store grant revoked on this box's socket. */
void ctl_fleet_revoked_here(void *arg, const struct ctl_grant *g, const struct ctl_peer *by);
/* ctl_approval_listen_fn: a request of this gateway begins or stops waiting. */
struct ctl_approval_req;
void ctl_fleet_request_here(void *arg, const struct ctl_approval_req *r, bool open);
/* Queue a write for the writer (takes val), under lock. false when the queue is full. */
bool ctl_fleet_op_push(struct ctl_fleet *f, const char *key, char *val, int64_t ttl);

/* Queue revocation r for the store and keep its id among the revoked (loop). */
void ctl_fleet_revoke_queue(struct ctl_fleet *f, const struct ctl_fleet_revoke *r);
/* path written whole (tmp, fsync, rename): 0 or -errno. */
int ctl_fleet_write_file(const char *path, const char *buf, size_t len);

/* ctl_fleet_revokes.c: revocations made here, on disk until the store shows them back. */
void ctl_fleet_revokes_load(struct ctl_fleet *f);
void ctl_fleet_revokes_add(struct ctl_fleet *f, const struct ctl_fleet_revoke *r);
/* The store's revoked ids (n): those of ours among them, or ended, are dropped (loop). */
void ctl_fleet_revokes_seen(struct ctl_fleet *f, const uint64_t *revoked, size_t n);

/* ctl_fleet.c: one namegate_fleet_apply_seconds observation. */
void ctl_fleet_observe_apply(struct ctl_fleet *f, double seconds);

/* ctl_fleet.c: wait up to ms, or less if stop is set (lock held on entry and exit). */
void ctl_fleet_nap(struct ctl_fleet *f, unsigned int ms);

void ctl_fleet_verdict_free(struct ctl_fleet_verdict *v);

#endif /* CTL_FLEET_INT_H */
