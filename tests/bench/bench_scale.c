/*
 * How the worker's two tables scale (issue 25), each against itself at 1 k entries in the
 * same process, the same rounds alternating the two sizes so that a neighbour's build
 * slows both alike; the median of the per-round ratios and their spread (lowest, highest).
 *
 *   bind_lookup_1m_vs_1k  dp_bind_allows(), what a connection's opening asks of the
 *                         binding table, with 1,048,576 bindings in it over 1,024: the same
 *                         number of lookups, addresses drawn at random over all of them.
 *   flows_1m_vs_1k        the flow table's work per packet, 1 M flows in it over 1 k:
 *                         each packet's lookup (bursts of DP_BURST keys drawn at random
 *                         over the live flows, as dp_flow_lookup_burst() sees them), and
 *                         per burst one flow opened and the oldest closed, so that the
 *                         occupancy stays put. Both tables have the same room (max_flows).
 *
 * No hugepages (EAL --no-huge): 4 KiB pages, a TLB miss on nearly every lookup of the
 * large tables. On a shared VM that alone may keep flows_1m_vs_1k above its goal.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "bench_stat.h"
#include "dp_bind.h"
#include "dp_commit.h"
#include "dp_flow.h"
#include "dp_gen.h"
#include "dp_hash.h"

#define SCALE_SMALL	1024u
#define SCALE_LARGE	1048576u
#define SCALE_ROOM	(SCALE_LARGE + SCALE_SMALL)	/* the configured max, both tables */
#define SCALE_OPS	(1u << 20)	/* lookups (packets) per pass, both sizes */
#define SCALE_ROUNDS	9
#define SCALE_GEN	1
#define SCALE_PORT	443

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Entry i's peer address: i itself, so that every i is a distinct key. */
static void
scale_addr(struct pol_addr *a, uint32_t i)
{
	memset(a, 0, sizeof(*a));
	a->family = 4;
	a->a[0] = (uint8_t)(i >> 24);
	a->a[1] = (uint8_t)(i >> 16);
	a->a[2] = (uint8_t)(i >> 8);
	a->a[3] = (uint8_t)i;
}

static void
scale_flow_key(struct dp_flow_key *k, uint32_t i)
{
	memset(k, 0, sizeof(*k));
	k->family = 4;
	k->proto = 6;
	k->vm_port = 40000;
	k->peer_port = SCALE_PORT;
	k->peer[0] = (uint8_t)(i >> 24);
	k->peer[1] = (uint8_t)(i >> 16);
	k->peer[2] = (uint8_t)(i >> 8);
	k->peer[3] = (uint8_t)i;
}

/* The median of the per-round ratios and their spread, beside the goal. */
static void
scale_report(const char *name, double *ratio, const double *ns_small, const double *ns_large,
    const char *goal)
{
	double s[SCALE_ROUNDS], l[SCALE_ROUNDS];

	memcpy(s, ns_small, sizeof(s));
	memcpy(l, ns_large, sizeof(l));
	qsort(ratio, SCALE_ROUNDS, sizeof(double), bench_cmp_double);
	qsort(s, SCALE_ROUNDS, sizeof(double), bench_cmp_double);
	qsort(l, SCALE_ROUNDS, sizeof(double), bench_cmp_double);
	printf("INFO %s median ns per op: 1k %.1f, 1m %.1f; ratio spread %.2f-%.2f over %d "
	    "rounds\n", name, s[SCALE_ROUNDS / 2], l[SCALE_ROUNDS / 2], ratio[0],
	    ratio[SCALE_ROUNDS - 1], SCALE_ROUNDS);
	printf("RESULT %s=%.2f\n", name, ratio[SCALE_ROUNDS / 2]);
	printf("INFO goal: %s <= %s\n", name, goal);
}

/* ---- bindings ---- */

static struct dp_binds *
scale_binds(const char *name, uint32_t n, struct rte_rcu_qsbr *q)
{
	struct pol_ports ports = { .nallow = 1 };
	struct dp_binds *b = dp_binds_create(name, SCALE_ROOM, 1, q, SOCKET_ID_ANY);
	struct pol_addr a;

	ports.allow[0] = SCALE_PORT;
	for (uint32_t i = 0; b != NULL && i < n; i++) {
		scale_addr(&a, i);
		if (dp_bind_learn(b, 0, &a, 1000 + i, &ports, SCALE_GEN, UINT64_MAX, UINT32_MAX)
		    != 0) {
			dp_binds_free(b);
			return NULL;
		}
	}
	return b;
}

/* ns per lookup of SCALE_OPS random bound addresses of the n in b; -1 if one was refused. */
static double
scale_bind_pass(struct dp_binds *b, uint32_t n, const struct dp_gen *g)
{
	struct pol_addr a;
	unsigned int admitted = 0;
	double t0 = bench_now_ns();

	for (uint32_t k = 0; k < SCALE_OPS; k++) {
		scale_addr(&a, bench_rnd(&rng) & (n - 1));
		admitted += dp_bind_allows(b, 0, &a, SCALE_PORT, 1, g).allowed;
	}
	t0 = (bench_now_ns() - t0) / SCALE_OPS;
	return admitted == SCALE_OPS ? t0 : -1;
}

