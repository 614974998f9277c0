/*
 * Egress budgets (policies.NAME.budgets), the fast path's side: which budget a flow's
 * bytes count in, decided once when it opens or its name is judged (struct dp_flow
 * budget), and per packet of such a flow one counter bump and one relaxed load.
 *
 * Each worker counts, per (VM slot, budget), the IP bytes its VMs send through the budget
 * (header and payload of each datagram, retransmissions included: what the VM tried to
 * send, not what the peer acknowledged). The main lcore (dataplane/main/dp_budget.c) sums
 * them once a second into the sliding window and hands each worker an allowance: its share
 * of what the window has left. A worker that has spent its allowance refuses the budget's
 * new flows and cuts its open ones, so the window is never overrun by more than a packet
 * per worker, however fast the VM sends between two of the main lcore's seconds.
 */
#ifndef DP_BUDGET_H
#define DP_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dp.h"

#define DP_BUDGETS_MAX		8	/* per policy: POL_BUDGETS_MAX */

/*
 * A budget set: bit i is budget index i. What a VM sends to an address counts in every
 * budget any way of naming that address falls under, so a flow carries a set, not one.
 */
_Static_assert(DP_BUDGETS_MAX <= 8, "a budget set is a uint8_t");

/* The set of budget b (1 + index, 0: none): empty for none. */
static inline uint8_t
dp_budget_bit(uint8_t b)
{
	return b != 0 ? (uint8_t)(1u << (b - 1)) : 0;
}

/*
 * allow, as the main lcore writes it: DP_BUDGET_PUBLISHED | epoch << DP_BUDGET_EPOCH_SHIFT
 * | bytes this worker may still send. 0 (never published: a budget of a VM the main lcore
 * has not seen yet, within a millisecond of start or reload) allows: nothing has been
 * spent in a window that has not started.
 */
#define DP_BUDGET_PUBLISHED	(1ULL << 63)
#define DP_BUDGET_EPOCH_SHIFT	48
#define DP_BUDGET_EPOCH_MASK	0x7fffu
#define DP_BUDGET_ALLOW_MASK	((1ULL << DP_BUDGET_EPOCH_SHIFT) - 1)

/* One worker's view of one (VM, budget). 32 bytes: two to a cache line. */
struct dp_budget_cell {
	_Atomic uint64_t allow;		/* written by the main lcore, read by the worker */
	uint64_t bytes;			/* the worker's: sent through the budget, ever */
	uint64_t spent;			/* the worker's: sent since allow's epoch */
	uint32_t epoch;			/* the epoch spent counts from */
	uint32_t pad;
};

/*
 * Worker w's cell of (VM slot, budget index i): each worker has max_vms + 1 slots of
 * DP_BUDGETS_MAX cells (struct dp_worker budget_cells), indexed by slot, so one VM's bytes
 * never land in a neighbour's cell.
 */
static inline struct dp_budget_cell *
dp_budget_cell_of(const struct dp_worker *w, uint16_t vm, unsigned int i)
{
	return &w->budget_cells[(size_t)vm * DP_BUDGETS_MAX + i];
}

/* What the cell may still take; resets spent when the main lcore published a new epoch. */
static inline uint64_t
dp_budget_left(struct dp_budget_cell *c)
{
	uint64_t a = atomic_load_explicit(&c->allow, memory_order_relaxed);
	uint32_t epoch = (uint32_t)(a >> DP_BUDGET_EPOCH_SHIFT) & DP_BUDGET_EPOCH_MASK;

	if (!(a & DP_BUDGET_PUBLISHED))
		return UINT64_MAX;
	if (epoch != c->epoch) {
		c->epoch = epoch;
		c->spent = 0;
	}
	a &= DP_BUDGET_ALLOW_MASK;
	return c->spent < a ? a - c->spent : 0;
}

/*
 * Worker w's flow of VM vm through budget b (1 + index) sends n bytes: counted, and true
 * while they fit its allowance (false: the flow is to be cut; the bytes still count, as
 * the VM did send them toward the budget's hosts).
 */
static inline bool
dp_budget_charge(const struct dp_worker *w, uint16_t vm, uint8_t b, uint64_t n)
{
	struct dp_budget_cell *c = dp_budget_cell_of(w, vm, b - 1u);
	bool fits = dp_budget_left(c) >= n;

	c->bytes += n;
	c->spent += n;
	return fits;
}

/* Has worker w spent VM vm's budget b (1 + index): no new flow, no more packets. */
static inline bool
dp_budget_spent(const struct dp_worker *w, uint16_t vm, uint8_t b)
{
	return dp_budget_left(dp_budget_cell_of(w, vm, b - 1u)) == 0;
}

/*
 * Worker w's VM vm sends n bytes to a destination under the budgets of set: counted in
 * each, and true while they fit every one's allowance (false: one is spent, the frame or
 * flow is to be refused; the bytes still count in all of them).
 */
static inline bool
dp_budget_charge_set(const struct dp_worker *w, uint16_t vm, uint8_t set, uint64_t n)
{
	bool fits = true;

	for (uint8_t b = 1; set != 0; b++, set >>= 1)
		if ((set & 1) && !dp_budget_charge(w, vm, b, n))
			fits = false;
	return fits;
}

/* Has worker w spent any budget of set for VM vm? */
static inline bool
dp_budget_set_spent(const struct dp_worker *w, uint16_t vm, uint8_t set)
{
	for (uint8_t b = 1; set != 0; b++, set >>= 1)
		if ((set & 1) && dp_budget_spent(w, vm, b))
			return true;
	return false;
}

/*
 * The budget (1 + index, 0: none) of VM slot vm's policy that counts bytes to the name
 * (len bytes, canonical or not: matched as the policy matches it) or to the address.
 */
uint8_t dp_budget_of_name(const struct dp_gen *g, uint16_t vm, const char *name, size_t len);
uint8_t dp_budget_of_addr_match(const struct dp_gen *g, uint16_t vm, uint8_t family,
    const uint8_t *addr);

/*
 * dp_budget_of_addr_match(), a VM whose policy has no budget told inline: every flow it
 * opens by a binding asks.
 */
static inline uint8_t
dp_budget_of_addr(const struct dp_gen *g, uint16_t vm, uint8_t family, const uint8_t *addr)
{
	return g->vms[vm].budgets == 0 ? 0 : dp_budget_of_addr_match(g, vm, family, addr);
}

#endif
