/*
 * A fragment in the burst's first stage (dp_burst.c): held (a copy) until its datagram is
 * whole, which then goes on as an unfragmented one would. Apart from the burst: fragments
 * are rare, and the stages' inline code has no need of this.
 */
#include "dp_burst_int.h"
#include "dp_frag.h"
#include "dp_out.h"
#include "dp_rx.h"

/* What becomes of fragment m once added to the table (fs): the table keeps a copy. */
static inline struct dp_fate
dp_reassembled(enum ipfrag_status fs)
{
	switch (fs) {
	case IPFRAG_NEED_MORE:
	case IPFRAG_COMPLETE:
		return dp_fate(DP_FATE_FREE);
	case IPFRAG_OWNER_LIMIT:
		return dp_fate_block(DP_REASON_VM_LIMIT, DP_FATE_REPLY_NONE);
	case IPFRAG_TABLE_FULL:
		return dp_fate_drop(DP_DROP_TABLE_FULL);
	default:			/* overlapping, oversized, malformed: fail closed */
		return dp_fate_drop(DP_DROP_FRAG_BAD);
	}
}

/*
 * A fragment from or to vm: held (a copy) until its datagram is whole, which then takes
 * the path an unfragmented one would, decoded and checksummed whole. Returns the
 * datagram when m completed it, or NULL (m consumed, counted if dropped).
 */
static struct rte_mbuf *
dp_reassemble(struct dp_worker *w, struct rte_mbuf *m, struct pkt *p, enum pkt_status *st,
    uint16_t vm)
{
	enum ipfrag_status fs;
	struct rte_mbuf *whole;

	whole = dp_frag_add(w->frags, m, p->l3_off, vm, w->now, &fs);
	dp_fate_apply(w, m, p, vm, true, dp_reassembled(fs));
	if (fs != IPFRAG_COMPLETE)
		return NULL;
	if (whole == NULL) {
		w->drops[DP_DROP_NO_MBUF]++;
		return NULL;
	}
	whole->l2_len = p->l3_off;	/* refragmented on the way out if need be */
	if ((*st = pkt_decode(rte_pktmbuf_mtod(whole, const uint8_t *),
	    rte_pktmbuf_data_len(whole), p)) == PKT_MALFORMED) {
		dp_drop(w, whole, DP_DROP_MALFORMED);
		return NULL;
	}
	if (*st == PKT_OK && !p->src_route && !dp_rx_l4_csum_ok(whole, p)) {
		dp_drop(w, whole, DP_DROP_BAD_CSUM);
		return NULL;
	}
	return whole;
}

/* A fragment's datagram, once whole, in fr and decided on from there; false until then. */
bool
dp_burst_whole(struct dp_worker *w, struct dp_burst_frame *fr)
{
	if ((fr->m = dp_reassemble(w, fr->m, &fr->p, &fr->st, fr->vm)) == NULL)
		return false;
	fr->fate = dp_fate(DP_FATE_CONTINUE);
	return true;
}
