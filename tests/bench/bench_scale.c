/*
 * How the worker's two tables scale (issue 25), each against itself at 1 k entries in the
 * same process, the same rounds alternating the two sizes so that a neighbour's build
 * slows both alike; the median of the per-round ratios and their spread (lowest, highest).
 *
 *   bind_lookup_1m_vs_1k  dp_bind_allows(), what a connection's opening asks of the
 *                         binding table, with 1,048,576 bindings in it over 1,024: the same
 *                         number of lookups, addresses drawn at random over all of them,
 *                         asked DP_BURST at a time with their lines fetched first, as a
 *                         burst's openings are (dp_bind_fetch()). Beside it, the same
 *                         without the fetch (_unfetched): each lookup's misses in turn.
 *   flows_1m_vs_1k        the flow table's work per packet, 1 M flows in it over 1 k:
 *                         bursts of DP_BURST frames whose keys are looked up together and
 *                         confirmed frame by frame, as dp_burst.c does: one the oldest
 *                         flow's RST (closed), one a new flow's SYN (opened), the rest of
 *                         live flows drawn at random, so that the occupancy stays put. Both
 *                         tables have the same room (max_flows).
 *
 * Without BENCH_HUGE_DIR, no hugepages (EAL --no-huge): 4 KiB pages, a TLB miss on nearly every
 * lookup of the large tables, as a host without hugepages has them; on a shared VM that
 * alone may keep flows_1m_vs_1k above its goal. With BENCH_HUGE_DIR (hugepages.sh), on
 * 2 MiB pages, as the daemon has the tables where the host has hugepages: the same lines,
 * named _hugepages.
 */
#include <inttypes.h>
#include <stdbool.h>
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
#include "dp_bind_fetch.h"
#include "dp_commit.h"
#include "dp_flow.h"
#include "dp_flow_look.h"
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
static const char *scale_pages = "";	/* the RESULT names' suffix: "_hugepages" on them */

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
	printf("RESULT %s%s=%.2f\n", name, scale_pages, ratio[SCALE_ROUNDS / 2]);
	if (goal != NULL)
		printf("INFO goal: %s%s <= %s\n", name, scale_pages, goal);
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

/*
 * ns per lookup of SCALE_OPS random bound addresses of the n in b, asked as a burst asks
 * them (dp_burst.c): DP_BURST keys made, the lines their lookups read fetched for all of
 * them (dp_bind_fetch()) unless alone, then each looked up; -1 if one was refused.
 */
