/*
 * Holding, judging and releasing the first bytes of TLS connections, and holding the
 * judged bytes to compare with what the client sends again until the server has them.
 */
#include <string.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_dns.h"
#include "dp_evt.h"
#include "dp_gen.h"
#include "dp_hash.h"
#include "dp_hold.h"
#include "dp_http.h"
#include "dp_pipeline.h"
#include "dp_tls.h"
#include "sni/frame.h"
#include "sni/http.h"
#include "sni/reasm.h"
#include "sni/tls.h"

/* Allowed: send what was held, and keep the judged bytes until the server acknowledges. */
void
dp_tls_release(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	dp_hold_release(w, h, UINT32_MAX);
	if (f->key.proto != PKT_PROTO_TCP) {
		f->tls = DP_TLS_NONE;
		dp_hold_put(w, &f->hold);
		return;
	}
	f->judged = reasm_contiguous(&h->r);
	f->tls = DP_TLS_VERIFY;
	h->started = w->now;
}

/*
 * Denied: RST to the VM, RST to the server at the sequence number it expects (the first
 * held byte, or the first one not trickled to it; none for a held SYN, which the server
 * never saw), and the held segments dropped and counted.
 */
static void
dp_tls_cut(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r)
{
	struct pkt p;

	if (f->key.proto != PKT_PROTO_TCP && h->nsegs > 0) {
		/* QUIC: the client falls back to TCP at once, where the hello is judged again */
		struct rte_mbuf *last = h->segs[h->nsegs - 1];

		pkt_decode(rte_pktmbuf_mtod(last, const uint8_t *), rte_pktmbuf_data_len(last), &p);
		dp_reply_send(w, DP_PORT_VM, last, &p, frame_icmp_unreach);
	} else if (h->nsegs > 0) {
		struct rte_mbuf *first, *last;

		dp_hold_sort(h);
		first = h->segs[0];
		last = h->segs[h->nsegs - 1];
		pkt_decode(rte_pktmbuf_mtod(last, const uint8_t *), rte_pktmbuf_data_len(last), &p);
		dp_reply_send(w, DP_PORT_VM, last, &p, frame_tcp_rst);
		pkt_decode(rte_pktmbuf_mtod(first, const uint8_t *), rte_pktmbuf_data_len(first),
		    &p);
		if (h->trickled > 0)
			p.seq = f->isn + h->trickled;	/* where the server's stream stands */
		if (!(p.tcp_flags & PKT_TCP_SYN))
			dp_reply_send(w, DP_PORT_UPLINK, first, &p, dp_rst_onward);
	}
	for (uint16_t i = 0; i < h->nsegs; i++)
		dp_block(w, h->segs[i], h->vm, r);
	h->nsegs = 0;
	dp_flow_end(w, f);
}

/* The verdict on a whole ClientHello, or DP_REASON_MAX when it may pass. */
enum dp_reason
dp_tls_judge(struct dp_worker *w, struct dp_flow *f, uint16_t vm, enum sni_status st,
    const struct tls_hello *hello)
{
	const struct dp_gen *g = w->gen;
	struct pol_addr dst = { .family = f->key.family };
	char name[SNI_HOST_MAX + 1];
	uint64_t hash;

	if (st == SNI_ABSENT)
		return DP_REASON_NO_SNI;
	if (st != SNI_FOUND || hello->sni.len > SNI_HOST_MAX)
		return DP_REASON_NOT_TLS;
	/* ECH: judged on the outer SNI, the only name visible (SPEC s4.5) */
	for (size_t i = 0; i < hello->sni.len; i++) {
		uint8_t c = hello->sni.p[i];

		name[i] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
	}
	if (pol_match_name(g->set, g->vms[vm].policy, name, hello->sni.len, f->key.proto,
	    f->key.peer_port, NULL) != POL_ALLOW)
		return DP_REASON_SNI_DENIED;
	memcpy(dst.a, f->key.peer, sizeof(f->key.peer));
	hash = dp_name_hash(name, hello->sni.len);
	if (g->sni_strict && !dp_bind_has_name(w->ctx->binds, vm, &dst, hash, w->now))
		return DP_REASON_SNI_DENIED;	/* the name never resolved to this address */
	/* from now on the flow stands on its SNI: a reload judges that name */
	f->name_hash = hash;
	/* the name's budget joins those of the address: no name takes the flow out of one */
	f->budgets |= dp_budget_bit(dp_budget_of_name(g, vm, name, hello->sni.len));
	return DP_REASON_MAX;
}

/* Cut, or in audit mode count and let it pass. name: the SNI, when there was one. */
void
dp_tls_refuse(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r,
    const char *name, size_t len)
{
	dp_evt_block_flow(w, &f->key, r, w->gen->vms[h->vm].audit, name, len);
	if (w->gen->vms[h->vm].audit) {
		w->vm_stats[h->vm].blocked[r]++;
		f->would_block = true;
		dp_tls_release(w, h, f);
		return;
	}
	dp_tls_cut(w, h, f, r);
}

