/*
 * dp_burst through the real worker (dp_ctx_setup on net_null ports): a burst decides what
 * its frames one at a time would. Its flow lookups are done together before any frame
 * acts, so a frame whose flow an earlier frame of the same burst opened or closed must be
 * looked up again; otherwise a repeated SYN would open its flow a second time (a slot and
 * a share of the VM's quota leaked for good), and a new SYN after an RST would meet the
 * closed flow. And a flow's steady frames, decided inline, are still judged anew after a
 * reload; a segment that only looks steady (dp_lean.h) on a flow with judged bytes is not,
 * and the server's ACK of them lets them go.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_burst.h"
#include "dns_builder.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "sni/pkt.h"
#include "t_burst.h"

/* Burst b of n SYNs from agent1: every one sent, opened flows opened. */
static void
t_syns(struct rte_mbuf **b, uint16_t n, uint32_t opened)
{
	uint32_t before = dp_flows_count(w->flows, 0);

	dp_burst_vm(w, b, n);
	assert_int_equal(t_sent(), n);
	assert_int_equal(dp_flows_count(w->flows, 0), before + opened);
}

/* A SYN and its retransmission in one burst: one flow, both sent. */
static void
test_repeated_syn_in_one_burst(void **state)
{
	struct rte_mbuf *b[3] = { t_tcp(40000, 1000, PKT_TCP_SYN), t_tcp(40000, 1000, PKT_TCP_SYN),
		t_tcp(40001, 5000, PKT_TCP_SYN) };

	(void)state;
	t_syns(b, 3, 2);
}

/*
 * The same with SYNs between: each opens a flow before the repeat is reached, some of
 * them on ports 64 apart, so the repeat must find its own among several new ones.
 */
static void
test_repeated_syn_among_others(void **state)
{
	struct rte_mbuf *b[6] = { t_tcp(42000, 1000, PKT_TCP_SYN),
		t_tcp(42064, 2000, PKT_TCP_SYN), t_tcp(42001, 3000, PKT_TCP_SYN),
		t_tcp(42000, 1000, PKT_TCP_SYN), t_tcp(42128, 4000, PKT_TCP_SYN),
		t_tcp(42064, 2000, PKT_TCP_SYN) };

	(void)state;
	t_syns(b, 6, 4);
}

/*
 * SYN, RST, then a SYN with another ISN on the same 4-tuple, in one burst: the RST closes
 * nothing (the flow keeps its state until it ages, RFC 5961), the new SYN reopens it: one
 * flow, every frame sent.
 */
static void
test_reopen_in_one_burst(void **state)
{
	struct rte_mbuf *b[3] = { t_tcp(41000, 7000, PKT_TCP_SYN),
		t_tcp(41000, 7001, PKT_TCP_RST), t_tcp(41000, 90000, PKT_TCP_SYN) };
	uint32_t before = dp_flows_count(w->flows, 0);
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = 41000,
		.peer_port = 8080, .peer = { 198, 51, 100, 7 } };
	struct dp_flow *f;

	(void)state;
	dp_burst_vm(w, b, 3);
	assert_int_equal(t_sent(), 3);
	assert_int_equal(dp_flows_count(w->flows, 0), before + 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->isn, 90001);		/* the second connection's */
}

/*
 * A flow's steady frames (an ACK, nothing opening or ending) are decided inline, but only
 * while the flow stands on the current generation: one judged by a generation gone, on
 * grounds the current one does not give (none, and the VM not audited), is cut on its
 * next ACK, which never leaves.
 */
static void
test_steady_frame_of_older_generation(void **state)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = 42000,
		.peer_port = 8080, .peer = { 198, 51, 100, 7 } };
	struct rte_mbuf *m = t_tcp(42000, 3000, PKT_TCP_SYN);
	uint64_t cut = w->vm_stats[0].blocked[DP_REASON_NO_BINDING];
	struct dp_flow *f;

	(void)state;
	dp_burst_vm(w, &m, 1);
	m = t_tcp(42000, 3001, PKT_TCP_ACK);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(), 2);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	f->gen = w->gen->id + 1;
	f->how = DP_ADMIT_NO;
	m = t_tcp(42000, 3001, PKT_TCP_ACK);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(), 0);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_NO_BINDING], cut + 1);
}

/*
 * A data segment on a flow whose first bytes were judged must repeat them, so it is no
 * steady frame: the lean path (dp_lean.h) hands it to the general one, which finds other
 * bytes where the judged ones were (no copy of them here, a digest they do not match) and
 * cuts the connection: the segment blocked, not sent (only the RST to the server is).
 */
