/*
 * bench_full capacity: max_flows and max_bindings at 1,048,576. Fills the binding table
 * through DNS answers (one VM resolving fill.bench.test to a new address each time, every
 * answer carrying the ID namegate gave its query) and the flow table through SYNs to those
 * addresses, timing only dp_worker_poll(), and reports memory (RSS and rte_malloc's heap)
 * before and after, and what was refused while filling.
 *
 * Then the table is kept full while new connections come: the worker runs its real loop
 * (dp_worker_loop(), housekeeping and aging included) on its own lcore while this thread
 * offers new SYNs for a few seconds, RESULT conn_rate_full_table being the SYNs admitted
 * per second. The bench owns the clock (whole seconds, dp_now()): the fill's flows are
 * touched again a second apart in BENCH_GROUPS interleaved groups, so that when the clock
 * moves a second on, one group (every BENCH_GROUPS-th entry) goes idle, not the table;
 * and it moves on only when as many new flows as a group holds were admitted. So the
 * table holds what a gateway at its limit holds: mostly live flows, a group's worth of
 * idle ones to reclaim. The rate is then bounded by how fast the sweep (a table pass in
 * DP_AGE_PASS_SECONDS) and the opens' reclaim budget find those among the live ones:
 * that bound is the daemon's, and the figure is it. The occupancy is sampled throughout,
 * printed at start and end and at its lowest, and below BENCH_MIN_OCCUPANCY the run
 * fails: a table that emptied measured nothing about a full one.
 *
 * Last, the clock moves past every flow's timeout and one sweep (dp_flows_age(), what
 * housekeeping calls a slice at a time) closes them all, timed: RESULT age_ns_per_flow,
 * against the cost of opening one in the same run (age_vs_open).
 * Plain pages (--no-huge) unless BENCH_HUGE_DIR names 2 MiB ones (full_capacity_hugepages),
 * said in the output (bench_open()).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "api/dp_counters.h"
#include "bench_full.h"
#include "bench_stat.h"
#include "sni/frame.h"
#include "sni/pkt.h"

#define BENCH_CAP		1048576u
#define BENCH_SUSTAIN_SECONDS	5
#define BENCH_SYN_IDLE		30	/* a SYN-only flow's idle timeout (dp_flow.c) */
#define BENCH_GROUPS		BENCH_SYN_IDLE	/* one group goes idle a second */
#define BENCH_ALL_IDLE_SECONDS	60	/* past every SYN flow's timeout, not a binding's */
#define BENCH_MIN_OCCUPANCY	0.95
#define BENCH_CHUNK		32768	/* fill frames between two settings of the clock */
#define BENCH_SCALE_FLOWS	1024	/* flows_1m_vs_1k_poll: the small set, in flows */
#define BENCH_SCALE_ROUNDS	5

/*
 * vm0 of manifest.json, to 11.0.0.1, port 443: the frame every fill frame is made from. Its
 * source MAC (offset 6) and address (26) are vm0's, set by bench_mode_capacity.
 */
static uint8_t bench_cap_tmpl[] = {
	0x02, 0x00, 0x00, 0xee, 0xee, 0x01, 0, 0, 0, 0, 0, 0, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x28, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00,
	0, 0, 0, 0, 11, 0, 0, 1,
	0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
};

static void
bench_cap_addr(uint8_t *a, uint32_t i)
{
	uint32_t v = (11u << 24) + 1 + i;	/* 11.0.0.1 up: public, never a VM's */

	a[0] = (uint8_t)(v >> 24);
	a[1] = (uint8_t)(v >> 16);
	a[2] = (uint8_t)(v >> 8);
	a[3] = (uint8_t)v;
}