/* No room to hold the hello, so no way to judge it first: fail closed. */
static void
dp_tls_no_room(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	dp_fate_apply(w, m, p, vm, true, dp_fate_block(DP_REASON_VM_LIMIT, DP_FATE_REPLY_CUT));
	dp_flow_end(w, f);
}

/*
 * The hello is not whole in the data of a SYN (TCP Fast Open): the server gets the SYN
 * without it and acknowledges none of it, so the client sends the bytes again after the
 * handshake; what the SYN carried stays in the reassembler to be compared with them.
 */
static void
dp_tls_syn_strip(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	dp_fate_apply(w, m, p, vm, true,
	    (struct dp_fate){ .act = DP_FATE_STRIP, .reply = DP_FATE_REPLY_STRIP });
}

/*
 * A ClientHello whole in the first segment (the common case) is judged from the segment
 * itself and takes no hold buffer: allowed, it goes on, and a digest of its bytes stands
 * in for a copy until the server acknowledges them. Returns false when the segment holds
 * no whole hello, for the held path to take it.
 */
static bool
dp_tls_first_segment(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, uint32_t seq)
{
	const struct dp_gen *g = w->gen;
	struct tls_hello hello;
	enum sni_status st;
	enum dp_reason r;

	if (f->hold != 0 || seq != f->isn || (p->tcp_flags & PKT_TCP_URG) ||
	    !dp_hold_in_window(f, seq, (uint32_t)p->payload_len))
		return false;
	if (f->tls == DP_TLS_SNIFF) {
		switch (http_classify(p->payload, p->payload_len)) {
		case HTTP_FIRST_TLS:
			f->tls = DP_TLS_PENDING;	/* a hello on any port is judged as on 443 */
			break;
		case HTTP_FIRST_SSH:
			if (p->tcp_flags & PKT_TCP_SYN)
				return false;	/* nothing unjudged rides on a SYN */
			/* another protocol, shown: it goes on, its first bytes never rewritten */
			f->judged = (uint32_t)p->payload_len;
			f->judged_digest = dp_hash_digest(p->payload, p->payload_len);
			f->tls = DP_TLS_NONE;
			dp_egress(w, m, vm, DP_ALLOWED);
			return true;
		default:
			return false;		/* HTTP, or too few bytes to tell: held */
		}
	}
	st = tls_hello_parse(p->payload, p->payload_len, w->holds->scratch,
	    sizeof(w->holds->scratch), &hello);
	if (st == SNI_NEED_MORE)
		return false;
	r = dp_tls_judge(w, f, vm, st, &hello);
	if (r != DP_REASON_MAX) {
		dp_evt_block(w, vm, p, r, g->vms[vm].audit, st == SNI_FOUND ?
		    (const char *)hello.sni.p : NULL, st == SNI_FOUND ? hello.sni.len : 0);
		if (!g->vms[vm].audit) {
			dp_reply_send(w, DP_PORT_VM, m, p, frame_tcp_rst);
			if (!(p->tcp_flags & PKT_TCP_SYN))
				dp_reply_send(w, DP_PORT_UPLINK, m, p, dp_rst_onward);
			dp_block(w, m, vm, r);
			dp_flow_end(w, f);
			return true;
		}
		w->vm_stats[vm].blocked[r]++;
		f->would_block = true;
	}
	f->judged = (uint32_t)p->payload_len;
	f->judged_digest = dp_hash_digest(p->payload, p->payload_len);
	f->tls = DP_TLS_NONE;
	dp_egress(w, m, vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
	return true;
}

/*
 * Held first bytes of a flow on a port that is not a TLS port: what are they? A hello goes
 * on to be judged (true); an SSH identification line, the one other protocol first bytes
 * prove, is released with its first bytes kept to compare, like an allowed hello; all else
 * becomes an HTTP flow, judged as requests. False when m was taken.
 */
static bool
dp_tls_sniff(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, struct dp_hold *h, uint32_t off, uint32_t end, enum reasm_status rs)
{
	enum http_first first = http_classify(h->buf, reasm_contiguous(&h->r));

	if (first == HTTP_FIRST_TLS) {
		f->tls = DP_TLS_PENDING;
		return true;
	}
	if (p->tcp_flags & PKT_TCP_SYN && rs != REASM_FULL) {
		dp_tls_syn_strip(w, m, p, vm);	/* judged when the client sends it again */
		return false;
	}
	if (!dp_hold_push(w, h, m, off, end)) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, DP_REASON_HOST_DENIED, NULL, 0);
		return false;
	}
	if (first == HTTP_FIRST_HTTP)
		dp_http_adopt(w, h, f);
	else if (first == HTTP_FIRST_SSH)
		dp_tls_release(w, h, f);
	else if (rs == REASM_FULL)
		dp_tls_refuse(w, h, f, DP_REASON_HOST_DENIED, NULL, 0);
	return false;
}

