/*
 * DNS over TCP as two streams (RFC 7766): whatever the segment boundaries, every message
 * is judged (queries) or learned from (answers) whole before any byte of it moves on, and
 * the bytes stay held, for comparison with retransmissions, until the other side
 * acknowledges them.
 */
#include <string.h>

#include "dp_dns.h"
#include "dp_dns_int.h"
#include "dp_evt.h"
#include "dp_gen.h"
#include "dp_hold.h"
#include "dp_pipeline.h"
#include "sni/frame.h"

/*
 * End the connection: RST to both ends built from m (a segment of either direction,
 * whose sender hears the reply), m blocked with reason r and charged to vm.
 */
static void
dp_dns_tcp_cut(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, enum dp_reason r, bool from_vm)
{
	dp_fate_apply(w, m, p, vm, from_vm, dp_fate_block(r, DP_FATE_REPLY_CUT));
	dp_flow_end(w, f);
}

/* The resolver acknowledged the stream up to h->r.isn: its names need no folding more. */
static void
dp_dns_tcp_fold_acked(struct dp_hold *h)
{
	uint32_t done = h->r.isn - h->base;
	uint8_t kept = 0;

	for (unsigned int i = 0; i < h->nfolds; i++)
		if ((int32_t)(h->fold_at[i] + h->fold_len[i] - done) > 0) {
			h->fold_at[kept] = h->fold_at[i];
			h->fold_len[kept++] = h->fold_len[i];
		}
	h->nfolds = kept;
}

/* The other side acknowledged up to ack: held bytes it has, and were judged, are let go. */
static void
dp_dns_tcp_acked(struct dp_hold *h, uint32_t ack)
{
	uint32_t upto = h->base + h->judged, n;

	if ((int32_t)(ack - upto) < 0)
		upto = ack;
	n = upto - h->r.isn;
	if ((int32_t)n <= 0)
		return;
	if (n > reasm_contiguous(&h->r))
		n = reasm_contiguous(&h->r);
	reasm_consume(&h->r, n);
	dp_dns_tcp_fold_acked(h);
}

/* Where the next unjudged message starts in h's buffer, and how much follows in order. */
static struct rd
dp_dns_tcp_unjudged(const struct dp_hold *h)
{
	uint32_t at = h->base + h->judged - h->r.isn, cont = reasm_contiguous(&h->r);

	return at <= cont ? rd_make(h->buf + at, cont - at) : rd_make(h->buf, 0);
}

/*
 * The message at stream offsets [at, at + len) of h was edited into msg: write the bytes
 * into the held segments that carry them, whose checksums then change too. The buffer keeps
 * what the sender sent, so that its retransmissions still compare equal.
 */
static void
dp_dns_tcp_patch(struct dp_hold *h, uint32_t at, const uint8_t *msg, uint32_t len)
{
	for (uint16_t i = 0; i < h->nsegs; i++) {
		struct rte_mbuf *m = h->segs[i];
		uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
		uint32_t from = h->off[i] > at ? h->off[i] : at;
		uint32_t to = h->end[i] < at + len ? h->end[i] : at + len;
		struct pkt p;

		if (from >= to || pkt_decode(frame, rte_pktmbuf_data_len(m), &p) != PKT_OK)
			continue;
		memcpy((uint8_t *)(uintptr_t)p.payload + (from - h->off[i]), msg + (from - at),
		    to - from);
		frame_tcp_csum_set(frame + p.l3_off, p.family, frame + p.l4_off,
		    (size_t)(p.payload - (frame + p.l4_off)) + p.payload_len);
	}
}

/* The VM's query that failed, for its answer: parsed when it could be. */
struct dp_dns_denied {
	struct rd msg;
	bool parsed;
	enum dp_reason why;		/* dns_denied, or vm_limit: no room to remember it */
	struct dns_msg q;
	char name[DNS_NAME_TEXT_MAX];
};

/*
 * Every copy of the bytes of a question name the VM spelled with capitals leaves in lower
 * case, as over UDP: the held segments when they are released, and any later segment that
 * repeats them (a retransmission: the first copy may have been lost past namegate, and
 * the resolver then reads this one). The buffer keeps what the VM sent, which its
 * retransmissions are compared with; a name is forgotten once the resolver acknowledged
 * it, and a copy of bytes it acknowledged never reaches it.
 */
