/*
 * Holding, judging and releasing the first bytes of TLS connections.
 */
#include <string.h>

#include <rte_malloc.h>

#include "dp_bind.h"
#include "dp_evt.h"
#include "dp_gen.h"
#include "dp_pipeline.h"
#include "dp_quic.h"
#include "dp_reply.h"
#include "dp_slots.h"
#include "dp_tls.h"
#include "sni/reasm.h"
#include "sni/tls.h"

#define DP_HOLD_SEGS	32	/* segments held per connection: more is not a ClientHello */

struct dp_hold {
	struct reasm r;			/* TCP: the client's stream */
	struct dp_quic_hello q;		/* QUIC: the Initials' CRYPTO stream (in buf too) */
	struct dp_flow *flow;		/* NULL: free */
	uint64_t started;
	uint16_t vm;
	uint16_t nsegs;
	struct rte_mbuf *segs[DP_HOLD_SEGS];
	uint32_t off[DP_HOLD_SEGS];	/* TCP: each segment's first byte, from the isn */
	uint32_t end[DP_HOLD_SEGS];	/* and one past its last */
	uint8_t buf[TLS_HELLO_MAX];
};

struct dp_holds {
	uint32_t n, cursor;
	struct dp_slots slots;
	struct dp_quic_ctx *quic;	/* this worker's QUIC Initial keys and ciphers */
	struct dp_hold *h;
	uint8_t scratch[TLS_HELLO_MAX];	/* a hello fragmented over records, gathered */
};

