/*
 * dp_burst's fates through the real worker (dp_ctx_setup on net_null ports), what a frame's
 * fate does once decided: a stray segment discarded without a word, a held one left to its
 * module (on its flow or not), a reassembled datagram refragmented to the port's MTU on its
 * way out, a blocked frame's event noted, a DNS over TCP flow's segments shifted at the
 * edges (sequence number modulation) and a forged SYN-ACK not taken. The fixture:
 * t_burst.h; a burst's flow lookups and steady frames: test_dp_burst.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_out_flow.h"
#include "dp_run.h"
#include "frame_check.h"
#include "sni/pkt.h"
#include "t_burst.h"

/*
 * A segment from the uplink on no flow, neither ACK nor RST (a stray FIN), is discarded
 * without a word (dp_fate_apply_any()'s first case): counted as unsolicited once, its
 * buffer back in the pool, nothing sent either way. A discard that audit mode counts
 * (counted) is no silent one: counted twice, once as noted. A held frame (the other
 * fate dp_fate_apply_any() acts on first) stays the module's, counted only if counted.
 */
static void
test_silent_discard(void **state)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 198, 51, 100, 7 }, dst[4] = { 10, 77, 0, 11 };
	uint64_t stray = w->vm_stats[0].blocked[DP_REASON_UNSOLICITED];
	unsigned int free_bufs = rte_mempool_avail_count(ctx.pool);
	struct dp_fate counted = { .act = DP_FATE_DISCARD, .why = DP_REASON_UNSOLICITED,
		.counted = true };
	struct rte_mbuf *m;

	(void)state;
	m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = gw, .dmac = vm, .sip = src, .dip = dst,
	    .sport = 8080, .dport = 45000, .seq = 1, .flags = PKT_TCP_FIN });
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_UNSOLICITED], stray + 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	assert_int_equal(t_sent(), 0);
	assert_int_equal(rte_mempool_avail_count(ctx.pool), free_bufs);
	m = t_tcp(45000, 1, PKT_TCP_ACK);
	dp_fate_apply_any(w, m, NULL, 0, false, counted);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_UNSOLICITED], stray + 3);
	assert_int_equal(rte_mempool_avail_count(ctx.pool), free_bufs);
	/* held: the module keeps the buffer, counted only when the fate says so */
	m = t_tcp(45000, 1, PKT_TCP_ACK);
	dp_fate_apply_any(w, m, NULL, 0, true, dp_fate(DP_FATE_HELD));
	counted.act = DP_FATE_HELD;
	dp_fate_apply_any(w, m, NULL, 0, true, counted);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_UNSOLICITED], stray + 4);
	assert_int_equal(rte_mempool_avail_count(ctx.pool), free_bufs - 1);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	rte_pktmbuf_free(m);
}

/*
 * A held segment's fate on its flow (dp_out_flow_apply()): a bare HELD leaves the frame
 * to its module and the flow as it was, at once; one that audit mode counts is counted,
 * and one that ends the flow ends it.
 */
static void
test_held_fate(void **state)
{
	const struct dp_flow_key k = t_key(46000);
	struct rte_mbuf *m = t_tcp(46000, 1, PKT_TCP_SYN);
	uint64_t counted = w->vm_stats[0].blocked[DP_REASON_NO_BINDING];
	struct dp_fate held = dp_fate(DP_FATE_HELD);
	struct dp_flow *f;

	(void)state;
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(), 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	m = t_tcp(46000, 2, PKT_TCP_ACK);
	dp_out_flow_apply(w, m, NULL, 0, true, held, f);
	assert_ptr_equal(dp_flow_lookup(w->flows, &k), f);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_NO_BINDING], counted);
	held.counted = true;
	held.why = DP_REASON_NO_BINDING;
	dp_out_flow_apply(w, m, NULL, 0, true, held, f);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_NO_BINDING], counted + 1);
	held.counted = false;
	held.end = true;
	dp_out_flow_apply(w, m, NULL, 0, true, held, f);
	assert_null(dp_flow_lookup(w->flows, &k));
	assert_int_equal(t_sent(), 0);
	rte_pktmbuf_free(m);
}

/*
 * dp_tx() of a datagram namegate reassembled (l2_len marks its link header): past the
 * port's MTU it leaves in fragments, none past the MTU; within it, or any frame with no
 * l2_len however long, whole. Fails when dp_tx() reads l2_len wrong (never, or always).
 */
