/*
 * Plaintext HTTP's judged requests and the server's ACK of them (dp_http.c), through the
 * burst and the real worker, on a sniffed port a binding admits: only the ACK of a server
 * segment in its stream as namegate saw it in order frees a judged request's copy, so a
 * spoofed one (the flow's addresses, any sequence number) leaves a rewrite to be compared
 * and cut. And a keep-alive connection whose server stream namegate saw with a hole (a
 * segment lost before namegate: the ACKs after it never count) goes on past the hold's
 * buffer, its oldest judged bytes evicted, never unjudged ones; a rewrite of evicted bytes
 * is cut, a retransmission of those still kept passes. An upload past a loss (Content-Length
 * or chunked) sends its evicted bytes again: body data passes, framing is compared with
 * what the hold kept of it (dp_http_frames.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "dp_reason.h"
#include "sni/pkt.h"

#define T_PORT		41000
#define T_VM_ISN	1000	/* the client's first byte */
#define T_PEER_ISN	5000	/* the server's */

static const char t_config[] =
	"dataplane:\n"
	"  {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024, max_flows: 4096,\n"
	"   max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"a.example:8080\"]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}]\n";

static const uint8_t t_vm_mac[6] = { 2, 0, 0, 0, 0, 1 }, t_gw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
static const uint8_t t_vm_ip[4] = { 10, 77, 0, 11 }, t_server[4] = { 203, 0, 113, 5 };
static struct dp_worker *w;
static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };

/* agent1's segment to t_server:8080 at seq, len bytes at payload: the frames it sent up. */
static unsigned int
t_vm(uint32_t seq, uint8_t flags, const void *payload, size_t len)
{
	struct rte_mbuf *m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = t_vm_mac,
	    .dmac = t_gw_mac, .sip = t_vm_ip, .dip = t_server, .sport = T_PORT, .dport = 8080,
	    .seq = seq, .ack = T_PEER_ISN, .flags = flags, .payload = payload, .len = len });
	unsigned int n;

	dp_burst_vm(w, &m, 1);
	n = w->tx[DP_PORT_UPLINK].n;
	dp_tx_flush(w);
	return n;
}

/* A segment from t_server:8080 to agent1 (anyone may send one so), len bytes of data. */
static void
t_server_seg(uint32_t seq, uint32_t ack, uint8_t flags, size_t len)
{
	static const uint8_t data[256];
	struct rte_mbuf *m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = t_gw_mac,
	    .dmac = t_vm_mac, .sip = t_server, .dip = t_vm_ip, .sport = 8080, .dport = T_PORT,
	    .seq = seq, .ack = ack, .flags = flags, .payload = data, .len = len });

	assert_true(len <= sizeof(data));
	dp_burst_uplink(w, &m, 1);
	dp_tx_flush(w);
}

/* A GET for path with Host host, padded to exactly len bytes (a header of x's), in b. */
static size_t
t_request(char *b, size_t len, const char *host, const char *path)
{
	int n = snprintf(b, len + 1, "GET %s HTTP/1.1\r\nHost: %s\r\nX-Pad: ", path, host);

	assert_true(n > 0 && (size_t)n + 4 <= len);
	memset(b + n, 'x', len - 4 - (size_t)n);
	memcpy(b + len - 4, "\r\n\r\n", 4);
	return len;
}

/*
 * agent1's connection from T_PORT, the server's SYN-ACK seen: its flow, key in *k. One
 * an earlier test left (it failed) is closed first.
 */
static struct dp_flow *
t_connect(struct dp_flow_key *k)
{
	struct dp_flow *f;

	*k = (struct dp_flow_key){ .vm = 0, .family = 4, .proto = PKT_PROTO_TCP,
		.vm_port = T_PORT, .peer_port = 8080 };
	memcpy(k->peer, t_server, 4);
	if ((f = dp_flow_lookup(w->flows, k)) != NULL)
		dp_flow_end(w, f);
	dpf_bind4(w, 0, t_server, "a.example");
	assert_int_equal(t_vm(T_VM_ISN - 1, PKT_TCP_SYN, NULL, 0), 1);
	assert_non_null(f = dp_flow_lookup(w->flows, k));
	assert_int_equal(f->tls, DP_TLS_SNIFF);
	t_server_seg(T_PEER_ISN - 1, T_VM_ISN, PKT_TCP_SYN | PKT_TCP_ACK, 0);
	assert_true(f->peer_synced);
	return f;
}

