/*
 * The per-frame decision: what the fast path does with one frame from either port.
 * Everything a worker does to a frame starts here; this is also what the whole-path
 * fuzz target drives.
 */
#ifndef DP_PIPELINE_H
#define DP_PIPELINE_H

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_evt.h"
#include "dp_fate.h"
#include "sni/pkt.h"

/* Decide m, received on the VM port, and forward, answer or free it (dp_burst.c). */
void dp_pipeline_vm(struct dp_worker *w, struct rte_mbuf *m);

/* Decide m, received on the uplink port (dp_burst.c). */
void dp_pipeline_uplink(struct dp_worker *w, struct rte_mbuf *m);

/* The event and the audit count fate f carries, whether or not the frame goes on. */
static inline void
dp_fate_note(struct dp_worker *w, const struct pkt *p, uint16_t vm, struct dp_fate f)
{
	if (unlikely(f.log))
		dp_evt_block(w, vm, p, (enum dp_reason)f.why, f.act != DP_FATE_BLOCK, NULL, 0);
	if (unlikely(f.counted))
		w->vm_stats[vm].blocked[f.why]++;
}

/*
 * m came back from the kernel on exception-path TAP port from (DP_PORT_SLOW_VM or
 * DP_PORT_SLOW_UP): its bridge and nftables accepted it; send it on.
 */
void dp_pipeline_slow(struct dp_worker *w, struct rte_mbuf *m, unsigned int from);

/*
 * Act on fate f for frame m (decoded as p) of vm, received from the VM (from_vm) or the
 * uplink: its event and audit count, its reply, its counters, and m sent or freed.
 */
void dp_fate_apply(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate f);

/* A frame builder: the RST to the end p was going to (frame_tcp_rst_to_dst). */
int dp_rst_onward(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out,
    size_t cap);

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