static void
dp_dns_tcp_fold_seg(const struct dp_hold *h, struct rte_mbuf *m)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	bool folded = false;
	struct pkt p;
	int64_t at;

	if (h->nfolds == 0 || pkt_decode(frame, rte_pktmbuf_data_len(m), &p) != PKT_OK)
		return;
	at = dp_hold_offset(h->base, p.seq + ((p.tcp_flags & PKT_TCP_SYN) != 0));
	for (unsigned int i = 0; i < h->nfolds; i++) {
		int64_t from = RTE_MAX((int64_t)h->fold_at[i], at);
		int64_t to = RTE_MIN((int64_t)h->fold_at[i] + h->fold_len[i],
		    at + (int64_t)p.payload_len);

		if (from >= to)
			continue;
		dns_name_spell((uint8_t *)(uintptr_t)p.payload + (from - at), (size_t)(to - from),
		    dp_dns_lower);
		folded = true;
	}
	if (folded)
		frame_tcp_csum_set(frame + p.l3_off, p.family, frame + p.l4_off,
		    (size_t)(p.payload - (frame + p.l4_off)) + p.payload_len);
}

/*
 * Does the query in d, if it leaves, need its name folded: capitals in a question name
 * written out (dns_msg_parse() lower-cased q.qname)?
 */
static bool
dp_dns_tcp_fold_needed(const struct dp_dns_denied *d)
{
	return d->parsed && !d->q.qr && d->q.has_question && dp_dns_question_plain(&d->q) &&
	    memcmp(d->msg.p + DNS_HDR_LEN, d->q.qname, d->q.qname_len) != 0;
}

/*
 * Judge every whole query the client stream holds beyond what was judged. Returns true
 * when all may go (in audit mode, when denied ones are only counted); false with *d.
 */
static bool
dp_dns_tcp_queries(struct dp_worker *w, struct dp_hold *h, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, struct dp_dns_denied *d)
{
	const struct dp_gen *g = w->gen;
	struct dp_vm_stats *s = &w->vm_stats[vm];
	struct rd stream = dp_dns_tcp_unjudged(h);
	uint32_t quota = g->max_pending_per_vm;
	size_t before = stream.len;
	enum dp_reason why, judged;
	enum dns_status st;
	bool ok, fold;

	d->why = DP_REASON_DNS_DENIED;
	while ((st = dns_tcp_next(&stream, &d->msg)) == DNS_OK) {
		d->parsed = dns_msg_parse(d->msg.p, d->msg.len, &d->q) == DNS_OK;
		judged = d->parsed ? dp_dns_query_judge(w, vm, &d->q, d->msg.len, d->name,
		    sizeof(d->name)) : DP_REASON_DNS_DENIED;
		ok = judged == DP_REASON_MAX;
		fold = dp_dns_tcp_fold_needed(d);
		if (fold && h->nfolds == DP_HOLD_FOLDS) {
			/* SPEC s8: its own pipeline is full; the VM asks again */
			d->why = DP_REASON_VM_LIMIT;
			dp_evt_block(w, vm, p, d->why, false, NULL, 0);
			return false;
		}
		if (ok && dp_pending_add(w->pending, p, vm, &d->q, d->msg.p, w->now, true, quota,
		    &why) == NULL) {
			if (why == DP_REASON_VM_LIMIT) {
				d->why = why;
				dp_evt_block(w, vm, p, why, false, NULL, 0);
				return false;	/* no room to remember it: not even audited */
			}
			w->drops[DP_DROP_TABLE_FULL]++;
			ok = false;
		}
		if (ok) {
			s->dns_allowed++;
		} else {
			s->dns_blocked++;
			/* judged allowed, and the pending table was full: as before, dns_denied */
			d->why = judged != DP_REASON_MAX ? judged : DP_REASON_DNS_DENIED;
			dp_evt_block(w, vm, p, d->why, g->vms[vm].audit,
			    d->parsed && d->q.has_question ? d->name : NULL,
			    d->parsed && d->q.has_question ? strnlen(d->name, sizeof(d->name)) : 0);
			if (!g->vms[vm].audit)
				return false;
			s->blocked[d->why]++;
			f->would_block = true;
			if (d->parsed && !d->q.qr)
				dp_pending_add(w->pending, p, vm, &d->q, d->msg.p, w->now, true,
				    quota, &why);
		}
		if (fold) {
			h->fold_at[h->nfolds] = (uint32_t)(h->r.isn - h->base) +
			    (uint32_t)(d->msg.p - h->buf) + DNS_HDR_LEN;
			h->fold_len[h->nfolds++] = d->q.qname_len;
		}
		h->judged += (uint32_t)(before - stream.len);
		before = stream.len;
	}
	d->parsed = false;
	return st != DNS_MALFORMED;	/* a length below a header is no DNS */
}

