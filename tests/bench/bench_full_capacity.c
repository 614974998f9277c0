/*
 * bench_full capacity: max_flows and max_bindings at 1,048,576. Fills the binding table
 * through DNS answers (one VM resolving fill.bench.test to a new address each time, every
 * answer carrying the ID namegate gave its query) and the flow table through SYNs to those
 * addresses, timing only dp_worker_poll(), and reports memory (RSS and rte_malloc's heap)
 * before and after, and what was refused while filling. Then the clock moves 60 s on (as
 * fuzz_dp_frame does, by moving ctx->tsc_start back): the SYN flows are idle past their
 * 30 s timeout, the bindings (TTL 3600) still live. The worker then runs its real loop
 * (dp_worker_loop(), housekeeping and aging included) on its own lcore while this thread
 * offers new connections for a few seconds: RESULT conn_rate_full_table is the SYNs it
 * admitted per second. No hugepages here: plain pages (--no-huge), said in the output.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "api/dp_counters.h"
#include "bench_full.h"
#include "dp_evt.h"
#include "dp_worker.h"
#include "sni/frame.h"
#include "sni/pkt.h"

#define BENCH_CAP		1048576u
#define BENCH_SUSTAIN_SECONDS	5
#define BENCH_IDLE_JUMP_SECONDS	31	/* past a SYN-only flow's idle timeout (30 s) */
#define BENCH_IDLE_SECONDS	60	/* past a SYN flow's idle timeout (30 s), not a binding's */

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

