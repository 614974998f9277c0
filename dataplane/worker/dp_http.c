/*
 * Plaintext HTTP/1.x (issue 13): on a flow admitted by a binding, every request head is
 * held until it is whole and its Host judged, exactly as a ClientHello's SNI is. The
 * reader follows the client's stream through bodies (Content-Length, chunked) to find each
 * next head where the server finds it, so a request for another site on a keep-alive
 * connection (domain fronting on a shared address) is cut, not passed.
 *
 * Every byte the reader has judged is kept, until the server acknowledges it, in the
 * flow's hold buffer: a retransmission may repeat judged bytes but never rewrite them,
 * and the framing of what follows can never differ between namegate and the server. Only
 * the ACK of a server segment in its stream as namegate saw it in order counts (the flow's
 * http_acked): any other could be an accomplice's, spoofed off the path, to free the copy
 * of a request the server never read. Held bytes are bounded by the buffer: when new ones
 * do not fit, the oldest judged bytes give up their copy (dp_http_evict()), and a segment
 * over judged framing with no copy, not acknowledged, must say what the framing said
 * (dp_http_frames.h: a body's own data needs no copy); unjudged bytes wait (dropped, the
 * client sends them again). A connection that is all acknowledged holds no buffer.
 */
#include <string.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_conn.h"
#include "dp_evt.h"
#include "dp_flowlog.h"
#include "dp_hold.h"
#include "dp_out_flow.h"
#include "dp_http.h"
#include "dp_http_frames.h"
#include "sni/http.h"
#include "sni/reasm.h"

/* Stream offset (from the flow's first byte) where h's buffer starts. */
static inline uint32_t
dp_http_buf_start(const struct dp_flow *f, const struct dp_hold *h)
{
	return h->r.isn - f->isn;
}

/*
 * h's framing record, for a buffer that starts where f's judged bytes end: where framing
 * lay before (a buffer given back, judged bytes not all acknowledged) is not known, so
 * all of it counts.
 */
static inline void
dp_http_frames_start(struct dp_hold *h, const struct dp_flow *f)
{
	dp_http_frames_init(&h->frames, f->judged);
}

/*
 * The connection cut for r: RST to the VM (built from the frame when its fate is BLOCK,
 * else the last held segment), and to the server at the end of what it was sent
 * (h->judged: the bytes it may have), which it accepts as in sequence; every held segment
 * blocked, the frame with them (act).
 */
static inline struct dp_fate
dp_http_cut(enum dp_fate_act act, enum dp_reason r)
{
	return dp_fate_cut_held(act, r, DP_FATE_REPLY_CUT_SENT);
}

/* The frame m blocked for r, logged, and the connection cut. */
static inline struct dp_fate
dp_http_cut_frame(enum dp_reason r)
{
	struct dp_fate fate = dp_http_cut(DP_FATE_BLOCK, r);

	fate.log = true;
	return fate;
}

/*
 * The verdict on one request head, or DP_REASON_ALLOWED when it may pass. The Host must be a
 * name the VM may reach on the connection's port and, under strict binding, one this VM
 * resolved to this address. A CONNECT is judged by its authority: the proxy connects
 * there, not here, so the binding to this address is not asked for.
 */
static enum dp_reason
dp_http_judge(struct dp_worker *w, struct dp_flow *f, const struct http_head *hd)
{
	const struct dp_gen *g = w->gen;
	struct pol_addr dst = { .family = f->key.family };
	uint16_t port = hd->connect ? hd->port : f->key.peer_port;
	uint64_t hash;

	if (pol_match_name(g->set, g->vms[f->key.vm].policy, hd->host, hd->host_len,
	    f->key.proto, port, NULL) != POL_ALLOW)
		return DP_REASON_HOST_DENIED;
	hash = dp_name_hash(hd->host, hd->host_len);
	memcpy(dst.a, f->key.peer, sizeof(f->key.peer));
	if (!hd->connect && g->sni_strict &&
	    !dp_bind_has_name(w->ctx->binds, f->key.vm, &dst, hash, w->now))
		return DP_REASON_HOST_DENIED;
	f->name_hash = hash;	/* a reload judges the connection by its latest request */
	f->name_bound = false;	/* a CONNECT's host, or loose: not known to be bound */
	dp_flow_acct(w->flows, f)->name_kind = DP_FLOW_NAME_HOST;
	/* joins the flow's budgets: a later Host never takes it out of one */
	f->budgets |= dp_budget_bit(dp_budget_of_name(g, f->key.vm, hd->host, hd->host_len));
	return DP_REASON_ALLOWED;
}

