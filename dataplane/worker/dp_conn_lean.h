/*
 * The flow stage of a lean frame (dp_lean.h) whose flow is not steady for it, decided from
 * the fields the lean check read and the frame's bytes it checked: a connection's FIN
 * either way, the server's SYN-ACK and its ACK of judged bytes, the VM's ACK before its
 * first bytes are judged, and with a flow log (no flow is steady then) nearly every
 * frame. What dp_conn_vm_any() or dp_conn_uplink_any() would do to each, without the
 * frame decoded into a struct pkt for them (test_dp_conn_lean and test_dp_conn_plain hold
 * them to one answer); anything else is left untouched to the general way.
 */
#ifndef DP_CONN_LEAN_H
#define DP_CONN_LEAN_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_flow.h"
#include "dp_lean.h"
#include "dp_tls.h"
#include "sni/pkt.h"
#include "sni/pkt_fast.h"
#include "sni/rd.h"

#define DP_CONN_LEAN_NO	DP_VERDICT_MAX	/* dp_conn_vm_lean(): the general way's */

/*
 * Is f current and in no budget, with no HA peer to tell (which hears of each end): what
 * the flow stage of either direction decides on without a call?
 */
static inline bool
dp_conn_lean_plain(const struct dp_worker *w, const struct dp_flow *f)
{
	return f->gen == w->gen->id && f->budgets == 0 && !w->ctx->ha;
}

/*
 * What dp_flow_track() does first to f for lean frame m from the VM (from_vm) or toward
 * it with these flags: it was seen, counted for the flow log (log: w has one), and a FIN
 * closes it. The lean frames it is asked of have no RST.
 */
static inline void
dp_conn_lean_track(struct dp_worker *w, struct dp_flow *f, const struct rte_mbuf *m,
    uint8_t flags, bool from_vm)
{
	bool log = w->flow_recs != NULL;

	f->last_seen = w->now;
	if (log)
		dp_flow_count(dp_flow_acct(w->flows, f), from_vm, dp_lean_ip_bytes(m), w->now_tsc);
	if (flags & PKT_TCP_FIN)
		dp_flow_track_end(w, f, DP_FLOW_END_FIN, log);
}

/*
 * A lean frame with these flags on flow f, which is steady for it but for its flags
 * (dp_conn_steady_flow()): is it a FIN that only closes its side (no SYN, no RST), with no
 * HA peer to hear of the end? Then f closing (dp_flow_track_end(); no flow log, as f is
 * steady) and true: the rest of its flow stage is a steady frame's (dp_conn_vm_steady(),
 * the FIN's sequence number counted; dp_conn_uplink_steady()), which is all that
 * dp_conn_vm_any() or dp_conn_uplink_any() does to it. Else false, f untouched.
 */
static inline bool
dp_conn_lean_fin(const struct dp_worker *w, struct dp_flow *f, uint8_t flags)
{
	if ((flags & DP_LEAN_TCP_ENDS) != PKT_TCP_FIN || w->ctx->ha)
		return false;
	f->state = DP_FLOW_CLOSING;
	return true;
}

/*
 * Lean frame m from the VM (its flags, sequence number and payload_len bytes of data) on
 * its flow f, not steady for it: when dp_conn_vm_any() would only track it and send it on,
 * that done to f and the verdict it egresses with; else DP_CONN_LEAN_NO, f untouched, for
 * the general way. That is dp_conn_vm_known() (no SYN, so no reopening either) on a
 * current flow in no budget, no HA peer, no RST (which lets held bytes go) nor urgent
 * pointer (which the judge asks of: dp_conn_vm_urgent()), and its judge
 * sending the segment on: without data, unless DNS over TCP frames the stream; with data,
 * only on a flow nothing judges (no module's, no judged prefix to repeat).
 */
static inline enum dp_verdict
dp_conn_vm_lean(struct dp_worker *w, struct dp_flow *f, const struct rte_mbuf *m,
    uint8_t flags, uint32_t seq, uint32_t payload_len)
{
	if (!dp_conn_lean_plain(w, f) || (flags & (PKT_TCP_SYN | PKT_TCP_RST | PKT_TCP_URG)) ||
	    (payload_len == 0 ? f->tls == DP_TLS_DNS : f->tls != DP_TLS_NONE || f->judged != 0))
		return DP_CONN_LEAN_NO;
	dp_conn_lean_track(w, f, m, flags, true);
	dp_flow_vm_sent_by(f, flags, seq, payload_len);
	return f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED;
}