/* n SYNs from vm0, one to each bound address, from source port sport. */
static int
bench_cap_syn_trace(struct bench_trace *t, uint32_t n, uint16_t sport)
{
	uint8_t frame[sizeof(bench_cap_tmpl)];

	for (uint32_t i = 0; i < n; i++) {
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

/* One fill: the trace through the worker, and what it cost and refused. */
static int
bench_cap_fill(struct bench *b, const struct bench_trace *t, const char *what,
    struct bench_pass *p)
{
	struct bench_loop *l = bench_loop_new(b, t);
	uint64_t refused = bench_refused(b);
	int rc = l != NULL ? bench_loop_pass(l, false, 0, t->n, p) : -1;

	bench_loop_free(l);
	if (rc == 0)
		printf("FILL capacity %s frames=%" PRIu64 " per_s=%.0f refused=%" PRIu64
		    " answers_accepted=%" PRIu64 " syns_forwarded=%" PRIu64 " bindings=%" PRIu64
		    " flows=%" PRIu64 "\n", what, p->frames, bench_rate(p->frames, p->cycles),
		    bench_refused(b) - refused, p->answers_in, p->syns_out,
		    bench_count(b, DP_CNT_BINDINGS, 0), bench_count(b, DP_CNT_FLOWS, 0));
	return rc;
}

/*
 * The real worker loop on its lcore, this thread offering SYNs (t's, ports moved each time
 * round) as fast as the ring takes them, for BENCH_SUSTAIN_SECONDS. Admitted: SYNs that
 * left by the uplink. Every quarter second the clock jumps BENCH_IDLE_JUMP_SECONDS, so the
 * table stays full and its flows keep going idle: admitting a SYN means reclaiming one.
 */
static int
bench_cap_sustain(struct bench *b, const struct bench_trace *t, uint64_t *admitted,
    uint64_t *offered, double *seconds)
{
	unsigned int lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	uint64_t start, end, jumped, hz = rte_get_tsc_hz();
	uint32_t i = 0, round = 1;

	rte_rcu_qsbr_thread_offline(b->ctx.qsbr, 0);
	rte_rcu_qsbr_thread_unregister(b->ctx.qsbr, 0);
	if (lcore >= RTE_MAX_LCORE || rte_eal_remote_launch(dp_worker_loop, b->w, lcore) != 0)
		return -1;
	start = rte_get_tsc_cycles();
	end = start + BENCH_SUSTAIN_SECONDS * hz;
	jumped = start;
	*admitted = *offered = 0;
	while (rte_get_tsc_cycles() < end) {
		struct rte_mbuf *m[BENCH_BURST];
		struct dp_evt e[64];
		unsigned int n, sent;

		/* the table stays full: what was admitted a quarter second ago is idle now */
		if (rte_get_tsc_cycles() - jumped >= hz / 4) {
			jumped = rte_get_tsc_cycles();
			b->ctx.tsc_start -= BENCH_IDLE_JUMP_SECONDS * hz;
		}

		for (n = 0; n < BENCH_BURST; n++, i++) {
			const struct bench_frame *f;
			uint16_t port;

			if (i == t->n) {
				i = 0;
				round++;
			}
			f = &t->f[i];
			if ((m[n] = rte_pktmbuf_alloc(b->pool)) == NULL)
				break;
			memcpy(rte_pktmbuf_mtod(m[n], uint8_t *), f->data, f->len);
			m[n]->data_len = f->len;
			m[n]->pkt_len = f->len;
			port = (uint16_t)(2048 + round % 60000);	/* a new 5-tuple each round */
			rte_pktmbuf_mtod(m[n], uint8_t *)[34] = (uint8_t)(port >> 8);
			rte_pktmbuf_mtod(m[n], uint8_t *)[35] = (uint8_t)port;
			frame_tcp_csum_set(rte_pktmbuf_mtod(m[n], uint8_t *) + 14, 4,
			    rte_pktmbuf_mtod(m[n], uint8_t *) + 34, 20);
		}
		sent = rte_ring_enqueue_burst(b->rx[BENCH_VM], (void **)m, n, NULL);
		*offered += sent;
		rte_pktmbuf_free_bulk(m + sent, n - sent);	/* the worker is behind */
		for (int s = 0; s < 2; s++)
			while ((n = rte_ring_dequeue_burst(b->tx[s], (void **)m, BENCH_BURST,
			    NULL)) > 0) {
				*admitted += s == BENCH_UP ? n : 0;
				rte_pktmbuf_free_bulk(m, n);
			}
		while (dp_evt_drain(b->w, e, 64) > 0)
			;
	}
	*seconds = (double)(rte_get_tsc_cycles() - start) / (double)hz;
	atomic_store_explicit(&b->w->stop, true, memory_order_relaxed);
	rte_eal_wait_lcore(lcore);
	return 0;
}

int
bench_mode_capacity(struct bench *b)
{
	struct bench_trace dns = { 0 }, syn = { 0 }, fresh = { 0 };
	struct bench_pass p;
	uint64_t admitted, offered, refused;
	double seconds;
	uint32_t n = b->instr ? 4096 : BENCH_CAP;
	int rc = -1;

	puts("INFO capacity no hugepages on this machine: EAL --no-huge, 4 KiB pages");
	bench_mem("before_setup", false);
	if (bench_vm0(b->traffic, bench_cap_tmpl + 6, bench_cap_tmpl + 26) != 0 ||
	    bench_cap_dns_trace(&dns, n) != 0 || bench_cap_syn_trace(&syn, n, 40000) != 0 ||
	    bench_cap_syn_trace(&fresh, 65536, 0) != 0)
		goto out;
	bench_mem("traces_built", false);
	if (bench_start(b, "\"fill.bench.test\"", "\"1.1.1.1\"", "  max_flows: 1048576\n"
	    "  max_flows_per_vm: 1048576\n  max_bindings: 1048576\n  max_bindings_per_vm: 1048576\n",
	    "2048") != 0)
		goto out;
	bench_mem("after_setup", true);
	if (bench_cap_fill(b, &dns, "bindings", &p) != 0)
		goto out;
	bench_mem("bindings_filled", true);
	if (bench_cap_fill(b, &syn, "flows", &p) != 0)
		goto out;
	bench_mem("flows_filled", true);
	printf("INFO capacity max_flows=%u max_bindings=%u bindings=%" PRIu64 " flows=%" PRIu64
	    "\n", BENCH_CAP, BENCH_CAP, bench_count(b, DP_CNT_BINDINGS, 0),
	    bench_count(b, DP_CNT_FLOWS, 0));
	b->ctx.tsc_start -= BENCH_IDLE_SECONDS * b->ctx.tsc_hz;
	refused = bench_refused(b);
	if (bench_cap_sustain(b, &fresh, &admitted, &offered, &seconds) != 0)
		goto out;
	printf("SUSTAIN capacity seconds=%.2f offered=%" PRIu64 " admitted=%" PRIu64
	    " refused=%" PRIu64 " flow_limit_total=%" PRIu64 " flows=%" PRIu64 "\n", seconds,
	    offered, admitted, bench_refused(b) - refused,
	    bench_count(b, DP_CNT_BLOCKED, DP_REASON_FLOW_LIMIT), bench_count(b, DP_CNT_FLOWS, 0));
	bench_counters(b, "capacity", stdout);
	bench_mem("end", true);
	printf("RESULT conn_rate_full_table=%.0f\n", (double)admitted / seconds);
	printf("RESULT capacity_offered_per_s=%.0f\n", (double)offered / seconds);
	rc = 0;
out:
	bench_close(b);
	bench_trace_free(&dns);
	bench_trace_free(&syn);
	bench_trace_free(&fresh);
	return rc;
}
