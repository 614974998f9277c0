/*
 * bench_full's closed loop. A pass puts a trace's frames on the ports' rx rings, a burst
 * per side at most, and hands them to one dp_worker_poll() (or to a baseline's driver, a
 * burst each way: bench_full_base.c). A burst is filled from a window of the frames not yet
 * sent, in trace order, skipping (to the next burst) a frame that must wait, and with it
 * the rest of its connection: a VM frame whose peer's frame is in the burst (a poll takes
 * the VM port's frames before the uplink's), a VM frame of a VM whose DNS answer is in it
 * (the answer may bind what the frame connects to), an answer whose query has not been
 * forwarded yet. So independent connections share bursts, as they do at line rate, and no
 * connection sees its frames reordered. An answer carries the ID namegate gave its query,
 * and goes to the port namegate sent it from, both read off the uplink's tx ring, as a
 * resolver's would; answers to queries namegate refused
 * are not sent (no resolver saw them). Each pass moves every rotating port (fixing
 * checksums), so a pass opens new flows.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#ifdef BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench_full.h"
#include "dp_evt.h"
#include "dp_worker.h"
#include "sni/frame.h"
#include "sni/pkt.h"

#define BENCH_PORT_STEP	7919	/* a prime: pass k moves a port by k steps, mod 64512 */
#define BENCH_WINDOW	1024	/* frames ahead a burst may take from */
#define BENCH_WAIT_SLOTS	4096	/* the connections waiting for the next burst: a set */

struct bench_loop {
	struct bench *b;
	const struct bench_trace *t;
	uint32_t pass;			/* passes begun: how far ports are rotated */
	enum bench_drv drv;		/* BENCH_NG: namegate's worker, else a baseline */
	struct bench_pass *acc;
	uint16_t *fwd_id;		/* by query: the ID namegate gave it, ... */
	uint16_t *fwd_port;		/* ... the port it sent it from ... */
	uint32_t *fwd_pass;		/* ... in this pass (pass number) */
	uint32_t *qbatch;		/* by query: the batch it is in (batch number) */
	uint8_t *skip;			/* by answer: its query was refused in the last pass */
	uint32_t batch;			/* batches begun */
	struct rte_mbuf *out[2][BENCH_BURST];
	uint16_t nout[2];
	uint32_t upflow[BENCH_BURST];	/* the flows of out[BENCH_UP] ... */
	uint32_t upvm[BENCH_BURST];	/* ... and their VMs, where they are DNS answers */
	uint32_t bq[BENCH_BURST];	/* the queries in this batch */
	uint16_t nbq;
	uint32_t *sent;			/* by frame: the pass it was sent (or passed over) in */
	uint32_t wait_flow[BENCH_WAIT_SLOTS];	/* flows waiting for the next batch ... */
	uint32_t wait_batch[BENCH_WAIT_SLOTS];	/* ... where this is the batch's number */
	uint32_t wait_vm[BENCH_BURST];	/* VMs whose VM-side frames wait: an answer waits */
	uint16_t nwait_vm;
};

static uint16_t
bench_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
bench_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
bench_rotated(uint16_t port, uint32_t pass)
{
	return (uint16_t)(1024 + ((uint32_t)port - 1024 + pass * BENCH_PORT_STEP) % 64512);
}

/* Change the 16-bit word at w to v and patch the TCP or UDP checksum at csum. */
static void
bench_patch16(uint8_t *w, uint16_t v, uint8_t *csum, bool udp)
{
	uint16_t old = bench_rd16(w), c = bench_rd16(csum);

	bench_put16(w, v);
	if (udp && c == 0)
		return;		/* IPv4 UDP without a checksum stays without */
	c = frame_csum_update16(c, old, v);
	bench_put16(csum, udp && c == 0 ? 0xffff : c);
}