/* f's copy of judged bytes starts at stream offset: */
static uint32_t
t_copy_start(const struct dp_flow *f)
{
	return dp_hold_at(w, f->hold)->r.isn - f->isn;
}

/*
 * A judged request the server discarded (it acknowledged data never sent), its ACK
 * spoofed at a sequence number off the server's stream: the copy stays and the rewrite
 * (Host b.example, the same length) is cut. Control: the same ACK from a segment in the
 * server's stream frees the copy, and the same bytes again then pass (the server has
 * them, and ignores them).
 */
static void
test_spoofed_ack_keeps_the_copy(void **state)
{
	static char good[200], bad[200];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	struct dp_flow_key k;
	struct dp_flow *f;
	size_t n = t_request(good, 120, "a.example", "/");

	(void)state;
	assert_int_equal(t_request(bad, 120, "b.example", "/"), n);
	for (int in_stream = 0; in_stream <= 1; in_stream++) {
		f = t_connect(&k);
		assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, good, n), 1);
		assert_int_equal(f->tls, DP_TLS_HTTP);
		assert_int_equal(f->judged, n);
		assert_int_not_equal(f->hold, 0);
		t_server_seg(in_stream ? T_PEER_ISN : T_PEER_ISN + 777777,
		    T_VM_ISN + (uint32_t)n, PKT_TCP_ACK, 0);
		assert_int_equal(f->peer_ack, T_VM_ISN + n);	/* what any segment moves */
		if (!in_stream) {
			assert_int_equal(f->http_acked, T_VM_ISN);
			assert_int_equal(t_copy_start(f), 0);
			assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, bad, n), 1);
			assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], ++rewrite);
			assert_null(dp_flow_lookup(w->flows, &k));	/* cut */
			continue;
		}
		assert_int_equal(f->http_acked, T_VM_ISN + n);
		assert_int_equal(f->hold, 0);
		assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, bad, n), 1);
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite);
		dp_flow_end(w, f);
	}
}

#define T_REQ		1000	/* each request's length */
#define T_REQS		40	/* more than the hold's buffer holds */
#define T_SEG		100	/* each server segment's data */

/*
 * The server's first segment is lost before namegate, so every segment after it is out
 * of the stream as namegate saw it, and their ACKs never count: the keep-alive connection
 * goes on for T_REQS requests (the last split over two segments, its first held unjudged
 * while the second needs room), the oldest judged bytes evicted. Then a rewrite of the
 * first request, evicted, is cut; first, the last request again, still kept, passes.
 */
