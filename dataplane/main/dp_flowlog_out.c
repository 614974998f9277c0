/*
 * The flow log's writer (dp_flowlog_out.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "ctl_base.h"
#include "ctl_flowlog.h"
#include "ctl_logfile.h"
#include "ctl_names.h"
#include "dp.h"
#include "dp_budget.h"
#include "dp_flowlog.h"
#include "dp_flowlog_out.h"
#include "dp_stats.h"
#include "policy/load.h"

struct dp_flowlog_out {
	struct ctl_logfile *file;
	struct ctl_jsonl line;
	uint16_t max_vms;
	uint64_t *lost;			/* by slot: lines the writer could not write */
	/*
	 * by slot: the VM's name as its last record found it, for the records that come after
	 * the VM left the policy (its flows end "gone"), until its slot goes to another VM
	 */
	char **names;
	uint32_t names_gen;		/* the generation names were last taken from; 0: none */
	uint64_t written;
	/*
	 * The TSC's rate, measured against CLOCK_MONOTONIC since open: EAL's estimate can be
	 * a few parts in a thousand off, which puts an hour-old flow's start seconds wrong.
	 */
	uint64_t tsc0;
	int64_t mono0_ns;
	double ns_per_cycle;
};

static const char *const dp_flowlog_ends[DP_FLOW_END_MAX] = {
	[DP_FLOW_END_OPEN] = "open", [DP_FLOW_END_FIN] = "fin", [DP_FLOW_END_RST] = "rst",
	[DP_FLOW_END_IDLE] = "idle", [DP_FLOW_END_CUT] = "cut",
	[DP_FLOW_END_BLOCKED] = "blocked", [DP_FLOW_END_GONE] = "gone",
	[DP_FLOW_END_REPLACED] = "replaced", [DP_FLOW_END_STOP] = "stop",
};

static int64_t
dp_flowlog_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The TSC's rate again, once a second has passed to measure it over. */
static void
dp_flowlog_calibrate(struct dp_flowlog_out *o, uint64_t now_tsc)
{
	int64_t ns = dp_flowlog_mono_ns() - o->mono0_ns;

	if (ns >= 1000000000LL && now_tsc > o->tsc0)
		o->ns_per_cycle = (double)ns / (double)(now_tsc - o->tsc0);
}

struct dp_flowlog_out *
dp_flowlog_out_open(const char *path, uint16_t max_vms, char *err, size_t errlen)
{
	struct dp_flowlog_out *o = calloc(1, sizeof(*o));

	if (o == NULL || (o->lost = calloc((size_t)max_vms + 1, sizeof(o->lost[0]))) == NULL ||
	    (o->names = calloc((size_t)max_vms + 1, sizeof(o->names[0]))) == NULL) {
		ctl_err(err, errlen, "%s", strerror(ENOMEM));
		if (o != NULL)
			free(o->lost);
		free(o);
		return NULL;
	}
	o->max_vms = max_vms;
	o->tsc0 = rte_get_tsc_cycles();
	o->mono0_ns = dp_flowlog_mono_ns();
	o->ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	if ((o->file = ctl_logfile_open(path, err, errlen)) == NULL) {
		free(o->names);
		free(o->lost);
		free(o);
		return NULL;
	}
	return o;
}

void
dp_flowlog_out_close(struct dp_flowlog_out *o)
{
	if (o == NULL)
		return;
	ctl_logfile_close(o->file);
	ctl_jsonl_free(&o->line);
	for (uint32_t s = 0; s <= o->max_vms; s++)
		free(o->names[s]);
	free(o->names);
	free(o->lost);
	free(o);
}

/* When a TSC reading was, by the wall clock: now_wall was taken at now_tsc. */
static struct timespec
dp_flowlog_when(const struct dp_flowlog_out *o, uint64_t tsc, uint64_t now_tsc,
    const struct timespec *now_wall)
{
	int64_t ago = tsc < now_tsc ? (int64_t)((double)(now_tsc - tsc) * o->ns_per_cycle) : 0;
	int64_t ns = (int64_t)now_wall->tv_sec * 1000000000LL + now_wall->tv_nsec - ago;

	return (struct timespec){ .tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL };
}