/* Denied, or not framed: the cut, or in audit mode counted (CONTINUE: read on). */
static struct dp_fate
dp_http_refuse(struct dp_worker *w, struct dp_flow *f, enum dp_reason r, const char *name,
    size_t len)
{
	bool audit = w->gen->vms[f->key.vm].audit;

	dp_evt_block_flow(w, &f->key, r, audit, name, len);
	if (!audit) {
		dp_flowlog_name(w, f, name, len, DP_FLOW_NAME_HOST);
		return dp_http_cut(DP_FATE_HELD, r);
	}
	w->vm_stats[f->key.vm].blocked[r]++;
	f->would_block = true;
	return dp_fate(DP_FATE_CONTINUE);
}

/*
 * Read the held stream from f->judged on as far as it is in order: heads judged, bodies
 * skipped. CONTINUE, or the cut.
 */
static struct dp_fate
dp_http_read(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	uint32_t start = dp_http_buf_start(f, h), have = start + reasm_contiguous(&h->r);
	struct dp_fate cut;
	struct http_head hd;
	enum http_status st;
	uint64_t data;
	size_t used;

	while (f->judged < have) {
		const uint8_t *at = h->buf + (f->judged - start);
		size_t avail = have - f->judged;

		switch ((enum dp_http_phase)f->http_phase) {
		case DP_HTTP_HEAD:
			st = http_head_parse(at, avail, &hd);
			if (st == HTTP_NEED_MORE)
				return dp_fate(DP_FATE_CONTINUE);
			if (st == HTTP_BAD) {
				cut = dp_http_refuse(w, f, DP_REASON_HOST_DENIED, NULL, 0);
				if (cut.act != DP_FATE_CONTINUE)
					return cut;
				f->http_phase = DP_HTTP_TUNNEL;	/* audit: nothing more to frame */
				continue;
			}
			if (dp_http_judge(w, f, &hd) != DP_REASON_ALLOWED &&
			    (cut = dp_http_refuse(w, f, DP_REASON_HOST_DENIED, hd.host,
			    hd.host_len)).act != DP_FATE_CONTINUE)
				return cut;
			dp_http_frames_note(&h->frames, start, f->judged, at,
			    (uint32_t)hd.head_len);
			http_body_start(&f->http, &hd);
			f->http_phase = hd.body == HTTP_BODY_NONE ? DP_HTTP_HEAD : DP_HTTP_BODY;
			if (hd.connect && f->judged == 0) {
				f->http_phase = DP_HTTP_CONNECT;
				f->status_read = 0;
			}
			f->judged += (uint32_t)hd.head_len;
			h->started = w->now;
			break;
		case DP_HTTP_CONNECT:
			/* held: a tunnel's bytes, or the next request's */
			return dp_fate(DP_FATE_CONTINUE);
		case DP_HTTP_BODY:
			/*
			 * the body's data in one step, then its chunk framing up to the next
			 * data, so that each framing run is noted and no data byte is
			 */
			data = http_body_data_ahead(&f->http);
			st = data == 0 ? http_body_feed_framing(&f->http, at, avail, &used) :
			    http_body_feed(&f->http, at, data < avail ? (size_t)data : avail,
			    &used);
			if (st == HTTP_BAD) {
				cut = dp_http_refuse(w, f, DP_REASON_HOST_DENIED, NULL, 0);
				if (cut.act != DP_FATE_CONTINUE)
					return cut;
				f->http_phase = DP_HTTP_TUNNEL;
				continue;
			}
			if (data == 0)
				dp_http_frames_note(&h->frames, start, f->judged, at,
				    (uint32_t)used);
			f->judged += (uint32_t)used;
			if (st == HTTP_OK)
				f->http_phase = DP_HTTP_HEAD;
			h->started = w->now;
			break;
		default:
			f->judged = have;	/* a tunnel's bytes: kept to compare, not read */
			break;
		}
	}
	return dp_fate(DP_FATE_CONTINUE);
}

/* Send on every held segment whose bytes were all judged; note how far the server has them. */
static void
dp_http_release(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	for (uint16_t i = 0; i < h->nsegs; i++)
		if (h->end[i] <= f->judged && h->end[i] > h->judged)
			h->judged = h->end[i];
	dp_hold_release(w, h, f->judged);
}

/*
 * What the reader could not frame (a head past HTTP_HEAD_MAX, or one that did not complete
 * in time) is cut; in audit mode it is counted and the rest of the stream passes unread.
 * HELD, or the cut.
 */
