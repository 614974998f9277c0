/*
 * The exit's flow half: a stream module's fate (dp_fate.h) can say more than the frame's
 * own exit (dp_out.c) knows: cut the connection where the flow's streams stand, block what
 * it holds, end it. It stands above the held streams (dp_hold.h), which stand above the
 * frame's exit, so none of them calls up.
 */
#ifndef DP_OUT_FLOW_H
#define DP_OUT_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/*
 * Act on fate fate, which a stream module returned for m (decoded as p) of vm on flow f:
 * the frame's part (dp_fate_apply()), then the flow's: the cuts that need it
 * (DP_FATE_REPLY_CUT_ACKED, _SENT, _HELD: the RSTs, held segments blocked), f ended.
 */
void dp_out_flow_apply(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, bool from_vm, struct dp_fate fate, struct dp_flow *f);

/*
 * A stream's fate reached with no frame of its own (a timeout, the server's answer to a
 * CONNECT), its act HELD: acted on now.
 */
static inline void
dp_out_flow_settle(struct dp_worker *w, struct dp_flow *f, struct dp_fate fate)
{
	dp_out_flow_apply(w, NULL, NULL, f->key.vm, true, fate, f);
}

#endif
