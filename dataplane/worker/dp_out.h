/*
 * The exit: the only code that sends, frees, replies to or cuts a frame. Everything before
 * it (the staged decision in dp_burst.c, the stream modules) returns a fate (dp_fate.h);
 * dp_fate_apply() acts on it. What is not one frame's fate goes through here too: held
 * segments released, freed or cut (dp_hold.c, at a verdict or a timeout), and the few
 * frames a module builds beyond the one it decides (dp_out_build()). It knows no flow and
 * no hold: they stand above it and call down.
 */
#ifndef DP_OUT_H
#define DP_OUT_H

#include <stddef.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_evt.h"
#include "dp_fate.h"
#include "sni/pkt.h"

/* The event and the audit count fate f carries, whether or not the frame goes on. */
static inline void
dp_fate_note(struct dp_worker *w, const struct pkt *p, uint16_t vm, struct dp_fate f)
{
	uint64_t word;

	/* log and counted side by side: one test for a fate that carries neither (most) */
	_Static_assert(offsetof(struct dp_fate, log) == 4 && offsetof(struct dp_fate, counted) == 5,
	    "log and counted: the fate's bytes 4 and 5");
	memcpy(&word, &f, sizeof(word));
	if (likely((word & UINT64_C(0xffff00000000)) == 0))
		return;
	if (unlikely(f.log))
		dp_evt_block(w, vm, p, (enum dp_reason)f.why, f.act != DP_FATE_BLOCK, NULL, 0);
	if (unlikely(f.counted))
		w->vm_stats[vm].blocked[f.why]++;
}

/* dp_fate_apply() for any fate: what it does not act on inline. */
void dp_fate_apply_any(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, bool from_vm, struct dp_fate f);

/* Send the frames queued for port (dp_tx()), at least one. */
void dp_tx_send(struct dp_worker *w, unsigned int port);

/*
 * Send the queued frames of both ports (the end of a poll). Inline, each port's queue
 * tested here: a poll's one call, and its loop over ports that never queue, cost more than
 * the two tests.
 */
static inline void
dp_tx_flush(struct dp_worker *w)
{
	_Static_assert(DP_PORT_VM < DP_TX_PORTS && DP_PORT_UPLINK < DP_TX_PORTS,
	    "dp_tx() queues for both data ports");
	if (w->tx[DP_PORT_VM].n != 0)
		dp_tx_send(w, DP_PORT_VM);
	if (w->tx[DP_PORT_UPLINK].n != 0)
		dp_tx_send(w, DP_PORT_UPLINK);
}

/*
 * m, a datagram namegate reassembled (l2_len marks its link header), queued for port
 * (dp_tx()): whole when it fits port's MTU, else in fragments that do.
 */
void dp_tx_reassembled(struct dp_worker *w, unsigned int port, struct rte_mbuf *m);

/* m counted and queued for port as it is, in room the caller knows of (struct dp_txbuf). */
static __rte_always_inline void
dp_tx_put(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	struct dp_txbuf *t = &w->tx[port];

	w->port_bytes[port][1] += rte_pktmbuf_pkt_len(m);	/* its count: once sent */
	t->pkts[t->n++] = m;
}

/* m counted and queued for port as it is, the queue sent once full: dp_tx() past its test. */
static inline void
dp_tx_queue(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	dp_tx_put(w, port, m);
	/* past DP_BURST only by a burst's own frames (dp_tx_own()); this port's alone */
	if (w->tx[port].n >= DP_BURST)
		dp_tx_send(w, port);
}

/* Whether m is a datagram namegate reassembled (l2_len set), to fit port's MTU. */
static __rte_always_inline bool
dp_tx_is_reassembled(const struct rte_mbuf *m)
{
	/* l2_len tested in place, not extracted first */
	const uint64_t l2_mask = ((UINT64_C(1) << RTE_MBUF_L2_LEN_BITS) - 1) <<
	    RTE_MBUF_L2_LEN_OFS;

	return (m->tx_offload & l2_mask) != 0;
}

/*
 * Queue m for port (DP_PORT_VM or DP_PORT_UPLINK); sent by dp_tx_flush or when full (a
 * burst's own frame, own: dp_tx_own()). Inline with what follows: nearly every frame ends
 * here.
 */
static __rte_always_inline void
dp_tx_as(struct dp_worker *w, unsigned int port, struct rte_mbuf *m, bool own)
{
	/*
	 * the MTU's test in the call too: inline, the frame's length was kept for it in a
	 * second register, one copy more on every frame sent
	 */
	if (unlikely(dp_tx_is_reassembled(m)))
		dp_tx_reassembled(w, port, m);
	else if (own)
		dp_tx_put(w, port, m);
	else
		dp_tx_queue(w, port, m);
}

/* dp_tx_as() of any frame but a burst's own. */
static inline void
dp_tx(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	dp_tx_as(w, port, m, false);
}

/*
 * dp_tx() for m, a frame of the burst being run (dp_burst.c), sent on as its own fate, the
 * last thing done with it: queued without asking whether the queue is full. A burst has
 * at most DP_BURST frames, and outside a burst a queue holds fewer than DP_BURST (dp_tx()
 * sends at DP_BURST, dp_tx_burst_end() after the burst): there is room (DP_TX_ROOM).
 */
static __rte_always_inline void
dp_tx_own(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	dp_tx_as(w, port, m, true);
}

/* The end of a burst that sent its own frames to port (dp_tx_own()): a full queue sent. */
static __rte_always_inline void
dp_tx_burst_end(struct dp_worker *w, unsigned int port)
{
	if (w->tx[port].n >= DP_BURST)
		dp_tx_send(w, port);
}