static struct dp_fate
dp_http_give_up(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	struct dp_fate fate = dp_http_refuse(w, f, DP_REASON_HOST_DENIED, NULL, 0);

	if (fate.act != DP_FATE_CONTINUE)
		return fate;
	f->http_phase = DP_HTTP_TUNNEL;
	if ((fate = dp_http_read(w, h, f)).act != DP_FATE_CONTINUE)
		return fate;
	dp_http_release(w, h, f);
	return dp_fate(DP_FATE_HELD);
}

/*
 * How far the unfinished head at f->judged (read up to have, no end found) may go to the
 * server before its verdict: its whole lines (http_head_parse() found each valid and none
 * empty after the request line, so no server has a head end in them), and the line being
 * written unless it holds a CR, which a lenient server could take for a line's end. Any
 * byte held back stalls a writer that pauses longer than its retransmission timeout (its
 * TCP then sends only that byte again, with a congestion window of one, until it is
 * acknowledged), so nothing else is: the byte that ends the head goes with the verdict.
 */
static uint32_t
dp_http_inert_end(const struct dp_hold *h, const struct dp_flow *f, uint32_t have)
{
	const uint8_t *head = h->buf + (f->judged - dp_http_buf_start(f, h));
	uint32_t n = have - f->judged, tail = n;

	while (tail > 0 && head[tail - 1] != '\n')
		tail--;
	return f->judged + (memchr(head + tail, '\r', n - tail) != NULL ? tail : n);
}

/*
 * Read on, then send what was judged; a head that grew too large to be judged is cut.
 * HELD, or the cut.
 */
static struct dp_fate
dp_http_step(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	struct dp_fate fate = dp_http_read(w, h, f);
	uint32_t have;

	if (fate.act != DP_FATE_CONTINUE)
		return fate;
	have = dp_http_buf_start(f, h) + reasm_contiguous(&h->r);
	if (f->http_phase == DP_HTTP_HEAD && have - f->judged >= HTTP_HEAD_MAX)
		return dp_http_give_up(w, h, f);
	dp_http_release(w, h, f);
	/*
	 * Judged bytes in a segment that goes on past them (a CONNECT and what was pipelined
	 * behind it) go now, as copies, and so does what of an unfinished head cannot end it:
	 * a slow writer's server acknowledges it and the client writes on.
	 */
	dp_hold_trickle(w, h, h->judged, f->http_phase == DP_HTTP_HEAD ?
	    dp_http_inert_end(h, f, have) : f->judged);
	return dp_fate(DP_FATE_HELD);
}

struct dp_fate
dp_http_adopt(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f)
{
	f->tls = DP_TLS_HTTP;
	f->http_phase = DP_HTTP_HEAD;
	f->judged = 0;
	f->http_acked = f->isn;		/* nothing judged yet: none of it acknowledged */
	h->judged = 0;
	dp_http_frames_start(h, f);
	return dp_http_step(w, h, f);
}

/*
 * Does a segment's payload [off, end) (its bytes from off at bytes) overlap judged bytes
 * the server may not have, with no copy left to compare with (the buffer was given back
 * at an RST or after an idle while, or they were evicted), and say other than the framing
 * there said, or framing that cannot be compared (dp_http_frames_differ())? A rewrite
 * there would move where the server finds a request. A body's own data frames nothing
 * (the server counts it, whatever it holds), and was never read for what it says: sent
 * again unlike the first time, it tells the server nothing namegate would have judged.
 * So a client's TCP may send evicted bytes again, as it does when a segment was lost past
 * namegate while more than a buffer's worth followed it.
 */
static bool
dp_http_unverifiable(const struct dp_flow *f, const struct dp_hold *h, const uint8_t *bytes,
    uint32_t off, uint32_t end)
{
	uint32_t acked = f->http_acked - f->isn;
	uint32_t from = off > acked ? off : acked, to = end < f->judged ? end : f->judged;
	uint32_t start;

	if ((int32_t)(to - from) <= 0)
		return false;
	if (h == NULL)
		return true;
	start = dp_http_buf_start(f, h);
	/* [from, to) up to where the copy starts: judged, not acknowledged, not kept */
	return (int32_t)(start - from) > 0 &&
	    dp_http_frames_differ(&h->frames, from, (int32_t)(to - start) < 0 ? to : start,
	    bytes + (from - off), from, end - from);
}

/* Judged bytes sent again: equal to the copy (or acknowledged, so ignored), they pass. */
static struct dp_fate
dp_http_repeat(struct dp_hold *h, const struct pkt *p, struct dp_flow *f, uint32_t seq)
{
	if (h != NULL && reasm_add(&h->r, seq, p->payload, p->payload_len) == REASM_CONFLICT)
		return dp_http_cut_frame(DP_REASON_REWRITE);
	return dp_fate_pass(f->would_block);
}