static void
test_keepalive_after_a_hole_evicts_judged_bytes(void **state)
{
	static char req[T_REQ + 1], bad[T_REQ + 1];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	uint64_t full = w->drops[DP_DROP_OUT_OF_WINDOW];
	uint32_t seq = T_VM_ISN, last;
	struct dp_flow_key k;
	struct dp_flow *f;
	char path[32];

	(void)state;
	_Static_assert(T_REQ * T_REQS > 2 * TLS_HELLO_MAX, "more than the buffer, twice");
	f = t_connect(&k);
	/* lost before namegate: [T_PEER_ISN, T_PEER_ISN + T_SEG) */
	for (int i = 0; i < T_REQS; i++) {
		snprintf(path, sizeof(path), "/r%d", i);
		t_request(req, T_REQ, "a.example", path);
		if (i < T_REQS - 1) {
			assert_int_equal(t_vm(seq, PKT_TCP_ACK | PKT_TCP_PSH, req, T_REQ), 1);
		} else {
			/* held until the rest comes, unjudged (its whole lines go on as a copy) */
			assert_int_equal(t_vm(seq, PKT_TCP_ACK, req, T_REQ / 2), 1);
			assert_true(t_vm(seq + T_REQ / 2, PKT_TCP_ACK | PKT_TCP_PSH,
			    req + T_REQ / 2, T_REQ / 2) >= 1);
		}
		assert_int_equal(f->tls, DP_TLS_HTTP);
		assert_int_equal(f->judged, (uint32_t)(i + 1) * T_REQ);
		seq += T_REQ;
		/* the server's answer, acknowledging it, after the hole */
		t_server_seg(T_PEER_ISN + (uint32_t)(i + 1) * T_SEG, seq, PKT_TCP_ACK | PKT_TCP_PSH,
		    T_SEG);
		assert_int_equal(f->peer_ack, seq);
		assert_int_equal(f->http_acked, T_VM_ISN);
		assert_int_equal(f->peer_nxt, T_PEER_ISN);
	}
	assert_int_equal(w->drops[DP_DROP_OUT_OF_WINDOW], full);
	assert_int_not_equal(f->hold, 0);
	last = f->judged - T_REQ;
	assert_true(t_copy_start(f) > 0 && t_copy_start(f) <= last);
	/* the last request again: its copy says it repeats it */
	assert_int_equal(t_vm(T_VM_ISN + last, PKT_TCP_ACK | PKT_TCP_PSH, req, T_REQ), 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite);
	/* the first, evicted and not acknowledged in the server's stream: rewritten, cut */
	t_request(bad, T_REQ, "b.example", "/r0");
	assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, bad, T_REQ), 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite + 1);
	assert_null(dp_flow_lookup(w->flows, &k));
}

/*
 * Eviction spares what is not judged, and a held segment's judged bytes too: on a
 * connection past a hole, its buffer full of judged requests, a segment holds the end of
 * one request and the start of the next head (unfinished: held); then one far ahead needs
 * more room than the judged bytes before that segment give. They go, not the held
 * segment's (it is dropped: no room), and the held segment sent again is compared, not
 * cut as unverifiable.
 */
static void
test_eviction_spares_held_bytes(void **state)
{
	static char req[T_REQ + 1], next[3 * T_REQ + 1];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	uint64_t full = w->drops[DP_DROP_OUT_OF_WINDOW];
	uint32_t seq = T_VM_ISN, held_off;
	struct dp_flow_key k;
	struct dp_flow *f;
	uint8_t seg[T_REQ + T_REQ / 10];

	(void)state;
	f = t_connect(&k);
	t_request(req, T_REQ, "a.example", "/e");
	t_request(next, 3 * T_REQ, "a.example", "/next");
	for (int i = 0; i < 20; i++) {
		assert_int_equal(t_vm(seq, PKT_TCP_ACK | PKT_TCP_PSH, req, T_REQ), 1);
		seq += T_REQ;
		t_server_seg(T_PEER_ISN + (uint32_t)(i + 1) * T_SEG, seq, PKT_TCP_ACK, T_SEG);
	}
	assert_int_equal(f->http_acked, T_VM_ISN);
	/* one more request: its first 900 bytes, then its last 100 and the next head's start */
	t_vm(seq, PKT_TCP_ACK, req, T_REQ - T_REQ / 10);
	memcpy(seg, req + T_REQ - T_REQ / 10, T_REQ / 10);
	memcpy(seg + T_REQ / 10, next, T_REQ);
	held_off = seq + T_REQ - T_REQ / 10 - T_VM_ISN;
	t_vm(seq + T_REQ - T_REQ / 10, PKT_TCP_ACK, seg, sizeof(seg));
	assert_int_equal(f->judged, held_off + T_REQ / 10);
	assert_true(t_copy_start(f) < held_off);
	/* far ahead: room for it would take the held segment's judged bytes */
	t_vm(T_VM_ISN + held_off + 16 * T_REQ, PKT_TCP_ACK, req, T_REQ / 2);
	assert_int_equal(w->drops[DP_DROP_OUT_OF_WINDOW], full + 1);
	assert_int_equal(t_copy_start(f), held_off);
	/* the held segment again: compared with the copy, the same */
	t_vm(T_VM_ISN + held_off, PKT_TCP_ACK, seg, sizeof(seg));
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite);
	assert_non_null(dp_flow_lookup(w->flows, &k));
	dp_flow_end(w, f);
}

