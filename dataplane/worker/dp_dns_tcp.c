/*
 * DNS over TCP as two streams (RFC 7766): whatever the segment boundaries, every message
 * is judged (queries) or learned from (answers) whole before any byte of it moves on, and
 * the bytes stay held, for comparison with retransmissions, until the other side
 * acknowledges them.
 */
#include <string.h>

#include "dp_conn.h"
#include "dp_dns.h"
#include "dp_dns_int.h"
#include "dp_dns_tcp_mod.h"
#include "dp_evt.h"
#include "dp_flowlog.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "sni/frame.h"

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

		if (from >= to || !dp_hold_decode(m, &p))
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

	if (h->nfolds == 0 || !dp_hold_decode(m, &p))
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
		    sizeof(d->name), NULL) : DP_REASON_DNS_DENIED;
		ok = judged == DP_REASON_ALLOWED;
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
			d->why = judged != DP_REASON_ALLOWED ? judged : DP_REASON_DNS_DENIED;
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

/* The refusal of a denied query over the stream: built from the segment that ended it. */
struct dp_dns_tcp_refusal {
	const struct rte_mbuf *m;
	const struct pkt *p;
	const struct dp_dns_denied *d;
	uint8_t rcode;
};

static int
dp_dns_tcp_refusal_build(const void *arg, uint8_t *out, size_t cap)
{
	const struct dp_dns_tcp_refusal *r = arg;

	return frame_dns_refusal_tcp(rte_pktmbuf_mtod(r->m, const uint8_t *),
	    rte_pktmbuf_data_len(r->m), r->p, r->d->msg.p, r->d->msg.len, &r->d->q, r->rcode,
	    r->d->q.edns, out, cap);
}

/*
 * Denied: answered as over UDP when the message could be read (REFUSED over the stream,
 * a frame this module builds from the query), else an RST; the resolver gets an RST,
 * having never seen the query. m's fate: blocked, its event logged as it was judged.
 */
static struct dp_fate
dp_dns_tcp_deny(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    const struct dp_dns_denied *d)
{
	const struct dp_dns_tcp_refusal r = { .m = m, .p = p, .d = d,
		.rcode = d->why == DP_REASON_VM_LIMIT ? DNS_RCODE_SERVFAIL :
		d->parsed && d->q.has_question ? w->gen->blocked_rcode : DNS_RCODE_REFUSED };
	struct dp_fate fate = dp_fate_cut((enum dp_reason)d->why);

	fate.log = false;
	if (d->parsed && !d->q.qr && dp_out_build(w, DP_PORT_VM, dp_dns_tcp_refusal_build, &r) > 0)
		fate.reply = DP_FATE_REPLY_RST_ONWARD;	/* the VM has its answer */
	return fate;
}

/*
 * Take a segment of either stream into its held buffer (*ref, taken at base when there is
 * none yet; *hp): checked against what it already holds, held unless it only repeats
 * judged bytes. HELD when m was taken; CONTINUE when it repeats judged bytes exactly and
 * goes on; else m's fate, the flow cut.
 */
