/*
 * bench_full cores: how many cores the mix needs at 25 GbE (issue 25), from the real
 * worker's poll time on the mix with a million flows in its table.
 *
 * The flow table is filled first with BENCH_CORES_FILL SYN flows from vm0 to 11.0.0.0/11
 * (bench_full_capacity.c's fill frames, admitted by an address entry added to the mix's
 * name policy, so no binding is needed for them), then the mix runs as bench_full mix runs
 * it (the same trace, rounds, and timing: dp_worker_poll() only) with those flows staying
 * in the table: SYN flows idle out after 30 s, but nothing ages them here (a poll does
 * not sweep; only an open into a full table reclaims, and the table has room for every
 * flow the mix's passes open). The flows in the table are printed before and after, and
 * fewer than BENCH_CORES_FILL at either fails the run: a table that emptied measured
 * nothing about a full one.
 *
 *   mix_1m_flows_ns_per_pkt = 1e9 / the median over the rounds of the worker's frames per
 *                             second of poll time (the spread printed beside it)
 *   cores_25g_mix = 6.72 Mpps (the mix's frames at 25 GbE) * (mix_1m_flows_ns_per_pkt
 *                   + 15 ns of NIC I/O a packet) / 1e9; goal <= 1.0, printed as INFO
 *
 * The ring ports' rx and tx are inside the timed poll, but they are pointer moves; the
 * 15 ns stand for what a real NIC's descriptors cost instead. No hugepages (--no-huge).
 */
#include <stdlib.h>
#include <string.h>

#include "api/dp_counters.h"
#include "bench_full.h"

#define BENCH_CORES_FILL	1048576u	/* flows in the table before the mix runs */
#define BENCH_CORES_ROOM	(BENCH_CORES_FILL + 65536u)	/* and the mix passes' (~520 each) */
#define BENCH_CORES_ROUNDS	31
#define BENCH_CORES_MPPS	6.72	/* the mix's frames per second at 25 GbE, millions */
#define BENCH_CORES_NIC_NS	15.0	/* a real NIC's rx and tx, a packet */

/* The mix's name policy and the fill's addresses: hosts.txt's names and 11.0.0.0/11. */
static char *
bench_cores_policy(const char *traffic)
{
	char *text = NULL;
	size_t len;
	FILE *out = open_memstream(&text, &len);
	int rc;

	if (out == NULL)
		return NULL;
	rc = bench_hosts(traffic, out);
	fputs(", \"11.0.0.0/11\"", out);
	if (fclose(out) != 0 || rc != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The flows in the table, and whether there are at least the fill's; printed as what. */
static bool
bench_cores_full(const struct bench *b, uint32_t fill, const char *what)
{
	uint64_t n = bench_count(b, DP_CNT_FLOWS, 0);

	printf("INFO cores flows in the table %s: %lu (the fill: %u)\n", what, (unsigned long)n,
	    fill);
	if (n >= fill)
		return true;
	fprintf(stderr, "bench_full cores: %lu flows in the table %s, under the %u filled\n",
	    (unsigned long)n, what, fill);
	return false;
}

int
bench_mode_cores(struct bench *b)
{
	char dataplane[256], resolvers[1024], *policy = NULL;
	struct bench_trace mix = { 0 }, syn = { 0 };
	struct bench_pass p, last = { 0 };
	struct bench_res res;
	uint32_t fill = b->instr ? 4096 : BENCH_CORES_FILL;
	double ns, lo, hi, cores;
	int rc = -1;

	snprintf(dataplane, sizeof(dataplane), "  max_flows: %u\n  max_flows_per_vm: %u\n"
	    "  max_bindings: 262144\n", BENCH_CORES_ROOM, BENCH_CORES_ROOM);
	if (bench_mix_trace(b, &mix, resolvers, sizeof(resolvers)) != 0 ||
	    bench_cap_from_vm0(b) != 0 || bench_cap_syn_trace(&syn, fill, 40000, 0, 1) != 0 ||
	    (policy = bench_cores_policy(b->traffic)) == NULL ||
	    bench_start(b, policy, resolvers, dataplane, "2048") != 0 ||
	    bench_cap_fill(b, &syn, 0, syn.n, dp_now(&b->ctx), "flows", &p) != 0 ||
	    !bench_cores_full(b, fill, "before the mix") ||
	    bench_rounds(b, &mix, "mix_1m_flows", BENCH_CORES_ROUNDS, &res, &last) != 0 ||
	    !bench_cores_full(b, fill, "after the mix"))
		goto out;
	bench_pass_print("mix_1m_flows", &mix, &last);
	bench_counters(b, "mix_1m_flows", stdout);
	if (b->instr || res.rate[BENCH_NG] <= 0) {
		rc = 0;
		goto out;
	}
	ns = 1e9 / res.rate[BENCH_NG];
	lo = 1e9 / res.rate_hi[BENCH_NG];
	hi = 1e9 / res.rate_lo[BENCH_NG];
	cores = BENCH_CORES_MPPS * 1e6 * (ns + BENCH_CORES_NIC_NS) / 1e9;
	printf("RESULT mix_1m_flows_mpps=%.3f\n", res.rate[BENCH_NG] / 1e6);
	printf("RESULT mix_1m_flows_ns_per_pkt=%.1f\n", ns);
	printf("INFO mix_1m_flows_ns_per_pkt spread %.1f-%.1f over %u rounds\n", lo, hi,
	    res.rounds);
	printf("RESULT mix_1m_flows_vs_io=%.3f\n", res.ratio[BENCH_IO]);
	printf("RESULT cores_25g_mix=%.2f\n", cores);
	printf("INFO cores_25g_mix = %.2f Mpps * (%.1f ns + %.0f ns NIC I/O) / 1e9; spread "
	    "%.2f-%.2f\n", BENCH_CORES_MPPS, ns, BENCH_CORES_NIC_NS,
	    BENCH_CORES_MPPS * 1e6 * (lo + BENCH_CORES_NIC_NS) / 1e9,
	    BENCH_CORES_MPPS * 1e6 * (hi + BENCH_CORES_NIC_NS) / 1e9);
	printf("INFO goal: cores_25g_mix <= 1.0 (%s)\n", cores <= 1.0 ? "met" : "not met");
	rc = 0;
out:
	free(policy);
	bench_close(b);
	bench_trace_free(&mix);
	bench_trace_free(&syn);
	return rc;
}
