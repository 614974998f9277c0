/*
 * The lean stage of the VM's SYN on no flow (dp_conn_syn.h) inside the burst: apart from
 * dp_burst.c, a call as the other lean stages are, so that the loop of steady frames keeps
 * its registers.
 */
#include "dp_burst_int.h"
#include "dp_conn_syn.h"
#include "dp_lean.h"
#include "dp_out.h"

/* Lean frame fr from the VM, refused as fate says: decoded for the refusal, acted on. */
static __attribute__((noinline, cold)) void
dp_burst_lean_refuse(struct dp_worker *w, struct dp_burst_frame *fr, struct dp_fate fate)
{
	dp_lean_decode(fr->m, &fr->ln, &fr->p, true);
	dp_fate_apply_any(w, fr->m, &fr->p, fr->vm, true, fate);
}

/* The flow's hash and the SYN's sequence number read after the binding lookup, not kept. */
bool
dp_burst_lean_syn(struct dp_worker *w, struct dp_burst_frame *fr, const struct dp_flow_lookup *l)
{
	const struct dp_flow_key *k = &l->key;
	struct dp_bind_allow by;
	struct dp_fate fate;

	if (!dp_conn_vm_syn_admits(w, k, &fr->ln, &by))
		return false;
	fate = dp_conn_vm_syn_open(w, fr->m, &fr->ln, k, l->hash, by);
	if (likely(fate.act == DP_FATE_EGRESS))
		dp_egress_own(w, fr->m, fr->vm, DP_ALLOWED);
	else if (fate.act == DP_FATE_CONTINUE)
		return false;
	else
		dp_burst_lean_refuse(w, fr, fate);
	return true;
}
