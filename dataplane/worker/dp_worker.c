/*
 * The worker loop. No allocation, lock, syscall or log in here: counters only.
 */
#include <stdio.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "dp_ask.h"
#include "dp_budget.h"
#include "dp_burst.h"
#include "dp_dns.h"
#include "dp_dns_ask.h"
#include "dp_dns_pending.h"
#include "dp_dns_budget.h"
#include "dp_evt.h"
#include "dp_flow.h"
#include "dp_flowlog.h"
#include "dp_frag.h"
#include "dp_ha_adopt.h"
#include "dp_ha_gate.h"
#include "dp_hold.h"
#include "dp_mem.h"
#include "dp_out.h"
#include "dp_tls.h"
#include "dp_worker.h"

#define DP_HOUSEKEEPING_EVERY	256
#define DP_IDLE_SPINS		1024	/* empty polls before the first nap: a burst gap is shorter */
#define DP_AGE_SLICE		64	/* table entries examined per housekeeping round, at least */
#define DP_AGE_PASS_SECONDS	2	/* and enough for a whole flow table pass in this time */
/* a whole-path fuzzer builds with small tables, so that forgetting one input is cheap */
#ifndef DP_PENDING_CAP
#define DP_PENDING_CAP		16384	/* DNS queries in flight per worker */
#endif
_Static_assert(DP_PENDING_CAP <= UINT16_MAX, "a question's count (dp_pending_vm) wraps");
#ifndef DP_HOLD_SLOTS
#define DP_HOLD_SLOTS		256	/* connections whose ClientHello is being held */
#endif
#ifndef DP_FRAG_SLOTS
#define DP_FRAG_SLOTS		DP_FRAG_SLOTS_DEFAULT	/* datagrams in reassembly */
#endif
#define DP_FRAG_SECONDS		5	/* for a datagram's fragments to arrive */

/* An idle flow's held bytes go back to the pool before the flow does. */
static void
dp_worker_unhold(struct dp_flow *f, void *arg)
{
	struct dp_worker *w = arg;

	dp_hold_put(w, &f->hold);
	dp_hold_put(w, &f->peer_hold);
}

/*
 * A flow closes: its end to the HA peer if the pair knows it, and its record to the flow
 * log if there is one. Registered always (with dp_worker_passed): ha: is known only after
 * the workers are made. The table calls it only for a flow with something to report
 * (dp_flows_on_report()).
 */
static void
dp_worker_closed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg)
{
	struct dp_worker *w = arg;

	if (dp_ha_told(f))
		dp_ha_end(w, f);
	if (w->flow_recs != NULL)
		dp_flowlog_closed(f, a, w);
}

/*
 * Aging passes an open flow: reported again to the HA peer if due, and an interim record
 * to the flow log if there is one and it is due.
 */
static void
dp_worker_passed(struct dp_flow *f, struct dp_flow_acct *a, void *arg)
{
	struct dp_worker *w = arg;

	if (w->ctx->ha)
		dp_ha_refresh(w, f);
	if (w->flow_recs != NULL)
		dp_flowlog_passed(f, a, arg);
}

/* The flow log's ring, and its reports registered with the flow table. */
static int
dp_worker_flowlog(struct dp_worker *w, uint16_t nvms, int socket)
{
	w->flow_recs = dp_flowlog_ring_create(w->id, w->ctx->flow_log_ring, socket);
	w->flowrec_taken = rte_zmalloc_socket("dp_flowrec_taken", (size_t)(nvms + 1) *
	    sizeof(w->flowrec_taken[0]), RTE_CACHE_LINE_SIZE, socket);
	if (w->flow_recs == NULL || w->flowrec_taken == NULL || w->flows == NULL)
		return -1;
	return 0;
}

