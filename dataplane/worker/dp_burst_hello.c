/*
 * The lean stage of a hello from the VM (dp_burst.c): a lean frame with data on a flow
 * whose hello is pending goes from the lean check's fields through the flow stage and to
 * the TLS stage, decoded only where that needs more (dp_tls_client_lean()). A call, as
 * the other lean stages, so that the loop of steady frames keeps its registers.
 */
#include "dp_burst_int.h"
#include "dp_conn_lean.h"
#include "dp_lean.h"
#include "dp_out.h"
#include "dp_out_flow.h"
#include "dp_tls.h"

/*
 * dp_conn_vm_any() of a hello on a plain flow (dp_conn_lean_plain(), no SYN nor RST: so
 * no reopening) is the tracking dp_conn_vm_lean() does and the fate STREAM, which
 * dp_vm_stream() takes to dp_tls_client(); then dp_out_flow_apply() acts on its fate: a
 * pass is sent on as it would send it, a segment held (most of a split hello's) needs
 * nothing, as there, and any other fate is acted on from the frame decoded.
 */
bool
dp_burst_lean_hello(struct dp_worker *w, struct dp_burst_frame *fr, struct dp_flow *f)
{
	const struct dp_lean *l = &fr->ln;
	struct dp_fate fate, bare;

	if (!dp_conn_lean_plain(w, f) || (l->flags & (PKT_TCP_SYN | PKT_TCP_RST)))
		return false;
	dp_conn_lean_track(w, f, fr->m, l->flags, true);
	dp_flow_vm_sent_by(f, l->flags, l->seq, l->payload_len);
	fate = dp_tls_client_lean(w, fr->m, l, &fr->p, fr->vm, f);
	bare = fate;
	bare.verdict = DP_ALLOWED;
	if (likely(dp_fate_eq(bare, dp_fate(DP_FATE_EGRESS))))
		dp_egress(w, fr->m, fr->vm, (enum dp_verdict)fate.verdict);
	else if (!dp_fate_eq(fate, dp_fate(DP_FATE_HELD)))	/* held (m taken): nothing to do */
		dp_out_flow_apply(w, fr->m, &fr->p, fr->vm, true, fate, f);
	return true;
}
