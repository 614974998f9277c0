/*
 * What dp_tls.c and dp_tls_held.c share: a hello that is not whole in its stream's first
 * segment goes the held way (dp_tls_held.c), its segments held and reassembled until it
 * is judged once whole.
 */
#ifndef DP_TLS_HELD_H
#define DP_TLS_HELD_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "sni/pkt.h"
#include "sni/tls.h"

struct dp_lean;

/*
 * A hello of TCP flow f went on (allowed, or counted in audit): after the first, the
 * client's bytes wait for the server's answer, which may ask for a second hello
 * (dp_tls_server_first()); after a second, no more is read as one.
 */
static inline void
dp_tls_hello_passed(struct dp_flow *f)
{
	f->hello_phase = f->hello_phase == DP_HELLO_NONE ? DP_HELLO_OPEN : DP_HELLO_SETTLED;
}

/*
 * The bytes h holds, judged and sent, stream offsets [0, judged) (reasm_contiguous()):
 * kept until the server acknowledges them.
 */
static inline void
dp_tls_verify_held(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, uint32_t judged)
{
	if (f->tls == DP_TLS_PENDING)	/* a hello's, not a sniffed SSH line's */
		dp_tls_hello_passed(f);
	f->judged = judged;
	f->tls = DP_TLS_VERIFY;
	h->started = w->now;
}

/*
 * Does m, which completes the hello in h, follow one held segment that went on whole (a
 * split hello's second segment)? Then the hello's release would let go of that segment and
 * send m: dp_tls_verdict() does so without holding m. (m brings bytes past those held
 * before, the last parse's prefix, so past what went on: the release would not free it.)
 * m may be held: a refusal holds it, as every other path does before its verdict.
 */
static inline bool
dp_tls_after_passed(const struct dp_worker *w, const struct dp_hold *h,
    const struct rte_mbuf *m)
{
	return h->nsegs == 1 && h->off[0] < h->end[0] && h->end[0] <= h->passed &&
	    dp_hold_pushable(w, h, m);
}

/*
 * A split hello's first segment m (n bytes of payload at payload, n <= sizeof(h->buf)),
 * alone in the fresh hold h, held and sent on itself (dp_tls_trickle_first()): its bytes
 * judged where they lie, not copied, when m's buffer is its own (direct, no other
 * reference) and the payload ends the frame's data (bytes past the datagram are no
 * stream's). Then the buffer's room past the frame, which nothing sends, takes the bytes
 * that follow (within the hold's bound), and m, held, keeps them until the hello is judged
 * (else dp_tls_hold_gather()) and, allowed, until the judged bytes are let go of (h->kept).
 * False, nothing done: the caller copies them.
 */
static inline bool
dp_tls_hold_in_place(struct dp_hold *h, struct rte_mbuf *m, const uint8_t *payload, uint32_t n)
{
	uint16_t len = rte_pktmbuf_data_len(m);
	uint8_t *at = rte_pktmbuf_mtod_offset(m, uint8_t *, len - n);
	uint32_t room = rte_pktmbuf_tailroom(m);

	if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1 || at != payload)
		return false;
	reasm_init_at(&h->r, h->base, at, n, n + RTE_MIN(room, (uint32_t)sizeof(h->buf) - n));
	return true;
}

/*
 * The bytes h holds in its own buffer (h->buf), for every way but a split hello's second
 * segment in order (dp_tls_stream_more_lean()): they may lie in its first segment's buffer
 * (dp_tls_hold_in_place()), which a release lets go of.
 */
static inline void
dp_tls_hold_gather(struct dp_hold *h)
{
	if (h->r.buf != h->buf)
		reasm_move(&h->r, h->buf, sizeof(h->buf));
}

/*
 * dp_hold_trickle_with() of a split hello's first segment m (n bytes, no FIN), alone in
 * the fresh hold h from the stream's first byte, without its walk: m goes itself.
 */
static inline void
dp_tls_trickle_first(struct dp_worker *w, struct dp_hold *h, struct rte_mbuf *m, uint32_t n)
{
	rte_mbuf_refcnt_update(m, 1);
	dp_tx(w, DP_PORT_UPLINK, m);
	h->passed = n;
	h->trickled = n;
}

/*
 * The verdict on the whole hello in h (st its parse status), acted on. m, bytes [off, end),
 * is held in h already (NULL), or completes the hello after a segment that went on
 * (dp_tls_after_passed()): allowed, m goes on as the release would send it and the
 * segment is let go of, m never held; refused, m is held first, as any hello's last
 * segment is.
 */
struct dp_fate dp_tls_verdict(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f,
    uint16_t vm, enum sni_status st, const struct tls_hello *hello, struct rte_mbuf *m,
    uint32_t off, uint32_t end);

/*
 * m (decoded as p, within the window, no urgent data: dp_tls_client() asked) into f's
 * hold, taken if f has none, and the hello judged once whole. short_hello: m starts the
 * stream and was parsed alone, a hello's start (dp_tls_hold_as()).
 */
struct dp_fate dp_tls_stream(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f, bool short_hello);

/*
 * The general way of dp_tls_hold_first_lean() and dp_tls_stream_more_lean() (dp_tls.c),
 * for the lean frames their own do not take: a hello's start into f's hold h, just taken
 * (NULL: none was free), and what follows it. A fate other than held (a refusal's: the
 * event and the cut read p) decodes m into p; one held (m taken: sent, held or both) needs
 * none.
 */
struct dp_fate dp_tls_hold_first_any(struct dp_worker *w, struct rte_mbuf *m,
    const struct dp_lean *l, struct pkt *p, uint16_t vm, struct dp_flow *f, struct dp_hold *h);
struct dp_fate dp_tls_stream_more_any(struct dp_worker *w, struct rte_mbuf *m,
    const struct dp_lean *l, struct pkt *p, uint16_t vm, struct dp_flow *f);

#endif
