/*
 * The exit's flow half (dp_out_flow.h): what a stream module's fate says of the frame's
 * flow, acted on. Each cut here is dp_out_cut(), from where the server's stream stands,
 * which only the flow and its held segments tell; those segments are blocked with it.
 */
#include "dp_flowlog.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "dp_out_flow.h"

/*
 * CUT_HELD's RSTs, built from what h holds: to the VM from the last segment, to the server
 * at the first held byte (none for a held SYN, which it never saw) or the first one not
 * trickled to it. QUIC: an ICMP unreachable, and the client falls back to TCP at once.
 */
static void
dp_out_flow_rst_held(struct dp_worker *w, struct dp_hold *h, const struct dp_flow *f)
{
	const struct rte_mbuf *first, *last;
	struct pkt bp, op;

	if (h->nsegs == 0)
		return;
	if (f->key.proto != PKT_PROTO_TCP) {
		last = h->segs[h->nsegs - 1];
		if (dp_hold_decode(last, &bp))
			dp_out_reply(w, last, &bp, true, DP_FATE_REPLY_ICMP);
		return;
	}
	dp_hold_sort(h);
	first = h->segs[0];
	last = h->segs[h->nsegs - 1];
	if (!dp_hold_decode(last, &bp) || !dp_hold_decode(first, &op))
		return;
	if (h->trickled > 0)
		op.seq = f->isn + h->trickled;	/* where the server's stream stands */
	dp_out_cut(w, true, last, &bp, (op.tcp_flags & PKT_TCP_SYN) ? NULL : first, &op);
}

/* The RST onward of a cut that puts it at seq, whatever tmpl (decoded tp) says. */
static void
dp_out_flow_rst_at(struct dp_worker *w, const struct rte_mbuf *tmpl, const struct pkt *tp,
    uint32_t seq)
{
	struct pkt at = *tp;

	at.seq = seq;
	at.tcp_flags &= (uint8_t)~(PKT_TCP_SYN | PKT_TCP_FIN);
	at.payload_len = 0;
	dp_out_cut(w, true, tmpl, tp, tmpl, &at);
}

/*
 * CUT_SENT's RSTs: built from m, or (NULL) the last held segment, the server's at the end
 * of what it was sent (h->judged, or a trickle past it: the bytes it may have).
 */
static void
dp_out_flow_rst_sent(struct dp_worker *w, const struct rte_mbuf *m, const struct pkt *p,
    const struct dp_flow *f, const struct dp_hold *h)
{
	struct pkt held;

	if (m == NULL) {
		if (h == NULL || h->nsegs == 0 || !dp_hold_decode(h->segs[h->nsegs - 1], &held))
			return;
		m = h->segs[h->nsegs - 1];
		p = &held;
	}
	dp_out_flow_rst_at(w, m, p, f->isn + (h == NULL ? f->judged :
	    h->trickled > h->judged ? h->trickled : h->judged));
}

/* Every segment h holds blocked with r: its stream was cut. */
static void
dp_out_flow_block_held(struct dp_worker *w, struct dp_hold *h, enum dp_reason r)
{
	for (uint16_t i = 0; i < h->nsegs; i++)
		dp_out_block(w, h->segs[i], h->vm, r);
	h->nsegs = 0;
}

/*
 * A fate that cuts the flow with RSTs built from where its stream stands (a reply from
 * DP_FATE_REPLY_CUT_ACKED on). Apart from dp_out_flow_apply(), whose every other fate
 * would pay the stack frame of these builders' decoded frames.
 */
static __attribute__((noinline)) void
dp_out_flow_cut(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate fate, struct dp_flow *f)
{
	enum dp_fate_reply reply = (enum dp_fate_reply)fate.reply;
	struct dp_hold *h = dp_hold_at(w, f->hold);

	fate.reply = DP_FATE_REPLY_NONE;
	if (reply == DP_FATE_REPLY_CUT_ACKED)
		dp_out_flow_rst_at(w, m, p, f->peer_ack);
	else if (reply == DP_FATE_REPLY_CUT_SENT)
		dp_out_flow_rst_sent(w, fate.act == DP_FATE_BLOCK ? m : NULL, p, f, h);
	else if (h != NULL)
		dp_out_flow_rst_held(w, h, f);
	dp_fate_apply(w, m, p, vm, from_vm, fate);
	if (h != NULL && reply != DP_FATE_REPLY_CUT_ACKED)
		dp_out_flow_block_held(w, h, (enum dp_reason)fate.held_why);
	dp_flowlog_cut(w, f, fate.act == DP_FATE_BLOCK ? fate.why : fate.held_why);
	dp_flow_end(w, f);
}

void
dp_out_flow_apply(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate fate, struct dp_flow *f)
{
	/* a segment a module holds (most of a hello's), and no more: nothing to act on */
	if (dp_fate_eq(fate, dp_fate(DP_FATE_HELD)))
		return;
	if (unlikely(fate.reply >= DP_FATE_REPLY_CUT_ACKED)) {
		dp_out_flow_cut(w, m, p, vm, from_vm, fate, f);
		return;
	}
	dp_fate_apply(w, m, p, vm, from_vm, fate);
	if (fate.end) {
		if (fate.act == DP_FATE_BLOCK)
			dp_flowlog_cut(w, f, fate.why);
		dp_flow_end(w, f);
	}
}
