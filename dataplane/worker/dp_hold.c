/*
 * The pool of held streams, and releasing what they hold in sequence order.
 */
#include <string.h>

#include <rte_malloc.h>

#include "dp_hold.h"
#include "dp_mem.h"
#include "dp_out.h"
#include "sni/frame.h"

struct dp_holds *
dp_holds_create(uint32_t nslots, uint16_t nvms, int socket)
{
	struct dp_holds *hs;

	if ((hs = rte_zmalloc_socket("dp_holds", sizeof(*hs), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	hs->n = nslots;
	hs->nvms = nvms;
	hs->h = rte_zmalloc_socket("dp_hold", (size_t)nslots * sizeof(hs->h[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	hs->per_vm = rte_zmalloc_socket("dp_hold_vm", (size_t)(nvms + 1) * sizeof(hs->per_vm[0]),
	    0, socket);
	if (hs->h == NULL || hs->per_vm == NULL || dp_slots_init(&hs->slots, nslots, socket) != 0 ||
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
	for (uint32_t i = 0; hs->h != NULL && i < hs->n; i++) {
		for (uint16_t s = 0; s < hs->h[i].nsegs; s++)
			dp_out_free(hs->h[i].segs[s]);
		if (hs->h[i].kept != NULL)
			dp_out_free(hs->h[i].kept);
	}
	dp_quic_ctx_free(hs->quic);
	dp_slots_fini(&hs->slots);
	rte_free(hs->per_vm);
	rte_free(hs->h);
	rte_free(hs);
}

struct dp_hold *
dp_hold_take(struct dp_worker *w, struct dp_flow *f, uint32_t *ref, uint32_t base,
    bool from_peer)
{
	return dp_hold_take_inline(w, f, ref, base, from_peer);
}

/*
 * Free the segments h still holds (h is free already: they are only freed). Out of line: a
 * released hello's hold holds none when it is put, and the loop's call made
 * dp_hold_put_taken() save registers for it.
 */
static __attribute__((noinline)) void
dp_hold_free_segs(struct dp_hold *h)
{
	for (uint16_t i = 0; i < h->nsegs; i++)
		dp_out_free(h->segs[i]);
	h->nsegs = 0;
}

void
dp_hold_put_taken(struct dp_worker *w, uint32_t *ref)
{
	struct dp_hold *h = dp_hold_at(w, *ref);

	h->flow = NULL;
	w->holds->per_vm[h->vm]--;
	dp_slots_put(&w->holds->slots, *ref - 1);
	*ref = 0;
	if (h->kept != NULL) {	/* the judged bytes lay in it: r.buf goes with it */
		dp_out_free(h->kept);
		h->kept = NULL;
	}
	if (h->nsegs != 0)	/* last, a tail call: nothing here is live across it */
		dp_hold_free_segs(h);
}

/* Sequence order from the stream's first byte (offsets, so wraparound is already gone). */
void
dp_hold_sort_many(struct dp_hold *h)
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

void
dp_hold_release(struct dp_worker *w, struct dp_hold *h, uint32_t upto)
{
	const struct dp_flow *f = h->flow;
	uint32_t sent = h->passed;	/* the server has those bytes, from their copies */
	uint16_t kept = 0;

	dp_hold_sort(h);
	for (uint16_t i = 0; i < h->nsegs; i++) {
		struct rte_mbuf *m = h->segs[i];

		if (h->end[i] > upto) {
			h->segs[kept] = m;
			h->off[kept] = h->off[i];
			h->end[kept++] = h->end[i];
			continue;
		}
		if (h->end[i] <= sent && h->end[i] > h->off[i]) {
			dp_out_free(m);
			continue;
		}
		if (h->end[i] > sent)
			sent = h->end[i];
		dp_out_release(w, m, h->vm, h->from_peer,
		    f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
	}
	h->nsegs = kept;
}

/* A held segment cut short: the segment, how it decodes, and how much payload goes. */
struct dp_hold_prefix {
	const struct rte_mbuf *m;
	const struct pkt *p;
	uint32_t keep;
};

static int
dp_hold_prefix_build(const void *arg, uint8_t *out, size_t cap)
{
	const struct dp_hold_prefix *c = arg;

	return frame_tcp_prefix(rte_pktmbuf_mtod(c->m, const uint8_t *),
	    rte_pktmbuf_data_len(c->m), c->p, c->keep, out, cap);
}

void
dp_hold_trickle(struct dp_worker *w, struct dp_hold *h, uint32_t from, uint32_t upto)
{
	dp_hold_trickle_with(w, h, from, upto, NULL, NULL);
}

void
dp_hold_trickle_with(struct dp_worker *w, struct dp_hold *h, uint32_t from, uint32_t upto,
    const struct rte_mbuf *m, const struct pkt *p)
{
	if (h->trickled < from)
		h->trickled = from;
	dp_hold_sort(h);
	for (uint16_t i = 0; i < h->nsegs && h->trickled < upto; i++) {
		uint32_t end = h->end[i] < upto ? h->end[i] : upto;
		struct dp_hold_prefix c = { .m = h->segs[i], .p = p, .keep = end - h->off[i] };
		struct pkt again;
		int n;

		if (h->off[i] > h->trickled || end <= h->trickled)
			continue;
		if (c.m != m) {		/* a segment held before: decoded anew */
			if (!dp_hold_decode(c.m, &again))
				continue;
			c.p = &again;
		}
		if (c.m == m && c.keep == p->payload_len && !(p->tcp_flags & PKT_TCP_FIN)) {
			/*
			 * The frame in hand, whole and without a FIN: its copy would be its
			 * bytes again. It goes itself, and the hold keeps a second reference
			 * for the verdict, only ever read (a cut's templates) and freed: held
			 * TLS segments are never written, and its release does not send it
			 * again (passed, below) or sends it as it is.
			 */
			rte_mbuf_refcnt_update(h->segs[i], 1);
			dp_tx(w, DP_PORT_UPLINK, h->segs[i]);
			n = 1;
		} else {
			/* copies: the segment stays held whole for the verdict */
			n = dp_out_build(w, DP_PORT_UPLINK, dp_hold_prefix_build, &c);
		}
		if (n < 0)
			return;		/* no buffer: the client sends it again, nothing is lost */
		if (n > 0) {
			/* went whole and in order, nothing of it left for its release to send */
			if (h->passed == h->off[i] && end == h->end[i] &&
			    !(c.p->tcp_flags & PKT_TCP_FIN))
				h->passed = end;
			h->trickled = end;
		}
	}
}

void
dp_flow_end(struct dp_worker *w, struct dp_flow *f)
{
	dp_hold_put(w, &f->hold);
	dp_hold_put(w, &f->peer_hold);
	dp_flow_close(w->flows, f);
}

uint64_t
dp_holds_mem(uint32_t nslots, uint16_t nvms)
{
	struct dp_holds *hs = NULL;

	return dp_mem_alloc(sizeof(*hs)) + dp_mem_alloc((uint64_t)nslots * sizeof(hs->h[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(hs->per_vm[0])) +
	    dp_mem_alloc((uint64_t)nslots * sizeof(uint32_t));
}
