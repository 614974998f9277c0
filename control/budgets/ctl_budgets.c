/*
 * The windows of every (VM slot, budget index) in use, owned by the control loop; a scrape
 * reads them under the table's lock. Each second: the workers' byte counts since the last
 * second go into the windows, then each worker's allowance is republished, shared out by
 * where the VM's bytes went in the last second (plus an even floor), so that one upload
 * on one worker can spend nearly all of what is left, not 1/workers of it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/dp_plane.h"
#include "ctl_budget_win.h"
#include "ctl_budgets.h"
#include "ctl_events.h"
#include "policy/load.h"

#define CTL_BUDGET_WORKERS	64	/* workers a window keeps counts of */
/*
 * What the windows' clock reads at the workers' second 0 (their seconds since start): a
 * window reaches back a whole longest window (7 days) before the start, so a box just
 * started can place the bytes its HA peer counted before then at their age.
 */
#define CTL_BUDGET_BASE		(8u * 86400)

struct ctl_budget_state {
	struct ctl_budget_win win;
	char *rule;			/* the host pattern as written: the metrics' label */
	char vm[POL_VM_NAME_MAX + 1];	/* the VM's name: the metrics' label */
	uint64_t seen[CTL_BUDGET_WORKERS];	/* each worker's bytes at the last step */
	uint64_t recent[CTL_BUDGET_WORKERS];	/* and what each added in that step */
	uint32_t epoch;
};

/* A generation's windows: [slot][budget], NULL where none. */
struct ctl_budget_table {
	uint16_t nslots;
	struct ctl_budget_state *(*s)[POL_BUDGETS_MAX];
};

struct ctl_budgets {
	struct pol_config *const *cfgp;	/* the configuration in force */
	struct ctl_events *events;	/* NULL: no event log */
	const struct dp_plane *plane;
	unsigned int nworkers;
	pthread_mutex_t lock;		/* the tick's writes against a scrape's reads */
	bool built;
	uint32_t gen;			/* the generation the table is for */
	uint64_t second;		/* of the last step */
	struct ctl_budget_table t;
	ctl_budget_sync_fn *sync;	/* the HA peer's, or NULL */
	void *sync_arg;
};

struct ctl_budgets *
ctl_budgets_new(struct pol_config *const *cfgp, struct ctl_events *events,
    const struct dp_plane *plane)
{
	struct ctl_budgets *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->cfgp = cfgp;
	b->events = events;
	b->plane = plane;
	b->nworkers = plane->nworkers < CTL_BUDGET_WORKERS ? plane->nworkers :
	    CTL_BUDGET_WORKERS;
	pthread_mutex_init(&b->lock, NULL);
	return b;
}

static void
ctl_budget_state_free(struct ctl_budget_state *st)
{
	if (st != NULL)
		free(st->rule);
	free(st);
}

static void
ctl_budget_table_free(struct ctl_budget_table *t)
{
	for (uint16_t slot = 0; slot < t->nslots; slot++)
		for (unsigned int i = 0; i < POL_BUDGETS_MAX; i++)
			ctl_budget_state_free(t->s[slot][i]);
	free(t->s);
	*t = (struct ctl_budget_table){ 0 };
}

