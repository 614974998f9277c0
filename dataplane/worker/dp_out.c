/*
 * The exit (dp_out.h): where a fate is acted on, and the only code that sends, frees,
 * replies to or cuts a frame. The decision before it is staged in dp_burst.c.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_ring.h>

#include "dp_fate.h"
#include "dp_frag.h"
#include "dp_out.h"
#include "sni/frame.h"
#include "sni/frame_inplace.h"

/*
 * A datagram namegate reassembled (l2_len marks its link header) that is longer than the
 * port's MTU leaves cut into fragments again, each handed to put (a port's or the
 * exception path's queue): the receiver reassembles exactly the bytes that were judged,
 * whatever the sender's fragments said.
 */
static void
dp_refragment(struct dp_worker *w, unsigned int port, struct rte_mbuf *m,
    void (*put)(struct dp_worker *, unsigned int, struct rte_mbuf *))
{
	struct rte_mbuf *pieces[IPFRAG_FRAGS_MAX];
	int n;

	n = dp_frag_split(w->frags, m, (uint16_t)m->l2_len, w->ctx->mtu[port], w->ctx->pool,
	    pieces, IPFRAG_FRAGS_MAX);
	rte_pktmbuf_free(m);
	if (n < 0) {
		w->drops[n == -ENOMEM ? DP_DROP_NO_MBUF : DP_DROP_FRAG_BAD]++;
		return;
	}
	for (int i = 0; i < n; i++)
		put(w, port, pieces[i]);
}

void
dp_tx_reassembled(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	if (rte_pktmbuf_pkt_len(m) - m->l2_len <= w->ctx->mtu[port])
		dp_tx_queue(w, port, m);
	else
		dp_refragment(w, port, m, dp_tx);
}

void
dp_tx_send(struct dp_worker *w, unsigned int port)
{
	struct dp_txbuf *t = &w->tx[port];
	uint16_t sent = rte_eth_tx_burst(w->ctx->port[port], (uint16_t)w->id, t->pkts, t->n);

	w->port_pkts[port][1] += sent;	/* counted a burst at a time, as sent */
	if (sent < t->n) {
		w->drops[DP_DROP_TX_FULL] += t->n - sent;
		rte_pktmbuf_free_bulk(&t->pkts[sent], t->n - sent);
	}
	t->n = 0;
}

/*
 * One frame for the kernel, to the main lcore, which writes it to the TAP: a write to a
 * TAP runs the kernel's bridge and nftables on the writer's thread, which is then not
 * this one. A full queue drops it, counted.
 */
static void
dp_slow_put(struct dp_worker *w, unsigned int tap, struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);

	m->port = (uint16_t)tap;
	if (rte_ring_sp_enqueue(w->slow_out, m) != 0) {
		dp_drop(w, m, DP_DROP_SLOW_QUEUE_FULL);
		return;
	}
	w->port_pkts[tap][1]++;
	w->port_bytes[tap][1] += len;
	dp_main_wake(w->ctx);
}

/*
 * To the kernel through the exception path (its bridge and nftables table decide), or,
 * without one, dropped: fail closed. A datagram namegate reassembled leaves in pieces
 * that fit the TAP, as dp_tx() would cut it for a port.
 */
static void
dp_slow(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, unsigned int tap, bool from_vm)
{
	if (!w->ctx->slow_path) {
		dp_drop(w, m, DP_DROP_SLOW_PATH);
		return;
	}
	if (from_vm) {
		w->vm_stats[vm].egress_pkts[DP_ALLOWED]++;	/* as far as the fast path goes */
		w->vm_stats[vm].egress_bytes[DP_ALLOWED] += rte_pktmbuf_pkt_len(m);
	}
	if (likely(m->l2_len == 0) || rte_pktmbuf_pkt_len(m) - m->l2_len <= w->ctx->mtu[tap])
		dp_slow_put(w, tap, m);
	else
		dp_refragment(w, tap, m, dp_slow_put);
}

void
dp_out_from_kernel(struct dp_worker *w, struct rte_mbuf *m, unsigned int from)
{
	/* what the kernel let through goes on out of the port on the other side */
	w->port_pkts[from][0]++;
	w->port_bytes[from][0] += rte_pktmbuf_pkt_len(m);
	dp_tx(w, from == DP_PORT_SLOW_UP ? DP_PORT_UPLINK : DP_PORT_VM, m);
}

/* m's counts as vm's (or the unknown VM's) frame blocked with r */
static void
dp_out_block_count(struct dp_worker *w, const struct rte_mbuf *m, uint16_t vm,
    enum dp_reason r)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->egress_pkts[DP_BLOCKED]++;
	s->egress_bytes[DP_BLOCKED] += rte_pktmbuf_pkt_len(m);
	s->blocked[r]++;
}

void
dp_out_block(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_reason r)
{
	dp_out_block_count(w, m, vm, r);
	rte_pktmbuf_free(m);
}

