/*
 * QUIC from the VMs (SPEC s4.6, `quic: inspect`): a flow's first datagrams held until the
 * ClientHello in their Initials is judged.
 */
#include "dp_evt.h"
#include "dp_hold.h"
#include "dp_pipeline.h"
#include "dp_quic.h"
#include "dp_quic_flow.h"
#include "dp_tls.h"
#include "sni/frame.h"

void
dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct tls_hello hello;
	enum dp_quic_status qs;
	struct dp_hold *h;
	enum dp_reason r;

	if ((h = dp_hold_at(w, f->hold)) == NULL) {
		if ((h = dp_hold_take(w, f, &f->hold, 0, false)) == NULL) {
			dp_reply_send(w, DP_PORT_VM, m, p, frame_icmp_unreach);
			dp_evt_block(w, vm, p, DP_REASON_VM_LIMIT, false, NULL, 0);
			dp_block(w, m, vm, DP_REASON_VM_LIMIT);
			dp_flow_end(w, f);
			return;
		}
		dp_quic_hello_init(&h->q, h->buf, sizeof(h->buf));
	}
	/* datagrams keep the order they came in: their order is the client's */
	if (!dp_hold_push(w, h, m, h->nsegs, h->nsegs + 1u)) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	qs = dp_quic_hello_feed(w->holds->quic, &h->q, p->payload, p->payload_len, &hello);
	switch (qs) {
	case DP_QUIC_NEED_MORE:
		return;
	case DP_QUIC_FOUND:
	case DP_QUIC_ABSENT:
		r = dp_tls_judge(w, f, vm, qs == DP_QUIC_FOUND ? SNI_FOUND : SNI_ABSENT, &hello);
		break;
	default:	/* not an Initial we can read first: nothing to judge, so no */
		r = DP_REASON_NOT_TLS;
		break;
	}
	if (r == DP_REASON_MAX)
		dp_tls_release(w, h, f);
	else
		dp_tls_refuse(w, h, f, r, qs == DP_QUIC_FOUND ? (const char *)hello.sni.p : NULL,
		    qs == DP_QUIC_FOUND ? hello.sni.len : 0);
}