struct dp_holds *
dp_holds_create(uint32_t nslots, int socket)
{
	struct dp_holds *hs;

	if ((hs = rte_zmalloc_socket("dp_holds", sizeof(*hs), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	hs->n = nslots;
	hs->h = rte_zmalloc_socket("dp_hold", (size_t)nslots * sizeof(hs->h[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	if (hs->h == NULL || dp_slots_init(&hs->slots, nslots, socket) != 0 ||
	    (hs->quic = dp_quic_ctx_new()) == NULL) {
		dp_holds_free(hs);
		return NULL;
	}
	return hs;
}

void
dp_holds_free(struct dp_holds *hs)
{
	if (hs == NULL)
		return;
	for (uint32_t i = 0; hs->h != NULL && i < hs->n; i++)
		for (uint16_t s = 0; s < hs->h[i].nsegs; s++)
			rte_pktmbuf_free(hs->h[i].segs[s]);
	dp_quic_ctx_free(hs->quic);
	dp_slots_fini(&hs->slots);
	rte_free(hs->h);
	rte_free(hs);
}

static struct dp_hold *
dp_hold_of(struct dp_worker *w, const struct dp_flow *f)
{
	return f->hold != 0 ? &w->holds->h[f->hold - 1] : NULL;
}

static void
dp_hold_release_slot(struct dp_worker *w, struct dp_flow *f)
{
	struct dp_hold *h = dp_hold_of(w, f);

	if (h == NULL)
		return;
	h->flow = NULL;
	h->nsegs = 0;
	dp_slots_put(&w->holds->slots, f->hold - 1);
	f->hold = 0;
}

/* A slot for flow f, or NULL when none is free (the caller fails closed). */
static struct dp_hold *
dp_hold_take(struct dp_worker *w, struct dp_flow *f, uint16_t vm)
{
	struct dp_hold *h;
	uint32_t slot;

	if (!dp_slots_get(&w->holds->slots, &slot))
		return NULL;
	f->hold = slot + 1;
	h = dp_hold_of(w, f);
	h->flow = f;
	h->vm = vm;
	h->started = w->now;
	h->nsegs = 0;
	return h;
}

/* Sequence order from the connection's first byte (RFC 1982 serial numbers). */
static void
dp_hold_sort(struct dp_hold *h)
{
	for (uint16_t i = 1; i < h->nsegs; i++) {
		struct rte_mbuf *m = h->segs[i];
		uint32_t off = h->off[i], end = h->end[i];
		uint16_t j = i;

		for (; j > 0 && h->off[j - 1] > off; j--) {
			h->segs[j] = h->segs[j - 1];
			h->off[j] = h->off[j - 1];
			h->end[j] = h->end[j - 1];
		}
		h->segs[j] = m;
		h->off[j] = off;
		h->end[j] = end;
	}
}

/*
 * Allowed: send what was held, in sequence order, each byte once: a segment whose bytes
 * all went out already (a retransmission) is dropped.
 */
static void
dp_tls_release(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	uint32_t sent = 0;

	if (f->key.proto != PKT_PROTO_TCP) {
		/* QUIC datagrams go out as they came: their order is the client's */
		for (uint16_t i = 0; i < h->nsegs; i++)
			dp_egress(w, h->segs[i], h->vm, f->would_block ? DP_WOULD_BLOCK :
			    DP_ALLOWED);
		h->nsegs = 0;
		f->tls = DP_TLS_NONE;
		dp_hold_release_slot(w, f);
		return;
	}
	dp_hold_sort(h);
	for (uint16_t i = 0; i < h->nsegs; i++) {
		struct rte_mbuf *m = h->segs[i];

		if (h->end[i] <= sent) {
			rte_pktmbuf_free(m);
			continue;
		}
		sent = h->end[i];
		dp_egress(w, m, h->vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
	}
	h->nsegs = 0;
	f->tls = DP_TLS_NONE;
	dp_hold_release_slot(w, f);
}

static int
dp_rst_to_server(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out, size_t cap)
{
	return dp_reply_tcp_rst_to_dst(in, len, p, false, out, cap);
}

/*
 * Denied: RST to the VM, RST to the server at the sequence number it expects (the first
 * held byte: nothing of it went out), and the held segments dropped and counted.
 */
static void
dp_tls_cut(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r)
{
	struct pkt p;

	if (f->key.proto != PKT_PROTO_TCP && h->nsegs > 0) {
		/* QUIC: the client falls back to TCP at once, where the hello is judged again */
		struct rte_mbuf *last = h->segs[h->nsegs - 1];

		pkt_decode(rte_pktmbuf_mtod(last, const uint8_t *), rte_pktmbuf_data_len(last), &p);
		dp_reply_send(w, DP_PORT_VM, last, &p, dp_reply_icmp_unreach);
	} else if (h->nsegs > 0) {
		struct rte_mbuf *first, *last;

		dp_hold_sort(h);
		first = h->segs[0];
		last = h->segs[h->nsegs - 1];
		pkt_decode(rte_pktmbuf_mtod(last, const uint8_t *), rte_pktmbuf_data_len(last), &p);
		dp_reply_send(w, DP_PORT_VM, last, &p, dp_reply_tcp_rst);
		pkt_decode(rte_pktmbuf_mtod(first, const uint8_t *), rte_pktmbuf_data_len(first),
		    &p);
		dp_reply_send(w, DP_PORT_UPLINK, first, &p, dp_rst_to_server);
	}
	for (uint16_t i = 0; i < h->nsegs; i++)
		dp_block(w, h->segs[i], h->vm, r);
	h->nsegs = 0;
	dp_hold_release_slot(w, f);
	dp_flow_close(w->flows, f);
}

/* The verdict on a whole ClientHello, or DP_REASON_MAX when it may pass. */
static enum dp_reason
dp_tls_judge(struct dp_worker *w, struct dp_flow *f, uint16_t vm, enum sni_status st,
    const struct tls_hello *hello)
{
	const struct dp_gen *g = w->gen;
	struct dp_addr dst = { .family = f->key.family };
	char name[SNI_HOST_MAX + 1];
	uint32_t hash;

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
	return DP_REASON_MAX;
}

/* Cut, or in audit mode count and let it pass. name: the SNI, when there was one. */
static void
dp_tls_refuse(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r,
    const char *name, size_t len)
{
	struct pkt p = { .family = f->key.family, .proto = f->key.proto,
		.dport = f->key.peer_port };

	memcpy(p.dst, f->key.peer, sizeof(p.dst));
	dp_evt_block(w, h->vm, &p, r, w->gen->vms[h->vm].audit, name, len);
	if (w->gen->vms[h->vm].audit) {
		w->vm_stats[h->vm].blocked[r]++;
		f->would_block = true;
		dp_tls_release(w, h, f);
		return;
	}
	dp_tls_cut(w, h, f, r);
}

void
dp_tls_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct dp_holds *hs = w->holds;
	struct tls_hello hello;
	enum reasm_status rs;
	enum sni_status st;
	enum dp_reason r;
	struct dp_hold *h;

	if ((h = dp_hold_of(w, f)) == NULL) {
		if ((h = dp_hold_take(w, f, vm)) == NULL) {
			/* no room to hold it, so no way to judge it first: fail closed */
			dp_reply_send(w, DP_PORT_VM, m, p, dp_reply_tcp_rst);
			dp_reply_send(w, DP_PORT_UPLINK, m, p, dp_rst_to_server);
			dp_block(w, m, vm, DP_REASON_FLOW_LIMIT);
			dp_flow_close(w->flows, f);
			return;
		}
		reasm_init(&h->r, f->isn, h->buf, sizeof(h->buf));
	}
	if (h->nsegs == DP_HOLD_SEGS) {
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		rte_pktmbuf_free(m);
		return;
	}
	h->off[h->nsegs] = p->seq - f->isn;
	h->end[h->nsegs] = h->off[h->nsegs] + (uint32_t)p->payload_len;
	h->segs[h->nsegs++] = m;
	/* urgent data is delivered out of band and could skip what was judged */
	if (p->tcp_flags & PKT_TCP_URG) {
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	rs = reasm_add(&h->r, p->seq, p->payload, p->payload_len);
	if (rs == REASM_CONFLICT || rs == REASM_SCATTERED) {
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	st = tls_hello_parse(h->buf, reasm_contiguous(&h->r), hs->scratch, sizeof(hs->scratch),
	    &hello);
	if (st == SNI_NEED_MORE) {
		if (rs == REASM_FULL)		/* no whole hello within the bound */
			dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	r = dp_tls_judge(w, f, vm, st, &hello);
	if (r == DP_REASON_MAX)
		dp_tls_release(w, h, f);
	else
		dp_tls_refuse(w, h, f, r, st == SNI_FOUND ? (const char *)hello.sni.p : NULL,
		    st == SNI_FOUND ? hello.sni.len : 0);
}

void
dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct tls_hello hello;
	enum dp_quic_status qs;
	struct dp_hold *h;
	enum dp_reason r;

	if ((h = dp_hold_of(w, f)) == NULL) {
		if ((h = dp_hold_take(w, f, vm)) == NULL) {
			dp_reply_send(w, DP_PORT_VM, m, p, dp_reply_icmp_unreach);
			dp_block(w, m, vm, DP_REASON_FLOW_LIMIT);
			dp_flow_close(w->flows, f);
			return;
		}
		dp_quic_hello_init(&h->q, h->buf, sizeof(h->buf));
	}
	if (h->nsegs == DP_HOLD_SEGS) {
		rte_pktmbuf_free(m);
		dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0);
		return;
	}
	h->segs[h->nsegs++] = m;
	qs = dp_quic_hello_feed(w->holds->quic, &h->q, p->payload, p->payload_len, &hello);
	switch (qs) {
	case DP_QUIC_NEED_MORE:
		return;
	case DP_QUIC_FOUND:
	case DP_QUIC_ABSENT:
		r = dp_tls_judge(w, f, vm, qs == DP_QUIC_FOUND ? SNI_FOUND : SNI_ABSENT, &hello);
		break;
	default:	/* not an Initial we can read first: nothing to judge, so no */
		r = DP_REASON_NOT_TLS;
		break;
	}
	if (r == DP_REASON_MAX)
		dp_tls_release(w, h, f);
	else
		dp_tls_refuse(w, h, f, r, qs == DP_QUIC_FOUND ? (const char *)hello.sni.p : NULL,
		    qs == DP_QUIC_FOUND ? hello.sni.len : 0);
}

void
dp_tls_forget(struct dp_worker *w, struct dp_flow *f)
{
	struct dp_hold *h = dp_hold_of(w, f);

	if (h == NULL)
		return;
	for (uint16_t i = 0; i < h->nsegs; i++)
		rte_pktmbuf_free(h->segs[i]);
	h->nsegs = 0;
	dp_hold_release_slot(w, f);
}

void
dp_tls_expire(struct dp_worker *w)
{
	struct dp_holds *hs = w->holds;

	/* few holds are busy at once; a slice per round keeps the loop's cost flat */
	for (uint32_t n = 0; n < 64 && n < hs->n; n++) {
		struct dp_hold *h = &hs->h[hs->cursor];

		hs->cursor = hs->cursor + 1 == hs->n ? 0 : hs->cursor + 1;
		if (h->flow != NULL && w->now - h->started >= DP_HOLD_SECONDS)
			dp_tls_refuse(w, h, h->flow, DP_REASON_NOT_TLS, NULL, 0);
	}
}
