/*
 * Worker lcores: each polls its queue of both ports and runs every frame through the
 * pipeline; housekeeping (aging, reporting a quiescent state) every DP_HOUSEKEEPING_EVERY
 * polls.
 */
#ifndef DP_WORKER_H
#define DP_WORKER_H

#include "dp.h"

/*
 * A worker with its own tables, sleeping idle_sleep_us when a turn finds nothing to do
 * (dataplane.idle_sleep_us); NULL and rte_errno on failure.
 */
struct dp_worker *dp_worker_create(struct dp_ctx *ctx, unsigned int id, unsigned int lcore,
    uint32_t idle_sleep_us, uint16_t nvms);
void dp_worker_free(struct dp_worker *w);
/* The EAL memory dp_worker_create() takes for its share of max_flows (dp_mem.h). */
uint64_t dp_worker_mem(uint32_t max_flows, uint16_t nvms, unsigned int flow_log_ring);

/* lcore entry point: loops until w->stop. */
int dp_worker_loop(void *w);

/* One poll of both ports (the loop's body, for tests too): the frames it took. */
unsigned int dp_worker_poll(struct dp_worker *w);

/*
 * Main lcore (namegatectl deny): answer w's held query seq at slot (a DP_EVT_ASK record's
 * ttl and expires) REFUSED at its next housekeeping; nothing if it ended already.
 */
void dp_worker_ask_deny(struct dp_worker *w, uint32_t slot, uint64_t seq);

/*
 * Main lcore, for a slot whose VM no generation has (dp_vmslot.h): how much of vm w still
 * holds (flows, held buffers, queries in flight and waiting for approval, datagrams in
 * reassembly, binding records not yet taken), 0 once nothing; and, once none is left and
 * w has passed a quiescent point since, vm's counters, budget cells and name budget set
 * back to what a new VM starts with.
 */
uint64_t dp_worker_vm_held(const struct dp_worker *w, uint16_t vm);
void dp_worker_vm_purge(struct dp_worker *w, uint16_t vm);

#endif