void
dp_tls_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	bool syn = (p->tcp_flags & PKT_TCP_SYN) != 0;
	uint32_t seq = p->seq + syn, off, end;
	struct tls_hello hello;
	enum reasm_status rs;
	enum sni_status st;
	enum dp_reason r;
	struct dp_hold *h;
	int64_t at;

	if (dp_tls_first_segment(w, m, p, vm, f, seq))
		return;
	if (!dp_hold_in_window(f, seq, (uint32_t)p->payload_len)) {
		dp_drop(w, m, DP_DROP_OUT_OF_WINDOW);
		return;
	}
	if ((h = dp_hold_at(w, f->hold)) == NULL &&
	    (h = dp_hold_take(w, f, &f->hold, f->isn, false)) == NULL) {
		dp_tls_no_room(w, m, p, vm, f);
		return;
	}
	at = dp_hold_offset(f->isn, seq);
	off = at < 0 ? 0 : (uint32_t)at;
	end = (uint32_t)(at + (int64_t)p->payload_len);
	if (at + (int64_t)p->payload_len < 0)
		end = 0;
	/* urgent data is delivered out of band and could skip what was judged */
	if (p->tcp_flags & PKT_TCP_URG) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	rs = reasm_add(&h->r, seq, p->payload, p->payload_len);
	if (rs == REASM_CONFLICT || rs == REASM_SCATTERED) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, rs == REASM_CONFLICT ? DP_REASON_REWRITE :
		    DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	if (f->tls == DP_TLS_SNIFF && !dp_tls_sniff(w, m, p, vm, f, h, off, end, rs))
		return;
	st = tls_hello_parse(h->buf, reasm_contiguous(&h->r), w->holds->scratch,
	    sizeof(w->holds->scratch), &hello);
	if (st == SNI_NEED_MORE && syn && rs != REASM_FULL) {
		dp_tls_syn_strip(w, m, p, vm);
		return;
	}
	if (!dp_hold_push(w, h, m, off, end)) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	if (st == SNI_NEED_MORE) {
		if (rs == REASM_FULL)		/* no whole hello within the bound */
			dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		else	/* a slow writer: what cannot complete the hello goes on */
			dp_hold_trickle(w, h, 0, (uint32_t)reasm_contiguous(&h->r));
		return;
	}
	r = dp_tls_judge(w, f, vm, st, &hello);
	if (r == DP_REASON_MAX)
		dp_tls_release(w, h, f);
	else
		dp_tls_refuse(w, h, f, r, st == SNI_FOUND ? (const char *)hello.sni.p : NULL,
		    st == SNI_FOUND ? hello.sni.len : 0);
}

/*
 * A segment that rewrites judged bytes: RST to the VM, and to the server at the sequence
 * number its last ACK asked for, which it accepts (RFC 5961 s3.2) whatever this segment says.
 */
static void
dp_tls_rewrite_cut(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct pkt at_ack = *p;

	at_ack.seq = f->peer_ack;
	at_ack.tcp_flags &= (uint8_t)~(PKT_TCP_SYN | PKT_TCP_FIN);
	at_ack.payload_len = 0;
	dp_reply_send(w, DP_PORT_VM, m, p, frame_tcp_rst);
	dp_reply_send(w, DP_PORT_UPLINK, m, &at_ack, dp_rst_onward);
	dp_evt_block(w, vm, p, DP_REASON_REWRITE, false, NULL, 0);
	dp_block(w, m, vm, DP_REASON_REWRITE);
	dp_flow_end(w, f);
}

bool
dp_tls_verify(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);
	int64_t at = dp_hold_offset(f->isn, seq), clamp;
	struct dp_hold *h;

	if (at >= (int64_t)f->judged)
		return true;			/* past what was judged: the stream goes on */
	if (!dp_hold_in_window(f, seq, (uint32_t)p->payload_len)) {
		dp_drop(w, m, DP_DROP_OUT_OF_WINDOW);
		return false;
	}
	if ((h = dp_hold_at(w, f->hold)) != NULL) {
		clamp = (int64_t)f->judged - at;
		if (reasm_add(&h->r, seq, p->payload, clamp < (int64_t)p->payload_len ?
		    (size_t)clamp : p->payload_len) != REASM_CONFLICT)
			return true;
	} else if (at == 0 && p->payload_len >= f->judged && f->judged_digest ==
	    dp_hash_digest(p->payload, f->judged)) {
		return true;	/* the judged hello again, from its first byte: the same bytes */
	}
	/* no copy to compare with, and not all of it acknowledged: fail closed */
	dp_tls_rewrite_cut(w, m, p, vm, f);
	return false;
}

void
dp_tls_peer_ack(struct dp_worker *w, struct dp_flow *f)
{
	/*
	 * The server has every judged byte and ignores them if they come again: nothing to
	 * compare from now on (and no offset to misread once the sequence numbers wrap).
	 */
	if (f->tls != DP_TLS_PENDING && f->tls != DP_TLS_SNIFF &&
	    (int32_t)(f->peer_ack - (f->isn + f->judged)) >= 0) {
		dp_hold_put(w, &f->hold);
		f->tls = DP_TLS_NONE;
		f->judged = 0;
	}
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
			dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		} else if (f->tls == DP_TLS_SNIFF && w->now - h->started >= DP_HOLD_SECONDS) {
			/* first bytes that never said what they are: not judged, so not sent */
			dp_tls_refuse(w, h, f, DP_REASON_HOST_DENIED, NULL, 0);
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