static void
bench_cap_ip_csum(uint8_t *ip)
{
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = frame_csum_fold(frame_csum_add(0, ip, 20));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

/* The fill frames come from vm0 of the traffic's manifest. */
int
bench_cap_from_vm0(const struct bench *b)
{
	return bench_vm0(b->traffic, bench_cap_tmpl + 6, bench_cap_tmpl + 26);
}

/*
 * n lookups: the query and answer of bench_synth_dns() for the template, each with its own
 * client port and answer address. The addresses go at the end of the answer (one A record).
 */
static int
bench_cap_dns_trace(struct bench_trace *t, uint32_t n)
{
	struct bench_trace one = { 0 };
	uint8_t frame[256];
	int rc = -1;

	if (bench_trace_add(&one, bench_cap_tmpl, sizeof(bench_cap_tmpl)) == NULL ||
	    bench_synth_dns(&one, &one.f[0], "fill.bench.test", 1, 1024) != 0)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		for (int a = 1; a <= 2; a++) {
			const struct bench_frame *f = &one.f[a];
			uint8_t *l4 = frame + f->l4_off;
			uint16_t port = (uint16_t)(1024 + i % 64000);

			memcpy(frame, f->data, f->len);
			l4[a == 1 ? 0 : 2] = (uint8_t)(port >> 8);
			l4[a == 1 ? 1 : 3] = (uint8_t)port;
			l4[8] = (uint8_t)(i >> 8);	/* the query ID */
			l4[9] = (uint8_t)i;
			if (a == 2)
				bench_cap_addr(frame + f->len - 4, i);
			frame_udp_resize(frame + 14, 4, l4, (size_t)f->len - f->l4_off - 8);
			if (bench_trace_add(t, frame, f->len) == NULL)
				goto out;
		}
	bench_trace_link_answers(t);
	rc = 0;
out:
	bench_trace_free(&one);
	return rc;
}

/* SYNs from vm0 from source port sport, to bound addresses first, first + step, ... < n. */
int
bench_cap_syn_trace(struct bench_trace *t, uint32_t n, uint16_t sport, uint32_t first,
    uint32_t step)
{
	uint8_t frame[sizeof(bench_cap_tmpl)];

	for (uint32_t i = first; i < n; i += step) {
		memcpy(frame, bench_cap_tmpl, sizeof(frame));
		bench_cap_addr(frame + 30, i);
		frame[34] = (uint8_t)(sport >> 8);
		frame[35] = (uint8_t)sport;
		bench_cap_ip_csum(frame + 14);
		frame_tcp_csum_set(frame + 14, 4, frame + 34, 20);
		if (bench_trace_add(t, frame, sizeof(frame)) == NULL)
			return -1;
	}
	return 0;
}

/* Resident memory in KiB, from /proc/self/status. */
static long
bench_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kib;
}

static void
bench_mem(const char *when, bool heap)
{
	struct rte_malloc_socket_stats s = { 0 };

	if (heap)
		rte_malloc_get_socket_stats((int)rte_socket_id(), &s);
	printf("MEM capacity %s rss_mib=%.1f rte_malloc_alloc_mib=%.1f\n", when,
	    (double)bench_rss_kib() / 1024, (double)s.heap_allocsz_bytes / 1048576);
}

/* Blocked and dropped frames so far, every reason together. */
static uint64_t
bench_refused(const struct bench *b)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < DP_REASON_MAX; i++)
		n += bench_count(b, DP_CNT_BLOCKED, i);
	for (unsigned int i = 0; i < DP_DROP_MAX; i++)
		n += bench_count(b, DP_CNT_DROPS, i);
	return n;
}

/*
 * Frames [from, to) of t through the worker at second clock, a chunk at a time with the
 * clock set again before each (a flow's second is the bench's, not how long the fill
 * took); what it cost and refused (what: a FILL line). A loop a chunk: a loop's second
 * pass would move the SYNs' ports.
 */
