/*
 * Worker-to-main-lcore events: each record written in its ring slot, not copied there.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "dp_ask.h"
#include "dp_evt.h"
#include "sni/copy8.h"

/* rte_ring copies elements in 4-byte words */
_Static_assert(sizeof(struct dp_evt) % 4 == 0, "dp_evt must be a multiple of 4 bytes");

struct rte_ring *
dp_evt_ring_create(const char *kind, unsigned int id, int socket)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "ng_%s_%u", kind, id);
	return rte_ring_create_elem(name, sizeof(struct dp_evt), DP_EVT_RING, socket,
	    RING_F_SP_ENQ | RING_F_SC_DEQ);
}

static inline __attribute__((always_inline)) void
dp_evt_put(struct dp_worker *w, struct rte_ring *r)
{
	rte_ring_enqueue_zc_elem_finish(r, 1);
	dp_main_wake(w->ctx);
}

/* copy8(): a name's few bytes without a call, none past len (the slot is zeroed past it) */
static inline void
dp_evt_name(struct dp_evt *e, const char *name, size_t len)
{
	if (len > DP_EVT_NAME_MAX)
		len = DP_EVT_NAME_MAX;
	e->name_len = (uint8_t)len;
	copy8((uint8_t *)e->name, (const uint8_t *)name, len, false);
}

void
dp_evt_name_new(struct dp_worker *w, uint16_t vm, const char *name, size_t len,
    uint16_t qtype, size_t suffix_len)
{
	struct dp_evt *e;

	if ((e = dp_evt_slot(w, w->evts)) == NULL)
		return;
	e->version = DP_API_VERSION;
	e->type = DP_EVT_NAME;
	e->vm = vm;
	e->port = qtype;
	e->ttl = (uint32_t)suffix_len;
	e->tsc = rte_get_tsc_cycles();
	dp_evt_name(e, name, len);
	dp_evt_put(w, w->evts);
}

bool
dp_evt_peer_name(struct dp_worker *w, struct dp_evt *e)
{
	return rte_ring_enqueue_elem(w->peer_names, e, sizeof(*e)) == 0;
}

unsigned int
dp_evt_peer_take(struct dp_worker *w, struct dp_evt *out, unsigned int n)
{
	return rte_ring_dequeue_burst_elem(w->peer_names, out, sizeof(*out), n, NULL);
}

static inline void
dp_evt_ports_fill(const struct pol_ports *p, struct dp_evt_ports *out)
{
	*out = (struct dp_evt_ports){ .all = p->any };
	/* a deny on every port, or past what the lists hold, opens nothing (fail closed) */
	if (p->deny_any || p->deny_more) {
		out->all = 0;
		return;
	}
	if (p->any)
		return;
	for (unsigned int k = 0; k < p->nallow && out->n < DP_EVT_PORTS_MAX; k++)
		if (pol_ports_allow(p, p->allow[k]))
			out->port[out->n++] = p->allow[k];
}

void
dp_evt_ports_of(const struct pol_ports *p, struct dp_evt_ports *out)
{
	dp_evt_ports_fill(p, out);
}

void
dp_evt_binder_init(struct dp_evt_binder *b, uint16_t vm, uint32_t gen, const char *name,
    size_t len, const struct pol_ports *ports)
{
	b->vm = vm;
	b->gen = gen;
	b->name = name;
	b->name_len = (uint8_t)(len > DP_EVT_NAME_MAX ? DP_EVT_NAME_MAX : len);
	dp_evt_ports_fill(ports, &b->ports);
}

void
dp_evt_bind(struct dp_worker *w, uint16_t vm, const struct pol_addr *addr, const char *name,
    size_t len, uint32_t ttl, uint64_t expires, const struct pol_ports *ports)
{
	struct dp_evt_binder b;

	dp_evt_binder_init(&b, vm, w->gen->id, name, len, ports);
	dp_evt_bind_quiet(w, &b, addr, ttl, expires);
	dp_main_wake(w->ctx);
}

/*
 * Each VM may queue DP_EVT_VM_PER_SECOND block events a second on a worker: one that
 * blocks in a loop fills its own budget, never the ring its neighbours' events (and
 * everyone's bindings) go through. What it is over is counted per VM.
 */
