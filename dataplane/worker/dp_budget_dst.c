/*
 * Which egress budgets what a VM sends to an address counts in (issue 23): the address
 * pattern's and that of every name bound to the address for the VM. Which name the VM
 * resolved first, connected by, or named in its SNI, or that it named none (ICMP and the
 * other protocols the kernel judges), never takes the bytes out of a budget.
 */
#include <string.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_budget_dst.h"

uint8_t
dp_budget_dst(struct dp_worker *w, uint16_t vm, uint8_t family, const uint8_t *addr)
{
	const struct dp_gen *g = w->gen;
	struct pol_addr dst = { .family = family };

	if (g->vms[vm].budgets == 0)
		return 0;	/* a VM without budgets pays one comparison */
	memcpy(dst.a, addr, family == 4 ? 4 : 16);
	return dp_budget_bit(dp_budget_of_addr(g, vm, family, addr)) |
	    dp_bind_budgets(w->ctx->binds, vm, &dst, w->now, g);
}

/*
 * The IP bytes of a frame for the kernel: its datagram's, as a flow's are counted, or,
 * when its headers did not say where the datagram ends, all that follows them.
 */
static uint64_t
dp_budget_slow_bytes(const struct pkt *p, uint32_t frame_len)
{
	if (p->l4_off > p->l3_off)
		return (uint64_t)p->l4_off + p->l4_len - p->l3_off;
	return frame_len > p->l3_off ? frame_len - p->l3_off : 0;
}

struct dp_fate
dp_budget_slow(struct dp_worker *w, const struct pkt *p, uint16_t vm, uint32_t frame_len)
{
	uint8_t set = dp_budget_dst(w, vm, p->family, p->dst);

	if (set == 0 || dp_budget_charge_set(w, vm, set, dp_budget_slow_bytes(p, frame_len)))
		return dp_fate(DP_FATE_SLOW);
	/* no flow to cut: each frame past the budget is refused, with no reply about it */
	if (w->gen->vms[vm].audit)
		return (struct dp_fate){ .act = DP_FATE_SLOW, .why = DP_REASON_BUDGET,
			.verdict = DP_ALLOWED, .log = true, .counted = true };
	return dp_fate_block(DP_REASON_BUDGET, DP_FATE_REPLY_NONE);
}