static void
test_tx_refragments_reassembled(void **state)
{
	static const uint8_t payload[1600];
	uint16_t mtu = ctx.mtu[DP_PORT_UPLINK];
	struct dp_txbuf *t = &w->tx[DP_PORT_UPLINK];
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 }, dst[4] = { 198, 51, 100, 7 };
	struct rte_mbuf *m;
	unsigned int n;

	(void)state;
	assert_true(mtu < 14 + 20 + 20 + sizeof(payload));
	m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw, .sip = src, .dip = dst,
	    .sport = 47000, .dport = 8080, .seq = 1, .flags = PKT_TCP_ACK, .payload = payload,
	    .len = sizeof(payload) });
	m->l2_len = 14;
	dp_tx(w, DP_PORT_UPLINK, m);
	assert_true((n = t->n) >= 2);
	for (unsigned int i = 0; i < n; i++)
		assert_true(rte_pktmbuf_pkt_len(t->pkts[i]) - 14 <= mtu);
	assert_int_equal(t_sent(), n);
	/* the same frame, not reassembled: whole */
	m = t_tcp(47000, 1, PKT_TCP_ACK);
	assert_non_null(rte_pktmbuf_append(m, (uint16_t)(mtu + 100 - rte_pktmbuf_pkt_len(m))));
	dp_tx(w, DP_PORT_UPLINK, m);
	assert_int_equal(t->n, 1);
	assert_ptr_equal(t->pkts[0], m);
	assert_int_equal(t_sent(), 1);
	/* reassembled, within the MTU: whole */
	m = t_tcp(47000, 1, PKT_TCP_ACK);
	m->l2_len = 14;
	dp_tx(w, DP_PORT_UPLINK, m);
	assert_int_equal(t->n, 1);
	assert_ptr_equal(t->pkts[0], m);
	assert_int_equal(t_sent(), 1);
}

/*
 * A frame the stateless stages block with an event and no audit count (a spoofed source
 * from agent1's MAC): the event is on the ring and the block counted, the frame gone.
 * Fails when dp_fate_note() takes a fate with log alone for one with nothing to note.
 */
static void
test_block_event_noted(void **state)
{
	uint64_t spoofed = w->vm_stats[0].blocked[DP_REASON_SPOOFED];
	unsigned int evts = rte_ring_count(w->evts);
	struct rte_mbuf *m = t_tcp_from((const uint8_t[4]){ 10, 77, 0, 99 }, 48000, 1,
	    PKT_TCP_SYN);

	(void)state;
	dp_burst_vm(w, &m, 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_SPOOFED], spoofed + 1);
	assert_int_equal(rte_ring_count(w->evts), evts + 1);
	assert_int_equal(t_sent(), 0);
}

/* ---- DNS over TCP's sequence number modulation (dp_dns_tcp_mod.h) ---- */

static const uint8_t t_gw[6] = { 2, 0, 0, 0, 0, 0xfe }, t_vm[6] = { 2, 0, 0, 0, 0, 1 };
static const uint8_t t_res[4] = { 10, 77, 0, 1 }, t_vm_ip[4] = { 10, 77, 0, 11 };

/* agent1's segment from port to the resolver, or (from_res) the resolver's to it */
static struct rte_mbuf *
t_dns_tcp(bool from_res, uint16_t port, uint32_t seq, uint32_t ack, uint8_t flags,
    const void *payload, size_t len)
{
	return dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = from_res ? t_gw : t_vm,
	    .dmac = from_res ? t_vm : t_gw, .sip = from_res ? t_res : t_vm_ip,
	    .dip = from_res ? t_vm_ip : t_res, .sport = from_res ? 53 : port,
	    .dport = from_res ? port : 53, .seq = seq, .ack = ack, .flags = flags,
	    .payload = payload, .len = len });
}

/* The one frame queued on port, decoded (its checksums good) into *p; the queue emptied. */
static void
t_one_out(unsigned int port, struct pkt *p)
{
	struct dp_txbuf *t = &w->tx[port];
	const uint8_t *frame;

	assert_int_equal(t->n, 1);
	frame = rte_pktmbuf_mtod(t->pkts[0], const uint8_t *);
	assert_int_equal(pkt_decode(frame, rte_pktmbuf_data_len(t->pkts[0]), p), PKT_OK);
	assert_int_equal(fc_ref_sum(frame + p->l4_off, p->l4_len,
	    fc_ref_pseudo(frame + p->l3_off, 4, PKT_PROTO_TCP, p->l4_len)), 0xffff);
	dp_tx_flush(w);
}

/* agent1's SYN from port to the resolver at isn: it leaves shifted; its flow. */
static struct dp_flow *
t_dns_syn(uint16_t port, uint32_t isn)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = port,
		.peer_port = 53, .peer = { 10, 77, 0, 1 } };
	struct rte_mbuf *m = t_dns_tcp(false, port, isn, 0, PKT_TCP_SYN, NULL, 0);
	struct dp_flow *f;
	struct pkt p;

	dp_burst_vm(w, &m, 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->tls, DP_TLS_DNS);
	t_one_out(DP_PORT_UPLINK, &p);
	assert_int_equal(p.seq, isn + f->dns_delta);
	return f;
}

