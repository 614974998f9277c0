/*
 * Where the workers' records meet control/: each record handed to the concern of its kind
 * (a binding to the names, the mirror and the nft feeder; a block to the event log; an ask
 * to approval), the plane the concerns reach the workers by, the slow path's table opened
 * for the running generation's VMs, and the metrics scrape.
 */
#include <sys/socket.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_version.h>

#include "ctl_approval.h"
#include "ctl_budgets.h"
#include "ctl_events.h"
#include "ctl_fleet.h"
#include "ctl_grants_live.h"
#include "ctl_ha.h"
#include "ctl_mirror.h"
#include "ctl_names.h"
#include "ctl_nft_feed.h"
#include "ctl_reload.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_control.h"
#include "dp_evt.h"
#include "dp_flowlog_out.h"
#include "dp_gen.h"
#include "dp_hasync.h"
#include "dp_publish.h"
#include "dp_stats.h"
#include "dp_worker.h"
#include "policy/load.h"

/* What runs and since when: which build, the last load of the file, the process's start. */
static void
dp_control_render_process(const struct dp_control *c, FILE *out)
{
	fprintf(out, "# HELP namegate_build_info The running namegate's version and the DPDK it "
	    "was built with\n"
	    "# TYPE namegate_build_info gauge\n"
	    "namegate_build_info{version=\"%s\",dpdk=\"%s\"} 1\n", NAMEGATE_VERSION,
	    rte_version());
	if (c->reload != NULL)
		ctl_reload_render(c->reload, out);
	fprintf(out, "# HELP process_start_time_seconds Start time of the process since the Unix "
	    "epoch in seconds\n"
	    "# TYPE process_start_time_seconds gauge\n"
	    "process_start_time_seconds %.3f\n", c->started_at);
}

int
dp_control_render(FILE *out, void *arg)
{
	struct dp_control *c = arg;

	pthread_mutex_lock(&c->gen_lock);
	dp_stats_print(c->ctx, out);
	if (c->grants != NULL)
		ctl_grants_live_render(c->grants, out);
	if (c->budgets != NULL)
		ctl_budgets_render(c->budgets, out);
	if (c->approvals != NULL)
		ctl_approval_render(c->approvals, out);
	if (c->flowlog != NULL)
		dp_flowlog_out_render(c->flowlog, c->ctx, out);
	if (c->fleet != NULL)
		ctl_fleet_render(c->fleet, out);
	if (c->ha != NULL)
		ctl_ha_render(c->ha, out);
	if (c->hasync != NULL)
		dp_hasync_render(c->hasync, out);
	/* the feeder's table is replaced under the lock */
	if (c->feed != NULL)
		ctl_nft_feed_render(c->feed, out);
	dp_control_render_process(c, out);	/* the reload state changes under the lock */
	pthread_mutex_unlock(&c->gen_lock);
	return ferror(out) ? -1 : 0;
}

void
dp_control_bind(struct dp_control *c, const struct dp_evt *e)
{
	const char *name;

	/* keyed by the hash a flow keeps, so that the flow log finds the name again */
	if (ctl_names_add_keyed(c->names, e->vm, e->name, e->name_len,
	    dp_name_hash(e->name, e->name_len), &name) != 0)
		return;
	ctl_mirror_bind(c->mirror, e->vm, e->family, e->addr, name, e->expires, e->gen,
	    &e->ports);
	if (c->feed != NULL)
		ctl_nft_feed_bind(c->feed, e, name, dp_now(c->ctx));
}

/* The running generation's name for VM slot, NULL for none. */
static const char *
dp_control_vm_name(const struct dp_control *c, uint16_t slot)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);

	return slot < g->nvms && g->vms[slot].present ? g->vms[slot].name : NULL;
}