void
ctl_budgets_free(struct ctl_budgets *b)
{
	if (b == NULL)
		return;
	ctl_budget_table_free(&b->t);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* Worker k's share of what st's window has left: by its part of the last second's bytes. */
static uint64_t
ctl_budget_share(const struct ctl_budget_state *st, unsigned int k, unsigned int nworkers)
{
	unsigned __int128 left = ctl_budget_win_left(&st->win), sum = nworkers;

	for (unsigned int i = 0; i < nworkers; i++)
		sum += st->recent[i];
	return (uint64_t)(left * (st->recent[k] + 1) / sum);
}

static void
ctl_budget_publish(const struct ctl_budgets *b, uint16_t slot, unsigned int i,
    struct ctl_budget_state *st)
{
	st->epoch++;
	for (unsigned int k = 0; k < b->nworkers; k++)
		b->plane->budget_allow(b->plane->dp, k, slot, i, st->epoch,
		    ctl_budget_share(st, k, b->nworkers));
}

static void
ctl_budget_event(const struct ctl_budgets *b, const struct ctl_budget_state *st,
    const char *state)
{
	struct ctl_ev_budget e = { .vm = st->vm, .rule = st->rule, .state = state,
		.used = st->win.used, .limit = st->win.limit, .per = st->win.per };
	struct timespec now;

	if (b->events == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_budget(b->events, &now, &e);
}

static void
ctl_budget_events(const struct ctl_budgets *b, const struct ctl_budget_state *st,
    unsigned int changed)
{
	if (changed & CTL_BUDGET_WARN)
		ctl_budget_event(b, st, "warning");
	if (changed & CTL_BUDGET_EXHAUSTED)
		ctl_budget_event(b, st, "exhausted");
	if (changed & CTL_BUDGET_FREED)
		ctl_budget_event(b, st, "available");
}

/* The workers' bytes since the last step into each window, and new allowances. */
static void
ctl_budget_step(struct ctl_budgets *b, uint64_t now)
{
	for (uint16_t slot = 0; slot < b->t.nslots; slot++) {
		for (unsigned int i = 0; i < POL_BUDGETS_MAX; i++) {
			struct ctl_budget_state *st = b->t.s[slot][i];
			uint64_t add = 0;
			unsigned int changed;

			if (st == NULL)
				continue;
			for (unsigned int k = 0; k < b->nworkers; k++) {
				uint64_t v = b->plane->budget_used(b->plane->dp, k, slot, i);

				st->recent[k] = v - st->seen[k];
				st->seen[k] = v;
				add += st->recent[k];
			}
			changed = ctl_budget_win_step(&st->win, now, add);
			ctl_budget_publish(b, slot, i, st);
			if (add > 0 && b->sync != NULL)
				b->sync(b->sync_arg, st->vm, st->rule, st->win.per, 0, add, true);
			ctl_budget_events(b, st, changed);
		}
	}
}

/*
 * VM vm's window at slot for the host pattern rule in the old table, taken out of it, or
 * NULL. Of vm only: a slot a removed VM left is given to another VM later (dp_vmslot.h),
 * which must start with windows of its own.
 */
static struct ctl_budget_state *
ctl_budget_take(struct ctl_budget_table *old, uint16_t slot, const char *vm, const char *rule)
{
	for (unsigned int i = 0; slot < old->nslots && i < POL_BUDGETS_MAX; i++) {
		struct ctl_budget_state *st = old->s[slot][i];

		if (st != NULL && strcmp(st->vm, vm) == 0 && strcmp(st->rule, rule) == 0) {
			old->s[slot][i] = NULL;
			return st;
		}
	}
	return NULL;
}

/* A new, empty window for pb of vm; NULL when out of memory. */
static struct ctl_budget_state *
ctl_budget_state_new(const struct pol_budget *pb, const char *vm, uint64_t now)
{
	struct ctl_budget_state *st = calloc(1, sizeof(*st));

	if (st == NULL || (st->rule = strdup(pb->host)) == NULL) {
		free(st);
		return NULL;
	}
	snprintf(st->vm, sizeof(st->vm), "%s", vm);
	ctl_budget_win_init(&st->win, pb->upload, pb->per, now);
	return st;
}

/*
 * Slot's budget i (pb) in the new table t: the old window of the same host and per, or a
 * new one; counting from the workers' present totals, since their counts are by index.
 */
static void
ctl_budget_build_one(struct ctl_budgets *b, struct ctl_budget_table *t, uint16_t slot,
    unsigned int i, const struct pol_budget *pb, const char *vm, struct ctl_budget_table *old,
    uint64_t now)
{
	struct ctl_budget_state *st = ctl_budget_take(old, slot, vm, pb->host);

	if (st != NULL && st->win.per != pb->per) {
		ctl_budget_state_free(st);
		st = NULL;
	}
	if (st == NULL && (st = ctl_budget_state_new(pb, vm, now)) == NULL) {
		/* no window: nothing would be counted, so nothing passes (fail closed) */
		for (unsigned int k = 0; k < b->nworkers; k++)
			b->plane->budget_allow(b->plane->dp, k, slot, i, 0, 0);
		return;
	}
	snprintf(st->vm, sizeof(st->vm), "%s", vm);
	ctl_budget_win_relimit(&st->win, pb->upload);
	for (unsigned int k = 0; k < b->nworkers; k++) {
		st->seen[k] = b->plane->budget_used(b->plane->dp, k, slot, i);
		st->recent[k] = 0;
	}
	t->s[slot][i] = st;
	ctl_budget_publish(b, slot, i, st);
}

/*
 * The table for the running generation (configuration cfg): a VM's budget keeps its
 * window across a reload when its host pattern and window stay, and starts empty
 * otherwise. Out of memory: the table before stays.
 */
static void
ctl_budget_build(struct ctl_budgets *b, const struct pol_config *cfg, uint64_t now)
{
	struct ctl_budget_table t = { .nslots = b->plane->nslots(b->plane->dp) }, old = b->t;

	if ((t.s = calloc(t.nslots + 1u, sizeof(t.s[0]))) == NULL)
		return;
	for (uint16_t slot = 0; slot < t.nslots; slot++) {
		struct dp_plane_vm v;

		if (!b->plane->vm(b->plane->dp, slot, &v))
			continue;
		for (unsigned int i = 0; i < v.budgets && i < POL_BUDGETS_MAX; i++) {
			const struct pol_budget *pb = pol_config_budget(cfg, v.conf_policy, i);

			if (pb != NULL)
				ctl_budget_build_one(b, &t, slot, i, pb, v.name, &old, now);
		}
	}
	b->t = t;
	ctl_budget_table_free(&old);
	b->gen = b->plane->generation_id(b->plane->dp);
	b->built = true;
}

void
ctl_budgets_tick(struct ctl_budgets *b, uint64_t now)
{
	uint32_t gen = b->plane->generation_id(b->plane->dp);

	now += CTL_BUDGET_BASE;
	if (b->built && gen == b->gen && now == b->second)
		return;
	pthread_mutex_lock(&b->lock);
	if (now != b->second || !b->built) {
		/* under the generation the counts were made in, before any new one maps them */
		ctl_budget_step(b, now);
		b->second = now;
	}
	if (!b->built || gen != b->gen)
		ctl_budget_build(b, *b->cfgp, now);
	pthread_mutex_unlock(&b->lock);
}

void
ctl_budgets_set_sync(struct ctl_budgets *b, ctl_budget_sync_fn *fn, void *arg)
{
	b->sync = fn;
	b->sync_arg = arg;
}

struct ctl_budget_resync {
	const struct ctl_budget_state *st;
	ctl_budget_sync_fn *fn;
	void *arg;
	size_t sent;
};

static void
ctl_budget_resync_bucket(uint32_t age, uint64_t bytes, void *arg)
{
	struct ctl_budget_resync *r = arg;

	r->fn(r->arg, r->st->vm, r->st->rule, r->st->win.per, age, bytes, false);
	r->sent++;
}

uint32_t
ctl_budgets_resync(struct ctl_budgets *b, uint64_t now, uint32_t at, size_t max,
    ctl_budget_sync_fn *fn, void *arg)
{
	struct ctl_budget_resync r = { .fn = fn, .arg = arg };
	uint32_t n;

	now += CTL_BUDGET_BASE;
	pthread_mutex_lock(&b->lock);
	n = (uint32_t)b->t.nslots * POL_BUDGETS_MAX;
	for (; at < n && r.sent + CTL_BUDGET_BUCKETS <= max; at++) {
		if ((r.st = b->t.s[at / POL_BUDGETS_MAX][at % POL_BUDGETS_MAX]) != NULL)
			ctl_budget_win_each(&r.st->win, now, ctl_budget_resync_bucket, &r);
	}
	pthread_mutex_unlock(&b->lock);
	return at < n ? at : 0;
}

int
ctl_budgets_peer(struct ctl_budgets *b, uint64_t now, const char *vm, size_t vm_len,
    const char *rule, size_t rule_len, uint32_t per, uint32_t age, uint64_t bytes, bool add)
{
	int rc = -ENOENT;

	now += CTL_BUDGET_BASE;
	pthread_mutex_lock(&b->lock);
	for (uint16_t slot = 0; rc == -ENOENT && slot < b->t.nslots; slot++) {
		for (unsigned int i = 0; i < POL_BUDGETS_MAX; i++) {
			struct ctl_budget_state *st = b->t.s[slot][i];

			if (st == NULL || strlen(st->vm) != vm_len ||
			    memcmp(st->vm, vm, vm_len) != 0 || strlen(st->rule) != rule_len ||
			    memcmp(st->rule, rule, rule_len) != 0)
				continue;
			rc = -ESRCH;
			if (st->win.per == per) {
				ctl_budget_events(b, st, ctl_budget_win_merge(&st->win, now, age,
				    bytes, add));
				rc = 0;
			}
			break;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return rc;
}

void
ctl_budgets_render(struct ctl_budgets *b, FILE *out)
{
	static const char *const what[2][3] = {
		{ "namegate_vm_budget_used_bytes", "IP bytes the VM sent through the egress "
		    "budget in its sliding window", "gauge" },
		{ "namegate_vm_budget_limit_bytes", "The egress budget: bytes per window",
		    "gauge" },
	};

	pthread_mutex_lock(&b->lock);
	for (unsigned int m = 0; m < 2; m++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", what[m][0], what[m][1], what[m][0],
		    what[m][2]);
		for (uint16_t slot = 0; slot < b->t.nslots; slot++)
			for (unsigned int i = 0; i < POL_BUDGETS_MAX; i++) {
				const struct ctl_budget_state *st = b->t.s[slot][i];

				if (st == NULL)
					continue;
				/* patterns hold no '"' or '\\': canonical names, addresses, '*' */
				fprintf(out, "%s{vm=\"%s\",rule=\"%s\"} %llu\n", what[m][0],
				    st->vm, st->rule, (unsigned long long)(m == 0 ?
				    st->win.used : st->win.limit));
			}
	}
	pthread_mutex_unlock(&b->lock);
}