static const char *
dp_flowlog_verdict(const struct dp_flow_rec *r)
{
	if (r->end == DP_FLOW_END_BLOCKED || r->end == DP_FLOW_END_CUT)
		return r->would_block ? "would_block" : "blocked";
	return r->would_block ? "would_block" : "allowed";
}

/* The budgets r counted in, by their host patterns, as g's VM and cfg's policy list them. */
static size_t
dp_flowlog_budgets(const struct dp_flow_rec *r, const struct dp_gen *g,
    const struct pol_config *cfg, const char **out)
{
	size_t n = 0;

	if (r->vm >= g->nvms || !g->vms[r->vm].present)
		return 0;
	for (unsigned int i = 0; i < DP_BUDGETS_MAX; i++) {
		const struct pol_budget *pb;

		if (!(r->budgets & (1u << i)))
			continue;
		if ((pb = pol_config_budget(cfg, g->vms[r->vm].conf_policy, i)) != NULL)
			out[n++] = pb->host;
	}
	return n;
}

/*
 * Each generation's VM names, remembered by slot (once a generation, not per record): a VM
 * that left keeps its last name until its slot is purged.
 */
static void
dp_flowlog_remember(struct dp_flowlog_out *o, const struct dp_gen *g)
{
	if (g->id == o->names_gen)
		return;
	o->names_gen = g->id;
	for (uint16_t s = 0; s < g->nvms && s <= o->max_vms; s++) {
		if (!g->vms[s].present ||
		    (o->names[s] != NULL && strcmp(o->names[s], g->vms[s].name) == 0))
			continue;
		free(o->names[s]);
		o->names[s] = strdup(g->vms[s].name);	/* NULL: "?" once it left */
	}
}

/* Slot's VM's name: the generation's; once it left, the one remembered. */
static const char *
dp_flowlog_vm_name(const struct dp_flowlog_out *o, const struct dp_gen *g, uint16_t slot)
{
	if (slot < g->nvms && g->vms[slot].present)
		return g->vms[slot].name;
	return slot <= o->max_vms && o->names[slot] != NULL ? o->names[slot] : "?";
}

static void
dp_flowlog_out_one(struct dp_flowlog_out *o, const struct dp_gen *g, const struct ctl_names *names, const struct pol_config *cfg, const struct dp_flow_rec *r,
    uint64_t now_tsc, const struct timespec *now)
{
	static const char *const keys[] = { [DP_FLOW_NAME_SNI] = "sni",
		[DP_FLOW_NAME_HOST] = "host" };
	const char *budgets[DP_BUDGETS_MAX];
	struct ctl_flow_line l = {
		.vm = dp_flowlog_vm_name(o, g, r->vm),
		.proto = r->proto,
		.family = r->family == 6 ? AF_INET6 : AF_INET,
		.src = r->vm_addr, .sport = r->vm_port,
		.dst = r->peer_addr, .dport = r->peer_port,
		.verdict = dp_flowlog_verdict(r),
		.reason = r->reason != DP_REASON_ALLOWED && r->reason < DP_REASON_MAX ?
		    dp_reason_labels[r->reason] : NULL,
		.end = r->end < DP_FLOW_END_MAX ? dp_flowlog_ends[r->end] : "?",
		.start = dp_flowlog_when(o, r->start_tsc, now_tsc, now),
		.stop = dp_flowlog_when(o, r->stop_tsc, now_tsc, now),
		.bytes_out = r->bytes_out, .bytes_in = r->bytes_in,
		.packets_out = r->packets_out, .packets_in = r->packets_in,
		.budgets = budgets,
		.final = r->final != 0,
	};

	if (r->name_len > 0) {
		l.name = r->name;
		l.name_len = r->name_len;
	} else if (r->name_kind != DP_FLOW_NAME_NONE && names != NULL) {
		l.name = ctl_names_by_key(names, r->vm, r->name_hash, &l.name_len);
	}
	if (r->name_kind < RTE_DIM(keys))
		l.name_key = keys[r->name_kind];
	l.nbudgets = dp_flowlog_budgets(r, g, cfg, budgets);
	ctl_flowlog_format(&o->line, now, &l);
	if (o->line.oom || ctl_logfile_write(o->file, o->line.p, o->line.len) != 0) {
		if (r->vm <= o->max_vms)
			o->lost[r->vm]++;
		return;
	}
	o->written++;
}