static void
dp_control_block(struct dp_control *c, const struct dp_evt *e, const struct timespec *now)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	char name[DP_EVT_NAME_MAX + 1];
	struct ctl_ev_block b = {
		.vm = e->vm <= DP_VM_UNKNOWN(g) && g->vms[e->vm].present ? g->vms[e->vm].name :
		    "?",
		.reason = e->reason < DP_REASON_MAX ? dp_reason_labels[e->reason] : "?",
		.proto = e->proto, .port = e->port,
		.family = e->family == 4 ? AF_INET : e->family == 6 ? AF_INET6 : AF_UNSPEC,
	};

	if (e->name_len > 0 && e->vm < DP_VM_UNKNOWN(g))
		ctl_names_add(c->tried, e->vm, e->name, e->name_len, NULL);
	if (c->events == NULL)
		return;
	memcpy(b.addr, e->addr, sizeof(b.addr));
	if (e->name_len > 0) {
		memcpy(name, e->name, e->name_len);
		name[e->name_len] = '\0';
		b.name = name;
	}
	ctl_events_log_block(c->events, now, &b);
}

void
dp_control_drain(struct dp_control *c)
{
	static struct dp_evt evts[256];
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	for (unsigned int i = 0; i < c->ctx->nworkers; i++) {
		unsigned int n;

		while ((n = dp_evt_drain(c->ctx->workers[i], evts, RTE_DIM(evts))) > 0) {
			for (unsigned int k = 0; k < n; k++) {
				const struct dp_evt *e = &evts[k];

				if (e->version != DP_API_VERSION)
					continue;
				if (e->type == DP_EVT_BIND) {
					dp_control_bind(c, e);
					if (c->hasync != NULL)	/* to the peer */
						dp_hasync_learned(c->hasync, e);
				}
				else if (e->type == DP_EVT_BLOCK)
					dp_control_block(c, e, &now);
				else if ((e->type == DP_EVT_FLOW || e->type == DP_EVT_FLOW_END) &&
				    c->hasync != NULL)
					dp_hasync_flow_event(c->hasync, e);
				else if (e->type == DP_EVT_NAME && c->hasync != NULL)
					dp_hasync_name_new(c->hasync, e);
				else if (e->type == DP_EVT_ASK || e->type == DP_EVT_ASK_END)
					ctl_approval_record(c->approvals, i,
					    dp_control_vm_name(c, e->vm), e, &now);
			}
			c->evt_seen += n;
		}
	}
	if (c->feed != NULL)
		ctl_nft_feed_flush(c->feed);
	if (c->flowlog != NULL)		/* after the bindings: their names are known */
		dp_flowlog_out_drain(c->flowlog, c->ctx, c->names, *c->cfgp);
	if ((uint64_t)now.tv_sec != c->last_flush) {
		if (c->flowlog != NULL)
			dp_flowlog_out_tick(c->flowlog);
		c->last_flush = (uint64_t)now.tv_sec;
		ctl_mirror_expire(c->mirror, dp_now(c->ctx), 4096);
		if (c->feed != NULL)
			ctl_nft_feed_check(c->feed, dp_now(c->ctx));
		if (c->events != NULL)
			ctl_events_flush(c->events, &now);	/* suppressed counts, rotation */
	}
}

static uint64_t
dp_control_tsc(void)
{
	return rte_get_tsc_cycles();
}