static bool
dp_evt_budget(struct dp_worker *w, uint16_t vm)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	if (s->evt_second != w->now) {
		s->evt_second = w->now;
		s->evt_used = 0;
	}
	if (s->evt_used >= DP_EVT_VM_PER_SECOND) {
		s->evt_suppressed++;
		return false;
	}
	s->evt_used++;
	return true;
}

/* A block event toward (family, proto, dst, port); family 0: no address. */
static void
dp_evt_block_at(struct dp_worker *w, uint16_t vm, uint8_t family, uint8_t proto,
    const uint8_t *dst, uint16_t port, enum dp_reason r, bool would_block, const char *name,
    size_t len)
{
	struct dp_evt *e;

	if (!dp_evt_budget(w, vm) || (e = dp_evt_slot(w, w->evts)) == NULL)
		return;
	e->version = DP_API_VERSION;
	e->type = DP_EVT_BLOCK;
	e->vm = vm;
	e->reason = (uint8_t)r;
	e->would_block = would_block;
	e->tsc = rte_get_tsc_cycles();
	if (family != 0) {
		e->family = family;
		e->proto = proto;
		e->port = port;
		memcpy(e->addr, dst, sizeof(e->addr));
	}
	dp_evt_name(e, name, len);
	dp_evt_put(w, w->evts);
}

void
dp_evt_block(struct dp_worker *w, uint16_t vm, const struct pkt *p, enum dp_reason r,
    bool would_block, const char *name, size_t len)
{
	if (p == NULL)
		dp_evt_block_at(w, vm, 0, 0, NULL, 0, r, would_block, name, len);
	else
		dp_evt_block_at(w, vm, p->family, p->proto, p->dst, p->dport, r, would_block,
		    name, len);
}

void
dp_evt_block_flow(struct dp_worker *w, const struct dp_flow_key *k, enum dp_reason r,
    bool would_block, const char *name, size_t len)
{
	dp_evt_block_at(w, k->vm, k->family, k->proto, k->peer, k->peer_port, r, would_block,
	    name, len);
}

void
dp_evt_ask(struct dp_worker *w, enum dp_evt_type type, const struct dp_ask_entry *e,
    uint8_t how, const char *name, size_t len)
{
	struct dp_evt *r;

	if ((r = dp_evt_slot(w, w->evts)) == NULL)
		return;
	r->version = DP_API_VERSION;
	r->type = (uint16_t)type;
	r->vm = e->vm;
	r->port = e->qtype;
	r->reason = how;
	r->ttl = (uint32_t)(e - w->ask->e);
	r->expires = e->seq;
	r->tsc = rte_get_tsc_cycles();
	dp_evt_name(r, name, len);
	dp_evt_put(w, w->evts);
}

void
dp_evt_flow(struct dp_worker *w, enum dp_evt_type type, const struct dp_flow *f)
{
	struct dp_evt *e;

	if ((e = dp_evt_slot(w, w->evts)) == NULL)
		return;
	e->version = DP_API_VERSION;
	e->type = (uint16_t)type;
	e->vm = f->key.vm;
	e->family = f->key.family;
	e->proto = f->key.proto;
	memcpy(e->addr, f->key.peer, sizeof(e->addr));
	e->port = f->key.peer_port;
	e->expires = f->how == DP_ADMIT_BINDING ? f->name_hash : 0;
	e->gen = f->gen;
	e->tsc = rte_get_tsc_cycles();
	e->flow = (struct dp_evt_flow){ .isn = f->isn, .vm_nxt = f->vm_nxt,
		.peer_ack = f->peer_ack, .peer_wnd = f->peer_wnd, .peer_isn = f->peer_isn,
		.vm_port = f->key.vm_port, .how = f->how, .name_bound = f->name_bound,
		.vm_wscale = f->vm_wscale, .peer_wscale = f->peer_wscale };
	dp_evt_put(w, w->evts);
}

unsigned int
dp_evt_drain(struct dp_worker *w, struct dp_evt *out, unsigned int n)
{
	unsigned int got = rte_ring_dequeue_burst_elem(w->bind_evts, out, sizeof(*out), n, NULL);

	for (unsigned int k = 0; k < got; k++)
		if (out[k].vm <= w->ctx->max_vms)
			atomic_fetch_add_explicit(&w->bind_taken[out[k].vm], 1,
			    memory_order_relaxed);
	return got + rte_ring_dequeue_burst_elem(w->evts, out + got, sizeof(*out), n - got, NULL);
}
