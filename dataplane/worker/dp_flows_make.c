/*
 * The per-worker flow table made and let go, the hooks its closes and aging report to,
 * and what the control side reads of it (counts, a VM's flows, the memory it takes).
 * The hot path (open, close, aging) is dp_flow.c.
 */
#include <errno.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_flow_int.h"
#include "dp_hash.h"
#include "dp_mem.h"

struct dp_flows *
dp_flows_create(const char *name, uint32_t cap, uint16_t nvms, int socket)
{
	struct dp_flows *t;

	(void)name;		/* rte_malloc's names need not be unique */
	if ((t = rte_zmalloc_socket("dp_flows", sizeof(*t), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	t->cap = cap;
	t->nvms = nvms;
	t->h.e = rte_zmalloc_socket("dp_flow_entries", (size_t)cap * sizeof(t->h.e[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	t->h.acct = rte_zmalloc_socket("dp_flow_accts", (size_t)cap * sizeof(t->h.acct[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	t->per_vm = rte_zmalloc_socket("dp_flow_vm", (size_t)(nvms + 1) * sizeof(t->per_vm[0]),
	    0, socket);
	t->at = rte_malloc_socket("dp_flow_at", (size_t)cap * sizeof(t->at[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	if (t->h.e == NULL || t->h.acct == NULL || t->per_vm == NULL || t->at == NULL ||
	    dp_ft_init(&t->ft, cap, dp_hash_seed(), socket) != 0 ||
	    dp_slots_init(&t->slots, cap, socket) != 0) {
		dp_flows_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
dp_flows_free(struct dp_flows *t)
{
	if (t == NULL)
		return;
	dp_ft_fini(&t->ft);
	rte_free(t->per_vm);
	rte_free(t->at);
	dp_slots_fini(&t->slots);
	rte_free(t->h.e);
	rte_free(t->h.acct);
	rte_free(t);
}

void
dp_flows_on_release(struct dp_flows *t, void (*release)(struct dp_flow *, void *), void *arg)
{
	t->release = release;
	t->release_arg = arg;
}

void
dp_flows_on_report(struct dp_flows *t,
    void (*closed)(const struct dp_flow *, struct dp_flow_acct *, void *),
    void (*passed)(struct dp_flow *, struct dp_flow_acct *, void *), void *arg,
    bool closed_every)
{
	t->closed = closed;
	/* what the close asks of each flow, one test: closed and closed_every made one word */
	_Static_assert(DP_FLOW_HA_ENDED < 8, "a flow's ha is a bit of closed_ha");
	t->closed_ha = closed == NULL ? 0 : closed_every ? 0xff : 1u << DP_FLOW_HA_SYNCED;
	t->passed = passed;
	t->report_arg = arg;
}

const struct dp_flow *
dp_flows_entry(const struct dp_flows *t, uint32_t i)
{
	return &t->h.e[i];
}

uint32_t
dp_flows_cap(const struct dp_flows *t)
{
	return t->cap;
}

uint32_t
dp_flows_count(const struct dp_flows *t, uint16_t vm)
{
	return vm <= t->nvms ? t->per_vm[vm] : 0;
}

void
dp_flows_walk(struct dp_flows *t, uint16_t vm, void (*fn)(const struct dp_flow *, void *),
    void *arg)
{
	for (uint32_t i = 0; i < t->cap; i++) {
		struct dp_flow f = t->h.e[i];	/* a copy: the worker may rewrite the entry */

		if (f.in_use && f.key.vm == vm)
			fn(&f, arg);
	}
}

uint64_t
dp_flows_mem(uint32_t cap, uint16_t nvms)
{
	return dp_mem_alloc(sizeof(struct dp_flows)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(struct dp_flow)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(struct dp_flow_acct)) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(uint32_t)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(uint32_t)) +	/* the slots' places */
	    dp_mem_alloc((uint64_t)dp_ft_buckets(cap) * sizeof(struct dp_ft_bucket)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(uint32_t));	/* the free slots */
}
