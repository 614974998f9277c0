/*
 * A worker's state of one VM slot, seen from the main lcore: what is left of a removed VM,
 * and its purge before the slot is given to another VM (dataplane/main/dp_vmslot.h says
 * when that is safe). Reads of the worker's counts race with the worker by design: a count
 * of a VM no generation has only falls, and the purge waits for a grace period.
 */
#include <stdatomic.h>
#include <string.h>

#include "dp_ask.h"
#include "dp_budget.h"
#include "dp_dns_budget.h"
#include "dp_dns_pending.h"
#include "dp_flow.h"
#include "dp_frag.h"
#include "dp_hold.h"
#include "dp_worker.h"

uint64_t
dp_worker_vm_held(const struct dp_worker *w, uint16_t vm)
{
	uint64_t queued = w->vm_stats[vm].bind_queued;
	uint64_t taken = atomic_load_explicit(&w->bind_taken[vm], memory_order_relaxed);

	uint64_t recs = w->flowrec_taken != NULL ? w->vm_stats[vm].flowrec_queued -
	    atomic_load_explicit(&w->flowrec_taken[vm], memory_order_relaxed) : 0;

	/* a record on its way to the flow log names the slot too */
	return (uint64_t)dp_flows_count(w->flows, vm) + w->holds->per_vm[vm] +
	    dp_pending_count(w->pending, vm) + dp_ask_count(w->ask, vm) +
	    dp_frag_vm_count(w->frags, vm) + (queued > taken ? queued - taken : 0) + recs;
}

void
dp_worker_vm_purge(struct dp_worker *w, uint16_t vm)
{
	memset(&w->vm_stats[vm], 0, sizeof(w->vm_stats[vm]));
	atomic_store_explicit(&w->bind_taken[vm], 0, memory_order_relaxed);
	if (w->flowrec_taken != NULL)
		atomic_store_explicit(&w->flowrec_taken[vm], 0, memory_order_relaxed);
	/*
	 * bytes stays: the control loop's windows count from the totals they saw (a new VM's
	 * from the total when it is built); what was spent and allowed goes, so the new VM's
	 * budgets start unpublished, as at start.
	 */
	for (unsigned int i = 0; i < DP_BUDGETS_MAX; i++) {
		struct dp_budget_cell *c = dp_budget_cell_of(w, vm, i);

		atomic_store_explicit(&c->allow, 0, memory_order_relaxed);
		c->spent = 0;
		c->epoch = 0;
	}
	dp_name_budget_forget(w->name_budget, vm);
}