void
dp_flowlog_out_stop(struct dp_flowlog_out *o, struct dp_ctx *ctx,
    const struct ctl_names *names, const struct pol_config *cfg)
{
	for (unsigned int i = 0; i < ctx->nworkers; i++) {
		struct dp_flows *t = ctx->workers[i]->flows;

		/* the ring takes what it has room for; drained, it takes the rest */
		for (uint32_t at = 0; (at = dp_flowlog_stop_from(ctx->workers[i], at)) <
		    dp_flows_cap(t);)
			dp_flowlog_out_drain(o, ctx, names, cfg);
	}
	dp_flowlog_out_drain(o, ctx, names, cfg);
}

void
dp_flowlog_out_drain(struct dp_flowlog_out *o, struct dp_ctx *ctx,
    const struct ctl_names *names, const struct pol_config *cfg)
{
	static struct dp_flow_rec recs[64];
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	uint64_t now_tsc = rte_get_tsc_cycles();
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	dp_flowlog_calibrate(o, now_tsc);
	dp_flowlog_remember(o, g);
	for (unsigned int i = 0; i < ctx->nworkers; i++) {
		unsigned int n;

		/* a turn's worth: what comes while it writes waits for the next turn */
		for (unsigned int turn = 0; turn < 16 &&
		    (n = dp_flowlog_drain(ctx->workers[i], recs, RTE_DIM(recs))) > 0; turn++)
			for (unsigned int k = 0; k < n; k++)
				if (recs[k].version == DP_API_VERSION)
					dp_flowlog_out_one(o, g, names, cfg, &recs[k],
					    now_tsc, &now);
	}
}

int
dp_flowlog_out_reopen(struct dp_flowlog_out *o)
{
	return ctl_logfile_reopen(o->file);
}

void
dp_flowlog_out_tick(struct dp_flowlog_out *o)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ctl_logfile_tick(o->file, (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec);
}

const char *
dp_flowlog_out_path(const struct dp_flowlog_out *o)
{
	return ctl_logfile_path(o->file);
}

void
dp_flowlog_out_forget_slot(struct dp_flowlog_out *o, uint16_t slot)
{
	if (o == NULL || slot > o->max_vms)
		return;
	o->lost[slot] = 0;
	free(o->names[slot]);
	o->names[slot] = NULL;
}

void
dp_flowlog_out_render(const struct dp_flowlog_out *o, const struct dp_ctx *ctx, FILE *out)
{
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);

	fprintf(out, "# HELP namegate_flow_records_total Flow log lines written\n"
	    "# TYPE namegate_flow_records_total counter\n"
	    "namegate_flow_records_total %" PRIu64 "\n"
	    "# HELP namegate_flow_records_dropped_total Flow records lost, by VM: past the VM's "
	    "share of a worker's ring, or a line the log could not take\n"
	    "# TYPE namegate_flow_records_dropped_total counter\n", o->written);
	for (uint16_t s = 0; s < g->nvms; s++) {
		uint64_t n = o->lost[s];

		if (!g->vms[s].present)
			continue;
		for (unsigned int w = 0; w < ctx->nworkers; w++)
			n += ctx->workers[w]->vm_stats[s].flowrec_dropped;
		fprintf(out, "namegate_flow_records_dropped_total{vm=\"%s\"} %" PRIu64 "\n",
		    g->vms[s].name, n);
	}
}