static struct dp_fate
dp_dns_tcp_take(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    struct dp_flow *f, uint32_t *ref, uint32_t base, struct dp_hold **hp)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);
	bool from_peer = ref == &f->peer_hold;
	enum reasm_status rs;
	struct dp_hold *h;
	int64_t at, end;

	if (dp_hold_at(w, *ref) == NULL && (from_peer ? f->peer_fin : f->vm_fin))
		return dp_fate_drop(DP_DROP_OUT_OF_WINDOW);	/* data past the sender's FIN */
	if ((h = dp_hold_at(w, *ref)) == NULL &&
	    (h = dp_hold_take(w, f, ref, base, from_peer)) == NULL)
		return dp_fate_cut(DP_REASON_VM_LIMIT);
	*hp = h;
	at = dp_hold_offset(h->base, seq);
	end = at + (int64_t)p->payload_len;
	rs = reasm_add(&h->r, seq, p->payload, p->payload_len);
	if (rs == REASM_CONFLICT)
		return dp_fate_cut(DP_REASON_REWRITE);
	if (end <= (int64_t)h->judged)
		return dp_fate(DP_FATE_CONTINUE);
	if (h->nsegs == 0)
		h->started = w->now;
	if (rs == REASM_SCATTERED || !dp_hold_push(w, h, m, at < 0 ? 0 : (uint32_t)at,
	    (uint32_t)end))
		return dp_fate_cut(from_peer ? DP_REASON_UNSOLICITED : DP_REASON_DNS_DENIED);
	return dp_fate(DP_FATE_HELD);
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
	    (int32_t)(f->dns_acked - f->vm_nxt) >= 0)
		dp_hold_put(w, &f->hold);
	if ((h = dp_hold_at(w, f->peer_hold)) != NULL && f->peer_fin && h->nsegs == 0 &&
	    (int32_t)(f->vm_ack - f->peer_fin_seq) >= 0)
		dp_hold_put(w, &f->peer_hold);
}

/* Held segment m of the VM's stream, about to be released: folded, then shifted. */
static void
dp_dns_tcp_ready(const struct dp_hold *h, const struct dp_flow *f, struct rte_mbuf *m)
{
	struct pkt p;

	dp_dns_tcp_fold_seg(h, m);
	if (dp_hold_decode(m, &p))	/* it did as it was taken */
		dp_dns_tcp_seq_out(f, m, &p);
}

/* The judged queries m (held in h) completed go on; m itself, a SYN's data, stripped. */
static struct dp_fate
dp_dns_tcp_pass(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    struct dp_flow *f, struct dp_hold *h)
{
	struct dp_fate fate = dp_fate(DP_FATE_HELD);

	if ((p->tcp_flags & PKT_TCP_SYN) && h->judged < p->payload_len) {
		dp_dns_tcp_unhold(h, m);
		fate = (struct dp_fate){ .act = DP_FATE_STRIP, .reply = DP_FATE_REPLY_STRIP };
	}
	for (uint16_t i = 0; i < h->nsegs; i++)
		if (h->end[i] <= h->judged)
			dp_dns_tcp_ready(h, f, h->segs[i]);	/* about to be released */
	dp_hold_release(w, h, h->judged);
	dp_dns_tcp_acked(h, f->dns_acked);
	dp_dns_tcp_done(w, p, f, true);
	return fate;
}

static struct dp_fate
dp_dns_tcp_client_judge(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f)
{
	struct dp_dns_denied d;
	struct dp_hold *h;
	struct dp_fate fate;

	/* the resolver's TCP would take the byte it names out of the stream (dp_conn.c) */
	if (p->tcp_flags & PKT_TCP_URG)
		return dp_fate_cut(DP_REASON_REWRITE);
	if (p->tcp_flags & PKT_TCP_ACK) {
		if ((int32_t)(p->ack - f->vm_ack) > 0 || f->vm_ack == 0)
			f->vm_ack = p->ack;
		if ((h = dp_hold_at(w, f->peer_hold)) != NULL)
			dp_dns_tcp_acked(h, p->ack);
	}
	if (p->payload_len == 0) {
		dp_dns_tcp_done(w, p, f, true);
		return dp_fate_pass(f->would_block);
	}
	if (!dp_hold_in_window(f, p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0),
	    (uint32_t)p->payload_len))
		return dp_fate_drop(DP_DROP_OUT_OF_WINDOW);
	fate = dp_dns_tcp_take(w, m, p, f, &f->hold, f->isn, &h);
	if (fate.act == DP_FATE_CONTINUE) {	/* judged bytes again */
		dp_dns_tcp_fold_seg(h, m);
		dp_dns_tcp_done(w, p, f, true);
		return dp_fate_pass(f->would_block);
	}
	if (fate.act != DP_FATE_HELD)
		return fate;
	if (!dp_dns_tcp_queries(w, h, p, vm, f, &d) || dp_dns_tcp_overflow(h)) {
		dp_dns_tcp_unhold(h, m);
		dp_hold_put(w, &f->hold);	/* the held segments never leave */
		return dp_dns_tcp_deny(w, m, p, &d);
	}
	return dp_dns_tcp_pass(w, m, p, f, h);
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
		if (dp_dns_learn(w, vm, &a, e, w->holds->scratch, msg.len, msg.len, true,
		    &len, &refused, NULL) != DNS_EDIT_OK || refused)
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