int
bench_cap_fill(struct bench *b, const struct bench_trace *t, uint32_t from, uint32_t to,
    uint64_t clock, const char *what, struct bench_pass *p)
{
	uint64_t refused = bench_refused(b);

	memset(p, 0, sizeof(*p));
	for (uint32_t at = from; at < to; at += BENCH_CHUNK) {
		struct bench_loop *l = bench_loop_new(b, t);
		uint32_t end = to - at > BENCH_CHUNK ? at + BENCH_CHUNK : to;
		struct bench_pass c;
		int rc = -1;

		bench_clock_set(b, clock);
		if (l != NULL)
			rc = bench_loop_pass(l, BENCH_NG, at, end, &c);
		bench_loop_free(l);
		if (rc != 0)
			return -1;
		p->frames += c.frames;
		p->cycles += c.cycles;
		p->answers_in += c.answers_in;
		p->syns_out += c.syns_out;
	}
	if (what != NULL)
		printf("FILL capacity %s frames=%" PRIu64 " per_s=%.0f refused=%" PRIu64
		    " answers_accepted=%" PRIu64 " syns_forwarded=%" PRIu64 " bindings=%" PRIu64
		    " flows=%" PRIu64 "\n", what, p->frames, bench_rate(p->frames, p->cycles),
		    bench_refused(b) - refused, p->answers_in, p->syns_out,
		    bench_count(b, DP_CNT_BINDINGS, 0), bench_count(b, DP_CNT_FLOWS, 0));
	return 0;
}

/*
 * The fill's flows at second clock, then touched again group by group (touch: group 1's
 * SYNs, group 2's, ...), a second apart: entry i's last second is clock + i % BENCH_GROUPS,
 * so each second later one interleaved group goes idle. *clock: the second reached;
 * *open_per_s: the fill's rate, a new flow a SYN.
 */
static int
bench_cap_flows(struct bench *b, const struct bench_trace *syn,
    const struct bench_trace *touch, uint64_t *clock, double *open_per_s)
{
	struct bench_pass p;
	uint32_t from = 0;

	if (bench_cap_fill(b, syn, 0, syn->n, *clock, "flows", &p) != 0)
		return -1;
	*open_per_s = bench_rate(p.frames, p.cycles);
	for (uint32_t g = 1; g < BENCH_GROUPS && g < syn->n; g++) {
		uint32_t size = (syn->n - g + BENCH_GROUPS - 1) / BENCH_GROUPS;

		if (bench_cap_fill(b, touch, from, from + size, *clock + g, NULL, &p) != 0)
			return -1;
		from += size;
	}
	*clock += BENCH_GROUPS - 1;
	return 0;
}

/* The touch trace: the fill's SYNs again, group 1's, then group 2's, ... */
static int
bench_cap_touch_trace(struct bench_trace *t, uint32_t n)
{
	for (uint32_t g = 1; g < BENCH_GROUPS; g++)
		if (bench_cap_syn_trace(t, n, 40000, g, BENCH_GROUPS) != 0)
			return -1;
	return 0;
}

/* The full table's RESULT lines; -1 when it did not stay full. */
static int
bench_cap_report(struct bench *b, const struct bench_sustain *r, uint64_t refused,
    uint64_t start_clock)
{
	printf("SUSTAIN capacity seconds=%.2f offered=%" PRIu64 " admitted=%" PRIu64
	    " refused=%" PRIu64 " flow_limit_total=%" PRIu64 " flows=%" PRIu64
	    " groups_aged=%" PRIu64 "\n", r->seconds, r->offered, r->admitted,
	    bench_refused(b) - refused, bench_count(b, DP_CNT_BLOCKED, DP_REASON_FLOW_LIMIT),
	    bench_count(b, DP_CNT_FLOWS, 0), r->clock - start_clock + 1);
	printf("RESULT conn_rate_full_table=%.0f\n", (double)r->admitted / r->seconds);
	printf("RESULT capacity_offered_per_s=%.0f\n", (double)r->offered / r->seconds);
	printf("RESULT full_table_occupancy_start=%.4f\n", r->occ_start);
	printf("RESULT full_table_occupancy_end=%.4f\n", r->occ_end);
	printf("RESULT full_table_occupancy_min=%.4f\n", r->occ_min);
	if (r->occ_min >= BENCH_MIN_OCCUPANCY)
		return 0;
	fprintf(stderr, "bench_full capacity: the flow table fell to %.1f %% full (under %.0f "
	    "%%): conn_rate_full_table did not measure a full table\n", 100 * r->occ_min,
	    100 * BENCH_MIN_OCCUPANCY);
	return -1;
}

/* Frames [from, to) of t in a random order: a table's flows are not met in entry order. */
static void
bench_cap_shuffle(struct bench_trace *t, uint32_t from, uint32_t to)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL;

	for (uint32_t i = to; i > from + 1; i--) {
		uint32_t j = from + bench_rnd(&rng) % (i - from);
		struct bench_frame f = t->f[i - 1];

		t->f[i - 1] = t->f[j];
		t->f[j] = f;
	}
}

