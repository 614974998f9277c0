/*
 * bench_full capacity's second half (see bench_full_capacity.c): the worker's real loop
 * admitting new connections into a full flow table, the bench moving the clock only as
 * fast as the table refills, and the sweep that ages flows out, timed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#ifdef BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(what)
#endif

#include "api/dp_counters.h"
#include "bench_full.h"
#include "dp_evt.h"
#include "dp_flow.h"
#include "dp_flowlog_out.h"
#include "dp_worker.h"
#include "sni/frame.h"

#define BENCH_SAMPLE_EVERY	256	/* bursts between occupancy samples */

/*
 * The worker's clock (dp_now()) reads second s, half a second in: the bench sets it again
 * before each step, so the seconds it takes in real time age nothing.
 */
void
bench_clock_set(struct bench *b, uint64_t s)
{
	b->ctx.tsc_start = rte_get_tsc_cycles() - s * b->ctx.tsc_hz - b->ctx.tsc_hz / 2;
}

/* The flow table's occupancy now: its flows over its room. */
static double
bench_occupancy(const struct bench *b)
{
	return (double)bench_count(b, DP_CNT_FLOWS, 0) / (double)dp_flows_cap(b->w->flows);
}

/* A burst of t's SYNs from *i on, the source port moved each time round (a new 5-tuple). */
static unsigned int
bench_sustain_burst(struct bench *b, const struct bench_trace *t, uint32_t *i, uint32_t *round,
    struct rte_mbuf **m)
{
	unsigned int n;

	for (n = 0; n < BENCH_BURST; n++, (*i)++) {
		const struct bench_frame *f;
		uint8_t *d;
		uint16_t port;

		if (*i == t->n) {
			*i = 0;
			(*round)++;
		}
		f = &t->f[*i];
		if ((m[n] = rte_pktmbuf_alloc(b->pool)) == NULL)
			break;
		d = rte_pktmbuf_mtod(m[n], uint8_t *);
		memcpy(d, f->data, f->len);
		m[n]->data_len = f->len;
		m[n]->pkt_len = f->len;
		port = (uint16_t)(2048 + *round % 60000);
		d[34] = (uint8_t)(port >> 8);
		d[35] = (uint8_t)port;
		frame_tcp_csum_set(d + 14, 4, d + 34, 20);
	}
	return n;
}

/* What left the ports since, freed; the SYNs that left by the uplink (admitted). */
static uint64_t
bench_sustain_drain(struct bench *b)
{
	struct rte_mbuf *m[BENCH_BURST];
	struct dp_evt e[64];
	uint64_t up = 0;
	unsigned int n;

	for (int s = 0; s < 2; s++)
		while ((n = rte_ring_dequeue_burst(b->tx[s], (void **)m, BENCH_BURST, NULL)) > 0) {
			up += s == BENCH_UP ? n : 0;
			rte_pktmbuf_free_bulk(m, n);
		}
	while (dp_evt_drain(b->w, e, 64) > 0)
		;
	return up;
}

/*
 * The real worker loop on its lcore, this thread offering t's SYNs as fast as the ring
 * takes them, for seconds. The clock starts at r->clock and moves a second on each time
 * group new flows were admitted: one more group of the fill's flows goes idle as the one
 * before has been replaced. Admitted: SYNs that left by the uplink.
 */
int
bench_sustain(struct bench *b, const struct bench_trace *t, unsigned int seconds,
    uint32_t group, struct bench_sustain *r)
{
	unsigned int lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	uint64_t start, end, hz = rte_get_tsc_hz(), since = 0, bursts = 0;
	uint32_t i = 0, round = 1;

	r->admitted = r->offered = 0;
	r->occ_start = r->occ_min = bench_occupancy(b);
	bench_clock_set(b, r->clock);
	rte_rcu_qsbr_thread_offline(b->ctx.qsbr, 0);
	rte_rcu_qsbr_thread_unregister(b->ctx.qsbr, 0);
	if (lcore >= RTE_MAX_LCORE || rte_eal_remote_launch(dp_worker_loop, b->w, lcore) != 0)
		return -1;
	start = rte_get_tsc_cycles();
	end = start + seconds * hz;
	while (rte_get_tsc_cycles() < end) {
		struct rte_mbuf *m[BENCH_BURST];
		unsigned int n = bench_sustain_burst(b, t, &i, &round, m), sent;
		uint64_t up;

		if (since >= group) {
			since -= group;
			r->clock++;
		}
		bench_clock_set(b, r->clock);
		sent = rte_ring_enqueue_burst(b->rx[BENCH_VM], (void **)m, n, NULL);
		r->offered += sent;
		rte_pktmbuf_free_bulk(m + sent, n - sent);	/* the worker is behind */
		up = bench_sustain_drain(b);
		r->admitted += up;
		since += up;
		if (++bursts % BENCH_SAMPLE_EVERY == 0) {
			double occ = bench_occupancy(b);

			r->occ_min = occ < r->occ_min ? occ : r->occ_min;
		}
	}
	r->seconds = (double)(rte_get_tsc_cycles() - start) / (double)hz;
	atomic_store_explicit(&b->w->stop, true, memory_order_relaxed);
	rte_eal_wait_lcore(lcore);
	r->admitted += bench_sustain_drain(b);
	r->occ_end = bench_occupancy(b);
	r->occ_min = r->occ_end < r->occ_min ? r->occ_end : r->occ_min;
	return 0;
}

/*
 * The clock jump seconds on, then one sweep over the whole table, as housekeeping's
 * slices add up to: dp_flows_age() timed. The flows the benches age hold no bytes (SYNs
 * only, or connections whose hello the server acknowledged), so there is nothing to
 * release. With collect (under callgrind), what was counted so far is dumped first
 * (callgrind's file .1) and the sweep is counted alone. Returns the flows it closed;
 * *ns the nanoseconds it took.
 */
unsigned int
bench_age_sweep(struct bench *b, unsigned int jump, bool collect, double *ns)
{
	struct dp_flows *flows = b->w->flows;
	uint64_t t0, t1;
	unsigned int closed;

	b->ctx.tsc_start -= jump * b->ctx.tsc_hz;
	if (collect) {
		CALLGRIND_DUMP_STATS_AT("before the sweep");
		CALLGRIND_TOGGLE_COLLECT;
	}
	t0 = rte_rdtsc_precise();
	closed = dp_flows_age(flows, dp_now(&b->ctx), dp_flows_cap(flows), NULL, NULL, NULL, NULL);
	if (b->flowlog != NULL)		/* the main lcore's share: the lines written */
		dp_flowlog_out_drain(b->flowlog, &b->ctx, NULL, b->cfg);
	t1 = rte_rdtsc_precise();
	if (collect)
		CALLGRIND_TOGGLE_COLLECT;
	*ns = (double)(t1 - t0) * 1e9 / (double)rte_get_tsc_hz();
	return closed;
}