static void
test_judged_flow_data_not_inline(void **state)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 }, dst[4] = { 198, 51, 100, 7 };
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = 44000,
		.peer_port = 8080, .peer = { 198, 51, 100, 7 } };
	struct rte_mbuf *m = t_tcp(44000, 6000, PKT_TCP_SYN);
	uint64_t cut = w->vm_stats[0].blocked[DP_REASON_REWRITE], allowed;
	struct dp_flow *f;

	(void)state;
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(), 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	allowed = w->vm_stats[0].egress_pkts[DP_ALLOWED];
	f->tls = DP_TLS_NONE;		/* its verdict in, the judged bytes still to repeat */
	f->judged = 100;
	f->hold = 0;
	memset(&f->judged_digest, 0, sizeof(f->judged_digest));
	m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw, .sip = src, .dip = dst,
	    .sport = 44000, .dport = 8080, .seq = 6001, .flags = PKT_TCP_ACK,
	    .payload = "not the judged bytes", .len = 20 });
	dp_burst_vm(w, &m, 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], cut + 1);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], allowed);
	t_sent();
}

/*
 * A flow of agent1's from port to 198.51.100.7:8080 opened (the server's SYN-ACK in
 * *from_peer, which is left as the server's next segment, seq 901, ACK 7101) with 100
 * judged bytes: the flow.
 */
static struct dp_flow *
t_judged_flow(uint16_t port, struct dpf_tcp *from_peer)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 }, dst[4] = { 198, 51, 100, 7 };
	struct dp_flow_key k = t_key(port);
	struct rte_mbuf *m = t_tcp(port, 7000, PKT_TCP_SYN);
	struct dp_flow *f;

	*from_peer = (struct dpf_tcp){ .smac = gw, .dmac = vm, .sip = dst, .dip = src,
		.sport = 8080, .dport = port, .seq = 900, .ack = 7001,
		.flags = PKT_TCP_SYN | PKT_TCP_ACK };
	dp_burst_vm(w, &m, 1);
	m = dpf_tcp4(&ctx, from_peer);
	dp_burst_uplink(w, &m, 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_true(f->peer_synced);
	f->tls = DP_TLS_NONE;
	f->judged = 100;
	f->vm_nxt = 7101;
	from_peer->seq = 901;
	from_peer->ack = 7101;
	return f;
}

/*
 * Toward the VM likewise: the server's ACK of a flow's judged bytes is no steady frame,
 * for it lets the flow forget them (dp_tls_peer_ack()); the lean path does that too
 * (dp_conn_uplink_judged()), or hands it on.
 */
static void
test_judged_flow_ack_not_inline(void **state)
{
	struct dpf_tcp from_peer;
	struct dp_flow *f = t_judged_flow(44100, &from_peer);
	struct rte_mbuf *m;

	(void)state;
	from_peer.flags = PKT_TCP_ACK;
	m = dpf_tcp4(&ctx, &from_peer);
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(f->judged, 0);
	assert_int_equal(f->peer_ack, 7101);
	t_sent();
}

/*
 * And the server's FIN with that ACK, no plain ACK, which the lean path's flow stage takes
 * (dp_conn_uplink_lean()): it closes the flow's side and lets the judged bytes go, as the
 * general way does.
 */
static void
test_judged_flow_fin_general(void **state)
{
	struct dpf_tcp from_peer;
	struct dp_flow *f = t_judged_flow(44102, &from_peer);
	struct rte_mbuf *m;

	(void)state;
	from_peer.flags = PKT_TCP_FIN | PKT_TCP_ACK;
	m = dpf_tcp4(&ctx, &from_peer);
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(f->judged, 0);
	assert_int_equal(f->state, DP_FLOW_CLOSING);
	t_sent();
}

/*
 * The server's ACK of judged bytes on a flow another generation judged: the lean path's
 * call for judged bytes is asked only of a flow steady but for them, so this one goes the
 * general way, which judges it again under the current generation (and moves it there).
 */
static void
test_judged_flow_ack_older_generation(void **state)
{
	struct dpf_tcp from_peer;
	struct dp_flow *f = t_judged_flow(44104, &from_peer);
	struct rte_mbuf *m;

	(void)state;
	f->gen = w->gen->id - 1;
	from_peer.flags = PKT_TCP_ACK;
	m = dpf_tcp4(&ctx, &from_peer);
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(f->gen, w->gen->id);
	assert_int_equal(f->judged, 0);
	t_sent();
}

/*
 * An audited VM's QUIC datagram goes on to be admitted with its would-be block noted and
 * counted, every one: the first opens its flow, the next ones find it steady, which the
 * last stage sends on inline only for a frame with nothing to note.
 */
static void
test_audited_quic_on_steady_flow(void **state)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 2 };
	static const uint8_t src[4] = { 10, 77, 0, 12 }, dst[4] = { 198, 51, 100, 7 };
	struct dp_flow_key k = { .vm = 1, .family = 4, .proto = 17, .vm_port = 45000,
		.peer_port = 443, .peer = { 198, 51, 100, 7 } };
	uint64_t quic = w->vm_stats[1].blocked[DP_REASON_QUIC];
	struct rte_mbuf *b[3];

	(void)state;
	for (unsigned int i = 0; i < 3; i++) {
		struct mb f = { .len = 0 };

		dpf_eth_ipv4(&f, vm, gw, PKT_PROTO_UDP, src, dst, 8 + 4);
		mb_u16(&f, 45000);
		mb_u16(&f, 443);
		mb_u16(&f, 8 + 4);
		mb_u16(&f, 0);		/* no checksum: IPv4 allows it */
		mb_u32(&f, 0x40000000 | i);	/* a short header's first bytes */
		b[i] = dpf_mbuf(&ctx, &f);
	}
	dp_burst_vm(w, b, 1);
	assert_non_null(dp_flow_lookup(w->flows, &k));
	dp_burst_vm(w, b + 1, 2);
	assert_int_equal(t_sent(), 3);
	assert_int_equal(w->vm_stats[1].blocked[DP_REASON_QUIC], quic + 3);
}