/*
 * A TCP segment toward the VM that neither opens nor ends anything (flags, sequence
 * number, payload and its length, ACK and window), on flow f, which has judged bytes (so
 * is not steady) and is steady but for them and a copy of them kept to compare
 * (DP_TLS_VERIFY): dp_conn_judged_word(), which the caller asked. When no HA peer is told
 * of flows, what dp_conn_uplink_any() does to f (tracked, the judged bytes let go once the
 * server has them all, the answer to a first hello read) and true, the frame to go on
 * toward the VM; else false, f untouched. The
 * server's ACK of the hello, one frame of nearly every connection: inline in the burst,
 * where a call cost it as much as its body.
 */
static __rte_always_inline bool
dp_conn_uplink_judged(struct dp_worker *w, struct dp_flow *f, uint8_t flags, uint32_t seq,
    const uint8_t *payload, uint32_t len, uint32_t ack, uint16_t win)
{
	/* and no HA peer, which hears when the server has the hello (dp_ha_note()) */
	if (w->ctx->ha)
		return false;
	dp_conn_uplink_steady(w, f, true, flags, ack, win);
	/* its tls NONE or VERIFY: all acknowledged in the server's stream, they go */
	dp_tls_peer_ack_judged(w, f, flags, seq, len, ack);
	dp_tls_server_first(w, f, flags, seq, payload, len, ack);
	return true;
}

/*
 * Lean frame m toward the VM (l: its flags, ACK and window, where its TCP header is) on
 * its flow f, not steady for it: when dp_conn_uplink_any() would only track it, let
 * judged bytes go once the server has them all (dp_tls_peer_ack()), and send it on toward
 * the VM, that done to f and true; else false, f untouched. That is its plain path (a
 * current flow in no budget, no HA peer, no RST) without the modules that read the
 * server's bytes: the HTTP reader, DNS over TCP's judge, nor a sniffed flow, whose server
 * may speak first (dp_conn_server_first()). Its TCP header is read only for a SYN-ACK:
 * its sequence number and window scale, in one of the layouts pkt_tcp_wscale_known()
 * reads (any other, rare, goes the general way: here, the walk's call would cost every
 * frame the registers it saves).
 */
static inline bool
dp_conn_uplink_lean(struct dp_worker *w, struct dp_flow *f, const struct rte_mbuf *m,
    const struct dp_lean *l)
{
	uint8_t flags = l->flags;
	uint32_t ack = l->ack;
	uint16_t win = l->win;
	const uint8_t *th;
	uint8_t wscale;

	if (!dp_conn_lean_plain(w, f) || (flags & PKT_TCP_RST) ||
	    f->tls == DP_TLS_HTTP || f->tls == DP_TLS_DNS || f->tls == DP_TLS_SNIFF)
		return false;
	if (!dp_flow_is_synack(f, flags, ack)) {
		if (unlikely(flags & PKT_TCP_SYN))
			return false;	/* a SYN-ACK after the first: dp_flow_synack_disputed() */
		dp_conn_lean_track(w, f, m, flags, false);
		dp_flow_peer_acked_by(f, flags, ack, win);
	} else {
		th = dp_lean_th(m, l);
		if (!pkt_tcp_wscale_known(th, &wscale))
			return false;
		dp_conn_lean_track(w, f, m, flags, false);
		dp_flow_peer_synced(f, rd_be32(th + 4), ack, win, wscale);
	}
	if (f->judged != 0 || unlikely(f->hello_phase == DP_HELLO_RETRY)) {
		dp_tls_peer_ack(w, f, flags, dp_lean_seq(m, l),
		    l->payload_len + ((flags & PKT_TCP_FIN) != 0), ack);
		dp_tls_server_first(w, f, flags, dp_lean_seq(m, l), dp_lean_payload(m, l),
		    l->payload_len, ack);
	}
	return true;
}

#endif