struct dp_worker *
dp_worker_create(struct dp_ctx *ctx, unsigned int id, unsigned int lcore,
    uint32_t idle_sleep_us, uint16_t nvms)
{
	int socket = (int)rte_lcore_to_socket_id(lcore);
	uint32_t max_flows = 0;
	char name[64];
	struct dp_worker *w;

	if ((w = rte_zmalloc_socket("dp_worker", sizeof(*w), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	w->id = id;
	w->lcore = lcore;
	w->ctx = ctx;
	w->gen = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	w->idle_sleep_us = idle_sleep_us;
	max_flows = ctx->max_flows / ctx->nworkers;
	snprintf(name, sizeof(name), "ng_flows_%u", id);
	w->flows = dp_flows_create(name, max_flows ? max_flows : 1, nvms, socket);
	if (w->flows != NULL) {
		dp_flows_on_release(w->flows, dp_worker_unhold, w);
		dp_flows_on_report(w->flows, dp_worker_closed, dp_worker_passed, w,
		    ctx->flow_log_ring > 0);
	}
	snprintf(name, sizeof(name), "ng_pending_%u", id);
	w->pending = dp_pending_create(name, DP_PENDING_CAP, nvms, socket);
	w->holds = dp_holds_create(DP_HOLD_SLOTS, nvms, socket);
	w->dns_scratch = rte_malloc_socket("dp_dns_scratch", DP_DNS_SCRATCH, 0, socket);
	w->name_budget = dp_name_budget_create(nvms, socket);
	if ((w->ask = rte_zmalloc_socket("dp_ask", sizeof(*w->ask), RTE_CACHE_LINE_SIZE,
	    socket)) != NULL)
		dp_ask_init(w->ask);
	w->frags = dp_frags_create(id, DP_FRAG_SLOTS, w->gen->max_frags_per_vm,
	    DP_FRAG_SECONDS, ctx->pool, socket);
	w->evts = dp_evt_ring_create("evt", id, socket);
	w->bind_evts = dp_evt_ring_create("bind", id, socket);
	w->peer_names = dp_evt_ring_create("peer", id, socket);
	snprintf(name, sizeof(name), "ng_slow_out_%u", id);
	w->slow_out = rte_ring_create(name, DP_SLOW_RING, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ng_slow_back_%u", id);
	w->slow_back = rte_ring_create(name, DP_SLOW_RING, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ng_ha_in_%u", id);
	w->ha_in = rte_ring_create(name, DP_HA_RING, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->vm_stats = rte_zmalloc_socket("dp_vm_stats", (size_t)(nvms + 1) * sizeof(w->vm_stats[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	w->bind_taken = rte_zmalloc_socket("dp_bind_taken", (size_t)(nvms + 1) *
	    sizeof(w->bind_taken[0]), RTE_CACHE_LINE_SIZE, socket);
	if (ctx->flow_log_ring > 0 && dp_worker_flowlog(w, nvms, socket) != 0) {
		dp_worker_free(w);
		return NULL;
	}
	w->budget_cells = rte_zmalloc_socket("dp_budget_cells", (size_t)(nvms + 1) *
	    DP_BUDGETS_MAX * sizeof(w->budget_cells[0]), RTE_CACHE_LINE_SIZE, socket);
	if (w->flows == NULL || w->pending == NULL || w->holds == NULL || w->frags == NULL ||
	    w->dns_scratch == NULL || w->name_budget == NULL || w->ask == NULL ||
	    w->evts == NULL || w->bind_evts == NULL || w->peer_names == NULL ||
	    w->vm_stats == NULL ||
	    w->bind_taken == NULL || w->budget_cells == NULL || w->slow_out == NULL ||
	    w->slow_back == NULL || w->ha_in == NULL) {
		dp_worker_free(w);
		return NULL;
	}
	return w;
}

uint64_t
dp_worker_mem(uint32_t max_flows, uint16_t nvms, unsigned int flow_log_ring)
{
	struct dp_worker *w = NULL;

	return (flow_log_ring > 0 ? dp_flowlog_ring_mem(flow_log_ring) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(w->flowrec_taken[0])) : 0) +
	    dp_mem_alloc(sizeof(*w)) + dp_flows_mem(max_flows ? max_flows : 1, nvms) +
	    dp_pending_mem(DP_PENDING_CAP, nvms) + dp_holds_mem(DP_HOLD_SLOTS, nvms) +
	    dp_mem_alloc(DP_DNS_SCRATCH) + dp_name_budget_mem(nvms) +
	    dp_mem_alloc(sizeof(*w->ask)) + dp_frags_mem(DP_FRAG_SLOTS) +
	    3 * dp_mem_ring(DP_EVT_RING, sizeof(struct dp_evt)) +
	    2 * dp_mem_ring(DP_SLOW_RING, sizeof(void *)) + dp_mem_ring(DP_HA_RING, sizeof(void *)) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(w->vm_stats[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(w->bind_taken[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * DP_BUDGETS_MAX * sizeof(w->budget_cells[0]));
}

/* Free a ring of mbufs with what it still holds. */
static void
dp_worker_ring_empty(struct rte_ring *r)
{
	void *m;

	if (r == NULL)
		return;
	while (rte_ring_dequeue(r, &m) == 0)
		dp_out_free(m);
	rte_ring_free(r);
}

void
dp_worker_free(struct dp_worker *w)
{
	if (w == NULL)
		return;
	rte_ring_free(w->evts);
	rte_ring_free(w->bind_evts);
	rte_ring_free(w->peer_names);
	rte_ring_free(w->flow_recs);
	rte_free(w->flowrec_taken);
	dp_worker_ring_empty(w->slow_out);
	dp_worker_ring_empty(w->slow_back);
	dp_worker_ring_empty(w->ha_in);
	dp_holds_free(w->holds);
	rte_free(w->dns_scratch);
	dp_name_budget_free(w->name_budget);
	dp_dns_ask_flush(w);
	rte_free(w->ask);
	dp_frags_free(w->frags);
	dp_flows_free(w->flows);
	dp_pending_free(w->pending);
	rte_free(w->vm_stats);
	rte_free(w->bind_taken);
	rte_free(w->budget_cells);
	rte_free(w);
}

/*
 * A burst from port (a constant: inline in the poll, each port's stage called directly,
 * not through a pointer), through its stages whole.
 */
static __rte_always_inline uint16_t
dp_worker_rx_burst(struct dp_worker *w, unsigned int port)
{
	struct rte_mbuf *pkts[DP_BURST];
	uint16_t n = rte_eth_rx_burst(w->ctx->port[port], (uint16_t)w->id, pkts, DP_BURST), k = n;

	if (unlikely(w->ctx->ha) && n > 0)	/* the pair's beacons out, before any judgement */
		k = dp_ha_take_beacons(w, pkts, n, port);
	if (k == 0 || !dp_ha_gate(w, pkts, k, port))
		return n;
	if (port == DP_PORT_VM)
		dp_burst_vm(w, pkts, k);
	else
		dp_burst_uplink(w, pkts, k);
	return n;
}

/* What the kernel let through, from the main lcore (which reads the TAPs): on it goes. */
static unsigned int
dp_slow_back(struct dp_worker *w)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(w->slow_back, (void **)pkts, DP_BURST, NULL);

	for (unsigned int i = 0; i < n; i++)
		dp_out_from_kernel(w, pkts[i], pkts[i]->port);
	return n;
}

unsigned int
dp_worker_poll(struct dp_worker *w)
{
	uint64_t tsc = rte_get_tsc_cycles();
	unsigned int n;

	if (unlikely(w->ctx->ha_stall_tsc != 0 && tsc - w->now_tsc > w->ctx->ha_stall_tsc) &&
	    w->now_tsc != 0)
		dp_ha_stalled(w, tsc - w->now_tsc);	/* shut before this poll's frames */
	w->now_tsc = tsc;
	w->now = (w->now_tsc - w->ctx->tsc_start) / w->ctx->tsc_hz;
	n = dp_worker_rx_burst(w, DP_PORT_VM);
	n += dp_worker_rx_burst(w, DP_PORT_UPLINK);
	if (w->ctx->slow_path || w->ctx->ha)	/* the kernel's frames, and a takeover's */
		n += dp_slow_back(w);
	dp_tx_flush(w);
	return n;
}

/*
 * Nothing came for DP_IDLE_SPINS polls: nap, 1 us at first and twice as long each time
 * nothing comes, up to idle_sleep_us. One frame ends it, so under load a worker never
 * sleeps, and an idle one costs a few percent of a core instead of all of it; the first
 * frame after idle waits at most idle_sleep_us (and the kernel's timer slack). Before each
 * nap the worker reports a quiescent state, so a reload never waits on a sleeper.
 */
static void
dp_worker_idle(struct dp_worker *w, unsigned int got)
{
	struct timespec ts;

	if (got != 0 || w->idle_sleep_us == 0 || w->nap_us == 0) {
		w->idle_polls = 0;
		w->nap_us = 1;
		return;
	}
	if (++w->idle_polls < DP_IDLE_SPINS)
		return;
	/* quiescent means no old generation is held: so take the current one, as housekeeping does */
	rte_rcu_qsbr_quiescent(w->ctx->qsbr, w->id);
	w->gen = atomic_load_explicit(&w->ctx->gen, memory_order_acquire);
	ts = (struct timespec){ .tv_sec = 0, .tv_nsec = (long)w->nap_us * 1000 };
	nanosleep(&ts, NULL);
	w->nap_us = w->nap_us * 2 > w->idle_sleep_us ? w->idle_sleep_us : w->nap_us * 2;
}

/* A datagram whose fragments did not all arrive in time. */
static void
dp_worker_frag_expired(void *arg, uint16_t vm, uint32_t nb_frags)
{
	struct dp_worker *w = arg;

	(void)vm;
	w->drops[DP_DROP_FRAG_TIMEOUT] += nb_frags;
}


/*
 * Flow table entries to examine this round: in proportion to the time since the last, so
 * that a pass over the whole table takes DP_AGE_PASS_SECONDS however large it is, and a
 * flow is closed within that of going idle. (What opens into a full table reclaims on its
 * own, dp_flow_open, within the same budget again.)
 */
static unsigned int
dp_worker_age_budget(struct dp_worker *w, uint64_t *aged_tsc)
{
	uint64_t now = rte_get_tsc_cycles(), cap = dp_flows_cap(w->flows);
	uint64_t per_pass = DP_AGE_PASS_SECONDS * w->ctx->tsc_hz;
	uint64_t n = now - *aged_tsc >= per_pass ? cap : (now - *aged_tsc) * cap / per_pass;

	if (n < DP_AGE_SLICE)
		return DP_AGE_SLICE;
	*aged_tsc = now;
	return n > cap ? (unsigned int)cap : (unsigned int)n;
}

int
dp_worker_loop(void *arg)
{
	struct dp_worker *w = arg;
	struct rte_rcu_qsbr *qsbr = w->ctx->qsbr;
	unsigned int spins = 0;
	uint64_t aged_tsc = rte_get_tsc_cycles();

	rte_rcu_qsbr_thread_register(qsbr, w->id);
	rte_rcu_qsbr_thread_online(qsbr, w->id);
	/*
	 * The generation in force now, not the one the worker was made with: one put out
	 * before the launch (the grants file, the fleet's cache) freed that one at once,
	 * since no worker was online to hold it.
	 */
	w->gen = atomic_load_explicit(&w->ctx->gen, memory_order_acquire);
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		dp_worker_idle(w, dp_worker_poll(w));
		if (++spins < DP_HOUSEKEEPING_EVERY)
			continue;
		spins = 0;
		/* Nothing old is referenced past here, so retired entries may be reused. */
		rte_rcu_qsbr_quiescent(qsbr, w->id);
		w->gen = atomic_load_explicit(&w->ctx->gen, memory_order_acquire);
		dp_flows_age(w->flows, w->now, dp_worker_age_budget(w, &aged_tsc), NULL, w->gen,
		    dp_worker_unhold, w);
		dp_pending_age(w->pending, w->now, DP_AGE_SLICE);
		dp_dns_ask_sweep(w);
		dp_dns_budget_peer(w);
		dp_tls_expire(w);
		dp_frag_age(w->frags, w->now, DP_AGE_SLICE, dp_worker_frag_expired, w);
	}
	rte_rcu_qsbr_thread_offline(qsbr, w->id);
	rte_rcu_qsbr_thread_unregister(qsbr, w->id);
	return 0;
}

void
dp_worker_ask_deny(struct dp_worker *w, uint32_t slot, uint64_t seq)
{
	dp_ask_deny(w->ask, slot, seq);
}
