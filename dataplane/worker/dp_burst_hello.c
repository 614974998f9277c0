/*
 * The lean stage of a hello from the VM (dp_burst.c): a lean frame with data on a flow
 * whose hello is pending goes from the lean check's fields through the flow stage and to
 * the TLS stage, decoded only where that needs more (dp_tls_client_lean()). A call, as
 * the other lean stages, so that the loop of steady frames keeps its registers.
 */
#include "dp_burst_int.h"
#include "dp_conn_lean.h"
#include "dp_lean.h"
#include "dp_tls.h"

/*
 * dp_conn_vm_any() of a hello on a plain flow (dp_conn_lean_plain(), no SYN nor RST: so
 * no reopening; no URG) is the tracking dp_conn_vm_lean() does and the fate STREAM, which
 * dp_vm_stream() takes to dp_tls_client(); then dp_out_flow_apply() acts on its fate,
 * which dp_tls_client_lean() does as it would: a pass is sent on as it would send it, a
 * segment held (most of a split hello's) needs nothing, and any other fate is acted on
 * from the frame decoded. Its call is the last: this stage makes no stack frame for it.
 */
bool
dp_burst_lean_hello(struct dp_worker *w, struct dp_burst_frame *fr, struct dp_flow *f)
{
	const struct dp_lean *l = &fr->ln;

	/* urgent data too, cut by dp_conn_vm_judge() (rare): the general way's, one test */
	if (!dp_conn_lean_plain(w, f) || (l->flags & (PKT_TCP_SYN | PKT_TCP_RST | PKT_TCP_URG)))
		return false;
	dp_conn_lean_track(w, f, fr->m, l->flags, true);
	dp_flow_vm_sent_by(f, l->flags, l->seq, l->payload_len);
	return dp_tls_client_lean(w, fr->m, l, &fr->p, fr->vm, f);	/* acted on there */
}