/*
 * Past a hole, an idle connection's copy of judged bytes that no ACK in the server's
 * stream covers goes once DP_VERIFY_SECONDS pass, if a segment said the server has them
 * all (else it is kept: they may come again); the next request takes a fresh buffer, and
 * a rewrite of what went is cut.
 */
static void
test_idle_copy_goes_after_a_hole(void **state)
{
	static char req[T_REQ + 1], bad[T_REQ + 1];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	struct dp_flow_key k;
	struct dp_flow *f;

	(void)state;
	f = t_connect(&k);
	t_request(req, T_REQ, "a.example", "/idle-1");
	t_request(bad, T_REQ, "b.example", "/idle-1");
	assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, req, T_REQ), 1);
	/* after the hole, acknowledging nothing of it */
	t_server_seg(T_PEER_ISN + T_SEG, T_VM_ISN, PKT_TCP_ACK, T_SEG);
	dpf_expire_holds(w);
	assert_int_not_equal(f->hold, 0);
	/* after the hole, acknowledging it all */
	t_server_seg(T_PEER_ISN + 2 * T_SEG, T_VM_ISN + T_REQ, PKT_TCP_ACK, T_SEG);
	assert_int_equal(f->http_acked, T_VM_ISN);
	assert_int_not_equal(f->hold, 0);
	dpf_expire_holds(w);
	assert_int_equal(f->hold, 0);
	t_request(req, T_REQ, "a.example", "/idle-2");
	assert_int_equal(t_vm(T_VM_ISN + T_REQ, PKT_TCP_ACK | PKT_TCP_PSH, req, T_REQ), 1);
	assert_int_not_equal(f->hold, 0);
	assert_int_equal(t_copy_start(f), T_REQ);
	t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, bad, T_REQ);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite + 1);
	assert_null(dp_flow_lookup(w->flows, &k));
}

/*
 * On a keep-alive connection whose first request the server has (its copy given back), a
 * second request head split over two segments: the first, whole lines and a line being
 * written, goes on at once as a copy; the second, which ends the head, goes alone, the
 * first not sent again (its hold, taken past the judged bytes, knows they went).
 */
static void
test_split_second_head_first_segment_sent_once(void **state)
{
	static char req[300];
	struct dp_flow_key k;
	struct dp_flow *f = t_connect(&k);
	size_t n = t_request(req, 120, "a.example", "/one"), split;

	(void)state;
	assert_int_equal(t_vm(T_VM_ISN, PKT_TCP_ACK | PKT_TCP_PSH, req, n), 1);
	t_server_seg(T_PEER_ISN, T_VM_ISN + (uint32_t)n, PKT_TCP_ACK, 0);
	assert_int_equal(f->hold, 0);
	t_request(req, 200, "a.example", "/two");
	split = 200 - 40;		/* in the X-Pad line: no CR yet */
	assert_int_equal(t_vm(T_VM_ISN + (uint32_t)n, PKT_TCP_ACK, req, split), 1);
	assert_int_not_equal(f->hold, 0);
	assert_int_equal(t_vm(T_VM_ISN + (uint32_t)(n + split), PKT_TCP_ACK | PKT_TCP_PSH,
	    req + split, 200 - split), 1);
	assert_int_equal(f->judged, n + 200);
	dp_flow_end(w, f);
}

/* The stream [from, from + len) of s sent in segments of T_REQ, each seen going on. */
static void
t_vm_stream(const char *s, uint32_t from, uint32_t len)
{
	for (uint32_t at = from; at < from + len; at += T_REQ) {
		uint32_t n = from + len - at < T_REQ ? from + len - at : T_REQ;

		assert_int_equal(t_vm(T_VM_ISN + at, PKT_TCP_ACK, s + at, n), 1);
	}
}

/*
 * Stream bytes [at, at + len) of s sent again as the client's TCP would after a loss past
 * namegate, with their first byte changed when rewrite: is the flow (key k) still there?
 * The segment goes on when it is.
 */
