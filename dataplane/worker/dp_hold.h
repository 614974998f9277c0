/*
 * Held streams: the bytes of one direction of a TCP connection (or a QUIC flow's first
 * datagrams) that namegate holds back until it has judged them, and keeps after release
 * until the receiver has acknowledged them, so that a retransmission may repeat judged
 * bytes but never rewrite them. One pool of fixed buffers per worker; a flow refers to its
 * buffers by 1 + slot (0: none).
 */
#ifndef DP_HOLD_H
#define DP_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_flow.h"
#include "dp_quic.h"
#include "dp_slots.h"
#include "sni/pkt.h"
#include "sni/reasm.h"
#include "sni/tls.h"

#define DP_HOLD_SEGS		32	/* segments held at once: more is not a hello or a query */
#define DP_HOLD_SECONDS		5	/* a ClientHello must be whole within this */
#define DP_VERIFY_SECONDS	10	/* judged bytes kept for comparison at most this long */
#define DP_HOLD_FOLDS		64	/* DNS: capitalised names in flight on one connection */

/*
 * HTTP: framing runs remembered, unacknowledged: 1,000-byte chunks over 1 MiB in flight,
 * at 25 bytes a run (25 KiB a hold, DP_HOLD_SLOTS of them a worker)
 */
#define DP_HTTP_FRAMES		1024
#define DP_HTTP_FRAME_BYTES	16	/* a run this short is kept as it is, else digested */

/*
 * HTTP: where the judged, unacknowledged stream holds framing (dp_http_frames.h), as runs
 * of stream offsets [off, end), oldest first from first, in a ring; and what each says:
 * its bytes when it is short, else the digest (dp_hash_digest()) taken before its copy
 * in buf was evicted (state: enum dp_http_frame_state, dp_http_frames.c). Runs forgotten
 * for want of room end by lost_end, and anything before it counts as framing.
 */
struct dp_http_frames {
	uint32_t off[DP_HTTP_FRAMES], end[DP_HTTP_FRAMES];
	uint8_t says[DP_HTTP_FRAMES][DP_HTTP_FRAME_BYTES];
	uint8_t state[DP_HTTP_FRAMES];
	uint16_t first, n;
	uint16_t settled;	/* the first runs no eviction has to digest any more */
	bool lost;
	uint32_t lost_end;
};

struct dp_hold {
	struct reasm r;			/* the stream from its first unacknowledged byte */
	struct dp_quic_hello q;		/* QUIC: the Initials' CRYPTO stream (in buf too) */
	struct dp_flow *flow;		/* NULL: free */
	uint64_t started;		/* when it was taken, or its bytes released */
	uint32_t base;			/* sequence number of stream offset 0 */
	uint16_t vm;
	uint16_t nsegs;
	bool from_peer;			/* the server's direction: released toward the VM */
	uint32_t judged;		/* DNS: stream bytes [0, judged) are whole, judged messages */
	uint32_t trickled;		/* unjudged bytes before this offset went on as copies */
	/*
	 * Of those, the held segments that end by this offset went on whole, each as its
	 * copy, none with a FIN (a copy carries none): a release does not send them again.
	 */
	uint32_t passed;
	/*
	 * TLS, its hello allowed: a split hello's first segment, whose buffer holds the judged
	 * bytes (r.buf points into it: dp_tls_hold_in_place()), kept until the hold is put.
	 */
	struct rte_mbuf *kept;
	uint8_t nfolds;
	uint8_t fold_len[DP_HOLD_FOLDS];	/* DNS: a question name the VM spelled with */
	uint32_t fold_at[DP_HOLD_FOLDS];	/* capitals, at these stream offsets: lower case */
	struct rte_mbuf *segs[DP_HOLD_SEGS];
	uint32_t off[DP_HOLD_SEGS];	/* TCP: each segment's first byte, from base */
	uint32_t end[DP_HOLD_SEGS];	/* and one past its last */
	uint8_t buf[TLS_HELLO_MAX];
	/* HTTP: the framing among judged bytes; past buf, off the lines a hello's path reads */
	struct dp_http_frames frames;
};

struct dp_holds {
	uint32_t n, cursor;
	struct dp_slots slots;
	uint16_t nvms;
	uint32_t *per_vm;		/* buffers taken, by VM slot */
	struct dp_quic_ctx *quic;	/* this worker's QUIC Initial keys and ciphers */
	struct dp_hold *h;
	uint8_t scratch[TLS_HELLO_MAX];	/* a hello fragmented over records, gathered */
};

/* A pool of nslots hold buffers (each TLS_HELLO_MAX bytes) for one worker and nvms VMs. */
struct dp_holds *dp_holds_create(uint32_t nslots, uint16_t nvms, int socket);
void dp_holds_free(struct dp_holds *h);
/* The EAL memory dp_holds_create() takes (dp_mem.h). */
uint64_t dp_holds_mem(uint32_t nslots, uint16_t nvms);

static inline struct dp_hold *
dp_hold_at(const struct dp_worker *w, uint32_t ref)
{
	return ref != 0 ? &w->holds->h[ref - 1] : NULL;
}

/*
 * A buffer for one stream of f, starting at sequence number base, stored in *ref; NULL
 * when none is free or f's VM holds its share already (the caller fails closed, charging
 * the VM with vm_limit).
 */
struct dp_hold *dp_hold_take(struct dp_worker *w, struct dp_flow *f, uint32_t *ref,
    uint32_t base, bool from_peer);

