/*
 * The flow stage of the per-frame decision: a whole datagram's connection, opened,
 * tracked, or refused. Returns the frame's fate; *fp is set to the flow for fates that
 * need it (DP_FATE_STREAM).
 */
#ifndef DP_CONN_H
#define DP_CONN_H

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "sni/pkt.h"

#include <string.h>

/*
 * The flow key of p, a frame from VM vm (from_vm) or toward it, written in place: the
 * burst stage builds a burst's keys side by side and looks them up together.
 */
static inline void
dp_conn_key(struct dp_flow_key *k, uint16_t vm, const struct pkt *p, bool from_vm)
{
	/* whole, the zero tail with it: stored as wide as it goes, not a field at a time */
	*k = (struct dp_flow_key){ .vm = vm, .family = p->family, .proto = p->proto,
		.vm_port = from_vm ? p->sport : p->dport,
		.peer_port = from_vm ? p->dport : p->sport };
	memcpy(k->peer, from_vm ? p->dst : p->src, 16);	/* an IPv4 address's tail is zero */
}

/* a is after b in sequence space (RFC 1982) */
static inline bool
dp_seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/*
 * What a TCP segment from the VM (its flags, its sequence number, payload_len bytes of
 * data) says of its own stream: how far it has sent.
 */
static inline void
dp_flow_vm_sent_by(struct dp_flow *f, uint8_t tcp_flags, uint32_t seq, uint32_t payload_len)
{
	uint32_t end = seq + payload_len + ((tcp_flags & PKT_TCP_SYN) != 0) +
	    ((tcp_flags & PKT_TCP_FIN) != 0);

	if (dp_seq_after(end, f->vm_nxt))
		f->vm_nxt = end;
}

/* dp_flow_vm_sent_by() of segment p */
static inline void
dp_flow_vm_sent(struct dp_flow *f, const struct pkt *p)
{
	dp_flow_vm_sent_by(f, p->tcp_flags, p->seq, (uint32_t)p->payload_len);
}

/*
 * Is an ACK from the server (its segment's flags and ACK number) one the client's stack
 * takes: flagged, past the SYN-ACK, and not for bytes the VM has not sent (such an ACK
 * could come from anyone)? Every use of the server's ACK asks this first.
 */
static inline bool
dp_flow_peer_ack_taken(const struct dp_flow *f, uint8_t tcp_flags, uint32_t ack)
{
	return (tcp_flags & PKT_TCP_ACK) && f->peer_synced && !dp_seq_after(ack, f->vm_nxt);
}

/*
 * Does a server segment at seq start within the server's stream from its first byte
 * (peer_isn) to end, as namegate saw it in order (dp_flow_peer_in_order(); DNS over TCP's
 * answers' buffer)? Before peer_isn, it wraps high.
 */
static inline bool
dp_flow_peer_seq_in(const struct dp_flow *f, uint32_t seq, uint32_t end)
{
	return seq - f->peer_isn <= end - f->peer_isn;
}

/*
 * What a TCP segment from the peer, past its SYN-ACK, says of the VM's stream: each ACK
 * moves RCV.NXT and the window, but never past what the VM has sent (an ACK for bytes not
 * sent is not one the client's stack takes, and could come from anyone).
 */
static inline void
dp_flow_peer_acked_by(struct dp_flow *f, uint8_t tcp_flags, uint32_t ack, uint16_t tcp_win)
{
	if (!dp_flow_peer_ack_taken(f, tcp_flags, ack))
		return;
	if (dp_seq_after(ack, f->peer_ack))
		f->peer_ack = ack;
	f->peer_wnd = (uint32_t)tcp_win << f->peer_wscale;
}

/*
 * Does a segment from the server (its sequence number seq, taking len of its sequence
 * space: its payload, and 1 for a FIN) start within what the server was seen to send in
 * order, from its first byte (peer_isn) to peer_nxt? Only such a segment's ACK lets
 * judged bytes go (dp_tls_peer_ack()). One claimed off the path, the flow's addresses
 * spoofed, must guess where the server's stream is, which only the server, the path and
 * the VM (its SYN-ACK) know: an accomplice the VM tells can forge it, as namegate(8) says
 * (DNS over TCP's modulated numbers are out of its reach). One that starts there moves
 * peer_nxt past its end; one past it (a server's segment lost upstream) moves nothing,
 * and the lost one comes again in order.
 */