/*
 * The least ns per packet of t's frames [from, to) through the worker at second clock,
 * BENCH_SCALE_FLOWS at a time: the pieces are alike, and the least is the one no
 * neighbour's process interrupted. -1 if a SYN was not sent.
 */
static int
bench_cap_least(struct bench *b, const struct bench_trace *t, uint32_t from, uint32_t to,
    uint64_t clock, double *least)
{
	struct bench_pass p;

	for (uint32_t at = from; at < to; at += BENCH_SCALE_FLOWS) {
		uint32_t end = to - at > BENCH_SCALE_FLOWS ? at + BENCH_SCALE_FLOWS : to;
		double ns;

		if (bench_cap_fill(b, t, at, end, clock, NULL, &p) != 0 || p.syns_out != p.frames)
			return -1;
		ns = 1e9 / bench_rate(p.frames, p.cycles);
		if (*least == 0 || ns < *least)
			*least = ns;
	}
	return 0;
}

/*
 * flows_1m_vs_1k_poll: what a million flows in the table cost a packet through the whole
 * worker, dp_worker_poll() timed. The fill's SYNs again (retransmissions of live flows:
 * looked up, tracked, sent on), each group at the second it was last touched in (clock:
 * group 0's), so that the idle time of every flow stays what the sustain expects. 1 m:
 * every flow once, group by group, each group in a random order; 1 k: group 0's first
 * 1,024 (near, 30 entries apart: a little dearer than a table of 1 k), as many times;
 * each the least over pieces of 1,024 packets. Alternating rounds, the median of the
 * per-round ratios and their spread. The touch trace is shuffled here (its groups' sets
 * stay as they were).
 */
static int
bench_cap_poll_scale(struct bench *b, struct bench_trace *g0, const struct bench_trace *near,
    struct bench_trace *touch, uint64_t clock)
{
	double ns[2][BENCH_SCALE_ROUNDS] = { { 0 } }, ratio[BENCH_SCALE_ROUNDS], median;
	uint32_t n = g0->n + touch->n, from = 0;	/* the fill's flows */

	bench_cap_shuffle(g0, 0, g0->n);
	for (uint32_t g = 1; g < BENCH_GROUPS; g++) {
		uint32_t size = (n - g + BENCH_GROUPS - 1) / BENCH_GROUPS;

		bench_cap_shuffle(touch, from, from + size);
		from += size;
	}
	for (unsigned int r = 0; r < BENCH_SCALE_ROUNDS; r++) {
		from = 0;
		for (uint32_t i = 0; i < n; i += BENCH_SCALE_FLOWS)
			if (bench_cap_least(b, near, 0, near->n, clock, &ns[0][r]) != 0)
				return -1;
		if (bench_cap_least(b, g0, 0, g0->n, clock, &ns[1][r]) != 0)
			return -1;
		for (uint32_t g = 1; g < BENCH_GROUPS; g++) {	/* as bench_cap_flows cut them */
			uint32_t size = (n - g + BENCH_GROUPS - 1) / BENCH_GROUPS;

			if (from + size > touch->n ||
			    bench_cap_least(b, touch, from, from + size, clock + g, &ns[1][r]) != 0)
				return -1;
			from += size;
		}
		ratio[r] = ns[1][r] / ns[0][r];
	}
	median = bench_median(ratio, BENCH_SCALE_ROUNDS);	/* sorted: the spread is its ends */
	printf("INFO flows_1m_vs_1k_poll median ns per packet: 1k %.1f, 1m %.1f; ratio spread "
	    "%.2f-%.2f over %d rounds\n", bench_median(ns[0], BENCH_SCALE_ROUNDS),
	    bench_median(ns[1], BENCH_SCALE_ROUNDS), ratio[0], ratio[BENCH_SCALE_ROUNDS - 1],
	    BENCH_SCALE_ROUNDS);
	printf("RESULT flows_1m_vs_1k_poll=%.2f\n", median);
	printf("INFO goal: flows_1m_vs_1k_poll <= 2.0%s\n", getenv("BENCH_HUGE_DIR") != NULL ? "" :
	    " (4 KiB pages here, no hugepages)");
	return 0;
}