/*
 * Room in h for new bytes up to stream offset end, when they would not fit: the oldest
 * judged bytes give up their copy, none of a held segment (unjudged bytes, and judged
 * ones whose segment waits for the rest of its verdict). The server's ACK of them, when
 * namegate saw its stream with a hole (a segment lost before namegate: those after it
 * never count, dp_flow_peer_in_order()), may never come; a keep-alive connection then
 * goes on, and a later segment over evicted framing is cut (dp_http_unverifiable()), as
 * a rewrite of it would be. An upload evicts its body's data as it goes. No window of
 * sequence numbers is trusted instead: an accomplice could spray one.
 */
static void
dp_http_evict(struct dp_hold *h, const struct dp_flow *f, uint32_t end)
{
	uint32_t start = dp_http_buf_start(f, h), upto = f->judged, n;

	if (end - start <= h->r.cap)
		return;
	for (uint16_t i = 0; i < h->nsegs; i++)
		if (h->off[i] < upto)
			upto = h->off[i];
	if ((int32_t)(upto - start) <= 0)
		return;
	n = upto - start < end - start - h->r.cap ? upto - start : end - start - h->r.cap;
	dp_http_frames_evict(&h->frames, h->buf, start, start + n);
	reasm_consume(&h->r, n);	/* judged bytes are in order from start: n fits */
}

/* New bytes m (decoded as p, at stream offsets [off, end)) into h, and read on. */
static struct dp_fate
dp_http_hold(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, struct dp_hold *h, uint32_t off, uint32_t end)
{
	enum reasm_status rs;
	struct dp_fate fate;
	bool held;

	dp_http_evict(h, f, end);
	rs = reasm_add(&h->r, p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0), p->payload,
	    p->payload_len);
	if (rs == REASM_CONFLICT || rs == REASM_SCATTERED) {
		dp_evt_block(w, vm, p, DP_REASON_REWRITE, false, NULL, 0);
		return dp_http_cut(DP_FATE_BLOCK, rs == REASM_CONFLICT ? DP_REASON_REWRITE :
		    DP_REASON_HOST_DENIED);
	}
	/* no room to hold it until judged: the client sends it again once acks free some */
	held = rs != REASM_FULL && dp_hold_push(w, h, m, off, end);
	fate = dp_http_step(w, h, f);
	if (!held) {
		fate.act = DP_FATE_DROP;
		fate.why = DP_DROP_OUT_OF_WINDOW;
	}
	return fate;
}

struct dp_fate
dp_http_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	uint32_t seq = p->seq + ((p->tcp_flags & PKT_TCP_SYN) != 0), off, end;
	struct dp_hold *h = dp_hold_at(w, f->hold);
	int64_t at;

	if (!dp_hold_in_window(f, seq, (uint32_t)p->payload_len))
		return dp_fate_drop(DP_DROP_OUT_OF_WINDOW);
	at = dp_hold_offset(f->isn, seq);
	off = at < 0 ? 0 : (uint32_t)at;
	end = at + (int64_t)p->payload_len < 0 ? 0 : (uint32_t)(at + (int64_t)p->payload_len);
	/* urgent pointers never come here: the flow stage cut them (dp_conn_vm_urgent()) */
	if (dp_http_unverifiable(f, h, p->payload + (off - at), off, end))
		return dp_http_cut_frame(DP_REASON_REWRITE);
	if (end <= f->judged)
		return dp_http_repeat(h, p, f, seq);
	if (h == NULL) {
		/* all acknowledged so far: a fresh buffer from the first byte not yet judged */
		if ((h = dp_hold_take(w, f, &f->hold, f->isn, false)) == NULL)
			return dp_http_cut_frame(DP_REASON_VM_LIMIT);
		reasm_init(&h->r, f->isn + f->judged, h->buf, sizeof(h->buf));
		dp_http_frames_start(h, f);
		h->judged = f->judged;
		h->passed = f->judged;	/* what came before went; no segment here ends by it */
	}
	return dp_http_hold(w, m, p, vm, f, h, off, end);
}

/*
 * The server's answer to a CONNECT, read from its first byte: is its status line that of
 * a 2xx ("HTTP/1.1 200", RFC 9110 s9.3.6)? Only a CONNECT that opened the connection is
 * asked about, so its answer is the first thing the server sends; one later on the
 * connection is never a tunnel (which answer is its would take reading every response).
 * Bytes are read in order as segments bring them, each judged against the pattern, and
 * nothing is kept: out-of-order segments are read when their bytes come again.
 */