static inline bool
dp_flow_peer_in_order(struct dp_flow *f, uint32_t seq, uint32_t len)
{
	if (!f->peer_synced || !dp_flow_peer_seq_in(f, seq, f->peer_nxt))
		return false;
	if (dp_seq_after(seq + len, f->peer_nxt))	/* len below 2^16: no wrap to fear */
		f->peer_nxt = seq + len;
	return true;
}

/* The sequence space segment p takes: its payload, and 1 for a FIN (its SYN apart). */
static inline uint32_t
dp_seq_len(const struct pkt *p)
{
	return (uint32_t)p->payload_len + ((p->tcp_flags & PKT_TCP_FIN) != 0);
}

/* dp_flow_peer_acked_by() of segment p */
static inline void
dp_flow_peer_acked(struct dp_flow *f, const struct pkt *p)
{
	dp_flow_peer_acked_by(f, p->tcp_flags, p->ack, p->tcp_win);
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "gen is the word's low half");
#define DP_CONN_TLS_NEVER	0xff	/* a tls no flow has: no flow is steady */
_Static_assert(DP_TLS_UDP < DP_CONN_TLS_NEVER, "DP_CONN_TLS_NEVER is no flow's");

/*
 * The word a steady flow's gen, tls and budgets make under w as it is (its generation
 * and flow log stay as they are through a burst): the generation's id, tls and budgets
 * zero; with a flow log, which counts every frame, one no flow makes.
 */
static inline uint64_t
dp_conn_steady_key(const struct dp_worker *w)
{
	return w->flow_recs == NULL ? w->gen->id : (uint64_t)DP_CONN_TLS_NEVER << 32;
}

/*
 * Are flow f's gen, tls and budgets the word key says (dp_conn_steady_key()): judged by
 * the current generation, no module's, in no budget, no flow log?
 */
static inline bool
dp_conn_steady_word(uint64_t key, const struct dp_flow *f)
{
	uint64_t word;

	memcpy(&word, &f->gen, sizeof(word));
	return ((word ^ key) << 16) == 0;
}

/*
 * dp_conn_steady_word(), but for f's tls, which may also be DP_TLS_VERIFY (a released
 * hello's copy kept to compare, which the server's ACK lets go): what the burst asks of a
 * flow with judged bytes before dp_conn_uplink_judged() (dp_conn_lean.h).
 */
static inline bool
dp_conn_judged_word(uint64_t key, const struct dp_flow *f)
{
	uint64_t word;

	_Static_assert(DP_TLS_NONE == 0 && (DP_TLS_VERIFY & (DP_TLS_VERIFY - 1)) == 0,
	    "VERIFY is one bit: masked, only NONE and VERIFY read as NONE");
	memcpy(&word, &f->gen, sizeof(word));
	return (((word ^ key) & ~((uint64_t)DP_TLS_VERIFY << 32)) << 16) == 0;
}

/*
 * What dp_conn_steady() asks of flow f, for a frame with payload_len bytes of data: all
 * but that the frame neither opens nor ends anything (dp_lean_steady() asks that apart).
 */
static inline bool
dp_conn_steady_flow(uint64_t key, const struct dp_flow *f, bool from_vm, size_t payload_len)
{
	return dp_conn_steady_word(key, f) && (f->judged == 0 || (from_vm && payload_len == 0));
}

/*
 * Is p, on flow f, a frame of its steady state, which the flow stage decides inline: the
 * flow judged by the current generation, counting in no budget, nothing judging its
 * bytes (no module's; no judged prefix, unless p comes from the VM (from_vm) without data:
 * a segment with data must repeat the prefix, and the peer's ACKs of it free its copy),
 * no flow log to count it for, and a datagram or a TCP segment that neither opens nor
 * ends anything, nor points at urgent data (dp_conn_vm_urgent() asks of that). key:
 * dp_conn_steady_key(), which the flow's gen, tls and budgets must make (the bytes after
 * them, in_use and would_block, shifted out). Anything else takes
 * dp_conn_vm_any() or dp_conn_uplink_any(), which decide every frame the same way, these
 * included.
 */