struct bench_loop *
bench_loop_new(struct bench *b, const struct bench_trace *t)
{
	struct bench_loop *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->b = b;
	l->t = t;
	l->fwd_id = calloc(t->n, sizeof(*l->fwd_id));
	l->fwd_port = calloc(t->n, sizeof(*l->fwd_port));
	l->fwd_pass = calloc(t->n, sizeof(*l->fwd_pass));
	l->qbatch = calloc(t->n, sizeof(*l->qbatch));
	l->skip = calloc(t->n, sizeof(*l->skip));
	l->sent = calloc(t->n, sizeof(*l->sent));
	if (l->fwd_id == NULL || l->fwd_port == NULL || l->fwd_pass == NULL ||
	    l->qbatch == NULL || l->skip == NULL || l->sent == NULL) {
		bench_loop_free(l);
		return NULL;
	}
	return l;
}

void
bench_loop_free(struct bench_loop *l)
{
	if (l == NULL)
		return;
	free(l->fwd_id);
	free(l->fwd_port);
	free(l->fwd_pass);
	free(l->qbatch);
	free(l->skip);
	free(l->sent);
	free(l);
}

/* Frame i of the trace in a fresh mbuf, as this pass sends it. */
static struct rte_mbuf *
bench_make(struct bench_loop *l, uint32_t i)
{
	const struct bench_frame *f = &l->t->f[i];
	struct rte_mbuf *m = rte_pktmbuf_alloc(l->b->pool);
	uint8_t *d, *l4, *csum;
	bool udp = f->proto == 17;

	if (m == NULL)
		return NULL;
	d = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(d, f->data, f->len);
	m->data_len = f->len;
	m->pkt_len = f->len;
	l4 = d + f->l4_off;
	csum = l4 + (udp ? 6 : 16);
	if (f->rotate && l->pass > 1) {
		uint8_t *port = l4 + (f->side == BENCH_VM ? 0 : 2);

		bench_patch16(port, bench_rotated(bench_rd16(port), l->pass - 1), csum, udp);
	}
	if (f->seq_step != 0 && l->pass > 1) {
		uint32_t seq = (uint32_t)bench_rd16(l4 + 4) << 16 | bench_rd16(l4 + 6);

		seq += f->seq_step * (l->pass - 1);
		bench_patch16(l4 + 4, (uint16_t)(seq >> 16), csum, false);
		bench_patch16(l4 + 6, (uint16_t)seq, csum, false);
	}
	if (f->kind == BF_ANSWER && l->drv == BENCH_NG && f->query >= 0) {
		frame_dns_rewrite_id(l4, l4 + 8, l->fwd_id[f->query]);
		bench_patch16(l4 + 2, l->fwd_port[f->query], csum, udp);
	}
	if (l->b->csum_offload)
		m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	return m;
}

/*
 * A query namegate forwarded: which of this batch's it is, and the ID and port it now has.
 * Both are namegate's: of the batch's queries with its addresses and message, the first
 * not yet found (namegate forwards them in order).
 */
static void
bench_note_query(struct bench_loop *l, const struct pkt *p)
{
	for (uint16_t k = 0; k < l->nbq; k++) {
		const struct bench_frame *q = &l->t->f[l->bq[k]];
		struct pkt qp;

		if (pkt_decode(q->data, q->len, &qp) != PKT_OK || qp.payload_len != p->payload_len ||
		    memcmp(qp.dst, p->dst, 16) != 0 || memcmp(qp.src, p->src, 16) != 0 ||
		    memcmp(qp.payload + 2, p->payload + 2, p->payload_len - 2) != 0 ||
		    l->fwd_pass[l->bq[k]] == l->pass)
			continue;
		l->fwd_id[l->bq[k]] = bench_rd16(p->payload);
		l->fwd_port[l->bq[k]] = p->sport;
		l->fwd_pass[l->bq[k]] = l->pass;
		return;
	}
}