/*
 * Does resolver segment p on f move what the resolver has of the VM's stream
 * (f->dns_acked)? Only a segment that starts within the resolver's stream as namegate saw
 * it in order, from its first byte (peer_isn) to the end of what the answers' buffer holds
 * in order: one claimed off the path must guess the resolver's ISN, while the VM picks its
 * own, so an accomplice knows the ACK that would let a judged query go (a rewrite of it
 * then passed as bytes the resolver already had). An ACK past what the VM sent is none.
 */
static bool
dp_dns_tcp_resolver_acked(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	const struct dp_hold *ph = dp_hold_at(w, f->peer_hold);
	uint32_t end = ph != NULL ? ph->r.isn + (uint32_t)reasm_contiguous(&ph->r) : f->peer_isn;

	if (!dp_flow_peer_ack_taken(f, p->tcp_flags, p->ack) || !dp_flow_peer_seq_in(f, p->seq, end))
		return false;
	if (dp_seq_after(p->ack, f->dns_acked))
		f->dns_acked = p->ack;
	return true;
}

static struct dp_fate
dp_dns_tcp_server_judge(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f)
{
	struct dp_hold *h;
	struct dp_fate fate;

	if (dp_dns_tcp_resolver_acked(w, p, f) && (h = dp_hold_at(w, f->hold)) != NULL)
		dp_dns_tcp_acked(h, f->dns_acked);
	if (p->payload_len == 0) {
		dp_dns_tcp_done(w, p, f, false);
		return dp_fate(DP_FATE_INGRESS);
	}
	if (!f->peer_synced)		/* data before the handshake: no stream to put it in */
		return (struct dp_fate){ .act = DP_FATE_DISCARD, .why = DP_REASON_UNSOLICITED };
	fate = dp_dns_tcp_take(w, m, p, f, &f->peer_hold, f->peer_isn, &h);
	if (fate.act == DP_FATE_CONTINUE) {	/* judged bytes again */
		dp_dns_tcp_done(w, p, f, false);
		return dp_fate(DP_FATE_INGRESS);
	}
	if (fate.act != DP_FATE_HELD)
		return fate;
	if (!dp_dns_tcp_answers(w, h, p, vm) || dp_dns_tcp_overflow(h)) {
		dp_dns_tcp_unhold(h, m);
		dp_hold_put(w, &f->peer_hold);
		return dp_fate_cut(DP_REASON_UNSOLICITED);
	}
	dp_hold_release(w, h, h->judged);
	dp_dns_tcp_done(w, p, f, false);
	return fate;
}

/* Both streams' judges, their fates made good for the wire (dp_dns_tcp_mod.h). */
struct dp_fate
dp_dns_tcp_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	return dp_dns_tcp_leave(w, m, p, f, true, dp_dns_tcp_client_judge(w, m, p, vm, f));
}

struct dp_fate
dp_dns_tcp_server(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	return dp_dns_tcp_leave(w, m, p, f, false, dp_dns_tcp_server_judge(w, m, p, vm, f));
}

void
dp_dns_tcp_expire(struct dp_worker *w, struct dp_hold *h)
{
	struct dp_flow *f = h->flow;

	if (h->nsegs == 0 || w->now - h->started < DP_HOLD_SECONDS)
		return;
	w->vm_stats[h->vm].blocked[h->from_peer ? DP_REASON_UNSOLICITED :
	    DP_REASON_DNS_DENIED]++;
	dp_flowlog_cut(w, f, h->from_peer ? DP_REASON_UNSOLICITED : DP_REASON_DNS_DENIED);
	dp_flow_end(w, f);
}