/*
 * Blocked frame m (decoded as p, counted) turned into its own reply by fn, which writes it
 * from room bytes before the frame, and sent back to its sender (port), when its buffer
 * is m's alone, in one piece, with that room before it: false when not (m untouched), and
 * the caller builds the reply in a buffer of its own. What a fresh buffer would not carry
 * (offload requests, a reassembled datagram's link header length) is cleared.
 */
static bool
dp_out_reply_in_place(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    unsigned int port, uint16_t room, int (*fn)(uint8_t *, size_t, const struct pkt *))
{
	int n;

	if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1 || m->nb_segs != 1 ||
	    rte_pktmbuf_headroom(m) < room)
		return false;
	if ((n = fn(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m), p)) <= 0) {
		rte_pktmbuf_free(m);	/* none may be sent: blocked all the same */
		return true;
	}
	m->data_off = (uint16_t)(m->data_off - room);
	m->data_len = (uint16_t)n;
	m->pkt_len = (uint32_t)n;
	m->ol_flags = 0;
	m->tx_offload = 0;
	m->packet_type = 0;
	m->vlan_tci = 0;
	m->vlan_tci_outer = 0;
	dp_tx(w, port, m);
	return true;
}

/*
 * Is f's reply to p (dp_out_reply()) one frame back to its sender, built with
 * frame_icmp_unreach() or frame_tcp_rst()? A cut of a SYN is: none goes onward.
 */
static inline bool
dp_out_back_only(struct dp_fate f, const struct pkt *p)
{
	return f.reply == DP_FATE_REPLY_ICMP || f.reply == DP_FATE_REPLY_RST ||
	    (f.reply == DP_FATE_REPLY_CUT && (p->tcp_flags & PKT_TCP_SYN));
}

/*
 * m blocked or discarded (f) with a reply back to its sender alone (dp_out_back_only()),
 * which it carries itself where it can: it goes no further, so its buffer is free for the
 * reply.
 */
static void
dp_out_refuse_reply(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate f)
{
	unsigned int port = from_vm ? DP_PORT_VM : DP_PORT_UPLINK;
	bool icmp = f.reply == DP_FATE_REPLY_ICMP;

	if (f.act == DP_FATE_BLOCK)
		dp_out_block_count(w, m, vm, (enum dp_reason)f.why);
	else
		w->vm_stats[vm].blocked[f.why]++;
	if (dp_out_reply_in_place(w, m, p, port, icmp ? (uint16_t)frame_icmp_room(p) : 0,
	    icmp ? frame_icmp_unreach_in_place : frame_tcp_rst_in_place))
		return;
	dp_out_reply(w, m, p, from_vm, (enum dp_fate_reply)f.reply);
	rte_pktmbuf_free(m);
}

void
dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d)
{
	w->drops[d]++;
	rte_pktmbuf_free(m);
}

int
dp_out_build(struct dp_worker *w, unsigned int port, dp_out_builder fn, const void *arg)
{
	struct rte_mbuf *r = rte_pktmbuf_alloc(w->ctx->pool);
	int n;

	if (r == NULL) {
		w->drops[DP_DROP_NO_MBUF]++;
		return -ENOMEM;
	}
	n = fn(arg, rte_pktmbuf_mtod(r, uint8_t *), rte_pktmbuf_tailroom(r));
	if (n <= 0) {
		rte_pktmbuf_free(r);
		return 0;
	}
	r->data_len = (uint16_t)n;
	r->pkt_len = (uint32_t)n;
	dp_tx(w, port, r);
	return n;
}

/* A reply built from a frame: the frame, how it decoded, and the frame builder. */
struct dp_reply {
	const struct rte_mbuf *m;
	const struct pkt *p;
	int (*fn)(const uint8_t *, size_t, const struct pkt *, uint8_t *, size_t);
};

static int
dp_reply_build(const void *arg, uint8_t *out, size_t cap)
{
	const struct dp_reply *r = arg;

	return r->fn(rte_pktmbuf_mtod(r->m, const uint8_t *), rte_pktmbuf_data_len(r->m), r->p,
	    out, cap);
}

/*
 * Build a reply with fn (a frame_* builder) from the frame m and send it out of port.
 * Returns false when no buffer was free or the builder failed.
 */
static bool
dp_reply_send(struct dp_worker *w, unsigned int port, const struct rte_mbuf *m,
    const struct pkt *p, int (*fn)(const uint8_t *, size_t, const struct pkt *, uint8_t *,
    size_t))
{
	const struct dp_reply r = { .m = m, .p = p, .fn = fn };

	return dp_out_build(w, port, dp_reply_build, &r) > 0;
}

/* An RST to the end m was going to, in the sequence space m's sender uses. */
static int
dp_rst_onward(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out, size_t cap)
{
	return frame_tcp_rst_to_dst(in, len, p, false, out, cap);
}