/* What namegate sent on side s: counted (and queries noted), then freed. */
static void
bench_drain(struct bench_loop *l, int s)
{
	struct rte_mbuf *m[BENCH_BURST];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(l->b->tx[s], (void **)m, BENCH_BURST, NULL)) > 0)
		for (unsigned int i = 0; i < n; i++) {
			struct pkt p;

			if (l->drv == BENCH_NG && pkt_decode(rte_pktmbuf_mtod(m[i], const uint8_t *),
			    rte_pktmbuf_data_len(m[i]), &p) == PKT_OK) {
				if (s == BENCH_UP && p.proto == PKT_PROTO_UDP && p.dport == 53 &&
				    p.payload_len >= 12) {
					l->acc->queries_out++;
					bench_note_query(l, &p);
				} else if (s == BENCH_UP && p.proto == PKT_PROTO_TCP &&
				    p.payload_len >= 6 && p.payload[0] == 0x16 && p.payload[5] == 1) {
					l->acc->hellos_out++;
				} else if (s == BENCH_UP && p.proto == PKT_PROTO_TCP &&
				    (p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN) {
					l->acc->syns_out++;
				} else if (s == BENCH_VM && p.proto == PKT_PROTO_UDP && p.sport == 53 &&
				    p.payload_len >= 12 && (p.payload[3] & 0xf) != 5) {
					l->acc->answers_in++;	/* not one of namegate's refusals */
				}
			}
			rte_pktmbuf_free(m[i]);
		}
}

/* Hand the batch to the worker (or a baseline), timed; then what came out. */
static void
bench_flush(struct bench_loop *l)
{
	struct bench *b = l->b;
	unsigned int want = l->nout[0] + l->nout[1];

	for (int s = 0; s < 2; s++)
		if (rte_ring_enqueue_bulk(b->rx[s], (void **)l->out[s], l->nout[s], NULL) == 0 &&
		    l->nout[s] != 0)
			abort();	/* the rings hold 1024: a batch is at most 64 */
	while (want > 0) {
		uint64_t t0, t1;
		unsigned int n;

		if (b->instr)
			CALLGRIND_TOGGLE_COLLECT;
		t0 = rte_rdtsc_precise();
		n = l->drv == BENCH_NG ? dp_worker_poll(b->w) : bench_base_poll(b, l->drv);
		t1 = rte_rdtsc_precise();
		if (b->instr)
			CALLGRIND_TOGGLE_COLLECT;
		l->acc->cycles += t1 - t0;
		l->acc->frames += n;
		l->acc->polls++;
		want -= n < want ? n : want;
	}
	bench_drain(l, BENCH_UP);
	bench_drain(l, BENCH_VM);
	if (l->drv == BENCH_NG) {
		struct dp_evt e[64];
		unsigned int n;

		/* the main lcore's share: take the events, let RCU reclaim */
		while ((n = dp_evt_drain(b->w, e, 64)) > 0)
			for (unsigned int i = 0; i < n; i++)
				l->acc->bind_evts += e[i].type == DP_EVT_BIND;
		rte_rcu_qsbr_quiescent(b->ctx.qsbr, 0);
	}
	l->nout[0] = l->nout[1] = 0;
	l->nbq = 0;
	l->nwait_vm = 0;
	l->batch++;		/* and with it the set of waiting flows is empty */
}

/*
 * Must VM frame f wait for the batch's uplink frames? When one is of its connection, or a
 * DNS answer to its VM: what the answer binds may be what f connects to.
 */
static bool
bench_vm_waits(const struct bench_loop *l, const struct bench_frame *f)
{
	for (uint16_t k = 0; k < l->nout[BENCH_UP]; k++)
		if (l->upflow[k] == f->flow || l->upvm[k] == f->vm)
			return true;
	return false;
}

