/*
 * A split hello judged where its first segment's bytes lie (dp_tls_hold_in_place()), through
 * the real worker on net_null ports: only when the payload ends the frame (bytes past the
 * IP datagram are none of the stream's), and the bytes gathered into the hold's own buffer
 * before a release lets go of that segment (an audited VM's refused hello, its judged
 * bytes compared with what the client sends again).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "dp_run.h"
#include "policy/load.h"
#include "tls_fixture.h"

static const char t_config[] =
	"dataplane:\n"
	"  {vm_port: net_null0, uplink_port: net_null1, max_bindings: 64, max_flows: 256,\n"
	"   max_flows_per_vm: 64}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"a.example:443\"]}}\n"
	"vms:\n"
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n";

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;
static const uint8_t t_server[4] = { 203, 0, 113, 5 };

/* How a hello's first segment is made (t_send()). */
enum t_shape {
	T_PLAIN,
	T_TRAILER,	/* with bytes past its datagram */
	T_NO_ROOM,	/* at its buffer's end, no room after it */
	T_SHARED,	/* its buffer referred to by the test too (t_kept) */
	T_CLONE,	/* sent as a clone, its buffer the test's (t_kept) */
};

static struct rte_mbuf *t_kept;	/* T_SHARED, T_CLONE: the test's reference */

/* The room after m's frame, filled with 0x77: bytes nothing may write. */
static void
t_fill_room(struct rte_mbuf *m)
{
	memset(rte_pktmbuf_mtod_offset(m, uint8_t *, rte_pktmbuf_data_len(m)), 0x77,
	    rte_pktmbuf_tailroom(m));
}

/* Is the room after t_kept's frame as t_fill_room() left it? Then t_kept let go of. */
static bool
t_room_untouched(void)
{
	const uint8_t *r = rte_pktmbuf_mtod_offset(t_kept, const uint8_t *,
	    rte_pktmbuf_data_len(t_kept));
	bool same = true;

	for (uint16_t i = 0; i < rte_pktmbuf_tailroom(t_kept); i++)
		same = same && r[i] == 0x77;
	rte_pktmbuf_free(t_kept);
	t_kept = NULL;
	return same;
}

/*
 * The segment at stream offset at (seq 1001 + at; -1: the SYN) of agent1's connection from
 * sport to t_server:443, with n bytes of b, made as shape says, sent in.
 */
static void
t_send(uint16_t sport, int at, const uint8_t *b, size_t n, enum t_shape shape)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 };
	struct rte_mbuf *m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw,
	    .sip = src, .dip = t_server, .sport = sport, .dport = 443,
	    .seq = (uint32_t)(1001 + at), .ack = 1,
	    .flags = at < 0 ? PKT_TCP_SYN : PKT_TCP_ACK, .payload = b, .len = n });
	uint16_t off = (uint16_t)(m->buf_len - rte_pktmbuf_data_len(m));

	if (shape == T_TRAILER)
		memset(rte_pktmbuf_append(m, 6), 0x5a, 6);
	if (shape == T_NO_ROOM) {
		memmove((uint8_t *)m->buf_addr + off, rte_pktmbuf_mtod(m, void *),
		    rte_pktmbuf_data_len(m));
		m->data_off = off;
		assert_int_equal(rte_pktmbuf_tailroom(m), 0);
	}
	if (shape == T_SHARED || shape == T_CLONE) {
		t_fill_room(m);
		t_kept = m;
		if (shape == T_SHARED)
			rte_mbuf_refcnt_update(m, 1);
		else
			assert_non_null(m = rte_pktmbuf_clone(t_kept, ctx.pool));
	}
	dp_burst_vm(w, &m, 1);
}

/* A ClientHello naming sni, in one TLS record: the stream's bytes. */
static const struct tf_msg *
t_stream(const char *sni)
{
	static struct tf_msg stream;

	tf_stream_sni(&stream, sni);
	return &stream;
}

/*
 * The connection from sport: its SYN, then its hello naming sni cut at 60, the first
 * segment made as shape says. Returns its flow, asserted to have judged the whole hello
 * and let it on.
 */
static const struct dp_flow *
t_split(uint16_t sport, const char *sni, enum t_shape shape)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = sport,
		.peer_port = 443, .peer = { 203, 0, 113, 5 } };
	const struct tf_msg *stream = t_stream(sni);
	const struct dp_flow *f;

	t_send(sport, -1, NULL, 0, T_PLAIN);
	t_send(sport, 0, stream->b, 60, shape);
	t_send(sport, 60, stream->b + 60, stream->n - 60, T_PLAIN);
	dp_tx_flush(w);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->judged, stream->n);
	return f;
}

