/*
 * The windows of every (VM slot, budget index) in use, owned by the main lcore; a scrape
 * reads them under dp_budgets.lock. Each second: the workers' byte counts since the last
 * second go into the windows, then each worker's allowance is republished, shared out by
 * where the VM's bytes went in the last second (plus an even floor), so that one upload
 * on one worker can spend nearly all of what is left, not 1/workers of it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_events.h"
#include "dp_budget.h"
#include "dp_budget_win.h"
#include "dp_budgets.h"
#include "dp_control.h"
#include "policy/load.h"

_Static_assert(DP_BUDGETS_MAX == POL_BUDGETS_MAX, "a cell per budget a policy may have");

struct dp_budget_state {
	struct dp_budget_win win;
	char *rule;			/* the host pattern as written: the metrics' label */
	uint64_t seen[DP_WORKERS_MAX];	/* each worker's cell bytes at the last step */
	uint64_t recent[DP_WORKERS_MAX];	/* and what each added in that step */
	uint32_t epoch;
};

static struct {
	pthread_mutex_t lock;		/* the tick's writes against a scrape's reads */
	bool built;
	uint32_t gen;			/* the generation the table is for */
	uint64_t second;		/* of the last step */
	struct dp_budget_state *s[DP_VM_SLOTS][DP_BUDGETS_MAX];
} dp_budgets = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Worker k's share of what st's window has left: by its part of the last second's bytes. */
static uint64_t
dp_budget_share(const struct dp_budget_state *st, unsigned int k, unsigned int nworkers)
{
	unsigned __int128 left = dp_budget_win_left(&st->win), sum = nworkers;
	uint64_t share;

	for (unsigned int i = 0; i < nworkers; i++)
		sum += st->recent[i];
	share = (uint64_t)(left * (st->recent[k] + 1) / sum);
	return share > DP_BUDGET_ALLOW_MASK ? DP_BUDGET_ALLOW_MASK : share;
}

static void
dp_budget_publish(const struct dp_ctx *ctx, uint16_t slot, unsigned int b,
    struct dp_budget_state *st)
{
	st->epoch = (st->epoch + 1) & DP_BUDGET_EPOCH_MASK;
	for (unsigned int k = 0; k < ctx->nworkers; k++)
		atomic_store_explicit(&dp_budget_cells[k][slot][b].allow, DP_BUDGET_PUBLISHED |
		    (uint64_t)st->epoch << DP_BUDGET_EPOCH_SHIFT |
		    dp_budget_share(st, k, ctx->nworkers), memory_order_relaxed);
}