/* Is flow waiting for the next batch? With add, it is from now on. */
static bool
bench_flow_waiting(struct bench_loop *l, uint32_t flow, bool add)
{
	uint32_t i = (flow * 2654435761u) & (BENCH_WAIT_SLOTS - 1);

	for (; l->wait_batch[i] == l->batch; i = (i + 1) & (BENCH_WAIT_SLOTS - 1))
		if (l->wait_flow[i] == flow)
			return true;
	if (add) {
		l->wait_flow[i] = flow;
		l->wait_batch[i] = l->batch;
	}
	return false;
}

static bool
bench_vm_waiting(const struct bench_loop *l, uint32_t vm)
{
	for (uint16_t k = 0; k < l->nwait_vm; k++)
		if (l->wait_vm[k] == vm)
			return true;
	return false;
}

/* May frame f go in this batch? */
static bool
bench_fits(struct bench_loop *l, const struct bench_frame *f)
{
	int s = f->side;

	if (bench_flow_waiting(l, f->flow, false) || (s == BENCH_VM && bench_vm_waiting(l, f->vm)))
		return false;
	if (f->kind == BF_ANSWER && f->query >= 0 && (l->sent[f->query] != l->pass ||
	    l->qbatch[f->query] == l->batch))
		return false;		/* its query must leave first */
	return l->nout[s] < BENCH_BURST && (f->kind != BF_QUERY || l->nbq < BENCH_BURST) &&
	    (s != BENCH_VM || !bench_vm_waits(l, f));
}

/* f waits for the next batch, and so does the rest of its connection (or its VM's). */
static void
bench_wait(struct bench_loop *l, const struct bench_frame *f)
{
	bench_flow_waiting(l, f->flow, true);
	if (f->kind == BF_ANSWER && !bench_vm_waiting(l, f->vm) && l->nwait_vm < BENCH_BURST)
		l->wait_vm[l->nwait_vm++] = f->vm;
}

/* Frame i into the batch. */
static int
bench_take(struct bench_loop *l, uint32_t i)
{
	const struct bench_frame *f = &l->t->f[i];
	int s = f->side;
	struct rte_mbuf *m;

	if ((m = bench_make(l, i)) == NULL) {
		fputs("bench_full: generator pool empty\n", stderr);
		return -1;
	}
	if (s == BENCH_UP) {
		l->upflow[l->nout[s]] = f->flow;
		l->upvm[l->nout[s]] = f->kind == BF_ANSWER ? f->vm : 0;
	}
	l->out[s][l->nout[s]++] = m;
	if (f->kind == BF_QUERY) {
		l->qbatch[i] = l->batch;
		l->bq[l->nbq++] = i;
	}
	l->sent[i] = l->pass;
	return 0;
}

/* Frames [from, to) of the trace through namegate (BENCH_NG) or baseline drv. */
int
bench_loop_pass(struct bench_loop *l, enum bench_drv drv, uint32_t from, uint32_t to,
    struct bench_pass *out)
{
	uint32_t next = from;

	memset(out, 0, sizeof(*out));
	l->drv = drv;
	l->acc = out;
	l->pass++;
	l->batch++;
	while (next < to) {
		for (uint32_t i = next; i < to && i - next < BENCH_WINDOW; i++) {
			const struct bench_frame *f = &l->t->f[i];

			if (l->sent[i] == l->pass)
				continue;
			if (!bench_fits(l, f)) {
				bench_wait(l, f);
				if (l->nout[0] == BENCH_BURST && l->nout[1] == BENCH_BURST)
					break;
				continue;
			}
			if (f->kind == BF_ANSWER && drv == BENCH_NG)	/* its query forwarded, or refused */
				l->skip[i] = f->query >= 0 && l->fwd_pass[f->query] != l->pass;
			if (f->kind == BF_ANSWER && l->skip[i]) {
				out->answers_skipped++;
				l->sent[i] = l->pass;
				continue;
			}
			if (bench_take(l, i) != 0)
				return -1;
		}
		bench_flush(l);
		while (next < to && l->sent[next] == l->pass)
			next++;
	}
	return 0;
}