static const char dp_http_2xx[] = "HTTP/1.1 2dd";

static enum http_status
dp_http_connect_status(struct dp_flow *f, const struct pkt *p)
{
	uint32_t from = p->seq - f->peer_isn, at = f->status_read - from;

	if ((int32_t)(f->status_read - from) < 0 || at >= (uint32_t)p->payload_len)
		return HTTP_NEED_MORE;
	for (; at < p->payload_len && f->status_read < sizeof(dp_http_2xx) - 1; at++) {
		char want = dp_http_2xx[f->status_read];
		uint8_t c = p->payload[at];
		bool ok = want == 'd' ? c >= '0' && c <= '9' :
		    f->status_read == 7 ? c == '0' || c == '1' : c == (uint8_t)want;

		if (!ok)
			return HTTP_BAD;
		f->status_read++;
	}
	return f->status_read == sizeof(dp_http_2xx) - 1 ? HTTP_OK : HTTP_NEED_MORE;
}

/*
 * After a CONNECT, the server spoke: a 2xx makes the rest of the client's stream the
 * tunnel's; anything else (404, 405, a 1xx, not HTTP) and the bytes held since are read
 * as the next request, as a server that refused the CONNECT reads them.
 */
static void
dp_http_connect_answer(struct dp_worker *w, struct dp_flow *f, const struct pkt *p)
{
	struct dp_hold *h = dp_hold_at(w, f->hold);
	enum http_status st = dp_http_connect_status(f, p);

	if (st == HTTP_NEED_MORE)
		return;
	f->http_phase = st == HTTP_OK ? DP_HTTP_TUNNEL : DP_HTTP_HEAD;
	if (h != NULL)	/* the server's frame goes on: the stream's fate is settled now */
		dp_out_flow_settle(w, f, dp_http_step(w, h, f));
}

void
dp_http_peer(struct dp_worker *w, struct dp_flow *f, const struct pkt *p)
{
	struct dp_hold *h;
	uint32_t acked, start, n;

	/* every server segment comes here once: peer_nxt follows the server's stream */
	if (dp_flow_peer_in_order(f, p->seq, dp_seq_len(p)) &&
	    dp_flow_peer_ack_taken(f, p->tcp_flags, p->ack) &&
	    dp_seq_after(p->ack, f->http_acked))
		f->http_acked = p->ack;
	if (f->http_phase == DP_HTTP_CONNECT && p->payload_len > 0 && f->peer_synced) {
		dp_http_connect_answer(w, f, p);
		if (!f->in_use || f->tls != DP_TLS_HTTP)
			return;		/* cut */
	}
	if ((h = dp_hold_at(w, f->hold)) == NULL || !f->peer_synced)
		return;
	acked = f->http_acked - f->isn;
	if ((int32_t)(acked - f->judged) > 0)
		acked = f->judged;	/* never past what was judged: the rest is still read */
	dp_http_frames_acked(&h->frames, acked);
	start = dp_http_buf_start(f, h);
	n = acked - start;
	if ((int32_t)n <= 0)
		return;
	if (n > reasm_contiguous(&h->r))
		n = reasm_contiguous(&h->r);
	reasm_consume(&h->r, n);
	if (h->nsegs == 0 && acked == f->judged && reasm_contiguous(&h->r) == 0 &&
	    h->r.nb_ranges == 0)
		dp_hold_put(w, &f->hold);	/* nothing in flight: an idle keep-alive holds no buffer */
}

void
dp_http_expire(struct dp_worker *w, struct dp_hold *h)
{
	struct dp_flow *f = h->flow;

	/* a request head that does not complete in time is never judged: cut */
	if (h->nsegs > 0 && w->now - h->started >= DP_HOLD_SECONDS) {
		dp_out_flow_settle(w, f, dp_http_give_up(w, h, f));
	} else if (h->nsegs == 0 && w->now - h->started >= DP_VERIFY_SECONDS &&
	    !dp_seq_after(f->isn + f->judged, f->peer_ack)) {
		/*
		 * Nothing held (what the buffer has beyond the judged bytes never went on: its
		 * segments were dropped, the client sends them again), idle this long, and every
		 * judged byte acknowledged as far as any segment says, but not by one in the
		 * server's stream as namegate saw it (a loss upstream left a hole there): the
		 * copy goes, so that such a keep-alive connection does not hold a buffer for
		 * life. A later segment over those bytes is cut (dp_http_unverifiable()), as
		 * one over evicted bytes is.
		 */
		dp_hold_put(w, &f->hold);
	}
}
