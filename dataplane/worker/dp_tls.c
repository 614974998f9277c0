/*
 * Holding, judging and releasing the first bytes of TLS connections, and holding the
 * judged bytes to compare with what the client sends again until the server has them.
 */
#include <string.h>

#include "dp_evt.h"
#include "dp_flowlog.h"
#include "dp_hash.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "dp_out_flow.h"
#include "dp_lean.h"
#include "dp_tls.h"
#include "dp_tls_held.h"
#include "dp_tls_judge.h"
#include "sni/http.h"
#include "sni/reasm.h"
#include "sni/tls.h"

/* Allowed: send what was held, and keep the judged bytes until the server acknowledges. */
void
dp_tls_release(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	dp_tls_hold_gather(h);	/* the release may let go of the buffer the bytes lie in */
	dp_hold_release(w, h, UINT32_MAX);
	if (f->key.proto != PKT_PROTO_TCP) {
		f->tls = DP_TLS_NONE;
		dp_hold_put(w, &f->hold);
		return;
	}
	dp_tls_verify_held(w, h, f, reasm_contiguous(&h->r));
}

struct dp_fate
dp_tls_refuse(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r,
    const char *name, size_t len, enum dp_fate_act act)
{
	dp_evt_block_flow(w, &f->key, r, w->gen->vms[h->vm].audit, name, len);
	if (w->gen->vms[h->vm].audit) {
		w->vm_stats[h->vm].blocked[r]++;
		f->would_block = true;
		dp_tls_release(w, h, f);
		return dp_fate(act);
	}
	dp_flowlog_name(w, f, name, len, DP_FLOW_NAME_SNI);
	return dp_fate_cut_held(act, r, DP_FATE_REPLY_CUT_HELD);
}

/*
 * The first bytes on a sniffed port, shown in the first segment: a hello goes on to be
 * judged (CONTINUE, f->tls pending); SSH, the one other protocol first bytes prove, goes
 * on with its first bytes kept to compare. STREAM: the held path decides (HTTP, too few
 * bytes to tell, or SSH on a SYN: nothing unjudged rides on one).
 */
static struct dp_fate
dp_tls_first_sniff(const struct pkt *p, struct dp_flow *f)
{
	switch (http_classify(p->payload, p->payload_len)) {
	case HTTP_FIRST_TLS:
		f->tls = DP_TLS_PENDING;	/* a hello on any port is judged as on 443 */
		return dp_fate(DP_FATE_CONTINUE);
	case HTTP_FIRST_SSH:
		if (p->tcp_flags & PKT_TCP_SYN)
			return dp_fate(DP_FATE_STREAM);
		/* another protocol, shown: it goes on, its first bytes never rewritten */
		f->judged = (uint32_t)p->payload_len;
		f->judged_digest = dp_hash_digest(p->payload, p->payload_len);
		f->tls = DP_TLS_NONE;
		return dp_fate_egress(DP_ALLOWED);
	default:
		return dp_fate(DP_FATE_STREAM);
	}
}

/*
 * dp_fate_pass() of f, as one of two words: built from f's flag, gcc assembled the fate a
 * byte at a time where dp_tls_client() merges its fates.
 */
static inline struct dp_fate
dp_tls_pass(const struct dp_flow *f)
{
	static const struct dp_fate pass[2] = {
		{ .act = DP_FATE_EGRESS, .verdict = DP_ALLOWED },
		{ .act = DP_FATE_EGRESS, .verdict = DP_WOULD_BLOCK },
	};

	return pass[f->would_block];
}

/*
 * A split hello's first segment (lean, f holding nothing; its payload at payload, which
 * dp_tls_first_as() parsed): into a hold taken for it. One with bytes, within the buffer,
 * no FIN and pushable (nearly all) is what dp_tls_hold_as() makes of it, without its tests:
 * held, its bytes judged where they lie (dp_tls_hold_in_place(); else copied), and sent on
 * itself (dp_tls_trickle_first()). Inline in dp_tls_first_lean(),
 * whose frame is made already: a call of its own saved four registers again, and its fate
 * came back to be compared where, inline, it is known to be held. The VM is f's
 * (dp_hold_take() holds f for it too), read where it is needed.
 */
