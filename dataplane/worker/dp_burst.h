/*
 * A burst from one port through the per-frame decision, staged so that the burst's flow
 * lookups go together (dp_burst.c). dp_pipeline_vm/_uplink are a burst of one.
 */
#ifndef DP_BURST_H
#define DP_BURST_H

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_pipeline.h"

/* n (<= DP_BURST) frames received on the VM port: each forwarded, answered or freed. */
void dp_burst_vm(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n);

/* n (<= DP_BURST) frames received on the uplink port. */
void dp_burst_uplink(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n);

#endif