static bool
t_resend(const struct dp_flow_key *k, const char *s, uint32_t at, uint32_t len, bool rewrite)
{
	static char seg[T_REQ];
	unsigned int sent;

	assert_true(len <= sizeof(seg));
	memcpy(seg, s + at, len);
	seg[0] ^= rewrite ? 0x01 : 0;
	sent = t_vm(T_VM_ISN + at, PKT_TCP_ACK, seg, len);
	if (dp_flow_lookup(w->flows, k) == NULL)
		return false;
	assert_int_equal(sent, 1);
	return true;
}

#define T_BODY		40000	/* an upload: more than the buffer, within the window */

/*
 * An upload with a Content-Length, its first body segment lost past namegate, so the
 * server acknowledges nothing after the head while the client sends on: the copy of the
 * oldest body bytes is evicted. The client's TCP sends the lost segment again: it goes on,
 * rewritten or not (a body's data frames nothing, and was never read for what it says).
 * The head, not acknowledged and evicted too, goes on sent again as it was (its digest,
 * taken as it was evicted), and is cut rewritten or sent only in part. An ACK inside the
 * head leaves the rest to compare, and the server's ACK of all of it forgets where it was.
 */
static void
test_upload_body_resent_after_eviction(void **state)
{
	static char s[T_BODY + 200];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	struct dp_flow_key k;
	struct dp_flow *f;
	uint32_t head;

	(void)state;
	head = (uint32_t)snprintf(s, sizeof(s), "POST /up HTTP/1.1\r\nHost: a.example\r\n"
	    "Content-Length: %d\r\n\r\n", T_BODY);
	memset(s + head, 'u', T_BODY);
	for (int with_head_acked = 0; with_head_acked <= 1; with_head_acked++) {
		f = t_connect(&k);
		t_vm_stream(s, 0, head);
		if (with_head_acked)
			t_server_seg(T_PEER_ISN, T_VM_ISN + head, PKT_TCP_ACK, 0);
		t_vm_stream(s, head, T_BODY);
		assert_int_equal(f->judged, head + T_BODY);
		assert_true(t_copy_start(f) > head + 2 * T_REQ);
		assert_true(t_resend(&k, s, head, T_REQ, false));
		assert_true(t_resend(&k, s, head + T_REQ, T_REQ, true));
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite);
		if (with_head_acked) {	/* acknowledged: the server ignores it, whatever it is */
			assert_true(t_resend(&k, s, 0, head, true));
			t_server_seg(T_PEER_ISN, T_VM_ISN + head + T_BODY, PKT_TCP_ACK, 0);
			assert_int_equal(f->hold, 0);
			dp_flow_end(w, f);
			continue;
		}
		assert_int_equal(dp_hold_at(w, f->hold)->frames.n, 1);
		/* the head, as sent: its digest says it is the same */
		assert_true(t_resend(&k, s, 0, head, false));
		/* the same bytes, but not all of the head: a digest cannot say */
		assert_false(t_resend(&k, s, 0, head - 1, false));
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], ++rewrite);
		f = t_connect(&k);
		t_vm_stream(s, 0, head + T_BODY);
		assert_false(t_resend(&k, s, 0, head, true));
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], ++rewrite);
	}
	/*
	 * the server's ACK inside the head: what is left of it is compared from there, all of
	 * it needed for its digest
	 */
	f = t_connect(&k);
	t_vm_stream(s, 0, head);
	t_server_seg(T_PEER_ISN, T_VM_ISN + 10, PKT_TCP_ACK, 0);
	t_vm_stream(s, head, T_BODY);
	assert_true(t_copy_start(f) > head);
	assert_true(t_resend(&k, s, 10, head - 10, false));
	assert_false(t_resend(&k, s, 10, head - 10, true));
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], ++rewrite);
	/* the ACK of the head alone forgets it: the ring holds no run the server has */
	f = t_connect(&k);
	t_vm_stream(s, 0, head);
	t_vm_stream(s, head, 4 * T_REQ);
	assert_int_equal(dp_hold_at(w, f->hold)->frames.n, 1);
	t_server_seg(T_PEER_ISN, T_VM_ISN + head, PKT_TCP_ACK, 0);
	assert_int_equal(dp_hold_at(w, f->hold)->frames.n, 0);
	dp_flow_end(w, f);
}

