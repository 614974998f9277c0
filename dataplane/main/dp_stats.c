/*
 * Counter sums in the Prometheus text format.
 */
#include <string.h>

#include "dp_bind.h"
#include "dp_flow.h"
#include "dp_stats.h"

const char *const dp_reason_labels[DP_REASON_MAX] = {
#define X(name, label, text) [DP_REASON_##name] = label,
	DP_REASONS(X)
#undef X
};

uint64_t
dp_stats_flows(const struct dp_ctx *ctx, uint16_t vm)
{
	uint64_t flows = 0;

	for (unsigned int i = 0; i < ctx->nworkers; i++)
		flows += dp_flows_count(ctx->workers[i]->flows, vm);
	return flows;
}

const char *const dp_verdict_labels[DP_VERDICT_MAX] = {
	[DP_ALLOWED] = "allowed", [DP_BLOCKED] = "blocked", [DP_WOULD_BLOCK] = "would_block",
};

void
dp_stats_sum(const struct dp_ctx *ctx, uint16_t vm, struct dp_vm_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < ctx->nworkers; i++) {
		const struct dp_vm_stats *s = &ctx->workers[i]->vm_stats[vm];

		for (int v = 0; v < DP_VERDICT_MAX; v++) {
			sum->egress_pkts[v] += s->egress_pkts[v];
			sum->egress_bytes[v] += s->egress_bytes[v];
		}
		sum->ingress_pkts += s->ingress_pkts;
		sum->ingress_bytes += s->ingress_bytes;
		for (int r = 0; r < DP_REASON_MAX; r++)
			sum->blocked[r] += s->blocked[r];
		sum->dns_allowed += s->dns_allowed;
		sum->dns_blocked += s->dns_blocked;
		sum->evt_suppressed += s->evt_suppressed;
	}
}

void
dp_stats_print(const struct dp_ctx *ctx, FILE *out)
{
	static const char *const drops[DP_DROP_MAX] = {
#define X(name, label, text) [DP_DROP_##name] = label,
		DP_DROPS(X)
#undef X
	};
	/* both TAPs of the exception path are one "slow" port to an operator */
	static const char *const ports[DP_PORTS] = { "vm", "uplink", "slow", "slow" };
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct dp_vm_stats s;

	for (uint16_t vm = 0; vm <= DP_VM_UNKNOWN; vm++) {
		const char *name = g->vms[vm].name;
		uint64_t flows;

		if (!g->vms[vm].present)
			continue;		/* a removed VM's counters stay in its slot */
		dp_stats_sum(ctx, vm, &s);
		flows = dp_stats_flows(ctx, vm);
		for (int v = 0; v < DP_VERDICT_MAX; v++) {
			fprintf(out, "namegate_vm_egress_packets_total{vm=\"%s\",verdict=\"%s\"} "
			    "%lu\n", name, dp_verdict_labels[v], s.egress_pkts[v]);
			fprintf(out, "namegate_vm_egress_bytes_total{vm=\"%s\",verdict=\"%s\"} "
			    "%lu\n", name, dp_verdict_labels[v], s.egress_bytes[v]);
		}
		fprintf(out, "namegate_vm_ingress_packets_total{vm=\"%s\"} %lu\n", name,
		    s.ingress_pkts);
		fprintf(out, "namegate_vm_ingress_bytes_total{vm=\"%s\"} %lu\n", name,
		    s.ingress_bytes);
		for (int r = 0; r < DP_REASON_MAX; r++)
			fprintf(out, "namegate_vm_blocked_total{vm=\"%s\",reason=\"%s\"} %lu\n",
			    name, dp_reason_labels[r], s.blocked[r]);
		fprintf(out, "namegate_vm_dns_queries_total{vm=\"%s\",verdict=\"allowed\"} %lu\n",
		    name, s.dns_allowed);
		fprintf(out, "namegate_vm_dns_queries_total{vm=\"%s\",verdict=\"blocked\"} %lu\n",
		    name, s.dns_blocked);
		fprintf(out, "namegate_vm_bindings{vm=\"%s\"} %lu\n", name,
		    dp_binds_count(ctx->binds, vm));
		fprintf(out, "namegate_vm_flows{vm=\"%s\"} %lu\n", name, flows);
		fprintf(out, "namegate_vm_events_suppressed_total{vm=\"%s\"} %lu\n", name,
		    s.evt_suppressed);
	}
	for (int p = 0; p <= DP_PORT_SLOW_VM; p++) {
		uint64_t rx = 0, tx = 0;

		for (unsigned int i = 0; i < ctx->nworkers; i++)
			for (int q = p; q <= (p == DP_PORT_SLOW_VM ? DP_PORT_SLOW_UP : p); q++) {
				rx += ctx->workers[i]->port_pkts[q][0];
				tx += ctx->workers[i]->port_pkts[q][1];
			}
		fprintf(out, "namegate_port_packets_total{port=\"%s\",dir=\"rx\"} %lu\n", ports[p],
		    rx);
		fprintf(out, "namegate_port_packets_total{port=\"%s\",dir=\"tx\"} %lu\n", ports[p],
		    tx);
	}
	for (int d = 0; d < DP_DROP_MAX; d++) {
		uint64_t n = 0;

		for (unsigned int i = 0; i < ctx->nworkers; i++)
			n += ctx->workers[i]->drops[d];
		fprintf(out, "namegate_drops_total{reason=\"%s\"} %lu\n", drops[d], n);
	}
	fprintf(out, "namegate_policy_generation %u\n", g->id);
	fflush(out);
}
