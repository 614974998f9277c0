/*
 * A TLS flow's judged bytes, once its hello was let on: what the client sends again is
 * compared with them until the server has acknowledged them all; and housekeeping's
 * timeouts for hellos that never completed and judged bytes never acknowledged.
 */
#include "dp_dns.h"
#include "dp_hash.h"
#include "dp_hold.h"
#include "dp_http.h"
#include "dp_out_flow.h"
#include "dp_tls.h"
#include "sni/reasm.h"
#include "sni/tls.h"

/* A refusal reached without a frame (a timeout): the cut made at once. */
static void
dp_tls_refuse_now(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r)
{
	dp_out_flow_settle(w, f, dp_tls_refuse(w, h, f, r, NULL, 0, DP_FATE_HELD));
}

/*
 * A segment that rewrites judged bytes: RST to the VM, and to the server at the sequence
 * number its last ACK asked for, which it accepts (RFC 5961 s3.2) whatever this segment says.
 */
static inline struct dp_fate
dp_tls_rewrite_cut(void)
{
	struct dp_fate fate = dp_fate_block(DP_REASON_REWRITE, DP_FATE_REPLY_CUT_ACKED);

	fate.end = true;
	return fate;
}

/*
 * A segment from stream offset at whose bytes before the judged end (if any) repeat them:
 * it goes on, but for bytes past a first hello whose answer has not come. A second hello
 * among them, if the answer asks for one, would be read unjudged. No client sends before
 * the answer but early data, which its TCP sends again, as it does these bytes, once the
 * answer came (dp_tls_server_hello()).
 */
static inline struct dp_fate
dp_tls_past_judged(const struct dp_flow *f, int64_t at, const struct pkt *p)
{
	if (unlikely(f->hello_phase == DP_HELLO_OPEN) &&
	    at + (int64_t)p->payload_len > (int64_t)f->judged)
		return dp_fate_drop(DP_DROP_HELLO_WAIT);
	return dp_fate_pass(f->would_block);
}

struct dp_fate
dp_tls_verify(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);
	int64_t at = dp_hold_offset(f->isn, seq), clamp;
	struct dp_hold *h;

	/* the server has the judged bytes, and ignores them again; none goes past them yet */
	if (unlikely(f->hello_phase == DP_HELLO_ACKED))
		return at + (int64_t)p->payload_len > (int64_t)f->judged ?
		    dp_fate_drop(DP_DROP_HELLO_WAIT) : dp_fate_pass(f->would_block);
	if (at >= (int64_t)f->judged)
		return dp_tls_past_judged(f, at, p);
	if (!dp_hold_in_window(f, seq, (uint32_t)p->payload_len))
		return dp_fate_drop(DP_DROP_OUT_OF_WINDOW);
	if ((h = dp_hold_at(w, f->hold)) != NULL) {
		clamp = (int64_t)f->judged - at;
		if (reasm_add(&h->r, seq, p->payload, clamp < (int64_t)p->payload_len ?
		    (size_t)clamp : p->payload_len) != REASM_CONFLICT)
			return dp_tls_past_judged(f, at, p);
	} else if (at == 0 && p->payload_len >= f->judged &&
	    dp_digest_eq(f->judged_digest, dp_hash_digest(p->payload, f->judged))) {
		/* the judged hello again, from its first byte: the same bytes */
		return dp_tls_past_judged(f, at, p);
	}
	/* no copy to compare with, and not all of it acknowledged: fail closed */
	return dp_tls_rewrite_cut();
}

void
dp_tls_server_hello(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags, uint32_t seq,
    const uint8_t *payload, uint32_t len, uint32_t ack)
{
	bool acked = f->hello_phase == DP_HELLO_ACKED;

	if (seq != f->peer_isn)
		return;
	if (!tls_server_retry(payload, len)) {
		f->hello_phase = DP_HELLO_SETTLED;
		if (acked) {		/* what dp_tls_peer_ack_judged() kept for this */
			f->tls = DP_TLS_NONE;
			f->judged = 0;
		}
		return;
	}
	/*
	 * The second hello's stream starts where the server's stands: all judged bytes in it,
	 * nothing past them (dp_tls_verify() dropped what came). A server that answers before
	 * it has them keeps the flow waiting: nothing past them goes.
	 */
	if (!acked && (!(tcp_flags & PKT_TCP_ACK) || (int32_t)(ack - (f->isn + f->judged)) < 0))
		return;
	/*
	 * the server's stream followed on from its answer (ACKED took no segment): the second
	 * hello's ACK counts only from a segment in order in it (dp_tls_peer_ack())
	 */
	(void)dp_flow_peer_in_order(f, seq, len);
	dp_hold_put(w, &f->hold);
	f->isn += f->judged;
	f->judged = 0;
	f->tls = DP_TLS_PENDING;
	f->hello_phase = DP_HELLO_RETRY;
}

void
dp_tls_peer_ack(struct dp_worker *w, struct dp_flow *f, uint8_t tcp_flags, uint32_t seq,
    uint32_t len, uint32_t ack)
{
	if (f->tls != DP_TLS_PENDING && f->tls != DP_TLS_SNIFF)
		dp_tls_peer_ack_judged(w, f, tcp_flags, seq, len, ack);
	else if (unlikely(f->hello_phase == DP_HELLO_RETRY))
		/* a second hello pending: the server's stream followed, for its ACK to come */
		(void)dp_flow_peer_in_order(f, seq, len);
}

void
dp_tls_expire(struct dp_worker *w)
{
	struct dp_holds *hs = w->holds;

	/* few holds are busy at once; a slice per round keeps the loop's cost flat */
	for (uint32_t n = 0; n < 64 && n < hs->n; n++) {
		struct dp_hold *h = &hs->h[hs->cursor];
		struct dp_flow *f = h->flow;

		hs->cursor = hs->cursor + 1 == hs->n ? 0 : hs->cursor + 1;
		if (f == NULL)
			continue;
		if (f->tls == DP_TLS_PENDING && w->now - h->started >= DP_HOLD_SECONDS) {
			dp_tls_refuse_now(w, h, f, DP_REASON_NOT_TLS);
		} else if (f->tls == DP_TLS_SNIFF && w->now - h->started >= DP_HOLD_SECONDS) {
			/* first bytes that never said what they are: not judged, so not sent */
			dp_tls_refuse_now(w, h, f, DP_REASON_HOST_DENIED);
		} else if (f->tls == DP_TLS_HTTP) {
			dp_http_expire(w, h);
		} else if (f->tls == DP_TLS_DNS) {
			dp_dns_tcp_expire(w, h);
		} else if (f->tls == DP_TLS_VERIFY && w->now - h->started >= DP_VERIFY_SECONDS) {
			/* unacknowledged for this long: what overlaps the judged bytes is cut */
			dp_hold_put(w, &f->hold);
			f->tls = DP_TLS_NONE;
		}
	}
}
