/*
 * Counter sums in the Prometheus text format (version 0.0.4): one group per family, its
 * # HELP and # TYPE lines first, as the format requires of a metric name's lines.
 */
#include <inttypes.h>

#include "ctl_events.h"
#include "dp_bind.h"
#include "dp_flow.h"
#include "dp_stats.h"

const char *const dp_reason_labels[DP_REASON_MAX] = {
#define X(name, label, text) [DP_REASON_##name] = label,
	DP_REASONS(X)
#undef X
};

const char *const dp_verdict_labels[DP_VERDICT_MAX] = {
	[DP_ALLOWED] = "allowed", [DP_BLOCKED] = "blocked", [DP_WOULD_BLOCK] = "would_block",
};

static const char *const dp_drop_labels[DP_DROP_MAX] = {
#define X(name, label, text) [DP_DROP_##name] = label,
	DP_DROPS(X)
#undef X
};

/* dns_allowed, dns_blocked */
static const char *const dp_dns_labels[] = { "allowed", "blocked" };

/* both TAPs of the exception path are one "slow" port to an operator */
static const char *const dp_port_labels[] = { "vm", "uplink", "slow" };
_Static_assert(DP_PORT_VM == 0 && DP_PORT_UPLINK == 1 && DP_PORT_SLOW_VM == 2 &&
    DP_PORT_SLOW_UP == 3, "dp_port_labels is indexed by port, SLOW_UP counts as slow");

static const char *const dp_dir_labels[] = { "rx", "tx" };	/* port_pkts[][0], [][1] */

static const char *const dp_none_label[] = { NULL };

#define DP_N(a)	(unsigned int)(sizeof(a) / sizeof((a)[0]))

const char *const *
dp_stats_dim(enum dp_cnt_dim d, unsigned int *n)
{
	switch (d) {
	case DP_CNT_DIM_NONE:
		*n = DP_N(dp_none_label);
		return dp_none_label;
	case DP_CNT_DIM_VERDICT:
		*n = DP_N(dp_verdict_labels);
		return dp_verdict_labels;
	case DP_CNT_DIM_DNS:
		*n = DP_N(dp_dns_labels);
		return dp_dns_labels;
	case DP_CNT_DIM_REASON:
		*n = DP_N(dp_reason_labels);
		return dp_reason_labels;
	case DP_CNT_DIM_PORT:
		*n = DP_N(dp_port_labels);
		return dp_port_labels;
	case DP_CNT_DIM_DIR:
		*n = DP_N(dp_dir_labels);
		return dp_dir_labels;
	case DP_CNT_DIM_DROP:
		*n = DP_N(dp_drop_labels);
		return dp_drop_labels;
	case DP_CNT_DIM_MAX:
		break;
	}
	*n = 0;
	return NULL;
}

/* Worker w's share of f; 0 for the families that are not counted per worker. */
static uint64_t
dp_stats_worker(const struct dp_worker *w, enum dp_cnt f, uint16_t vm, unsigned int i,
    unsigned int j)
{
	const struct dp_vm_stats *s = &w->vm_stats[vm];

	switch (f) {
	case DP_CNT_EGRESS_PACKETS:
		return s->egress_pkts[i];
	case DP_CNT_EGRESS_BYTES:
		return s->egress_bytes[i];
	case DP_CNT_INGRESS_PACKETS:
		return s->ingress_pkts;
	case DP_CNT_INGRESS_BYTES:
		return s->ingress_bytes;
	case DP_CNT_BLOCKED:
		return s->blocked[i];
	case DP_CNT_DNS_QUERIES:
		return i == 0 ? s->dns_allowed : s->dns_blocked;
	case DP_CNT_FLOWS:
		return dp_flows_count(w->flows, vm);
	case DP_CNT_EVENTS_SUPPRESSED:
		return s->evt_suppressed;
	case DP_CNT_PORT_PACKETS:
		return w->port_pkts[i][j] +
		    (i == DP_PORT_SLOW_VM ? w->port_pkts[DP_PORT_SLOW_UP][j] : 0);
	case DP_CNT_DROPS:
		return w->drops[i];
	case DP_CNT_EVENTS_DROPPED:
		return w->evt_dropped;
	case DP_CNT_BINDINGS:		/* one table for every worker */
	case DP_CNT_POLICY_GENERATION:
	case DP_CNT_MAX:
		break;
	}
	return 0;
}