/* vm's counts of frame m, sent to the uplink counted as v. */
static __rte_always_inline void
dp_egress_count(struct dp_worker *w, const struct rte_mbuf *m, uint16_t vm, enum dp_verdict v)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->egress_pkts[v]++;
	s->egress_bytes[v] += rte_pktmbuf_pkt_len(m);
}

/* Count an allowed frame from vm and send it to the uplink. */
static inline void
dp_egress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_verdict v)
{
	dp_egress_count(w, m, vm, v);
	dp_tx(w, DP_PORT_UPLINK, m);
}

/* dp_egress() of a burst's own frame (dp_tx_own()). */
static __rte_always_inline void
dp_egress_own(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_verdict v)
{
	dp_egress_count(w, m, vm, v);
	dp_tx_own(w, DP_PORT_UPLINK, m);
}

/* vm's counts of frame m, sent to the VM port. */
static __rte_always_inline void
dp_ingress_count(struct dp_worker *w, const struct rte_mbuf *m, uint16_t vm)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->ingress_pkts++;
	/*
	 * the two counters side by side: GCC made them one vector add, building the vector
	 * (3 instructions more than two adds to memory); an empty asm on the first keeps
	 * them two
	 */
	__asm__("" : "+m"(s->ingress_pkts));
	s->ingress_bytes += rte_pktmbuf_pkt_len(m);
}

/* Count a frame for vm and send it to the VM port. */
static inline void
dp_ingress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm)
{
	dp_ingress_count(w, m, vm);
	dp_tx(w, DP_PORT_VM, m);
}

/* dp_ingress() of a burst's own frame (dp_tx_own()). */
static __rte_always_inline void
dp_ingress_own(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm)
{
	dp_ingress_count(w, m, vm);
	dp_tx_own(w, DP_PORT_VM, m);
}

/*
 * Act on fate f for frame m (decoded as p) of vm, received from the VM (from_vm) or the
 * uplink: its event and audit count, its reply, its counters, and m sent or freed. What
 * f says of m's flow (its held stream cut, its end) is dp_out_flow_apply()'s. A frame sent
 * on with nothing else to do (most) is acted on here inline; any other in
 * dp_fate_apply_any().
 */
static inline void
dp_fate_apply(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    bool from_vm, struct dp_fate f)
{
	struct dp_fate bare = f;

	bare.verdict = DP_ALLOWED;	/* one compare of 8 bytes: the fate and nothing else */
	if (likely(dp_fate_eq(bare, dp_fate(DP_FATE_EGRESS)))) {
		dp_egress(w, m, vm, (enum dp_verdict)f.verdict);
		return;
	}
	if (likely(dp_fate_eq(f, dp_fate(DP_FATE_INGRESS)))) {
		dp_ingress(w, m, vm);
		return;
	}
	dp_fate_apply_any(w, m, p, vm, from_vm, f);
}

/*
 * m came back from the kernel on exception-path TAP port from (DP_PORT_SLOW_VM or
 * DP_PORT_SLOW_UP): its bridge and nftables accepted it; send it on.
 */
void dp_out_from_kernel(struct dp_worker *w, struct rte_mbuf *m, unsigned int from);

/* Free m, counted as a drop outside any VM's decision (a frame that did not decode). */
void dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d);

/*
 * Held segment m of vm's stream leaves as its verdict says: toward the VM (from_peer),
 * else to the uplink counted as verdict v.
 */
void dp_out_release(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, bool from_peer,
    enum dp_verdict v);

/*
 * A frame a module builds into out (cap bytes) from arg: its length, or <= 0 for none.
 * The frames namegate makes beyond the one it decides (a trickled copy of a held hello, a
 * DNS refusal built from the query) go out through dp_out_build(), which takes a buffer,
 * and sends it out of port or gives it back: no module holds a buffer it did not receive.
 * Returns the frame's length once queued, 0 when fn built none, -ENOMEM when no buffer was
 * free (counted as no_mbuf).
 */
typedef int (*dp_out_builder)(const void *arg, uint8_t *out, size_t cap);
int dp_out_build(struct dp_worker *w, unsigned int port, dp_out_builder fn, const void *arg);

/*
 * The cut both ways, the one way namegate resets a connection: an RST to the sender of a
 * segment from the VM (from_vm) or the uplink, built from back (decoded bp; NULL when it
 * was answered otherwise), and one onward to the other end built from on (decoded op, its
 * sequence where that end's stream stands; NULL: none, it never saw the connection's
 * bytes). Each caller says where the streams stand; the RSTs are made here alone. false
 * when one could not be built.
 */
bool dp_out_cut(struct dp_worker *w, bool from_vm, const struct rte_mbuf *back,
    const struct pkt *bp, const struct rte_mbuf *on, const struct pkt *op);

/*
 * Send reply (enum dp_fate_reply) built from m (decoded as p), which came from the VM
 * (from_vm) or the uplink; m stays the caller's. false when there is none or it could not
 * be built.
 */
bool dp_out_reply(struct dp_worker *w, const struct rte_mbuf *m, const struct pkt *p,
    bool from_vm, enum dp_fate_reply reply);

/* Free m, uncounted: a held segment let go of, counted where its stream was. */
void dp_out_free(struct rte_mbuf *m);

/* Free m, counted as vm's (or the unknown VM's) frame blocked with r. */
void dp_out_block(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_reason r);

#endif