/* The table for the running generation's VMs: built whole, or (follow) as it changed. */
static int
dp_control_nft_put(struct dp_control *c, bool follow, FILE *err)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	struct ctl_nft_vm *vms = calloc((size_t)g->nvms + 1, sizeof(vms[0]));
	uint16_t n = 0;
	int rc = -1;

	if (vms == NULL)
		errno = ENOMEM;
	for (uint16_t s = 0; vms != NULL && s < g->nvms; s++)
		if (g->vms[s].present)
			vms[n++] = (struct ctl_nft_vm){ .slot = s, .name = g->vms[s].name,
				.id = g->vms[s].id };
	if (vms != NULL)
		rc = (follow ? ctl_nft_feed_follow : ctl_nft_feed_open)(c->feed,
		    (*c->cfgp)->nft_table, vms, n, c->ctx->slow_ports[0], c->ctx->slow_ports[1],
		    dp_now(c->ctx));
	free(vms);
	if (rc != 0) {
		fprintf(err, "namegate: nftables table bridge %s: %s\n", (*c->cfgp)->nft_table,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
dp_control_nft_open(struct dp_control *c, FILE *err)
{
	if (c->feed == NULL && (c->feed = ctl_nft_feed_new(&c->plane, c->mirror, dp_control_tsc,
	    c->ctx->tsc_hz)) == NULL)
		return -1;
	return dp_control_nft_put(c, false, err);
}

void
dp_control_nft_close(struct dp_control *c)
{
	ctl_nft_feed_free(c->feed);
	c->feed = NULL;
}

/* Under gen_lock: a scrape reads the generation, and the table's counters. */
static int
dp_plane_generation(void *dp, const struct pol_config *cfg, bool closing, FILE *err)
{
	struct dp_control *c = dp;
	int rc;

	dp_control_drain(c);	/* every name learned so far is judged under it */
	if (c->feed != NULL)
		ctl_nft_feed_mark(c->feed, dp_now(c->ctx));
	pthread_mutex_lock(&c->gen_lock);
	rc = dp_publish(c->ctx, cfg, c->names, closing, err);
	/* the slow path follows: the sets of the VMs the change touched, or the whole table */
	if (rc == 0 && c->feed != NULL && dp_control_nft_put(c, true, err) != 0)
		fputs("namegate: the slow path's table could not follow the new generation\n", err);
	pthread_mutex_unlock(&c->gen_lock);
	return rc;
}

static void
dp_plane_deny_ask(void *dp, unsigned int worker, uint32_t slot, uint64_t seq)
{
	struct dp_control *c = dp;

	if (worker < c->ctx->nworkers)
		dp_worker_ask_deny(c->ctx->workers[worker], slot, seq);
}

static uint32_t
dp_plane_generation_id(void *dp)
{
	const struct dp_control *c = dp;

	return atomic_load_explicit(&c->ctx->gen, memory_order_acquire)->id;
}

static void
dp_plane_name_ports(void *dp, uint16_t slot, const char *name, struct dp_evt_ports *out)
{
	const struct dp_control *c = dp;
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	const struct pol_ports *p = dp_gen_name_ports(g, slot, dp_name_hash(name, strlen(name)));

	*out = (struct dp_evt_ports){ 0 };
	if (p != NULL)
		dp_evt_ports_of(p, out);
}

static uint16_t
dp_plane_nslots(void *dp)
{
	const struct dp_control *c = dp;

	return atomic_load_explicit(&c->ctx->gen, memory_order_acquire)->nvms;
}

static bool
dp_plane_vm(void *dp, uint16_t slot, struct dp_plane_vm *out)
{
	const struct dp_control *c = dp;
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);

	if (slot >= g->nvms || !g->vms[slot].present)
		return false;
	*out = (struct dp_plane_vm){ .name = g->vms[slot].name,
		.conf_policy = g->vms[slot].conf_policy, .budgets = g->vms[slot].budgets };
	return true;
}

_Static_assert(DP_BUDGETS_MAX == POL_BUDGETS_MAX, "a cell per budget a policy may have");

static uint64_t
dp_plane_budget_used(void *dp, unsigned int w, uint16_t slot, unsigned int b)
{
	const struct dp_control *c = dp;

	return dp_budget_cell_of(c->ctx->workers[w], slot, b)->bytes;
}

/* The cell's allow word (dp_budget.h): published, its epoch, what the worker may spend. */
static void
dp_plane_budget_allow(void *dp, unsigned int w, uint16_t slot, unsigned int b, uint32_t epoch,
    uint64_t bytes)
{
	const struct dp_control *c = dp;

	atomic_store_explicit(&dp_budget_cell_of(c->ctx->workers[w], slot, b)->allow,
	    DP_BUDGET_PUBLISHED |
	    (uint64_t)(epoch & DP_BUDGET_EPOCH_MASK) << DP_BUDGET_EPOCH_SHIFT |
	    (bytes > DP_BUDGET_ALLOW_MASK ? DP_BUDGET_ALLOW_MASK : bytes), memory_order_relaxed);
}

void
dp_control_plane_init(struct dp_control *c)
{
	c->plane = (struct dp_plane){ .dp = c, .nworkers = c->ctx->nworkers,
		.generation = dp_plane_generation,
		.generation_id = dp_plane_generation_id, .name_ports = dp_plane_name_ports,
		.nslots = dp_plane_nslots, .vm = dp_plane_vm,
		.budget_used = dp_plane_budget_used, .budget_allow = dp_plane_budget_allow,
		.deny_ask = dp_plane_deny_ask };
}