/* Every flow past its timeout, one sweep closing them, against opening one (open_per_s). */
static void
bench_cap_age(struct bench *b, uint64_t clock, double open_per_s)
{
	double ns;
	unsigned int closed;

	bench_clock_set(b, clock);
	closed = bench_age_sweep(b, BENCH_ALL_IDLE_SECONDS, false, &ns);

	printf("RESULT age_flows_aged=%u\n", closed);
	if (closed == 0)
		return;
	printf("RESULT age_ns_per_flow=%.1f\n", ns / closed);
	printf("RESULT age_ns_per_open=%.1f\n", 1e9 / open_per_s);
	printf("RESULT age_vs_open=%.3f\n", ns / closed * open_per_s / 1e9);
}

int
bench_mode_capacity(struct bench *b)
{
	struct bench_trace dns = { 0 }, syn = { 0 }, touch = { 0 }, fresh = { 0 };
	struct bench_trace group0 = { 0 }, near = { 0 };
	struct bench_sustain r = { 0 };
	struct bench_pass p;
	uint64_t refused, start_clock;
	double open_per_s = 0;
	uint32_t n = b->instr ? 4096 : BENCH_CAP;
	int rc = -1;

	bench_mem("before_setup", false);
	if (bench_cap_from_vm0(b) != 0 ||
	    bench_cap_dns_trace(&dns, n) != 0 || bench_cap_syn_trace(&syn, n, 40000, 0, 1) != 0 ||
	    bench_cap_touch_trace(&touch, n) != 0 ||
	    bench_cap_syn_trace(&fresh, 65536, 0, 0, 1) != 0 ||
	    bench_cap_syn_trace(&group0, n, 40000, 0, BENCH_GROUPS) != 0 ||
	    bench_cap_syn_trace(&near, BENCH_SCALE_FLOWS * BENCH_GROUPS, 40000, 0,
	    BENCH_GROUPS) != 0)
		goto out;
	bench_mem("traces_built", false);
	if (bench_start(b, "\"fill.bench.test\"", "\"1.1.1.1\"", "  max_flows: 1048576\n"
	    "  max_flows_per_vm: 1048576\n  max_bindings: 1048576\n  max_bindings_per_vm: 1048576\n",
	    "2048") != 0)
		goto out;
	bench_mem("after_setup", true);
	r.clock = dp_now(&b->ctx);
	if (bench_cap_fill(b, &dns, 0, dns.n, r.clock, "bindings", &p) != 0)
		goto out;
	bench_mem("bindings_filled", true);
	if (bench_cap_flows(b, &syn, &touch, &r.clock, &open_per_s) != 0)
		goto out;
	bench_mem("flows_filled", true);
	printf("INFO capacity max_flows=%u max_bindings=%u bindings=%" PRIu64 " flows=%" PRIu64
	    "\n", BENCH_CAP, BENCH_CAP, bench_count(b, DP_CNT_BINDINGS, 0),
	    bench_count(b, DP_CNT_FLOWS, 0));
	if (!b->instr && bench_cap_poll_scale(b, &group0, &near, &touch,
	    r.clock - (BENCH_GROUPS - 1)) != 0) {
		fprintf(stderr, "bench_full capacity: a live flow's SYN was not sent again\n");
		goto out;
	}
	refused = bench_refused(b);
	start_clock = ++r.clock;	/* the first group goes idle */
	if (bench_sustain(b, &fresh, BENCH_SUSTAIN_SECONDS, n / BENCH_GROUPS, &r) != 0)
		goto out;
	bench_counters(b, "capacity", stdout);
	bench_mem("end", true);
	rc = bench_cap_report(b, &r, refused, start_clock);
	bench_cap_age(b, r.clock, open_per_s);
out:
	bench_close(b);
	bench_trace_free(&dns);
	bench_trace_free(&syn);
	bench_trace_free(&touch);
	bench_trace_free(&fresh);
	bench_trace_free(&group0);
	bench_trace_free(&near);
	return rc;
}
