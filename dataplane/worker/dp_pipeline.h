/*
 * The per-frame decision: what the fast path does with one frame from either port.
 * Everything a worker does to a frame starts here; this is also what the whole-path
 * fuzz target drives.
 */
#ifndef DP_PIPELINE_H
#define DP_PIPELINE_H

#include <rte_mbuf.h>

#include "dp.h"
#include "sni/pkt.h"

/* Decide m, received on the VM port, and forward, answer or free it. */
void dp_pipeline_vm(struct dp_worker *w, struct rte_mbuf *m);

/* Decide m, received on the uplink port. */
void dp_pipeline_uplink(struct dp_worker *w, struct rte_mbuf *m);

/*
 * m came back from the kernel on exception-path TAP port from (DP_PORT_SLOW_VM or
 * DP_PORT_SLOW_UP): its bridge and nftables accepted it; send it on.
 */
void dp_pipeline_slow(struct dp_worker *w, struct rte_mbuf *m, unsigned int from);

/* Queue m for port (DP_PORT_VM or DP_PORT_UPLINK); sent by dp_tx_flush or when full. */
void dp_tx(struct dp_worker *w, unsigned int port, struct rte_mbuf *m);
void dp_tx_flush(struct dp_worker *w);

/* Free m and count it against vm (or the unknown VM) with reason r. */
void dp_block(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_reason r);

/* Free m, counted as a drop outside any VM's decision. */
void dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d);

/* Count an allowed frame from vm and send it to the uplink. */
void dp_egress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_verdict v);

/* Count a frame for vm and send it to the VM port. */
void dp_ingress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm);

/*
 * Build a reply with fn (one of dp_reply_*) from the frame m and send it out of port.
 * Returns false when no buffer was free or the builder failed.
 */
bool dp_reply_send(struct dp_worker *w, unsigned int port, struct rte_mbuf *m,
    const struct pkt *p, int (*fn)(const uint8_t *, size_t, const struct pkt *, uint8_t *,
    size_t));

#endif