static void
dp_budget_event(struct dp_control *c, const char *vm, const struct dp_budget_state *st,
    const char *state)
{
	struct ctl_ev_budget e = { .vm = vm, .rule = st->rule, .state = state,
		.used = st->win.used, .limit = st->win.limit, .per = st->win.per };
	struct timespec now;

	if (c->events == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_budget(c->events, &now, &e);
}

/* The workers' bytes since the last step into each window, and new allowances. */
static void
dp_budget_step(struct dp_control *c, const struct dp_gen *g, uint64_t now)
{
	const struct dp_ctx *ctx = c->ctx;

	for (uint16_t slot = 0; slot < g->nvms; slot++) {
		for (unsigned int b = 0; b < DP_BUDGETS_MAX; b++) {
			struct dp_budget_state *st = dp_budgets.s[slot][b];
			uint64_t add = 0;
			unsigned int changed;

			if (st == NULL)
				continue;
			for (unsigned int k = 0; k < ctx->nworkers; k++) {
				uint64_t v = dp_budget_cells[k][slot][b].bytes;

				st->recent[k] = v - st->seen[k];
				st->seen[k] = v;
				add += st->recent[k];
			}
			changed = dp_budget_win_step(&st->win, now, add);
			dp_budget_publish(ctx, slot, b, st);
			if (changed & DP_BUDGET_WARN)
				dp_budget_event(c, g->vms[slot].name, st, "warning");
			if (changed & DP_BUDGET_EXHAUSTED)
				dp_budget_event(c, g->vms[slot].name, st, "exhausted");
			if (changed & DP_BUDGET_FREED)
				dp_budget_event(c, g->vms[slot].name, st, "available");
		}
	}
}

/* slot's window for the host pattern rule in the old table, taken out of it, or NULL. */
static struct dp_budget_state *
dp_budget_take(struct dp_budget_state *old[DP_VM_SLOTS][DP_BUDGETS_MAX], uint16_t slot,
    const char *rule)
{
	for (unsigned int b = 0; b < DP_BUDGETS_MAX; b++) {
		struct dp_budget_state *st = old[slot][b];

		if (st != NULL && strcmp(st->rule, rule) == 0) {
			old[slot][b] = NULL;
			return st;
		}
	}
	return NULL;
}

static void
dp_budget_state_free(struct dp_budget_state *st)
{
	if (st != NULL)
		free(st->rule);
	free(st);
}

/* A new, empty window for pb; NULL when out of memory. */
static struct dp_budget_state *
dp_budget_state_new(const struct pol_budget *pb, uint64_t now)
{
	struct dp_budget_state *st = calloc(1, sizeof(*st));

	if (st == NULL || (st->rule = strdup(pb->host)) == NULL) {
		free(st);
		return NULL;
	}
	dp_budget_win_init(&st->win, pb->upload, pb->per, now);
	return st;
}

/*
 * Slot's budget b (pb) in the new table: the old window of the same host and per, or a
 * new one; counting from the cells' present totals, since the cells are by index.
 */
static void
dp_budget_build_one(const struct dp_ctx *ctx, uint16_t slot, unsigned int b,
    const struct pol_budget *pb, struct dp_budget_state *old[DP_VM_SLOTS][DP_BUDGETS_MAX],
    uint64_t now)
{
	struct dp_budget_state *st = dp_budget_take(old, slot, pb->host);

	if (st != NULL && st->win.per != pb->per) {
		dp_budget_state_free(st);
		st = NULL;
	}
	if (st == NULL && (st = dp_budget_state_new(pb, now)) == NULL) {
		/* no window: nothing would be counted, so nothing passes (fail closed) */
		for (unsigned int k = 0; k < ctx->nworkers; k++)
			atomic_store_explicit(&dp_budget_cells[k][slot][b].allow,
			    DP_BUDGET_PUBLISHED, memory_order_relaxed);
		return;
	}
	dp_budget_win_relimit(&st->win, pb->upload);
	for (unsigned int k = 0; k < ctx->nworkers; k++) {
		st->seen[k] = dp_budget_cells[k][slot][b].bytes;
		st->recent[k] = 0;
	}
	dp_budgets.s[slot][b] = st;
	dp_budget_publish(ctx, slot, b, st);
}

/*
 * The table for generation g (configuration cfg): a VM's budget keeps its window across a
 * reload when its host pattern and window stay, and starts empty otherwise.
 */
static void
dp_budget_build(struct dp_control *c, const struct dp_gen *g, const struct pol_config *cfg,
    uint64_t now)
{
	static struct dp_budget_state *old[DP_VM_SLOTS][DP_BUDGETS_MAX];

	memcpy(old, dp_budgets.s, sizeof(old));
	memset(dp_budgets.s, 0, sizeof(dp_budgets.s));
	for (uint16_t slot = 0; slot < g->nvms; slot++) {
		const struct dp_vm *v = &g->vms[slot];

		for (unsigned int b = 0; v->present && b < v->budgets && b < DP_BUDGETS_MAX; b++) {
			const struct pol_budget *pb = pol_config_budget(cfg, v->conf_policy, b);

			if (pb != NULL)
				dp_budget_build_one(c->ctx, slot, b, pb, old, now);
		}
	}
	for (uint16_t slot = 0; slot < DP_VM_SLOTS; slot++)
		for (unsigned int b = 0; b < DP_BUDGETS_MAX; b++)
			dp_budget_state_free(old[slot][b]);
	dp_budgets.gen = g->id;
	dp_budgets.built = true;
}

void
dp_budget_tick(struct dp_control *c)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	uint64_t now = dp_now(c->ctx);

	if (dp_budgets.built && g->id == dp_budgets.gen && now == dp_budgets.second)
		return;
	pthread_mutex_lock(&dp_budgets.lock);
	if (now != dp_budgets.second || !dp_budgets.built) {
		/* under the generation the counts were made in, before any new one maps them */
		dp_budget_step(c, g, now);
		dp_budgets.second = now;
	}
	if (!dp_budgets.built || g->id != dp_budgets.gen)
		dp_budget_build(c, g, *c->cfgp, now);
	pthread_mutex_unlock(&dp_budgets.lock);
}

void
dp_budget_render(struct dp_control *c, FILE *out)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	static const char *const what[2][3] = {
		{ "namegate_vm_budget_used_bytes", "IP bytes the VM sent through the egress "
		    "budget in its sliding window", "gauge" },
		{ "namegate_vm_budget_limit_bytes", "The egress budget: bytes per window",
		    "gauge" },
	};

	pthread_mutex_lock(&dp_budgets.lock);
	for (unsigned int m = 0; m < 2; m++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", what[m][0], what[m][1], what[m][0],
		    what[m][2]);
		for (uint16_t slot = 0; dp_budgets.gen == g->id && slot < g->nvms; slot++)
			for (unsigned int b = 0; b < DP_BUDGETS_MAX; b++) {
				const struct dp_budget_state *st = dp_budgets.s[slot][b];

				if (st == NULL || !g->vms[slot].present)
					continue;
				/* patterns hold no '"' or '\\': canonical names, addresses, '*' */
				fprintf(out, "%s{vm=\"%s\",rule=\"%s\"} %llu\n", what[m][0],
				    g->vms[slot].name, st->rule, (unsigned long long)(m == 0 ?
				    st->win.used : st->win.limit));
			}
	}
	pthread_mutex_unlock(&dp_budgets.lock);
}

void
dp_budget_free(void)
{
	pthread_mutex_lock(&dp_budgets.lock);
	for (uint16_t slot = 0; slot < DP_VM_SLOTS; slot++)
		for (unsigned int b = 0; b < DP_BUDGETS_MAX; b++) {
			dp_budget_state_free(dp_budgets.s[slot][b]);
			dp_budgets.s[slot][b] = NULL;
		}
	dp_budgets.built = false;
	pthread_mutex_unlock(&dp_budgets.lock);
}
