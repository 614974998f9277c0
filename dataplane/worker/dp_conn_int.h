/*
 * What dp_conn.c and dp_conn_ack.c share: how a segment moves its flow's TCP state, and
 * the general paths that decide any frame, which the plain ones decided inline are held
 * to (test_dp_conn_plain).
 */
#ifndef DP_CONN_INT_H
#define DP_CONN_INT_H

#include <stdint.h>

#include "dp.h"
#include "dp_conn.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_flowlog.h"
#include "sni/pkt.h"

/*
 * A TCP flow's sequence space starts at its SYN (sequence number seq, its window scale
 * wscale): a Fast Open SYN's payload_len bytes of data are sent already. The general open
 * and the lean SYN's (dp_conn_syn.h) both start it here.
 */
static inline void
dp_flow_tcp_begin(struct dp_flow *f, uint32_t seq, uint32_t payload_len, uint8_t wscale)
{
	f->isn = seq + 1;
	f->vm_nxt = f->isn + payload_len;
	f->peer_ack = f->isn;
	f->vm_wscale = wscale;
}

/*
 * A FIN or an RST on f (end: which): it is closing. The first word on how it ends stands:
 * an RST after a FIN ends a closed one. log: w has a flow log (w->flow_recs, read by the
 * caller before its stores, which the compiler cannot tell from w's).
 */
static inline void
dp_flow_track_end(struct dp_worker *w, struct dp_flow *f, uint8_t end, bool log)
{
	f->state = DP_FLOW_CLOSING;
	if (log)
		dp_flowlog_end_rec(w, f, end);
}

/*
 * Is a segment from the peer with these flags and ACK number its SYN-ACK, the first f
 * sees? It acknowledges the SYN, and with TCP Fast Open some of its data too.
 */
static inline bool
dp_flow_is_synack(const struct dp_flow *f, uint8_t tcp_flags, uint32_t ack)
{
	return (tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK) &&
	    !f->peer_synced && !dp_seq_after(f->isn, ack) && !dp_seq_after(ack, f->vm_nxt);
}

/*
 * Is a segment from the peer (flags, sequence number and ACK) a SYN-ACK for f's SYN after
 * the one f took, with another sequence number? Then the server's stream has been told to
 * start at two places, and one of them is forged. The VM picks its own ISN, so an
 * accomplice off the path can forge the SYN-ACK f takes first (the VM's SYN made to die
 * on the way, by its TTL), choosing the server's ISN itself: its stream would then be the
 * one namegate follows in order, and its ACKs would let judged bytes go
 * (dp_flow_peer_in_order()). The real SYN-ACK must still cross namegate before the VM can
 * send the real server a byte, as the VM needs its sequence number: here it is told apart.
 * A SYN-ACK sent again with the same number is the server's retransmission.
 */
static inline bool
dp_flow_synack_disputed(const struct dp_flow *f, uint8_t tcp_flags, uint32_t seq, uint32_t ack)
{
	return (tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK) &&
	    f->peer_synced && seq + 1 != f->peer_isn && !dp_seq_after(f->isn, ack) &&
	    !dp_seq_after(ack, f->vm_nxt);
}

/*
 * The peer's SYN-ACK on f (dp_flow_is_synack()): its sequence number, ACK, window and
 * window scale option (PKT_WSCALE_NONE: none), which is in force only if the VM's SYN
 * offered one too (RFC 7323 s2.2).
 */
static inline void
dp_flow_peer_synced(struct dp_flow *f, uint32_t seq, uint32_t ack, uint16_t tcp_win,
    uint8_t tcp_wscale)
{
	if (f->state == DP_FLOW_SYN_SENT)
		f->state = DP_FLOW_ESTABLISHED;
	f->peer_synced = true;
	f->peer_isn = seq + 1;
	f->peer_nxt = f->peer_isn;
	f->peer_wscale = f->vm_wscale != PKT_WSCALE_NONE && tcp_wscale != PKT_WSCALE_NONE ?
	    tcp_wscale : 0;
	f->peer_ack = ack;
	f->peer_wnd = tcp_win;		/* a SYN's window is never scaled */
}

/*
 * What each side's segments say of the other's stream. From the peer: its SYN-ACK sets
 * the window scale (in force only if both SYNs offered it, RFC 7323 s2.2), and each ACK
 * moves RCV.NXT and the window, but never past what the VM has sent (an ACK for bytes not
 * sent is not one the client's stack takes, and could come from anyone). Inlined in both
 * callers: every frame of a flow comes here, and the call spilled their registers each time.
 */
static inline __attribute__((always_inline)) void
dp_flow_track(struct dp_worker *w, struct dp_flow *f, const struct pkt *p, bool from_vm)
{
	bool log = w->flow_recs != NULL;

	f->last_seen = w->now;
	if (log)	/* counted for the flow log only: off, no per-frame cost */
		dp_flow_count(dp_flow_acct(w->flows, f), from_vm, dp_ip_bytes(p), w->now_tsc);
	if (p->proto != PKT_PROTO_TCP) {
		if (!from_vm)
			f->state = DP_FLOW_ESTABLISHED;
		return;
	}
	if (p->tcp_flags & (PKT_TCP_FIN | PKT_TCP_RST))
		dp_flow_track_end(w, f, (p->tcp_flags & PKT_TCP_RST) ? DP_FLOW_END_RST :
		    DP_FLOW_END_FIN, log);
	if (from_vm) {
		dp_flow_vm_sent(f, p);
		return;
	}
	if (dp_flow_is_synack(f, p->tcp_flags, p->ack)) {
		dp_flow_peer_synced(f, p->seq, p->ack, p->tcp_win, p->tcp_wscale);
		return;
	}
	dp_flow_peer_acked(f, p);
}

/*
 * Positive evidence of another protocol: the server spoke first (SMTP, FTP, POP3 greet
 * their clients), before the client sent a byte. HTTP and TLS servers never do. The
 * segment must be the server's first bytes, acknowledging the SYN alone: one that merely
 * claims the flow's addresses off the path would have to guess both numbers.
 */
static inline bool
dp_conn_server_first(const struct dp_flow *f, const struct pkt *p)
{
	return f->tls == DP_TLS_SNIFF && p->proto == PKT_PROTO_TCP && p->payload_len > 0 &&
	    f->peer_synced && f->hold == 0 && f->vm_nxt == f->isn && p->seq == f->peer_isn &&
	    (p->tcp_flags & PKT_TCP_ACK) && p->ack == f->isn;
}

/* dp_conn_vm_any() as it decides any frame, plain ones included. */
struct dp_fate dp_conn_vm_general(struct dp_worker *w, const struct pkt *p,
    const struct dp_flow_key *k, uint32_t h, struct dp_flow *f, struct dp_flow **fp);

/* dp_conn_uplink_any() as it decides any frame, plain ones included. */
struct dp_fate dp_conn_uplink_general(struct dp_worker *w, const struct pkt *p,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp);

#endif
