/*
 * The per-worker flow table's layout, private to its two halves: dp_flow.c (open, close,
 * aging: the hot path) and dp_flows_make.c (making it, its hooks, and what the control
 * side reads of it); and the open's common case inline, for the lean SYN's (dp_conn_syn.h).
 */
#ifndef DP_FLOW_INT_H
#define DP_FLOW_INT_H

#include <emmintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "dp_flow.h"
#include "dp_flow_look.h"
#include "dp_flow_tab.h"
#include "dp_slots.h"

struct dp_flows {
	struct dp_flows_head h;		/* the entries and their accounts: first (dp_flow.h) */
	struct dp_ft ft;
	uint32_t *at;			/* each open entry's slot's place in the index
					 * (dp_ft_place_bit()): its close drops it there
					 * unless a move took it on */
	struct dp_slots slots;
	uint32_t cap;
	uint32_t cursor;		/* aging */
	uint32_t reclaim_credit;	/* entries opens may still examine: dp_flows_age refills */
	uint16_t nvms;
	uint32_t *per_vm;
	void (*release)(struct dp_flow *, void *);
	void *release_arg;
	void (*closed)(const struct dp_flow *, struct dp_flow_acct *, void *);
	void (*passed)(struct dp_flow *, struct dp_flow_acct *, void *);
	void *report_arg;
	uint8_t closed_ha;		/* bit ha set: a flow of that enum dp_flow_ha is reported
					 * closed (all: closed_every; none: no closed) */
};
_Static_assert(offsetof(struct dp_flows, h) == offsetof(struct dp_flows_look, h) &&
    offsetof(struct dp_flows, ft) == offsetof(struct dp_flows_look, ft),
    "the burst's lookup reads the table through struct dp_flows_look");

/*
 * f as k's and zero beyond, in sixteen-byte stores: the initializer took gcc to a rep
 * stosq, sixteen instructions as counted for eight.
 */
static inline void
dp_flow_init(struct dp_flow *f, const struct dp_flow_key *k)
{
	__m128i *v = (__m128i *)(void *)f;
	const __m128i *kv = (const __m128i *)(const void *)k;

	__m128i z = _mm_setzero_si128();

	_Static_assert(sizeof(*f) == 8 * sizeof(*v) && sizeof(*k) == 2 * sizeof(*v),
	    "a flow is eight vectors, its key two");
	/* one by one: a loop of them gcc turns back into the memset */
	_mm_storeu_si128(&v[0], _mm_loadu_si128(&kv[0]));
	_mm_storeu_si128(&v[1], _mm_loadu_si128(&kv[1]));
	_mm_storeu_si128(&v[2], z);
	_mm_storeu_si128(&v[3], z);
	_mm_storeu_si128(&v[4], z);
	_mm_storeu_si128(&v[5], z);
	_mm_storeu_si128(&v[6], z);
	_mm_storeu_si128(&v[7], z);
}

/* Entry idx, indexed for k (h its hash) in the slot at place at, as k's open flow. */
static inline struct dp_flow *
dp_flow_opened(struct dp_flows *t, const struct dp_flow_key *k, uint32_t idx, uint32_t h,
    uint32_t at, uint64_t now)
{
	struct dp_flow *f = &t->h.e[idx];

	t->h.opened |= dp_flow_opened_bit(h);
	t->at[idx] = at;
	t->per_vm[k->vm]++;
	dp_flow_init(f, k);
	f->last_seen = now;
	f->in_use = true;
	/* its account is the flow log's to start (dp_flowlog_opened()): without one, nobody's */
	return f;
}

/* dp_flow_open_hashed() past its VM's share, when no entry is free or k's first bucket full. */
__attribute__((noinline)) struct dp_flow *dp_flow_open_far(struct dp_flows *t,
    const struct dp_flow_key *k, uint32_t h, uint64_t now);

/* Is VM vm past the table's VMs, or at its share? Then none of its flows opens. */
static inline bool
dp_flow_vm_full(const struct dp_flows *t, uint16_t vm, uint32_t max_per_vm)
{
	return vm > t->nvms || t->per_vm[vm] >= max_per_vm;
}

/*
 * dp_flow_open_hashed()'s common case, for a VM not full (dp_flow_vm_full()): a free
 * entry and room in k's first bucket, k's flow opened there; else NULL, nothing touched,
 * for dp_flow_open_far(). Inline for a connection's lean opening (dp_conn_syn.h): it calls
 * nothing, so that opening keeps nothing on the stack across a call.
 */
static inline __attribute__((always_inline)) struct dp_flow *
dp_flow_open_first(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h, uint64_t now)
{
	uint32_t b = dp_ft_first(&t->ft, h), idx;
	struct dp_ft_bucket *bk = &t->ft.b[b];
	uint64_t bit;

	if (!dp_slots_peek(&t->slots, &idx) || !dp_ft_low_bit_if(dp_ft_match(bk, 0), &bit))
		return NULL;
	dp_slots_take(&t->slots);
	dp_ft_place_bit(bk, bit, dp_ft_tag(h), idx);
	/* its place from bk, live here already: b * 64 + bit kept bit in a stack slot */
	return dp_flow_opened(t, k, idx, h, (uint32_t)((uint8_t *)bk - (uint8_t *)t->ft.b) +
	    (uint32_t)bit, now);
}

/* dp_flow_open_hashed(): its common case inline, the rest called. */
static inline __attribute__((always_inline)) struct dp_flow *
dp_flow_open_near(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h,
    uint32_t max_per_vm, uint64_t now)
{
	struct dp_flow *f;

	if (dp_flow_vm_full(t, k->vm, max_per_vm))
		return NULL;
	if ((f = dp_flow_open_first(t, k, h, now)) != NULL)
		return f;
	return dp_flow_open_far(t, k, h, now);
}

#endif
