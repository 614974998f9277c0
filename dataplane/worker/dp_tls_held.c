/*
 * A ClientHello not whole in its stream's first segment: the segments held, reassembled
 * and the hello judged once whole, what cannot complete it trickled on meanwhile (a slow
 * writer), and the first bytes on a port that is not a TLS port told apart.
 */
#include "dp_hold.h"
#include "dp_http.h"
#include "dp_lean.h"
#include "dp_tls.h"
#include "dp_tls_held.h"
#include "dp_tls_judge.h"
#include "sni/http.h"
#include "sni/reasm.h"
#include "sni/tls.h"

/*
 * The hello is not whole in the data of a SYN (TCP Fast Open): the server gets the SYN
 * without it and acknowledges none of it, so the client sends the bytes again after the
 * handshake; what the SYN carried stays in the reassembler to be compared with them.
 */
static inline struct dp_fate
dp_tls_syn_strip(void)
{
	return (struct dp_fate){ .act = DP_FATE_STRIP, .reply = DP_FATE_REPLY_STRIP };
}

/*
 * Held first bytes of a flow on a port that is not a TLS port: what are they? A hello goes
 * on to be judged (CONTINUE); an SSH identification line, the one other protocol first
 * bytes prove, is released with its first bytes kept to compare, like an allowed hello; all
 * else becomes an HTTP flow, judged as requests. Otherwise m's fate.
 */
static struct dp_fate
dp_tls_sniff(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, struct dp_flow *f,
    struct dp_hold *h, uint32_t off, uint32_t end, enum reasm_status rs)
{
	enum http_first first = http_classify(h->buf, reasm_contiguous(&h->r));

	if (first == HTTP_FIRST_TLS) {
		f->tls = DP_TLS_PENDING;
		return dp_fate(DP_FATE_CONTINUE);
	}
	if (p->tcp_flags & PKT_TCP_SYN && rs != REASM_FULL)
		return dp_tls_syn_strip();	/* judged when the client sends it again */
	if (!dp_hold_push(w, h, m, off, end))
		return dp_tls_refuse(w, h, f, DP_REASON_HOST_DENIED, NULL, 0, DP_FATE_FREE);
	if (first == HTTP_FIRST_HTTP)
		return dp_http_adopt(w, h, f);
	if (first == HTTP_FIRST_SSH)
		dp_tls_release(w, h, f);
	else if (rs == REASM_FULL)
		return dp_tls_refuse(w, h, f, DP_REASON_HOST_DENIED, NULL, 0, DP_FATE_HELD);
	return dp_fate(DP_FATE_HELD);
}

/*
 * m (decoded as p, its first byte seq) into the hold h, and the hello judged once whole.
 * short_hello: m alone, into a fresh h, was parsed already and is a hello's start; what h
 * holds now is m's bytes or a prefix of them, a hello's start too (a status other than
 * SNI_NEED_MORE never changes as a stream grows), so it is not parsed again. l: m is a
 * lean frame on a flow whose hello is pending (dp_tls_hold_first_lean() or
 * dp_tls_stream_more_lean()), read from l and decoded into out (p) only where the trickle
 * reads p; NULL: p is decoded.
 */