static inline bool
dp_conn_steady(uint64_t key, const struct dp_flow *f, const struct pkt *p, bool from_vm)
{
	return dp_conn_steady_flow(key, f, from_vm, p->payload_len) &&
	    (p->proto == PKT_PROTO_UDP ||
	    !(p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_FIN | PKT_TCP_RST | PKT_TCP_URG)));
}

/*
 * A TCP or UDP datagram from k's VM that no earlier stage decided, with key k, its hash h
 * (dp_flow_hash()'s: a flow it opens is indexed by it) and f, the flow k looked up to
 * (NULL: none).
 */
struct dp_fate dp_conn_vm_any(struct dp_worker *w, const struct pkt *p,
    const struct dp_flow_key *k, uint32_t h, struct dp_flow *f, struct dp_flow **fp);

/*
 * A TCP or UDP datagram from the uplink toward its VM, with key k and f, the flow k looked
 * up to (NULL: none).
 */
struct dp_fate dp_conn_uplink_any(struct dp_worker *w, const struct pkt *p,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp);

/*
 * A flow opened under an older policy (or another box's, adopted by the HA pair): may it
 * go on? On the grounds it opened on (how, and name_hash for a binding), judged with the
 * current generation (SPEC s4: what the new policy no longer allows is cut).
 */
bool dp_flow_still_allowed(struct dp_worker *w, const struct dp_flow *f);

/*
 * The budgets f counts in under the current generation (their indexes are its): its
 * destination's, and the name it stands on (the SNI or Host, once judged) as the name
 * table says. Computed when it opens and when the generation changes, not per frame: a
 * name bound to the address later counts for the flows opened after it.
 */
uint8_t dp_flow_budgets_again(struct dp_worker *w, const struct dp_flow *f);

/*
 * What a steady frame from the VM (dp_conn_steady()) does to its flow f, a TCP segment
 * (tcp) at seq with payload_len bytes or a datagram: the verdict it egresses with.
 */
static inline enum dp_verdict
dp_conn_vm_steady(struct dp_worker *w, struct dp_flow *f, bool tcp, uint32_t seq,
    uint32_t payload_len)
{
	f->last_seen = w->now;
	/* dp_flow_vm_sent(), where no SYN or FIN takes a sequence number: neither is steady */
	if (tcp && dp_seq_after(seq + payload_len, f->vm_nxt))
		f->vm_nxt = seq + payload_len;
	return f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED;
}

/*
 * dp_conn_vm_any(), a frame of its flow's steady state decided inline; steady:
 * dp_conn_steady_key(w).
 */
static inline struct dp_fate
dp_conn_vm(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k, uint32_t h,
    struct dp_flow *f, struct dp_flow **fp, uint64_t steady)
{
	if (f == NULL || !dp_conn_steady(steady, f, p, true))
		return dp_conn_vm_any(w, p, k, h, f, fp);
	/* *fp as it was: an egress needs no flow */
	return dp_fate_egress(dp_conn_vm_steady(w, f, p->proto == PKT_PROTO_TCP, p->seq,
	    (uint32_t)p->payload_len));
}

/*
 * What a steady frame toward the VM does to its flow f: a TCP segment (tcp) with these
 * flags, ACK number and window, or a datagram.
 */
static inline void
dp_conn_uplink_steady(struct dp_worker *w, struct dp_flow *f, bool tcp, uint8_t tcp_flags,
    uint32_t ack, uint16_t tcp_win)
{
	f->last_seen = w->now;
	if (tcp)
		dp_flow_peer_acked_by(f, tcp_flags, ack, tcp_win);
	else
		f->state = DP_FLOW_ESTABLISHED;
}

/* dp_conn_uplink_any(), likewise. */
static inline struct dp_fate
dp_conn_uplink(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp, uint64_t steady)
{
	if (f == NULL || !dp_conn_steady(steady, f, p, false))
		return dp_conn_uplink_any(w, p, k, f, fp);
	/* nor an ingress */
	dp_conn_uplink_steady(w, f, p->proto == PKT_PROTO_TCP, p->tcp_flags, p->ack, p->tcp_win);
	return dp_fate(DP_FATE_INGRESS);
}

#endif