static int
scale_bind(struct rte_rcu_qsbr *q)
{
	struct dp_vm vm = { .present = true };
	struct dp_gen g = { .id = SCALE_GEN, .vms = &vm };
	struct dp_binds *small = scale_binds("scale_b_small", SCALE_SMALL, q);
	struct dp_binds *large = scale_binds("scale_b_large", SCALE_LARGE, q);
	double ns_s[SCALE_ROUNDS], ns_l[SCALE_ROUNDS], ratio[SCALE_ROUNDS];
	int rc = -1;

	if (small == NULL || large == NULL) {
		fprintf(stderr, "bench_scale: binding tables: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	for (int r = 0; r < SCALE_ROUNDS; r++) {
		ns_s[r] = scale_bind_pass(small, SCALE_SMALL, &g);
		ns_l[r] = scale_bind_pass(large, SCALE_LARGE, &g);
		if (ns_s[r] <= 0 || ns_l[r] <= 0) {
			fprintf(stderr, "bench_scale: a bound address was not admitted\n");
			goto out;
		}
		ratio[r] = ns_l[r] / ns_s[r];
	}
	scale_report("bind_lookup_1m_vs_1k", ratio, ns_s, ns_l, "3");
	rc = 0;
out:
	dp_binds_free(small);
	dp_binds_free(large);
	return rc;
}

/* ---- flows ---- */

/* A table holding flows [*oldest, *oldest + n): opened in order, closed in order. */
struct scale_flows {
	struct dp_flows *t;
	uint32_t n, oldest;
};

static int
scale_flows_fill(struct scale_flows *s, const char *name, uint32_t n)
{
	struct dp_flow_key k;

	s->n = n;
	s->oldest = 0;
	if ((s->t = dp_flows_create(name, SCALE_ROOM, 1, SOCKET_ID_ANY)) == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		scale_flow_key(&k, i);
		if (dp_flow_open(s->t, &k, UINT32_MAX, 1) == NULL)
			return -1;
	}
	return 0;
}

/* The oldest flow closes (its RST looked up) and a new one opens: the occupancy holds. */
static int
scale_flows_turn(struct scale_flows *s)
{
	struct dp_flow_key k;
	struct dp_flow *f;

	scale_flow_key(&k, s->oldest);
	if ((f = dp_flow_lookup(s->t, &k)) == NULL)
		return -1;
	dp_flow_close(s->t, f);
	scale_flow_key(&k, s->oldest + s->n);
	s->oldest++;
	return dp_flow_open(s->t, &k, UINT32_MAX, 1) != NULL ? 0 : -1;
}

/* ns per packet over SCALE_OPS packets of random live flows; -1 if one was not found. */
static double
scale_flows_pass(struct scale_flows *s)
{
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *out[DP_BURST];
	unsigned int found = 0;
	double t0 = bench_now_ns();

	for (uint32_t p = 0; p < SCALE_OPS; p += DP_BURST) {
		for (unsigned int i = 0; i < DP_BURST; i++)
			scale_flow_key(&keys[i], s->oldest + (bench_rnd(&rng) & (s->n - 1)));
		dp_flow_lookup_burst(s->t, keys, DP_BURST, out);
		for (unsigned int i = 0; i < DP_BURST; i++)
			found += out[i] != NULL;
		if (scale_flows_turn(s) != 0)
			return -1;
	}
	t0 = (bench_now_ns() - t0) / SCALE_OPS;
	return found == SCALE_OPS ? t0 : -1;
}

static int
scale_flows(void)
{
	struct scale_flows small = { 0 }, large = { 0 };
	double ns_s[SCALE_ROUNDS], ns_l[SCALE_ROUNDS], ratio[SCALE_ROUNDS];
	int rc = -1;

	if (scale_flows_fill(&small, "scale_f_small", SCALE_SMALL) != 0 ||
	    scale_flows_fill(&large, "scale_f_large", SCALE_LARGE) != 0) {
		fprintf(stderr, "bench_scale: flow tables: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	for (int r = 0; r < SCALE_ROUNDS; r++) {
		ns_s[r] = scale_flows_pass(&small);
		ns_l[r] = scale_flows_pass(&large);
		if (ns_s[r] <= 0 || ns_l[r] <= 0) {
			fprintf(stderr, "bench_scale: a live flow was not found\n");
			goto out;
		}
		ratio[r] = ns_l[r] / ns_s[r];
	}
	printf("INFO flows occupancy 1k %u, 1m %u of room %u\n", dp_flows_count(small.t, 0),
	    dp_flows_count(large.t, 0), SCALE_ROOM);
	/* 4 KiB pages on a shared VM (no hugepages here) may keep it above its goal */
	scale_report("flows_1m_vs_1k", ratio, ns_s, ns_l,
	    "2.0 (4 KiB pages here, no hugepages: on a shared VM they may keep it above)");
	rc = 0;
out:
	dp_flows_free(small.t);
	dp_flows_free(large.t);
	return rc;
}

int
main(void)
{
	char prefix[64];
	char *argv[] = {
		(char *)"bench_scale", (char *)"--no-huge", (char *)"-m", (char *)"3072",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	struct rte_rcu_qsbr *q;
	int rc;

	snprintf(prefix, sizeof(prefix), "ngscale%d", (int)getpid());
	/* the memory as the daemon has it: backed at start (dp_ctx_setup) */
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0 ||
	    dp_hash_init() != 0 || dp_commit_eal_memory() != 0) {
		fprintf(stderr, "bench_scale: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	/* this thread plays the one worker the binding table's RCU knows */
	q = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	if (q == NULL || rte_rcu_qsbr_init(q, 1) != 0)
		return 1;
	rte_rcu_qsbr_thread_register(q, 0);
	rte_rcu_qsbr_thread_online(q, 0);
	puts("INFO no hugepages: EAL --no-huge, 4 KiB pages");
	rc = scale_bind(q) != 0 || scale_flows() != 0;
	rte_free(q);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return rc;
}