/*
 * Denied: answered as over UDP when the message could be read (REFUSED over the stream),
 * else an RST; the resolver gets an RST, having never seen the query.
 */
static void
dp_dns_tcp_deny(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, const struct dp_dns_denied *d)
{
	struct rte_mbuf *r = NULL;
	int n = -1;

	if (d->parsed && !d->q.qr && (r = rte_pktmbuf_alloc(w->ctx->pool)) != NULL)
		n = frame_dns_refusal_tcp(rte_pktmbuf_mtod(m, const uint8_t *),
		    rte_pktmbuf_data_len(m), p, d->msg.p, d->msg.len, &d->q,
		    d->why == DP_REASON_VM_LIMIT ? DNS_RCODE_SERVFAIL : d->q.has_question ?
		    w->gen->blocked_rcode : DNS_RCODE_REFUSED, d->q.edns,
		    rte_pktmbuf_mtod(r, uint8_t *), rte_pktmbuf_tailroom(r));
	if (n > 0) {
		r->data_len = (uint16_t)n;
		r->pkt_len = (uint32_t)n;
		dp_tx(w, DP_PORT_VM, r);
		if (!(p->tcp_flags & PKT_TCP_SYN))
			dp_reply_send(w, DP_PORT_UPLINK, m, p, dp_rst_onward);
		dp_block(w, m, vm, d->why);
		dp_flow_end(w, f);
		return;
	}
	if (r != NULL)
		rte_pktmbuf_free(r);
	/* its event was logged as the message was judged */
	dp_fate_apply(w, m, p, vm, true, (struct dp_fate){ .act = DP_FATE_BLOCK,
	    .why = (uint8_t)d->why, .reply = DP_FATE_REPLY_CUT });
	dp_flow_end(w, f);
}

/*
 * Take a segment of either stream into its held buffer (*ref, taken at base when there is
 * none yet): checked against what it already holds, held unless it only repeats judged
 * bytes. Returns NULL when the flow was cut (m consumed); *repeat when m repeats judged
 * bytes exactly and is the caller's to send.
 */
static struct dp_hold *
dp_dns_tcp_take(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, uint32_t *ref, uint32_t base, bool *repeat)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);
	bool from_peer = ref == &f->peer_hold;
	enum reasm_status rs;
	struct dp_hold *h;
	int64_t at, end;

	*repeat = false;
	if (dp_hold_at(w, *ref) == NULL && (from_peer ? f->peer_fin : f->vm_fin)) {
		dp_drop(w, m, DP_DROP_OUT_OF_WINDOW);	/* data past the sender's FIN */
		return NULL;
	}
	if ((h = dp_hold_at(w, *ref)) == NULL &&
	    (h = dp_hold_take(w, f, ref, base, from_peer)) == NULL) {
		dp_dns_tcp_cut(w, m, p, vm, f, DP_REASON_VM_LIMIT, !from_peer);
		return NULL;
	}
	at = dp_hold_offset(h->base, seq);
	end = at + (int64_t)p->payload_len;
	rs = reasm_add(&h->r, seq, p->payload, p->payload_len);
	if (rs == REASM_CONFLICT) {
		dp_dns_tcp_cut(w, m, p, vm, f, DP_REASON_REWRITE, !from_peer);
		return NULL;
	}
	if (end <= (int64_t)h->judged) {
		*repeat = true;
		return h;
	}
	if (h->nsegs == 0)
		h->started = w->now;
	if (rs == REASM_SCATTERED || !dp_hold_push(w, h, m, at < 0 ? 0 : (uint32_t)at,
	    (uint32_t)end)) {
		dp_dns_tcp_cut(w, m, p, vm, f, from_peer ? DP_REASON_UNSOLICITED :
		    DP_REASON_DNS_DENIED, !from_peer);
		return NULL;
	}
	return h;
}