static __rte_always_inline struct dp_fate
dp_tls_hold_first_lean(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, struct dp_flow *f, const uint8_t *payload)
{
	struct dp_hold *h = dp_hold_take_inline(w, f, &f->hold, f->isn, false);
	uint32_t n = l->payload_len;

	if (h == NULL || n == 0 || n > sizeof(h->buf) || (l->flags & PKT_TCP_FIN) ||
	    !dp_hold_push(w, h, m, 0, n))
		return dp_tls_hold_first_any(w, m, l, p, f->key.vm, f, h);
	if (!dp_tls_hold_in_place(h, m, payload, n))
		reasm_add_first(&h->r, payload, n);
	dp_tls_trickle_first(w, h, m, n);
	return dp_fate(DP_FATE_HELD);
}

/* dp_tls_first_as()'s payload length: l's, or p's */
static __rte_always_inline size_t
dp_tls_first_len(const struct pkt *p, const struct dp_lean *l)
{
	return l != NULL ? l->payload_len : p->payload_len;
}

/*
 * The first segment of f's stream, alone (dp_tls_client() asked): a ClientHello whole in
 * it (the common case) is judged from the segment itself and takes no hold buffer:
 * allowed, it goes on, and a digest of its bytes stands in for a copy until the server
 * acknowledges them. A segment that holds no whole hello goes the held way
 * (dp_tls_stream(), short_hello: the segment is a hello's start). Inline in a call of its
 * own for each kind of segment: the hello on its stack and what lives across its calls
 * are none of the held path's. l: m is a lean frame on a flow whose hello is pending
 * (dp_tls_client_lean()), its payload_len bytes of payload read from the frame, and out
 * (p) filled from l before any other way needs it; NULL: p is decoded. (vm is a slot,
 * below UINT16_MAX: as an unsigned int gcc kept it once, not again extended.)
 */