bool
dp_out_cut(struct dp_worker *w, bool from_vm, const struct rte_mbuf *back, const struct pkt *bp,
    const struct rte_mbuf *on, const struct pkt *op)
{
	bool sent = true;

	if (back != NULL)
		sent = dp_reply_send(w, from_vm ? DP_PORT_VM : DP_PORT_UPLINK, back, bp,
		    frame_tcp_rst);
	if (on != NULL)
		sent = dp_reply_send(w, from_vm ? DP_PORT_UPLINK : DP_PORT_VM, on, op,
		    dp_rst_onward) && sent;
	return sent;
}

bool
dp_out_reply(struct dp_worker *w, const struct rte_mbuf *m, const struct pkt *p, bool from_vm,
    enum dp_fate_reply reply)
{
	unsigned int sender = from_vm ? DP_PORT_VM : DP_PORT_UPLINK;

	switch (reply) {
	case DP_FATE_REPLY_RST:
		return dp_reply_send(w, sender, m, p, frame_tcp_rst);
	case DP_FATE_REPLY_ICMP:
		return dp_reply_send(w, sender, m, p, frame_icmp_unreach);
	case DP_FATE_REPLY_STRIP:
		return dp_reply_send(w, from_vm ? DP_PORT_UPLINK : DP_PORT_VM, m, p,
		    frame_tcp_strip);
	case DP_FATE_REPLY_CUT:		/* a SYN's receiver never saw it: none onward */
		return dp_out_cut(w, from_vm, m, p, (p->tcp_flags & PKT_TCP_SYN) ? NULL : m, p);
	case DP_FATE_REPLY_RST_ONWARD:
		return (p->tcp_flags & PKT_TCP_SYN) || dp_out_cut(w, from_vm, NULL, p, m, p);
	default:
		return false;
	}
}

/* dp_fate_apply_any() for all but a silent discard; f whole, in its register. */
static __attribute__((noipa)) void
dp_fate_apply_rest(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate f)
{
	bool replied;

	dp_fate_note(w, p, vm, f);
	if ((f.act == DP_FATE_BLOCK || f.act == DP_FATE_DISCARD) && dp_out_back_only(f, p)) {
		dp_out_refuse_reply(w, m, p, vm, from_vm, f);
		return;
	}
	replied = f.reply != DP_FATE_REPLY_NONE &&
	    dp_out_reply(w, m, p, from_vm, (enum dp_fate_reply)f.reply);
	switch ((enum dp_fate_act)f.act) {
	case DP_FATE_EGRESS:
		dp_egress(w, m, vm, (enum dp_verdict)f.verdict);
		return;
	case DP_FATE_INGRESS:
		dp_ingress(w, m, vm);
		return;
	case DP_FATE_FLOOD:
		dp_tx(w, DP_PORT_VM, m);
		return;
	case DP_FATE_BLOCK:
		dp_out_block(w, m, vm, (enum dp_reason)f.why);
		return;
	case DP_FATE_DISCARD:
		w->vm_stats[vm].blocked[f.why]++;
		rte_pktmbuf_free(m);
		return;
	case DP_FATE_SLOW:
		dp_slow(w, m, vm, from_vm ? DP_PORT_SLOW_VM : DP_PORT_SLOW_UP, from_vm);
		return;
	case DP_FATE_STRIP:
		if (replied)	/* the SYN went, without its data */
			w->vm_stats[vm].egress_pkts[DP_ALLOWED]++;
		rte_pktmbuf_free(m);
		return;
	case DP_FATE_HELD:
		return;
	case DP_FATE_FREE:
		rte_pktmbuf_free(m);
		return;
	case DP_FATE_DROP:
	default:
		/* a stage's fate (CONTINUE, DNS, ...) is never applied; if it were: fail closed */
		dp_drop(w, m, f.act == DP_FATE_DROP ? (enum dp_drop)f.why : DP_DROP_MALFORMED);
		return;
	}
}

void
dp_fate_apply_any(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate f)
{
	/*
	 * the commonest fates that come here, with nothing to note or answer: a frame a
	 * module holds (a hello's segment), and one discarded without a word (mid-stream TCP
	 * of no flow from the uplink), counted and freed. Both before the stack frame that
	 * the other fates' calls and their many fields take (dp_fate_apply_rest()).
	 */
	uint64_t word;

	_Static_assert(offsetof(struct dp_fate, reply) == 3 && offsetof(struct dp_fate, log) == 4 &&
	    offsetof(struct dp_fate, counted) == 5 && DP_FATE_REPLY_NONE == 0,
	    "reply, log and counted: the fate's bytes 3 to 5, all zero for none");
	memcpy(&word, &f, sizeof(word));
	if ((word & UINT64_C(0xffffff000000)) == 0) {	/* one test for the three */
		if (f.act == DP_FATE_HELD)
			return;
		if (f.act == DP_FATE_DISCARD) {
			w->vm_stats[vm].blocked[f.why]++;
			rte_pktmbuf_free(m);
			return;
		}
	}
	dp_fate_apply_rest(w, m, p, vm, from_vm, f);
}

void
dp_out_release(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, bool from_peer,
    enum dp_verdict v)
{
	if (from_peer)
		dp_ingress(w, m, vm);
	else
		dp_egress(w, m, vm, v);
}

void
dp_out_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}