/*
 * The counters a burst adds up before it writes them: the VM port's received frames and
 * bytes, every frame's; the uplink's sent frames once the queue went out; agent1's
 * allowed frames, sent on by the loop's inline fate.
 */
static void
test_burst_counts_exact(void **state)
{
	struct rte_mbuf *b[3] = { t_tcp(43000, 1, PKT_TCP_SYN), t_tcp(43001, 1, PKT_TCP_SYN),
		t_tcp(43002, 1, PKT_TCP_SYN) };
	uint64_t rx = w->port_pkts[DP_PORT_VM][0], rx_bytes = w->port_bytes[DP_PORT_VM][0];
	uint64_t tx = w->port_pkts[DP_PORT_UPLINK][1];
	uint64_t allowed = w->vm_stats[0].egress_pkts[DP_ALLOWED], bytes = 0;

	(void)state;
	for (unsigned int i = 0; i < 3; i++)
		bytes += rte_pktmbuf_pkt_len(b[i]);
	dp_burst_vm(w, b, 3);
	assert_int_equal(w->port_pkts[DP_PORT_VM][0], rx + 3);
	assert_int_equal(w->port_bytes[DP_PORT_VM][0], rx_bytes + bytes);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], allowed + 3);
	assert_int_equal(t_sent(), 3);
	assert_int_equal(w->port_pkts[DP_PORT_UPLINK][1], tx + 3);
}

/*
 * A burst's own frames sent on go into the uplink's queue without a test of its room
 * (dp_tx_own()): with DP_BURST - 1 others queued before it, a burst of DP_BURST allowed
 * frames fits, and the burst's end sends them all, so that the next burst finds room again.
 */
static void
test_burst_tx_room(void **state)
{
	struct rte_mbuf *b[DP_BURST];
	uint64_t tx, allowed = w->vm_stats[0].egress_pkts[DP_ALLOWED];

	(void)state;
	t_sent();
	tx = w->port_pkts[DP_PORT_UPLINK][1];
	for (unsigned int i = 0; i < DP_BURST - 1; i++)
		dp_tx(w, DP_PORT_UPLINK, t_tcp((uint16_t)(44000 + i), 1, PKT_TCP_SYN));
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, DP_BURST - 1);
	for (unsigned int i = 0; i < DP_BURST; i++)
		b[i] = t_tcp((uint16_t)(44100 + i), 1, PKT_TCP_SYN);
	dp_burst_vm(w, b, DP_BURST);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], allowed + DP_BURST);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	assert_int_equal(w->port_pkts[DP_PORT_UPLINK][1], tx + 2 * DP_BURST - 1);
}

/*
 * A segment of the lean shape from agent1 whose TCP checksum is wrong: the lean check
 * fails only at the sum, past where it notes the TCP header's offset, which tells the run
 * a lean frame (dp_burst_frame_lean()). The first stage clears it: the segment is the
 * general way's, dropped as bad, and the SYN after it in the burst is sent on its own
 * lookup.
 */
static void
test_bad_checksum_not_lean(void **state)
{
	struct rte_mbuf *b[2] = { t_tcp(45000, 1, PKT_TCP_SYN), t_tcp(45001, 1, PKT_TCP_SYN) };
	uint64_t bad = w->drops[DP_DROP_BAD_CSUM];
	uint32_t before = dp_flows_count(w->flows, 0);
	struct dp_flow_key k = t_key(45001);

	(void)state;
	rte_pktmbuf_mtod(b[0], uint8_t *)[14 + 20 + 16] ^= 0x5a;	/* the TCP checksum */
	dp_burst_vm(w, b, 2);
	assert_int_equal(w->drops[DP_DROP_BAD_CSUM], bad + 1);
	assert_int_equal(t_sent(), 1);
	assert_int_equal(dp_flows_count(w->flows, 0), before + 1);
	assert_non_null(dp_flow_lookup(w->flows, &k));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeated_syn_in_one_burst),
		cmocka_unit_test(test_repeated_syn_among_others),
		cmocka_unit_test(test_reopen_in_one_burst),
		cmocka_unit_test(test_steady_frame_of_older_generation),
		cmocka_unit_test(test_burst_counts_exact),
		cmocka_unit_test(test_burst_tx_room),
		cmocka_unit_test(test_bad_checksum_not_lean),
		cmocka_unit_test(test_judged_flow_data_not_inline),
		cmocka_unit_test(test_judged_flow_ack_not_inline),
		cmocka_unit_test(test_judged_flow_fin_general),
		cmocka_unit_test(test_judged_flow_ack_older_generation),
		cmocka_unit_test(test_audited_quic_on_steady_flow),
	};

	return dpf_run("test_dp_burst", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
