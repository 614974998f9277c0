/*
 * Egress budgets by destination: the set of budgets (dp_budget.h) what a VM sends to an
 * address counts in, for flows when they open or the policy changes, and for each frame
 * the worker hands to the kernel instead of judging it.
 */
#ifndef DP_BUDGET_DST_H
#define DP_BUDGET_DST_H

#include <stdint.h>

#include "dp.h"
#include "dp_fate.h"
#include "sni/pkt.h"

/*
 * The budgets (bit i: index i) bytes from VM slot vm to addr count in under the worker's
 * generation: the address pattern's, and every bound name's (dp_bind_budgets).
 */
uint8_t dp_budget_dst(struct dp_worker *w, uint16_t vm, uint8_t family, const uint8_t *addr);

/*
 * A frame of vm for the kernel (ICMP, other IP protocols: SPEC s4 step 8), frame_len
 * bytes from its link header: charged to its destination's budgets. Its fate: the slow
 * path, or refused with reason budget once one is spent (in audit mode, the slow path
 * and a would-be block).
 */
struct dp_fate dp_budget_slow(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    uint32_t frame_len);

#endif
