/*
 * Sequence number modulation of DNS over TCP flows (dp_dns_tcp_mod.h): the edges where a
 * segment's numbers cross between the VM's view and the resolver's.
 */
#include "dp_conn.h"
#include "dp_dns_tcp_mod.h"
#include "dp_out.h"
#include "sni/frame.h"

/* The TCP header of segment p, which frame m carries. */
static uint8_t *
dp_dns_tcp_th(struct rte_mbuf *m, const struct pkt *p)
{
	return rte_pktmbuf_mtod(m, uint8_t *) + p->l4_off;
}

struct dp_fate
dp_dns_tcp_arrive(struct dp_worker *w, struct rte_mbuf *m, struct pkt *p,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp)
{
	uint32_t delta = f->dns_delta;
	struct dp_fate fate;
	uint8_t *th;

	if (p->tcp_flags & PKT_TCP_ACK) {
		th = dp_dns_tcp_th(m, p);
		frame_tcp_ack_add(th, (size_t)(p->payload - th), (uint32_t)-delta);
		p->ack -= delta;
	}
	if ((p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK) &&
	    !f->peer_synced && p->ack != f->isn && p->ack != f->dns_syn_end)
		return (struct dp_fate){ .act = DP_FATE_DISCARD, .why = DP_REASON_UNSOLICITED };
	fate = dp_conn_uplink_any(w, p, k, f, fp);
	if (fate.act != DP_FATE_STREAM)
		p->ack += delta;
	return fate;
}

void
dp_dns_tcp_seq_out(const struct dp_flow *f, struct rte_mbuf *m, const struct pkt *p)
{
	frame_tcp_seq_add(dp_dns_tcp_th(m, p), f->dns_delta);
}

struct dp_fate
dp_dns_tcp_leave(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    const struct dp_flow *f, bool from_vm, struct dp_fate fate)
{
	struct pkt there = *p;

	if (from_vm && (fate.act == DP_FATE_EGRESS || fate.act == DP_FATE_STRIP)) {
		dp_dns_tcp_seq_out(f, m, p);	/* a stripped SYN is built from m's headers */
		return fate;
	}
	/* an RST onward (none past a SYN: its receiver never saw it) or back to the resolver */
	if (fate.reply != DP_FATE_REPLY_CUT &&
	    !(from_vm && fate.reply == DP_FATE_REPLY_RST_ONWARD))
		return fate;
	if (from_vm) {
		there.seq += f->dns_delta;
		if (!(p->tcp_flags & PKT_TCP_SYN))
			dp_out_cut(w, true, NULL, NULL, m, &there);
		fate.reply = fate.reply == DP_FATE_REPLY_CUT ? DP_FATE_REPLY_RST :
		    DP_FATE_REPLY_NONE;
		return fate;
	}
	there.ack += f->dns_delta;
	dp_out_cut(w, false, m, &there, (p->tcp_flags & PKT_TCP_SYN) ? NULL : m, p);
	fate.reply = DP_FATE_REPLY_NONE;
	return fate;
}