/* dp_hold_take() inline, for a split hello's first segment (dp_tls.c), which takes one. */
static __rte_always_inline struct dp_hold *
dp_hold_take_inline(struct dp_worker *w, struct dp_flow *f, uint32_t *ref, uint32_t base,
    bool from_peer)
{
	struct dp_holds *hs = w->holds;
	struct dp_hold *h;
	uint32_t slot;

	if (f->key.vm > hs->nvms || hs->per_vm[f->key.vm] >= w->gen->max_holds_per_vm ||
	    !dp_slots_get(&hs->slots, &slot))
		return NULL;
	hs->per_vm[f->key.vm]++;
	*ref = slot + 1;
	h = dp_hold_at(w, *ref);
	h->flow = f;
	h->vm = f->key.vm;
	h->started = w->now;
	h->nsegs = 0;
	h->base = base;
	h->judged = 0;
	h->trickled = 0;
	h->passed = 0;
	h->nfolds = 0;
	h->from_peer = from_peer;
	reasm_init(&h->r, base, h->buf, sizeof(h->buf));
	return h;
}

/* dp_hold_put() of a ref that has a buffer. */
void dp_hold_put_taken(struct dp_worker *w, uint32_t *ref);

/*
 * Free the buffer at *ref, if any, and every segment still held in it. Inline: most flows
 * never take one, and each asks at its ACKs and its end.
 */
static inline void
dp_hold_put(struct dp_worker *w, uint32_t *ref)
{
	if (*ref != 0)
		dp_hold_put_taken(w, ref);
}

/*
 * Would dp_hold_push() take m into h? Not when h is full, nor when m is a datagram namegate
 * reassembled into one of the worker's few large buffers: held, a VM's share of holds could
 * pin them all, and no neighbour could then send a large fragmented datagram. Real stacks
 * do not fragment TCP (PMTUD sets DF).
 */
static inline bool
dp_hold_pushable(const struct dp_worker *w, const struct dp_hold *h, const struct rte_mbuf *m)
{
	return h->nsegs != DP_HOLD_SEGS && m->pool == w->ctx->pool;
}

/*
 * Hold m, whose payload is stream bytes [off, end). False, m not taken, when it may not be
 * (dp_hold_pushable(): the caller cuts the flow, fail closed). Inline: each segment of a
 * held hello comes here.
 */
static inline bool
dp_hold_push(const struct dp_worker *w, struct dp_hold *h, struct rte_mbuf *m, uint32_t off,
    uint32_t end)
{
	if (!dp_hold_pushable(w, h, m))
		return false;
	h->off[h->nsegs] = off;
	h->end[h->nsegs] = end;
	h->segs[h->nsegs++] = m;
	return true;
}

/*
 * Send on, in sequence order, every held segment that ends at or before upto (every one
 * with UINT32_MAX), each byte once: a segment whose bytes all went out in this release is
 * dropped. Toward the uplink for a client stream, toward the VM for a peer's.
 */
void dp_hold_release(struct dp_worker *w, struct dp_hold *h, uint32_t upto);

/*
 * A slow writer (issue 23): send on, as copies cut short (frame_tcp_prefix(), never a FIN),
 * every held byte from from (or where the last copy stopped) up to upto, offsets from the
 * stream's first byte; the segments stay held whole for the verdict. (The frame in hand,
 * whole and with no FIN, goes itself, the hold keeping a second reference to it.) The caller passes
 * what cannot complete the head or hello being judged, so the receiver acknowledges it
 * and the client writes on, while the bytes that complete it wait for the verdict. A cut
 * afterwards resets the server at h->trickled.
 */
void dp_hold_trickle(struct dp_worker *w, struct dp_hold *h, uint32_t from, uint32_t upto);

/*
 * The same, where m, held last, is still decoded as p (the frame in hand): its decoding is
 * taken as it is instead of made again from the same bytes.
 */
void dp_hold_trickle_with(struct dp_worker *w, struct dp_hold *h, uint32_t from, uint32_t upto,
    const struct rte_mbuf *m, const struct pkt *p);

/*
 * A held frame (a segment, a datagram, a query waiting for approval) decoded again, the one
 * way any is: it decoded whole when it came. The hold keeps the frame, not its decoding
 * (six times a segment's bookkeeping, for the rare paths that need it: a cut, a trickle,
 * a DNS edit, an approval's end). false when it does not (it always did).
 */
static inline bool
dp_hold_decode(const struct rte_mbuf *m, struct pkt *p)
{
	return pkt_decode(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), p) ==
	    PKT_OK;
}

/* dp_hold_sort() of two segments or more. */
void dp_hold_sort_many(struct dp_hold *h);

/* Sort the held segments by stream offset: a hello's one or two take no call. */
static inline void
dp_hold_sort(struct dp_hold *h)
{
	if (h->nsegs > 2 || (h->nsegs == 2 && h->off[1] < h->off[0]))
		dp_hold_sort_many(h);
}

/*
 * Stream offset of sequence number seq: negative when seq lies behind offset 0 (RFC 1982
 * serial numbers), so a segment that starts before the stream can be trimmed.
 */
static inline int64_t
dp_hold_offset(uint32_t base, uint32_t seq)
{
	return (int32_t)(seq - base);
}

/*
 * May the client send [seq, seq + len) to the peer? Only up to the right edge of the
 * window the peer last advertised (RFC 9293 s3.8.6); before its SYN-ACK, anything (the
 * data of a SYN). What the receiver would drop must not be judged or held.
 */
static inline bool
dp_hold_in_window(const struct dp_flow *f, uint32_t seq, uint32_t len)
{
	return !f->peer_synced || (int32_t)(seq + len - (f->peer_ack + f->peer_wnd)) <= 0;
}

/* Close f, with whatever it holds; every caller that ends a flow goes through here. */
void dp_flow_end(struct dp_worker *w, struct dp_flow *f);

#endif