/*
 * A first segment whose frame carries bytes past its datagram: the stream is the
 * datagram's payload, which the server reads, so the hello is judged from it and allowed.
 * Fails when the bytes are taken to lie at the frame's end (the parse sees the trailer).
 */
static void
test_trailer_not_judged(void **state)
{
	const uint64_t *pkts = w->vm_stats[0].egress_pkts;
	uint64_t allowed = pkts[DP_ALLOWED], blocked = pkts[DP_BLOCKED];

	(void)state;
	dpf_bind4(w, 0, t_server, "a.example");
	t_split(43000, "a.example", T_TRAILER);
	/* the SYN and the second segment (the first went on uncounted, as a trickle) */
	assert_int_equal(pkts[DP_ALLOWED], allowed + 2);
	assert_int_equal(pkts[DP_BLOCKED], blocked);
}

/*
 * A second segment with no room for it after the first (whose frame ends its buffer) goes
 * the general way: gathered into the hold's own buffer, judged whole there, no first
 * segment kept for the judged bytes. Fails when the room taken is not the buffer's (the
 * second segment is written past the first's buffer, and that buffer kept).
 */
static void
test_no_room_gathered(void **state)
{
	const struct dp_hold *h;

	(void)state;
	dpf_bind4(w, 0, t_server, "a.example");
	assert_non_null(h = dp_hold_at(w, t_split(43100, "a.example", T_NO_ROOM)->hold));
	assert_null(h->kept);
	assert_ptr_equal(h->r.buf, h->buf);
}

/*
 * A first segment whose buffer is not its own alone (another reference to it, or a clone
 * of a frame in another's buffer) is copied, the room after its frame never written: it
 * is another's. Fails without either test of the buffer.
 */
static void
test_shared_buffer_not_written(void **state)
{
	(void)state;
	dpf_bind4(w, 0, t_server, "a.example");
	t_split(43200, "a.example", T_SHARED);
	assert_true(t_room_untouched());
	t_split(43201, "a.example", T_CLONE);
	assert_true(t_room_untouched());
	/* a frame's own buffer takes the second segment, and is kept for the judged bytes */
	assert_non_null(dp_hold_at(w, t_split(43202, "a.example", T_PLAIN)->hold)->kept);
}

/*
 * An audited VM's refused split hello is released (would_block), its first segment let go
 * of; the judged bytes must then be the hold's own: the client's first segment sent again
 * is the same bytes and goes on. Fails when the release lets go of the buffer they lay in
 * (reused and overwritten here, the retransmission is taken for a rewrite and cut).
 */
static void
test_audit_release_keeps_bytes(void **state)
{
	struct dp_vm *vm = (struct dp_vm *)(uintptr_t)&w->gen->vms[0];
	uint64_t *blocked = w->vm_stats[0].blocked;
	uint64_t rewrite = blocked[DP_REASON_REWRITE];
	const uint64_t *pkts = w->vm_stats[0].egress_pkts;
	uint64_t would;
	struct rte_mbuf *junk[128];

	(void)state;
	dpf_bind4(w, 0, t_server, "a.example");
	vm->audit = true;
	t_split(43300, "evil.example", T_PLAIN);
	would = pkts[DP_WOULD_BLOCK];
	assert_int_equal(rte_pktmbuf_alloc_bulk(ctx.pool, junk, 128), 0);
	for (unsigned int i = 0; i < 128; i++)
		memset(junk[i]->buf_addr, 0xee, junk[i]->buf_len);
	rte_pktmbuf_free_bulk(junk, 128);
	t_send(43300, 0, t_stream("evil.example")->b, 60, T_PLAIN);
	dp_tx_flush(w);
	vm->audit = false;
	assert_int_equal(blocked[DP_REASON_REWRITE], rewrite);
	assert_int_equal(pkts[DP_WOULD_BLOCK], would + 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trailer_not_judged),
		cmocka_unit_test(test_no_room_gathered),
		cmocka_unit_test(test_shared_buffer_not_written),
		cmocka_unit_test(test_audit_release_keeps_bytes),
	};

	return dpf_run("test_dp_tls_in_place", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