/* A held stream whose buffer is full of one unfinished message: over the bound. */
static bool
dp_dns_tcp_overflow(const struct dp_hold *h)
{
	if (dp_dns_tcp_unjudged(h).len == 0)
		return false;
	return h->r.nb_ranges > 0 && h->r.ranges[h->r.nb_ranges - 1].end == sizeof(h->buf);
}

/* Take m back out of h: it is about to be answered, cut or sent some other way. */
static void
dp_dns_tcp_unhold(struct dp_hold *h, const struct rte_mbuf *m)
{
	for (uint16_t i = 0; i < h->nsegs; i++)
		if (h->segs[i] == m) {
			h->segs[i] = h->segs[--h->nsegs];
			h->off[i] = h->off[h->nsegs];
			h->end[i] = h->end[h->nsegs];
			return;
		}
}

/*
 * A stream whose sender has finished (FIN) and whose receiver has every byte of it needs
 * no copy any more, and an RST ends both: their buffers go back to the pool at once, so
 * a VM that asks over many short connections uses only as many as are open.
 */
static void
dp_dns_tcp_done(struct dp_worker *w, const struct pkt *p, struct dp_flow *f, bool from_vm)
{
	const struct dp_hold *h;

	if ((p->tcp_flags & PKT_TCP_FIN) && from_vm) {
		f->vm_fin = true;
	} else if ((p->tcp_flags & PKT_TCP_FIN) && f->peer_synced) {
		f->peer_fin = true;
		f->peer_fin_seq = p->seq + (uint32_t)p->payload_len + 1;
	}
	if (p->tcp_flags & PKT_TCP_RST) {
		dp_hold_put(w, &f->hold);
		dp_hold_put(w, &f->peer_hold);
		return;
	}
	if ((h = dp_hold_at(w, f->hold)) != NULL && f->vm_fin && h->nsegs == 0 &&
	    (int32_t)(f->peer_ack - f->vm_nxt) >= 0)
		dp_hold_put(w, &f->hold);
	if ((h = dp_hold_at(w, f->peer_hold)) != NULL && f->peer_fin && h->nsegs == 0 &&
	    (int32_t)(f->vm_ack - f->peer_fin_seq) >= 0)
		dp_hold_put(w, &f->peer_hold);
}

void
dp_dns_tcp_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct dp_dns_denied d;
	struct dp_hold *h;
	bool repeat;

	if (p->tcp_flags & PKT_TCP_ACK) {
		if ((int32_t)(p->ack - f->vm_ack) > 0 || f->vm_ack == 0)
			f->vm_ack = p->ack;
		if ((h = dp_hold_at(w, f->peer_hold)) != NULL)
			dp_dns_tcp_acked(h, p->ack);
	}
	if (p->payload_len == 0) {
		dp_dns_tcp_done(w, p, f, true);
		dp_egress(w, m, vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
		return;
	}
	if (!dp_hold_in_window(f, p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0),
	    (uint32_t)p->payload_len)) {
		dp_drop(w, m, DP_DROP_OUT_OF_WINDOW);
		return;
	}
	if ((h = dp_dns_tcp_take(w, m, p, vm, f, &f->hold, f->isn, &repeat)) == NULL)
		return;
	if (repeat) {
		dp_dns_tcp_fold_seg(h, m);
		dp_dns_tcp_done(w, p, f, true);
		dp_egress(w, m, vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
		return;
	}
	if (!dp_dns_tcp_queries(w, h, p, vm, f, &d) || dp_dns_tcp_overflow(h)) {
		dp_dns_tcp_unhold(h, m);
		dp_hold_put(w, &f->hold);	/* the held segments never leave */
		dp_dns_tcp_deny(w, m, p, vm, f, &d);
		return;
	}
	if ((p->tcp_flags & PKT_TCP_SYN) && h->judged < p->payload_len) {
		dp_dns_tcp_unhold(h, m);
		if (dp_reply_send(w, DP_PORT_UPLINK, m, p, frame_tcp_strip))
			w->vm_stats[vm].egress_pkts[DP_ALLOWED]++;
		rte_pktmbuf_free(m);
	}
	for (uint16_t i = 0; i < h->nsegs; i++)
		if (h->end[i] <= h->judged)
			dp_dns_tcp_fold_seg(h, h->segs[i]);	/* about to be released */
	dp_hold_release(w, h, h->judged);
	dp_dns_tcp_acked(h, f->peer_ack);
	dp_dns_tcp_done(w, p, f, true);
}