static __rte_always_inline struct dp_fate
dp_tls_first_as(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, struct pkt *out,
    const struct dp_lean *l, unsigned int vm, struct dp_flow *f)
{
	const uint8_t *payload = l != NULL ? dp_lean_payload(m, l) : p->payload;
	size_t payload_len = dp_tls_first_len(p, l);
	struct tls_hello hello;
	struct dp_fate fate;
	enum sni_status st;
	enum dp_reason r;

	if (l == NULL && f->tls == DP_TLS_SNIFF &&
	    (fate = dp_tls_first_sniff(p, f)).act != DP_FATE_CONTINUE)
		return fate.act == DP_FATE_STREAM ? dp_tls_stream(w, m, p, vm, f, false) : fate;
	st = dp_tls_parse(w, f, payload, payload_len, &hello);
	if (st == SNI_NEED_MORE)
		return l != NULL ? dp_tls_hold_first_lean(w, m, l, out, f, payload) :
		    dp_tls_stream(w, m, p, vm, f, true);
	r = dp_tls_judge_stream(w, f, vm, st, &hello, payload, payload_len);
	if (r != DP_REASON_ALLOWED) {
		if (l != NULL)		/* the event and the cut read p */
			dp_lean_decode(m, l, out, true);
		dp_evt_block(w, vm, p, r, w->gen->vms[vm].audit, st == SNI_FOUND ?
		    (const char *)hello.sni.p : NULL, st == SNI_FOUND ? hello.sni.len : 0);
		if (!w->gen->vms[vm].audit) {
			if (st == SNI_FOUND)
				dp_flowlog_name(w, f, (const char *)hello.sni.p, hello.sni.len,
				    DP_FLOW_NAME_SNI);
			fate = dp_fate_cut(r);
			fate.log = false;	/* logged here, with the name */
			return fate;
		}
		w->vm_stats[vm].blocked[r]++;
		f->would_block = true;
	}
	/* the length read again: kept across the calls, gcc spilled it twice */
	payload_len = dp_tls_first_len(p, l);
	f->judged = (uint32_t)payload_len;
	f->judged_digest = dp_hash_digest(payload, payload_len);
	f->tls = DP_TLS_NONE;
	dp_tls_hello_passed(f);
	if (l != NULL) {
		/*
		 * a lean frame's pass sent here, as dp_tls_lean_act() would: a fate made of the
		 * flag was told apart again by two compares
		 */
		dp_egress_own(w, m, (uint16_t)vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
		return dp_fate(DP_FATE_HELD);	/* m taken */
	}
	return dp_tls_pass(f);
}

static __attribute__((noinline)) struct dp_fate
dp_tls_first_segment(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    unsigned int vm, struct dp_flow *f)
{
	return dp_tls_first_as(w, m, p, NULL, NULL, vm, f);
}

/*
 * The fate of lean frame m from the VM (p decoded for any fate but a pass or HELD) acted
 * on as dp_out_flow_apply() would, a pass inline. True: dp_tls_client_lean()'s answer.
 */
static __rte_always_inline bool
dp_tls_lean_act(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_fate fate, struct dp_flow *f)
{
	/*
	 * the two passes compared whole: with the verdict cleared in a copy, gcc put the fate
	 * that two ways make together again a byte at a time
	 */
	if (likely(dp_fate_eq(fate, dp_fate_egress(DP_ALLOWED)) ||
	    dp_fate_eq(fate, dp_fate_egress(DP_WOULD_BLOCK))))
		/* a burst's lean frame */
		dp_egress_own(w, m, vm, (enum dp_verdict)fate.verdict);
	else if (!dp_fate_eq(fate, dp_fate(DP_FATE_HELD)))
		dp_out_flow_apply(w, m, p, vm, true, fate, f);
	return true;
}

/* l is not NULL: told so, gcc no longer builds dp_tls_first_segment()'s way in here too */
static __attribute__((noinline, nonnull(3))) bool
dp_tls_first_lean(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, unsigned int vm, struct dp_flow *f)
{
	return dp_tls_lean_act(w, m, p, (uint16_t)vm, dp_tls_first_as(w, m, p, p, l, vm, f), f);
}

/*
 * An allowed hello's last segment m after a segment that went on whole
 * (dp_tls_after_passed()), judged ending at stream offset judged: as dp_hold_release()
 * would, the segment held is let go of (its bytes went on) and m goes, as the verdict
 * says; the judged bytes are kept until the server acknowledges them.
 */
static __rte_always_inline void
dp_tls_pass_after(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f,
    struct rte_mbuf *m, uint32_t judged)
{
	if (h->r.buf != h->buf)		/* the judged bytes lie in it (dp_tls_hold_in_place()) */
		h->kept = h->segs[0];
	else
		dp_out_free(h->segs[0]);
	h->nsegs = 0;
	dp_egress(w, m, h->vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
	dp_tls_verify_held(w, h, f, judged);
}

/* dp_tls_verdict()'s refusal: r, for the hello parsed as st, hello, m held first. */
static __rte_always_inline struct dp_fate
dp_tls_refuse_last(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, enum dp_reason r,
    enum sni_status st, const struct tls_hello *hello, struct rte_mbuf *m, uint32_t off,
    uint32_t end)
{
	if (m != NULL)
		dp_hold_push(w, h, m, off, end);	/* pushable: dp_tls_after_passed() */
	return dp_tls_refuse(w, h, f, r, st == SNI_FOUND ? (const char *)hello->sni.p : NULL,
	    st == SNI_FOUND ? hello->sni.len : 0, DP_FATE_HELD);
}

struct dp_fate
dp_tls_verdict(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, uint16_t vm,
    enum sni_status st, const struct tls_hello *hello, struct rte_mbuf *m, uint32_t off,
    uint32_t end)
{
	enum dp_reason r = dp_tls_judge_stream(w, f, vm, st, hello, h->r.buf,
	    reasm_contiguous(&h->r));

	if (r != DP_REASON_ALLOWED)
		return dp_tls_refuse_last(w, h, f, r, st, hello, m, off, end);
	if (m == NULL)
		dp_tls_release(w, h, f);
	else
		dp_tls_pass_after(w, h, f, m, reasm_contiguous(&h->r));
	return dp_fate(DP_FATE_HELD);	/* m taken: held and released, or sent */
}

/* dp_tls_stream_more_lean()'s general way (dp_tls_stream_more_any()), its fate acted on */
static __attribute__((noinline)) bool
dp_tls_more_any_lean(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, unsigned int vm, struct dp_flow *f)
{
	return dp_tls_lean_act(w, m, p, (uint16_t)vm,
	    dp_tls_stream_more_any(w, m, l, p, (uint16_t)vm, f), f);
}

/*
 * What follows a split hello's start (lean), its fate acted on here (dp_tls_client_lean()'s
 * answer): a held fate, the common one, needs nothing, and a caller that acted on it made
 * a stack frame only to compare it. Bytes in order after a first segment that
 * went on whole (dp_tls_after_passed(): nearly every second segment) take dp_tls_hold_as()'s
 * way without its tests: copied in, and the hello judged once whole, or m held and what
 * cannot complete it trickled (m is pushable). A fate other than held decodes m into p.
 */
static __attribute__((noinline)) bool
dp_tls_stream_more_lean(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, unsigned int vm, struct dp_flow *f)
{
	struct dp_hold *h = dp_hold_at(w, f->hold);
	struct tls_hello hello;
	struct dp_fate fate;
	enum sni_status st;
	enum dp_reason r;
	uint32_t end;

	if (h == NULL || !dp_tls_after_passed(w, h, m) ||
	    !reasm_is_next(&h->r, l->seq, l->payload_len))
		return dp_tls_more_any_lean(w, m, l, p, vm, f);
	/* m's bytes are the last of those h holds: stream offsets [end - payload_len, end) */
	end = reasm_add_next(&h->r, l->seq, dp_lean_payload(m, l), l->payload_len);
	st = dp_tls_parse(w, f, h->r.buf, end, &hello);
	if (st == SNI_NEED_MORE) {
		dp_hold_push(w, h, m, end - l->payload_len, end);
		dp_lean_decode(m, l, p, true);	/* the trickle reads p */
		dp_hold_trickle_with(w, h, 0, end, m, p);
		return true;
	}
	r = dp_tls_judge_stream(w, f, (uint16_t)vm, st, &hello, h->r.buf, end);
	if (r == DP_REASON_ALLOWED) {
		dp_tls_pass_after(w, h, f, m, end);
		return true;
	}
	fate = dp_tls_refuse_last(w, h, f, r, st, &hello, m, end - l->payload_len, end);
	if (dp_fate_eq(fate, dp_fate(DP_FATE_HELD)))
		return true;
	dp_lean_decode(m, l, p, true);
	return dp_tls_lean_act(w, m, p, (uint16_t)vm, fate, f);
}

struct dp_fate
dp_tls_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0);

	/* what the receiver would drop is neither judged nor held: asked once, for every way */
	if (!dp_hold_in_window(f, seq, (uint32_t)p->payload_len))
		return dp_fate_drop(DP_DROP_OUT_OF_WINDOW);
	/* no urgent pointer comes here: the flow stage cut it (dp_conn_vm_urgent()) */
	/* the stream's first segment, nothing held */
	if (f->hold == 0 && seq == f->isn)
		return dp_tls_first_segment(w, m, p, vm, f);
	return dp_tls_stream(w, m, p, vm, f, false);
}

/* dp_tls_client_lean() of a segment out of the window: decoded */
static __attribute__((noinline)) bool
dp_tls_client_decoded(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, unsigned int vm, struct dp_flow *f)
{
	dp_lean_decode(m, l, p, true);
	return dp_tls_lean_act(w, m, p, (uint16_t)vm, dp_tls_client(w, m, p, (uint16_t)vm, f),
	    f);
}

/*
 * Each way a last call of one signature that acts on its own fate: neither this function
 * nor the lean stage that calls it last makes a stack frame for a fate to come back.
 */
bool
dp_tls_client_lean(struct dp_worker *w, struct rte_mbuf *m, const struct dp_lean *l,
    struct pkt *p, uint16_t vm, struct dp_flow *f)
{
	if (unlikely(!dp_hold_in_window(f, l->seq, l->payload_len)))
		return dp_tls_client_decoded(w, m, l, p, vm, f);
	if (f->hold == 0 && l->seq == f->isn)
		return dp_tls_first_lean(w, m, l, p, vm, f);
	return dp_tls_stream_more_lean(w, m, l, p, vm, f);
}
