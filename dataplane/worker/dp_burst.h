/*
 * The per-frame decision (SPEC s4), staged: who sent it and which path it takes
 * (dp_decide.c), reassembly, then its connection (dp_conn.c) or the module that judges its
 * bytes, each returning a fate that the exit (dp_out.c) acts on. A burst from one port goes
 * through together, so that its flow lookups do (dp_burst.c); dp_pipeline_vm/_uplink are a
 * burst of one.
 */
#ifndef DP_BURST_H
#define DP_BURST_H

#include <rte_mbuf.h>

#include "dp.h"

/* n (<= DP_BURST) frames received on the VM port: each forwarded, answered or freed. */
void dp_burst_vm(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n);

/* n (<= DP_BURST) frames received on the uplink port. */
void dp_burst_uplink(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n);

/* One frame m received on the VM port, or on the uplink: a burst of one. */
void dp_pipeline_vm(struct dp_worker *w, struct rte_mbuf *m);
void dp_pipeline_uplink(struct dp_worker *w, struct rte_mbuf *m);

#endif