/*
 * The VM's SYN leaves shifted; a SYN-ACK that acknowledges it as the VM sent it (what an
 * accomplice knows) is not taken, nor sent on, and counted; one for the SYN as it left
 * is, and reaches the VM in the VM's numbers. Fails without the shift.
 */
static void
test_dns_tcp_forged_synack(void **state)
{
	uint64_t refused = w->vm_stats[0].blocked[DP_REASON_UNSOLICITED];
	struct dp_flow *f = t_dns_syn(46000, 1000);
	struct rte_mbuf *m;
	struct pkt p;

	(void)state;
	m = t_dns_tcp(true, 46000, 9000, 1001, PKT_TCP_SYN | PKT_TCP_ACK, NULL, 0);
	dp_burst_uplink(w, &m, 1);
	assert_false(f->peer_synced);
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_UNSOLICITED], refused + 1);
	m = t_dns_tcp(true, 46000, 9000, 1001 + f->dns_delta, PKT_TCP_SYN | PKT_TCP_ACK, NULL, 0);
	dp_burst_uplink(w, &m, 1);
	assert_true(f->peer_synced);
	t_one_out(DP_PORT_VM, &p);
	assert_int_equal(p.ack, 1001);
	/* the VM's ACK leaves shifted, its own ACK of the resolver's stream as it was */
	m = t_dns_tcp(false, 46000, 1001, 9001, PKT_TCP_ACK, NULL, 0);
	dp_burst_vm(w, &m, 1);
	t_one_out(DP_PORT_UPLINK, &p);
	assert_int_equal(p.seq, 1001 + f->dns_delta);
	assert_int_equal(p.ack, 9001);
}

/*
 * Before the handshake the VM may send data far ahead of its SYN, which moves vm_nxt, so
 * that an ACK anywhere up to it would be one for bytes it sent: a SYN-ACK is taken only
 * for the SYN, or the SYN and all its data. Fails without that guard: the forged SYN-ACK
 * below, with the shift known, falls inside what the VM claims to have sent.
 */
static void
test_dns_tcp_synack_for_the_syn_only(void **state)
{
	static const uint8_t part[600] = { 0x10, 0 };	/* a message begun, held */
	struct dp_flow *f = t_dns_syn(46001, 5000);
	struct rte_mbuf *m;

	(void)state;
	m = t_dns_tcp(false, 46001, 5001, 0, 0, part, sizeof(part));
	dp_burst_vm(w, &m, 1);
	assert_int_equal(f->vm_nxt, 5001 + sizeof(part));
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	m = t_dns_tcp(true, 46001, 9000, 5001 + 500 + f->dns_delta, PKT_TCP_SYN | PKT_TCP_ACK,
	    NULL, 0);
	dp_burst_uplink(w, &m, 1);
	assert_false(f->peer_synced);
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	dp_tx_flush(w);
}

/*
 * The VM's SYN again with data, after the handshake: what leaves for the resolver is in
 * its numbers, the SYN's data held by DNS over TCP's judge, which strips it from the SYN.
 * Fails when the general strip of a SYN's data sent again (dp_flow_syn_data_again(), for
 * flows nothing else judges) takes a DNS over TCP flow's SYN out past its shift.
 */
static void
test_dns_tcp_syn_again_leaves_shifted(void **state)
{
	static const uint8_t part[40] = { 0x10, 0 };	/* a message begun, held */
	struct dp_flow *f = t_dns_syn(46002, 7000);
	struct rte_mbuf *m;
	struct pkt p;

	(void)state;
	m = t_dns_tcp(true, 46002, 9000, 7001 + f->dns_delta, PKT_TCP_SYN | PKT_TCP_ACK, NULL, 0);
	dp_burst_uplink(w, &m, 1);
	assert_true(f->peer_synced);
	dp_tx_flush(w);
	m = t_dns_tcp(false, 46002, 7000, 0, PKT_TCP_SYN, part, sizeof(part));
	dp_burst_vm(w, &m, 1);
	t_one_out(DP_PORT_UPLINK, &p);
	assert_true(p.tcp_flags & PKT_TCP_SYN);
	assert_int_equal(p.payload_len, 0);
	assert_int_equal(p.seq, 7000 + f->dns_delta);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silent_discard),
		cmocka_unit_test(test_held_fate),
		cmocka_unit_test(test_tx_refragments_reassembled),
		cmocka_unit_test(test_block_event_noted),
		cmocka_unit_test(test_dns_tcp_forged_synack),
		cmocka_unit_test(test_dns_tcp_synack_for_the_syn_only),
		cmocka_unit_test(test_dns_tcp_syn_again_leaves_shifted),
	};

	return dpf_run("test_dp_burst_fate", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