static double
scale_bind_pass(struct dp_binds *b, uint32_t n, const struct dp_gen *g, bool alone)
{
	struct dp_flow_key keys[DP_BURST];
	const struct dp_flow_key *ask[DP_BURST];
	struct pol_addr a;
	unsigned int admitted = 0;
	double t0;

	for (unsigned int i = 0; i < DP_BURST; i++)
		ask[i] = &keys[i];
	scale_addr(&a, 0);
	t0 = bench_now_ns();
	for (uint32_t k = 0; k < SCALE_OPS; k += DP_BURST) {
		for (unsigned int i = 0; i < DP_BURST; i++)
			scale_flow_key(&keys[i], bench_rnd(&rng) & (n - 1));
		if (!alone)
			dp_bind_fetch(b, ask, DP_BURST);
		for (unsigned int i = 0; i < DP_BURST; i++) {
			memcpy(a.a, keys[i].peer, 4);
			admitted += dp_bind_allows(b, 0, &a, SCALE_PORT, 1, g).allowed;
		}
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
	double alone_s[SCALE_ROUNDS], alone_l[SCALE_ROUNDS], alone[SCALE_ROUNDS];
	int rc = -1;

	if (small == NULL || large == NULL) {
		fprintf(stderr, "bench_scale: binding tables: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	for (int r = 0; r < SCALE_ROUNDS; r++) {
		ns_s[r] = scale_bind_pass(small, SCALE_SMALL, &g, false);
		ns_l[r] = scale_bind_pass(large, SCALE_LARGE, &g, false);
		alone_s[r] = scale_bind_pass(small, SCALE_SMALL, &g, true);
		alone_l[r] = scale_bind_pass(large, SCALE_LARGE, &g, true);
		if (ns_s[r] <= 0 || ns_l[r] <= 0 || alone_s[r] <= 0 || alone_l[r] <= 0) {
			fprintf(stderr, "bench_scale: a bound address was not admitted\n");
			goto out;
		}
		ratio[r] = ns_l[r] / ns_s[r];
		alone[r] = alone_l[r] / alone_s[r];
	}
	/* the same lookups without the burst's fetch ahead, in the same rounds: what it buys */
	scale_report("bind_lookup_1m_vs_1k_unfetched", alone, alone_s, alone_l, NULL);
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

/*
 * The flow of lookup l as the burst confirms it when its frame is reached (dp_burst_flow():
 * whatever the burst's earlier frames opened or closed seen).
 */
static struct dp_flow *
scale_flow_confirm(struct dp_flows *t, const struct dp_flow_lookup *l)
{
	if (l->found != NULL && dp_flow_entry_is(l->found, &l->key))
		return l->found;
	if (l->found == NULL && dp_flow_still_absent(t, l->hash))
		return NULL;
	return dp_flow_lookup_hashed(t, &l->key, l->hash);
}

/*
 * ns per packet over SCALE_OPS packets, bursts of DP_BURST frames as dp_burst.c has them:
 * every frame's key looked up together (dp_flow_lookup_start()), then each confirmed in
 * turn. Of each burst's frames, the first is the oldest flow's RST, which closes it, the
 * second a new flow's SYN, which opens it from its lookup's hash, and the rest are of live
 * flows drawn at random: the occupancy holds. -1 if a live flow was not found.
 */
static double
scale_flows_pass(struct scale_flows *s)
{
	struct dp_flow_lookup l[DP_BURST];
	unsigned int found = 0;
	double t0 = bench_now_ns();
	struct dp_flow *f;

	for (uint32_t p = 0; p < SCALE_OPS; p += DP_BURST) {
		scale_flow_key(&l[0].key, s->oldest);
		scale_flow_key(&l[1].key, s->oldest + s->n);
		for (unsigned int i = 2; i < DP_BURST; i++)
			/* the live flows once the first two frames are done: the new one too */
			scale_flow_key(&l[i].key, s->oldest + 1 + (bench_rnd(&rng) & (s->n - 1)));
		dp_flow_lookup_start(s->t, l, DP_BURST);
		if ((f = scale_flow_confirm(s->t, &l[0])) == NULL)
			return -1;
		dp_flow_close(s->t, f);
		s->oldest++;
		if (scale_flow_confirm(s->t, &l[1]) != NULL ||
		    dp_flow_open_hashed(s->t, &l[1].key, l[1].hash, UINT32_MAX, 1) == NULL)
			return -1;
		for (unsigned int i = 2; i < DP_BURST; i++)
			found += scale_flow_confirm(s->t, &l[i]) != NULL;
	}
	t0 = (bench_now_ns() - t0) / SCALE_OPS;
	return found == SCALE_OPS / DP_BURST * (DP_BURST - 2) ? t0 : -1;
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
	scale_report("flows_1m_vs_1k", ratio, ns_s, ns_l, *scale_pages != '\0' ? "2.0" :
	    "2.0 (4 KiB pages here, no hugepages: on a shared VM they may keep it above)");
	rc = 0;
out:
	dp_flows_free(small.t);
	dp_flows_free(large.t);
	return rc;
}

/*
 * With BENCH_HUGE_DIR (a hugetlbfs mount with the pages free, as hugepages.sh makes it),
 * the tables on 2 MiB pages, as the daemon has them on a host with hugepages (dp_eal.c);
 * else on 4 KiB pages (--no-huge), as on one without.
 */
int
main(void)
{
	char prefix[64];
	char *eal[] = {
		(char *)"bench_scale", (char *)"-m", (char *)"3072",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0",
		(char *)"--log-level", (char *)"*:error", (char *)"--no-huge", NULL, NULL,
	};
	int neal = (int)(sizeof(eal) / sizeof(eal[0])) - 2;	/* --no-huge the last */
	char *huge_dir = getenv("BENCH_HUGE_DIR");
	struct rte_rcu_qsbr *q;
	int rc;

	if (huge_dir != NULL) {
		eal[neal - 1] = (char *)"--huge-dir";	/* in --no-huge's place */
		eal[neal++] = huge_dir;
		scale_pages = "_hugepages";
	}
	snprintf(prefix, sizeof(prefix), "ngscale%d", (int)getpid());
	/* the memory as the daemon has it: backed at start (dp_ctx_setup) */
	if (rte_eal_init(neal, eal) < 0 ||
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
	puts(*scale_pages != '\0' ? "INFO hugepages: 2 MiB pages (BENCH_HUGE_DIR)" :
	    "INFO no hugepages: EAL --no-huge, 4 KiB pages");
	rc = scale_bind(q) != 0 || scale_flows() != 0;
	rte_free(q);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return rc;
}