/*
 * Learn from every whole answer the resolver's stream holds beyond what was judged.
 * False: an answer that matches no query of this connection (or no DNS at all).
 */
static bool
dp_dns_tcp_answers(struct dp_worker *w, struct dp_hold *h, const struct pkt *p, uint16_t vm)
{
	struct rd stream = dp_dns_tcp_unjudged(h), msg;
	size_t before = stream.len, len;
	struct dp_pending_entry *e;
	enum dns_status st;
	struct dns_msg a;
	bool refused;

	while ((st = dns_tcp_next(&stream, &msg)) == DNS_OK) {
		if (dns_msg_parse(msg.p, msg.len, &a) != DNS_OK ||
		    (e = dp_pending_match(w->pending, p, vm, &a)) == NULL)
			return false;	/* never learned from */
		/*
		 * Edited in a copy, at the same length (a stream's sequence numbers cannot
		 * move), and written into the segments (dp_dns_tcp_patch()).
		 */
		memcpy(w->holds->scratch, msg.p, msg.len);
		/* refused: the connection is cut, and the VM's resolver asks again */
		if (dp_dns_learn(w, vm, &a, w->holds->scratch, msg.len, msg.len, true,
		    &len, &refused) != DNS_EDIT_OK || refused)
			return false;
		if (dp_dns_question_plain(&a))
			dns_msg_spell(w->holds->scratch, msg.len, e->qname_len, e->caps);
		dp_dns_tcp_patch(h, (uint32_t)(h->r.isn - h->base) + (uint32_t)(msg.p - h->buf),
		    w->holds->scratch, (uint32_t)msg.len);
		dp_pending_del(w->pending, e);
		h->judged += (uint32_t)(before - stream.len);
		before = stream.len;
	}
	return st != DNS_MALFORMED;
}

void
dp_dns_tcp_server(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct dp_hold *h;
	bool repeat;

	if ((p->tcp_flags & PKT_TCP_ACK) && (h = dp_hold_at(w, f->hold)) != NULL)
		dp_dns_tcp_acked(h, f->peer_ack);
	if (p->payload_len == 0) {
		dp_dns_tcp_done(w, p, f, false);
		dp_ingress(w, m, vm);
		return;
	}
	if (!f->peer_synced) {		/* data before the handshake: no stream to put it in */
		w->vm_stats[vm].blocked[DP_REASON_UNSOLICITED]++;
		rte_pktmbuf_free(m);
		return;
	}
	if ((h = dp_dns_tcp_take(w, m, p, vm, f, &f->peer_hold, f->peer_isn, &repeat)) == NULL)
		return;
	if (repeat) {
		dp_dns_tcp_done(w, p, f, false);
		dp_ingress(w, m, vm);
		return;
	}
	if (!dp_dns_tcp_answers(w, h, p, vm) || dp_dns_tcp_overflow(h)) {
		dp_dns_tcp_unhold(h, m);
		dp_hold_put(w, &f->peer_hold);
		dp_dns_tcp_cut(w, m, p, vm, f, DP_REASON_UNSOLICITED, false);
		return;
	}
	dp_hold_release(w, h, h->judged);
	dp_dns_tcp_done(w, p, f, false);
}

void
dp_dns_tcp_expire(struct dp_worker *w, struct dp_hold *h)
{
	struct dp_flow *f = h->flow;

	if (h->nsegs == 0 || w->now - h->started < DP_HOLD_SECONDS)
		return;
	w->vm_stats[h->vm].blocked[h->from_peer ? DP_REASON_UNSOLICITED :
	    DP_REASON_DNS_DENIED]++;
	dp_flow_end(w, f);
}