static __rte_always_inline struct dp_fate
dp_tls_hold_as(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, struct pkt *out,
    const struct dp_lean *l, uint16_t vm, struct dp_flow *f, struct dp_hold *h, uint32_t seq,
    bool short_hello)
{
	const uint8_t *payload = l != NULL ? dp_lean_payload(m, l) : p->payload;
	size_t payload_len = l != NULL ? l->payload_len : p->payload_len;
	uint8_t flags = l != NULL ? l->flags : p->tcp_flags;
	int64_t at = dp_hold_offset(f->isn, seq), to = at + (int64_t)payload_len;
	uint32_t off = at < 0 ? 0 : (uint32_t)at, end = to < 0 ? 0 : (uint32_t)to;
	/* short_hello: h was taken for m, which starts the stream */
	enum reasm_status rs = short_hello ? reasm_add_first(&h->r, payload, payload_len) :
	    reasm_add(&h->r, seq, payload, payload_len);
	struct tls_hello hello;
	struct dp_fate fate;
	enum sni_status st;
	bool after;

	if (rs == REASM_CONFLICT || rs == REASM_SCATTERED)
		return dp_tls_refuse(w, h, f, rs == REASM_CONFLICT ? DP_REASON_REWRITE :
		    DP_REASON_NOT_TLS, NULL, 0, DP_FATE_FREE);
	if (l == NULL && f->tls == DP_TLS_SNIFF &&
	    (fate = dp_tls_sniff(w, m, p, f, h, off, end, rs)).act != DP_FATE_CONTINUE)
		return fate;
	st = short_hello ? SNI_NEED_MORE : dp_tls_parse(w, f, h->buf, reasm_contiguous(&h->r),
	    &hello);
	if (st == SNI_NEED_MORE && (flags & PKT_TCP_SYN) && rs != REASM_FULL)
		return dp_tls_syn_strip();
	after = st != SNI_NEED_MORE && dp_tls_after_passed(w, h, m);
	if (!after && !dp_hold_push(w, h, m, off, end))
		return dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0, DP_FATE_FREE);
	if (st != SNI_NEED_MORE)
		return dp_tls_verdict(w, h, f, vm, st, &hello, after ? m : NULL, off, end);
	if (rs == REASM_FULL)		/* no whole hello within the bound */
		return dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0, DP_FATE_HELD);
	/* a slow writer: what cannot complete the hello goes on */
	if (short_hello && payload_len != 0 && !(flags & PKT_TCP_FIN)) {
		dp_tls_trickle_first(w, h, m, (uint32_t)payload_len);
	} else {
		if (l != NULL)		/* the trickle reads p */
			dp_lean_decode(m, l, out, true);
		dp_hold_trickle_with(w, h, 0, (uint32_t)reasm_contiguous(&h->r), m, p);
	}
	return dp_fate(DP_FATE_HELD);
}

/* f's hold, taken if f has none; NULL: no room for one. */
static inline struct dp_hold *
dp_tls_hold_of(struct dp_worker *w, struct dp_flow *f)
{
	struct dp_hold *h = dp_hold_at(w, f->hold);

	if (h == NULL)
		return dp_hold_take(w, f, &f->hold, f->isn, false);
	dp_tls_hold_gather(h);
	return h;
}

struct dp_fate
dp_tls_stream(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, bool short_hello)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);
	struct dp_hold *h = dp_tls_hold_of(w, f);

	if (h == NULL)
		return dp_fate_cut(DP_REASON_VM_LIMIT);	/* no room to judge it first: closed */
	return dp_tls_hold_as(w, m, p, NULL, NULL, vm, f, h, seq, short_hello);
}

/*
 * The general way of a lean frame (l) into h (f's hold; NULL: none to take): a hello's
 * start (short_hello, h taken for it) or what follows it.
 */
static __rte_always_inline struct dp_fate
dp_tls_stream_lean_as(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, uint16_t vm, struct dp_flow *f, struct dp_hold *h, bool short_hello)
{
	struct dp_fate fate = h == NULL ? dp_fate_cut(DP_REASON_VM_LIMIT) :
	    dp_tls_hold_as(w, m, p, p, l, vm, f, h, l->seq, short_hello);

	if (!dp_fate_eq(fate, dp_fate(DP_FATE_HELD)))
		dp_lean_decode(m, l, p, true);
	return fate;
}

struct dp_fate
dp_tls_hold_first_any(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, uint16_t vm, struct dp_flow *f, struct dp_hold *h)
{
	return dp_tls_stream_lean_as(w, m, l, p, vm, f, h, true);
}

struct dp_fate
dp_tls_stream_more_any(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, uint16_t vm, struct dp_flow *f)
{
	return dp_tls_stream_lean_as(w, m, l, p, vm, f, dp_tls_hold_of(w, f), false);
}
