/*
 * Flow records (dp_flowlog.h), each written in its ring slot, as the events are.
 */
#include <stdio.h>
#include <string.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "dp_evt.h"
#include "dp_flowlog.h"
#include "dp_mem.h"

_Static_assert(sizeof(struct dp_flow_rec) % 4 == 0, "rte_ring copies 4-byte words");
_Static_assert(DP_FLOWLOG_NAME_MAX == DP_EVT_NAME_MAX, "a stashed name fits a record");

struct rte_ring *
dp_flowlog_ring_create(unsigned int id, unsigned int size, int socket)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "ng_flowrec_%u", id);
	return rte_ring_create_elem(name, sizeof(struct dp_flow_rec), size, socket,
	    RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
}

uint64_t
dp_flowlog_ring_mem(unsigned int size)
{
	/* RING_F_EXACT_SZ: the next power of two above size */
	return dp_mem_ring(rte_align32pow2(size + 1), sizeof(struct dp_flow_rec));
}

/*
 * Whether vm may put one more record on the ring: not past its share. The worker is the
 * ring's one producer, so what the free count says holds until it enqueues.
 */
static bool
dp_flowlog_room(struct dp_worker *w, uint16_t vm)
{
	unsigned int free = rte_ring_free_count(w->flow_recs);
	uint64_t inflight = w->vm_stats[vm].flowrec_queued -
	    atomic_load_explicit(&w->flowrec_taken[vm], memory_order_relaxed);

	return free >= 2 && inflight + 1 <= free - 1;
}

/* A zeroed slot for a record of vm, or NULL, counted against vm, when it has no room. */
static struct dp_flow_rec *
dp_flowlog_slot(struct dp_worker *w, uint16_t vm)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];
	struct rte_ring_zc_data zcd;

	if (!dp_flowlog_room(w, vm) ||
	    rte_ring_enqueue_zc_bulk_elem_start(w->flow_recs, sizeof(struct dp_flow_rec), 1,
	    &zcd, NULL) != 1) {
		s->flowrec_dropped++;
		return NULL;
	}
	s->flowrec_queued++;
	memset(zcd.ptr1, 0, sizeof(struct dp_flow_rec));
	return zcd.ptr1;
}

static void
dp_flowlog_put(struct dp_worker *w)
{
	rte_ring_enqueue_zc_elem_finish(w->flow_recs, 1);
	dp_main_wake(w->ctx);
}

static void
dp_flowlog_fill(struct dp_worker *w, struct dp_flow_rec *r, const struct dp_flow *f,
    const struct dp_flow_acct *a)
{
	r->version = DP_API_VERSION;
	r->vm = f->key.vm;
	r->family = f->key.family;
	r->proto = f->key.proto;
	r->would_block = f->would_block;
	r->reason = a->end_reason;
	r->name_kind = a->name_kind;
	r->name_hash = a->name_kind != DP_FLOW_NAME_NONE ? f->name_hash : 0;
	r->budgets = f->budgets;
	r->gen = w->gen->id;
	r->vm_port = f->key.vm_port;
	r->peer_port = f->key.peer_port;
	memcpy(r->peer_addr, f->key.peer, sizeof(r->peer_addr));
	memcpy(r->vm_addr, a->vm_addr, sizeof(r->vm_addr));
	r->start_tsc = a->start_tsc;
	r->stop_tsc = a->last_tsc;
	r->bytes_out = a->bytes[0];
	r->bytes_in = a->bytes[1];
	r->packets_out = a->packets[0];
	r->packets_in = a->packets[1];
}

void
dp_flowlog_closed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg)
{
	struct dp_worker *w = arg;
	struct dp_flowlog_stash *n = &w->flowlog_name;
	struct dp_flow_rec *r;

	if ((r = dp_flowlog_slot(w, f->key.vm)) != NULL) {
		dp_flowlog_fill(w, r, f, a);
		r->final = 1;
		r->end = a->end != DP_FLOW_END_OPEN ? a->end : DP_FLOW_END_IDLE;
		if (n->f == f && n->len > 0) {	/* the name it was refused for, at hand */
			r->name_kind = n->kind;
			r->name_len = n->len;
			memcpy(r->name, n->name, n->len);
		}
		dp_flowlog_put(w);
	}
	if (n->f == f)
		n->f = NULL;
}

void
dp_flowlog_passed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg)
{
	struct dp_worker *w = arg;
	uint64_t every = w->ctx->flow_log_interval_tsc;
	struct dp_flow_rec *r;

	if (every == 0 || w->now_tsc - a->reported_tsc < every)
		return;
	a->reported_tsc = w->now_tsc;
	if ((r = dp_flowlog_slot(w, f->key.vm)) == NULL)
		return;
	dp_flowlog_fill(w, r, f, a);
	r->end = DP_FLOW_END_OPEN;
	r->stop_tsc = w->now_tsc;
	dp_flowlog_put(w);
}