#define T_CHUNK		20	/* a chunk's data: small, for many chunks within the window */
#define T_CHUNKS	(DP_HTTP_FRAMES + 16)	/* more framing runs than the ring keeps */
#define T_EVICTED	300	/* a chunk evicted, its framing kept */

/*
 * A chunked upload whose server acknowledges nothing past the head (the first chunk lost
 * past namegate): evicted chunk data sent again goes on, rewritten or not; an evicted
 * chunk-size line goes on as it was (the ring keeps a short run's bytes), and is cut
 * rewritten, as is the CRLF after a chunk. The ring keeps the last DP_HTTP_FRAMES runs (a
 * chunk's CRLF and the next size line are one): data before the oldest run kept counts as
 * framing, and is cut.
 */
static void
test_chunked_upload_resent_after_eviction(void **state)
{
	static char s[T_CHUNKS * (T_CHUNK + 6) + 200];
	uint64_t rewrite = w->vm_stats[0].blocked[DP_REASON_REWRITE];
	uint32_t data[T_CHUNKS], head, n;
	struct dp_flow_key k;
	struct dp_flow *f;

	(void)state;
	_Static_assert(sizeof(s) < 65535, "all of it within the server's window");
	n = head = (uint32_t)snprintf(s, sizeof(s), "POST /up HTTP/1.1\r\nHost: a.example\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < T_CHUNKS; i++) {
		n += (uint32_t)snprintf(s + n, sizeof(s) - n, "%x\r\n", T_CHUNK);
		data[i] = n;
		memset(s + n, 'a' + i % 26, T_CHUNK);
		n += T_CHUNK;
		memcpy(s + n, "\r\n", 2);
		n += 2;
	}
	n += (uint32_t)snprintf(s + n, sizeof(s) - n, "0\r\n\r\n");
	for (int pass = 0; pass < 4; pass++) {
		f = t_connect(&k);
		t_vm_stream(s, 0, head);
		t_server_seg(T_PEER_ISN, T_VM_ISN + head, PKT_TCP_ACK, 0);
		t_vm_stream(s, head, n - head);
		assert_int_equal(f->judged, n);
		assert_int_equal(f->http_phase, DP_HTTP_HEAD);	/* the body read to its end */
		assert_true(t_copy_start(f) > data[T_EVICTED + 2]);
		switch (pass) {
		case 0:		/* data the ring's runs bound, evicted: it goes */
			assert_true(t_resend(&k, s, data[T_EVICTED], T_CHUNK, false));
			assert_true(t_resend(&k, s, data[T_EVICTED + 1] + 2, T_CHUNK - 4, true));
			assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], rewrite);
			dp_flow_end(w, f);
			continue;
		case 1:		/* a chunk-size line and the data after it: as sent, rewritten */
			assert_true(t_resend(&k, s, data[T_EVICTED] - 4, T_CHUNK, false));
			assert_false(t_resend(&k, s, data[T_EVICTED] - 4, T_CHUNK, true));
			break;
		case 2:		/* the CRLF after a chunk's data, rewritten */
			assert_false(t_resend(&k, s, data[T_EVICTED] + T_CHUNK, 12, true));
			break;
		default:	/* data before the oldest run kept: forgotten framing there */
			assert_false(t_resend(&k, s, data[3], T_CHUNK, false));
			break;
		}
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], ++rewrite);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spoofed_ack_keeps_the_copy),
		cmocka_unit_test(test_keepalive_after_a_hole_evicts_judged_bytes),
		cmocka_unit_test(test_eviction_spares_held_bytes),
		cmocka_unit_test(test_idle_copy_goes_after_a_hole),
		cmocka_unit_test(test_split_second_head_first_segment_sent_once),
		cmocka_unit_test(test_upload_body_resent_after_eviction),
		cmocka_unit_test(test_chunked_upload_resent_after_eviction),
	};

	return dpf_run("test_dp_http_ack", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