uint64_t
dp_stats_value(const struct dp_ctx *ctx, enum dp_cnt f, uint16_t vm, unsigned int i,
    unsigned int j)
{
	uint64_t n = 0;

	if (dp_cnt_def(f)->scope == DP_CNT_GLOBAL)
		vm = 0;			/* dp_stats_worker() forms a pointer into vm_stats */
	if (f == DP_CNT_BINDINGS)
		return dp_binds_count(ctx->binds, vm);
	if (f == DP_CNT_POLICY_GENERATION)
		return atomic_load_explicit(&ctx->gen, memory_order_acquire)->id;
	for (unsigned int k = 0; k < ctx->nworkers; k++)
		n += dp_stats_worker(ctx->workers[k], f, vm, i, j);
	if (f == DP_CNT_DROPS)
		n += ctx->main_drops[i];	/* the exception path's, on the main lcore */
	if (f == DP_CNT_EVENTS_DROPPED)
		n += ctl_events_lost(ctx->events);	/* and those the log's writes lost */
	return n;
}

/* Family f's samples: of VM slot vm, labelled vm=name first, or global when name is NULL. */
static void
dp_stats_samples(const struct dp_ctx *ctx, FILE *out, enum dp_cnt f, uint16_t vm,
    const char *name)
{
	const struct dp_cnt_def *d = dp_cnt_def(f);
	const char *l1 = dp_cnt_dim_label(d->dim[0]), *l2 = dp_cnt_dim_label(d->dim[1]);
	unsigned int n1, n2;
	const char *const *v1 = dp_stats_dim(d->dim[0], &n1);
	const char *const *v2 = dp_stats_dim(d->dim[1], &n2);

	for (unsigned int i = 0; i < n1; i++)
		for (unsigned int j = 0; j < n2; j++) {
			char sep = '{';

			fputs(d->metric, out);
			if (name != NULL) {
				fprintf(out, "%cvm=\"%s\"", sep, name);
				sep = ',';
			}
			if (l1 != NULL) {
				fprintf(out, "%c%s=\"%s\"", sep, l1, v1[i]);
				sep = ',';
			}
			if (l2 != NULL) {
				fprintf(out, "%c%s=\"%s\"", sep, l2, v2[j]);
				sep = ',';
			}
			fprintf(out, "%s %" PRIu64 "\n", sep == ',' ? "}" : "",
			    dp_stats_value(ctx, f, vm, i, j));
		}
}

void
dp_stats_print(const struct dp_ctx *ctx, FILE *out)
{
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);

	for (enum dp_cnt f = 0; f < DP_CNT_MAX; f++) {
		const struct dp_cnt_def *d = dp_cnt_def(f);

		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", d->metric, d->help, d->metric,
		    dp_cnt_type_name(d->type));
		if (d->scope == DP_CNT_GLOBAL) {
			dp_stats_samples(ctx, out, f, 0, NULL);
			continue;
		}
		/* the slots handed out (slots past nvms never had a VM), then "unknown" */
		for (uint16_t vm = 0; vm < g->nvms; vm++)
			if (g->vms[vm].present)
				dp_stats_samples(ctx, out, f, vm, g->vms[vm].name);
		dp_stats_samples(ctx, out, f, DP_VM_UNKNOWN(g), g->vms[DP_VM_UNKNOWN(g)].name);
	}
	fflush(out);
}