void
dp_flowlog_opened_rec(struct dp_worker *w, struct dp_flow *f, const struct pkt *p,
    uint8_t name_kind)
{
	struct dp_flow_acct *a = dp_flow_acct(w->flows, f);

	/* whole (the slot's last flow left it), the opening frame counted (dp_flow_count()); no
	 * end_reason yet: a cut or a would-be block says why */
	*a = (struct dp_flow_acct){ .start_tsc = w->now_tsc, .last_tsc = w->now_tsc,
		.bytes = { dp_ip_bytes(p) }, .packets = { 1 }, .reported_tsc = w->now_tsc,
		.end_reason = DP_REASON_ALLOWED, .name_kind = name_kind };
	memcpy(a->vm_addr, p->src, sizeof(a->vm_addr));
}

void
dp_flowlog_adopted(struct dp_worker *w, struct dp_flow *f, const uint8_t *vm_addr,
    uint8_t name_kind)
{
	struct dp_flow_acct *a = dp_flow_acct(w->flows, f);

	if (w->flow_recs == NULL)
		return;
	*a = (struct dp_flow_acct){ 0 };
	a->start_tsc = a->reported_tsc = w->now_tsc;
	a->name_kind = name_kind;
	a->end_reason = DP_REASON_ALLOWED;
	memcpy(a->vm_addr, vm_addr, sizeof(a->vm_addr));
}

void
dp_flowlog_cut(struct dp_worker *w, const struct dp_flow *f, uint8_t r)
{
	struct dp_flow_acct *a = dp_flow_acct(w->flows, f);

	if (w->flow_recs == NULL)
		return;
	if (a->end == DP_FLOW_END_OPEN || a->end == DP_FLOW_END_FIN) {
		a->end = DP_FLOW_END_CUT;
		a->end_reason = r;
	}
}

void
dp_flowlog_name(struct dp_worker *w, const struct dp_flow *f, const char *name, size_t len,
    uint8_t kind)
{
	struct dp_flowlog_stash *n = &w->flowlog_name;

	if (name == NULL)
		len = 0;		/* refused for no name (none, or a timeout) */
	if (len > DP_EVT_NAME_MAX)
		len = DP_EVT_NAME_MAX;
	n->f = f;
	n->kind = kind;
	n->len = (uint8_t)len;
	if (len > 0)
		memcpy(n->name, name, len);
}

void
dp_flowlog_refused(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint8_t r, bool would_block)
{
	struct dp_flow_rec *rec;

	if (w->flow_recs == NULL || (rec = dp_flowlog_slot(w, k->vm)) == NULL)
		return;
	rec->version = DP_API_VERSION;
	rec->vm = k->vm;
	rec->family = k->family;
	rec->proto = k->proto;
	rec->end = DP_FLOW_END_BLOCKED;
	rec->reason = r;
	rec->would_block = would_block;
	rec->final = 1;
	rec->gen = w->gen->id;
	rec->vm_port = k->vm_port;
	rec->peer_port = k->peer_port;
	memcpy(rec->vm_addr, p->src, sizeof(rec->vm_addr));
	memcpy(rec->peer_addr, k->peer, sizeof(rec->peer_addr));
	rec->start_tsc = rec->stop_tsc = w->now_tsc;
	rec->bytes_out = dp_ip_bytes(p);
	rec->packets_out = 1;
	dp_flowlog_put(w);
}

uint32_t
dp_flowlog_stop_from(struct dp_worker *w, uint32_t at)
{
	uint32_t cap = dp_flows_cap(w->flows);
	struct dp_flow_rec *r;

	if (w->flow_recs == NULL)
		return cap;
	for (; at < cap; at++) {
		const struct dp_flow *f = dp_flows_entry(w->flows, at);
		struct dp_flow_acct *a;

		if (!f->in_use)
			continue;
		a = dp_flow_acct(w->flows, f);
		/* no room: the caller drains, and none of these is lost or counted lost */
		if (!dp_flowlog_room(w, f->key.vm) || (r = dp_flowlog_slot(w, f->key.vm)) == NULL)
			return at;
		dp_flowlog_fill(w, r, f, a);
		r->final = 1;
		r->end = DP_FLOW_END_STOP;
		dp_flowlog_put(w);
	}
	return cap;
}

unsigned int
dp_flowlog_drain(struct dp_worker *w, struct dp_flow_rec *out, unsigned int n)
{
	unsigned int got;

	if (w->flow_recs == NULL)
		return 0;
	got = rte_ring_dequeue_burst_elem(w->flow_recs, out, sizeof(*out), n, NULL);
	for (unsigned int k = 0; k < got; k++)
		if (out[k].vm <= w->ctx->max_vms)
			atomic_fetch_add_explicit(&w->flowrec_taken[out[k].vm], 1,
			    memory_order_relaxed);
	return got;
}
