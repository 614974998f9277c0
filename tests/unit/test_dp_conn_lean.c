/*
 * The flow stage of a lean frame whose flow is not steady for it (dp_conn_lean.h) held to
 * the general one it stands for, through the real worker: on one real flow given many
 * states (every tls mode, judged bytes or none, another generation, a budget,
 * would_block, the peer's SYN-ACK seen or not, where each stream and window stands, the
 * VM's window scale offered or not, a CONNECT's answer awaited) and segments of the lean
 * shape each way (every mix of the TCP flags, SYN-ACKs acknowledging the SYN or not with
 * a window scale option in each layout or none, data or none), with and without a flow
 * log or an HA peer; toward the VM, on flows with judged bytes too, which the server's
 * ACK of them all lets go; a FIN on a flow steady but for it by the burst's steady stage
 * (dp_conn_lean_fin()). What the lean check reads of each frame (dp_lean()) must get from
 * dp_conn_vm_lean() or dp_conn_uplink_lean() the fate that dp_conn_vm_any() or
 * dp_conn_uplink_any() gives the decoded frame, the flow and its account left the same;
 * or the flow left untouched. And through the burst, a connection's ends go so, and a FIN
 * with RST lets go of what its flow holds.
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
#include "dp_conn.h"
#include "dp_conn_lean.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "dp_lean.h"
#include "dp_out.h"
#include "frame_check.h"
#include "sni/pkt.h"

#define ROUNDS	200000
#define T_LEN	(14 + 20 + 60 + 64)	/* the longest frame drawn */
#define T_PORT	41000		/* the VM's end of the flow */

static const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_flows: 4096,\n"
	"  max_flows_per_vm: 512, max_bindings: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"203.0.113.5:443\"]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}]\n";

static const uint8_t vm_mac[6] = { 2, 0, 0, 0, 0, 1 }, gw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
static const uint8_t vm_ip[4] = { 10, 77, 0, 11 }, server_ip[4] = { 203, 0, 113, 5 };
static struct dp_worker *w;
static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };

/*
 * A SYN's options into o (at most 40 bytes), in one of the layouts stacks send or none,
 * the window scale ws: their length, a multiple of 4.
 */
static size_t
t_syn_opts(uint64_t *rng, uint8_t *o, uint8_t ws)
{
	static const uint8_t bsd[] = { 2, 4, 5, 0xb4, 1, 3, 3, 0 };
	static const uint8_t linux_[] = { 2, 4, 5, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8,
		1, 3, 3, 0 };

	switch (fc_rnd(rng) % 5) {
	case 0:
		memcpy(o, bsd, sizeof(bsd));
		o[7] = ws;
		return sizeof(bsd);
	case 1:
		memcpy(o, linux_, sizeof(linux_));
		o[19] = ws;
		return sizeof(linux_);
	case 2:		/* the scale first, then the end of the list */
		memcpy(o, (const uint8_t[]){ 3, 3, ws, 0 }, 4);
		return 4;
	case 3:		/* anything at all */
		for (size_t i = 0; i < 12; i++)
			o[i] = (uint8_t)fc_rnd(rng);
		return 12;
	default:
		return 0;
	}
}

/*
 * A TCP segment of the flow's (up: toward the VM) into b, its checksums marked good by the
 * port in *m: its flags, numbers and window, a SYN's options drawn, data bytes drawn.
 */
static void
t_frame(uint64_t *rng, uint8_t *b, struct rte_mbuf *m, bool up, uint8_t flags, uint32_t seq,
    uint32_t ack, size_t data)
{
	size_t opts = 0;
	uint8_t *ip = b + 14, *th = ip + 20;

	memset(b, 0, T_LEN);
	memcpy(b, up ? vm_mac : gw_mac, 6);
	memcpy(b + 6, up ? gw_mac : vm_mac, 6);
	fc_w16(b + 12, 0x0800);
	if (flags & PKT_TCP_SYN)
		opts = t_syn_opts(rng, th + 20, (uint8_t)(fc_rnd(rng) % 20));
	ip[0] = 0x45;
	fc_w16(ip + 2, (uint16_t)(20 + 20 + opts + data));
	ip[8] = 64;
	ip[9] = PKT_PROTO_TCP;
	memcpy(ip + 12, up ? server_ip : vm_ip, 4);
	memcpy(ip + 16, up ? vm_ip : server_ip, 4);
	fc_w16(th, up ? 443 : T_PORT);
	fc_w16(th + 2, up ? T_PORT : 443);
	fc_w32(th + 4, seq);
	fc_w32(th + 8, ack);
	th[12] = (uint8_t)((20 + opts) / 4 << 4);
	th[13] = flags;
	fc_w16(th + 14, (uint16_t)fc_rnd(rng));
	for (size_t i = 0; i < data; i++)
		th[20 + opts + i] = (uint8_t)fc_rnd(rng);
	memset(m, 0, sizeof(*m));
	m->buf_addr = b;
	m->data_len = (uint16_t)(14 + 40 + opts + data);
	m->pkt_len = m->data_len;
	m->nb_segs = 1;
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
}

/*
 * The flow of a SYN (its window scale option drawn) from agent1's port T_PORT to
 * 203.0.113.5:443, admitted by address: nothing judges its bytes. Its key in *k.
 */
static struct dp_flow *
t_open(struct dp_flow_key *k)
{
	static uint8_t b[T_LEN];
	uint64_t rng = 1;
	struct rte_mbuf m, *mb;

	*k = (struct dp_flow_key){ .vm = 0, .family = 4, .proto = PKT_PROTO_TCP,
		.vm_port = T_PORT, .peer_port = 443 };
	memcpy(k->peer, server_ip, 4);
	t_frame(&rng, b, &m, false, PKT_TCP_SYN, 5000, 0, 0);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 1);
	dp_tx_flush(w);
	return dp_flow_lookup(w->flows, k);
}

/*
 * Flow state base drawn from what a flow may hold (a third of them nothing judging its
 * bytes, the others in any tls mode); its generation and budgets kept but for a few.
 */
static void
t_draw_flow(uint64_t *rng, struct dp_flow *f)
{
	_Static_assert(DP_TLS_NONE == 0 && DP_TLS_UDP == 7, "the tls modes, 0 to 7");
	f->tls = (uint8_t)(fc_rnd(rng) % 3 == 0 ? DP_TLS_NONE : fc_rnd(rng) % (DP_TLS_UDP + 1));
	f->judged = fc_rnd(rng) % 3 == 0 ? 1 + fc_rnd(rng) % 600 : 0;
	f->would_block = fc_rnd(rng) % 4 == 0;
	f->state = (uint8_t)(fc_rnd(rng) % 2 == 0 ? DP_FLOW_SYN_SENT : DP_FLOW_ESTABLISHED);
	if (fc_rnd(rng) % 16 == 0)
		f->gen++;
	if (fc_rnd(rng) % 16 == 0)
		f->budgets = 1;
	f->http_phase = (uint8_t)(fc_rnd(rng) % 4);	/* a CONNECT's answer read */
	/* nothing sent yet, at times: the server may speak first */
	f->vm_nxt = fc_rnd(rng) % 4 == 0 ? f->isn : f->isn + fc_rnd(rng) % 2000;
	f->last_seen = fc_rnd(rng);
	f->peer_synced = fc_rnd(rng) % 2 == 0;
	f->peer_isn = fc_rnd(rng);
	f->peer_nxt = f->peer_isn + (fc_rnd(rng) % 2 == 0 ? 0 : fc_rnd(rng) % 3000);
	f->peer_ack = f->isn + fc_rnd(rng) % 1200;
	f->vm_wscale = (uint8_t)(fc_rnd(rng) % 4 == 0 ? PKT_WSCALE_NONE : fc_rnd(rng) % 15);
	f->peer_wscale = (uint8_t)(fc_rnd(rng) % 15);
	f->hold = 0;			/* a hold is a pool's slot: none here */
	f->peer_hold = 0;
}

/* A segment's flags: each drawn, or a SYN-ACK's. */
static uint8_t
t_flags(uint64_t *rng)
{
	static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_ACK, PKT_TCP_FIN, PKT_TCP_RST,
		PKT_TCP_PSH, PKT_TCP_URG };
	uint8_t out = PKT_TCP_ACK;

	if (fc_rnd(rng) % 4 == 0)
		return PKT_TCP_SYN | PKT_TCP_ACK;
	for (size_t i = 0; i < sizeof(flags); i++)
		if (fc_rnd(rng) % 5 == 0)
			out ^= flags[i];
	return out;
}

/* What the lean stage took: counts of each kind, for the test's bounds. */
struct t_took {
	unsigned int vm, up, fin, synack, scaled, let_go, steady_fin;
};

/*
 * Frame m from the VM (or toward it: up) on f as base: when the lean stage takes it, the
 * general stage given its decoding must answer alike; when not, f must be left as it was.
 */
static void
t_same(struct rte_mbuf *m, bool up, const struct dp_flow_key *k, struct dp_flow *f,
    const struct dp_flow *base, const struct dp_flow_acct *acct, struct t_took *took)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct dp_flow after, *fp = NULL;
	struct dp_flow_acct acct_after;
	struct dp_flow_key lk;
	struct dp_fate lean, general;
	enum dp_verdict v;
	struct dp_lean l;
	struct pkt p;

	assert_int_equal(dp_lean(w->gen, m, &lk, &l, !up), 0);
	assert_memory_equal(&lk, k, sizeof(lk));
	*f = *base;
	*dp_flow_acct(w->flows, f) = *acct;
	if (dp_conn_steady_flow(dp_conn_steady_key(w), f, !up, up ? 0 : l.payload_len) &&
	    dp_conn_lean_fin(w, f, l.flags)) {	/* the burst's steady FIN */
		took->steady_fin++;
		if (up)
			dp_conn_uplink_steady(w, f, true, l.flags, l.ack, l.win);
		lean = up ? dp_fate(DP_FATE_INGRESS) :
		    dp_fate_egress(dp_conn_vm_steady(w, f, true, l.seq, l.payload_len + 1u));
	} else if (up) {
		lean = dp_conn_uplink_lean(w, f, m, &l) ?
		    dp_fate(DP_FATE_INGRESS) : dp_fate(DP_FATE_CONTINUE);
	} else {
		v = dp_conn_vm_lean(w, f, m, l.flags, l.seq, l.payload_len);
		lean = v == DP_CONN_LEAN_NO ? dp_fate(DP_FATE_CONTINUE) : dp_fate_egress(v);
	}
	if (lean.act == DP_FATE_CONTINUE) {
		assert_memory_equal(f, base, sizeof(*f));
		return;
	}
	/* what the general stage would not have decided alone, it must have left */
	assert_false(base->gen != w->gen->id || base->budgets != 0 || w->ctx->ha);
	took->vm += !up;
	took->up += up;
	took->fin += (l.flags & PKT_TCP_FIN) != 0;
	took->synack += !base->peer_synced && f->peer_synced;
	took->scaled += !base->peer_synced && f->peer_synced && f->peer_wscale != 0;
	took->let_go += base->judged != 0 && f->judged == 0;
	after = *f;
	acct_after = *dp_flow_acct(w->flows, f);
	*f = *base;
	*dp_flow_acct(w->flows, f) = *acct;
	assert_int_equal(pkt_decode(frame, rte_pktmbuf_data_len(m), &p), PKT_OK);
	general = up ? dp_conn_uplink_any(w, &p, k, f, &fp) :
	    dp_conn_vm_any(w, &p, k, dp_flow_hash(w->flows, k), f, &fp);
	assert_true(dp_fate_eq(lean, general));
	assert_ptr_equal(fp, f);
	assert_memory_equal(&after, f, sizeof(after));
	assert_memory_equal(&acct_after, dp_flow_acct(w->flows, f), sizeof(acct_after));
}

static void
test_lean_is_general(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = UINT64_C(0x510e527fade682d1);
	struct rte_ring *recs = w->flow_recs;
	struct dp_flow_key k;
	struct dp_flow *f = t_open(&k), base, saved;
	struct dp_flow_acct acct;
	struct t_took took = { 0 };

	(void)state;
	assert_non_null(f);
	saved = *f;
	acct = *dp_flow_acct(w->flows, f);
	for (int r = 0; r < ROUNDS; r++) {
		bool up = fc_rnd(&rng) % 2 == 0;
		uint8_t flags = t_flags(&rng);
		struct rte_mbuf m;
		uint32_t seq, ack;

		base = saved;
		t_draw_flow(&rng, &base);
		/*
		 * from the VM: where its stream stands; toward it, in the server's stream as
		 * seen, just past it, or anywhere
		 */
		seq = !up ? base.isn + fc_rnd(&rng) % 2400 - 200 : fc_rnd(&rng) % 4 != 0 ?
		    base.peer_isn + fc_rnd(&rng) % (base.peer_nxt - base.peer_isn + 1) :
		    fc_rnd(&rng) % 2 == 0 ? base.peer_nxt + 1 + fc_rnd(&rng) % 64 : fc_rnd(&rng);
		ack = up ? (fc_rnd(&rng) % 4 == 0 ? base.isn : base.isn + fc_rnd(&rng) % 2400 - 200) :
		    fc_rnd(&rng);
		t_frame(&rng, b, &m, up, flags, seq, ack,
		    fc_rnd(&rng) % 2 == 0 ? 0 : 1 + fc_rnd(&rng) % 64);
		w->ctx->ha = fc_rnd(&rng) % 16 == 0;
		w->flow_recs = fc_rnd(&rng) % 4 == 0 ? (struct rte_ring *)&recs : NULL;
		t_same(&m, up, &k, f, &base, &acct, &took);
		w->ctx->ha = false;
	}
	w->flow_recs = recs;
	*f = saved;
	*dp_flow_acct(w->flows, f) = acct;
	dp_flow_close(w->flows, f);
	print_message("%d frames: %u from the VM and %u toward it taken, %u FINs, %u SYN-ACKs"
	    " (%u scaled), %u letting judged bytes go, %u FINs steady but for that\n", ROUNDS, took.vm,
	    took.up, took.fin, took.synack, took.scaled, took.let_go, took.steady_fin);
	/*
	 * taken often each way, a connection's ends, the SYN-ACK's scale and the server's ACK
	 * of judged bytes among them
	 */
	assert_true(took.vm > ROUNDS / 32 && took.up > ROUNDS / 32);
	assert_true(took.fin > ROUNDS / 64 && took.synack > ROUNDS / 256 && took.scaled > 0);
	/* a SYN-ACK on a synced flow is never lean (dp_flow_synack_disputed()): fewer let go */
	assert_true(took.let_go > ROUNDS / 512 && took.steady_fin > ROUNDS / 256);
}

/*
 * Through the burst: a connection's SYN-ACK, which scales the server's window, and both
 * FINs, each by the lean path's flow stage (a flow opened by address: nothing judges it),
 * the VM's on a flow that would block, counted so; each sent on, the flow tracked.
 */
static void
test_burst_ends(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = 7, wb = w->vm_stats[0].egress_pkts[DP_WOULD_BLOCK];
	uint64_t in = w->vm_stats[0].ingress_pkts;
	struct dp_flow_key k;
	struct dp_flow *f = t_open(&k);
	struct rte_mbuf m, *mb;

	(void)state;
	assert_non_null(f);
	assert_int_equal(f->tls, DP_TLS_NONE);
	f->vm_wscale = 7;
	f->would_block = true;
	do	/* the BSD layout: MSS, NOP, window scale */
		t_frame(&rng, b, &m, true, PKT_TCP_SYN | PKT_TCP_ACK, 800, 5001, 0);
	while (fc_r16(b + 14 + 40) != 0x0204 || b[14 + 40 + 4] != 1);
	b[14 + 20 + 27] = 5;
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_uplink(w, &mb, 1);
	assert_true(f->peer_synced);
	assert_int_equal(f->peer_isn, 801);
	assert_int_equal(f->peer_wscale, 5);
	assert_int_equal(f->state, DP_FLOW_ESTABLISHED);
	/* with data, on a flow steady but for the FIN */
	t_frame(&rng, b, &m, false, PKT_TCP_FIN | PKT_TCP_ACK, 5001, 801, 10);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(f->state, DP_FLOW_CLOSING);
	assert_int_equal(f->vm_nxt, 5012);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_WOULD_BLOCK], wb + 1);
	t_frame(&rng, b, &m, true, PKT_TCP_FIN | PKT_TCP_ACK, 801, 5002, 0);
	b[14 + 34] = 0x12;	/* a window of 0x1234 */
	b[14 + 35] = 0x34;
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_uplink(w, &mb, 1);
	assert_int_equal(f->peer_ack, 5002);
	assert_int_equal(f->peer_wnd, 0x1234 << 5);
	assert_int_equal(w->vm_stats[0].ingress_pkts, in + 2);
	dp_tx_flush(w);
}

/*
 * Through the burst: a FIN with RST on a flow steady but for its flags, each way, is not
 * the steady FIN (dp_conn_lean_fin()): the general stage lets go of what the flow holds
 * (dp_flow_unhold()), here a buffer taken for the frame's own stream, and closes it.
 */
static void
test_burst_fin_rst(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = 11;
	struct dp_flow_key k;
	struct rte_mbuf m, *mb;
	struct dp_flow *f;
	uint32_t held;

	(void)state;
	for (int up = 0; up <= 1; up++) {
		f = t_open(&k);
		assert_non_null(f);
		assert_true(dp_conn_steady_flow(dp_conn_steady_key(w), f, true, 0));
		f->peer_synced = true;
		f->peer_isn = 800;
		f->peer_ack = 5001;
		f->peer_wnd = 65535;
		f->state = DP_FLOW_ESTABLISHED;
		held = w->holds->per_vm[0];
		assert_non_null(dp_hold_take(w, f, up ? &f->peer_hold : &f->hold,
		    up ? 801 : 5001, up));
		t_frame(&rng, b, &m, up, PKT_TCP_FIN | PKT_TCP_RST | PKT_TCP_ACK, up ? 801 : 5001,
		    up ? 5001 : 801, 0);
		mb = dpf_mbuf_copy(&ctx, &m);
		if (up)
			dp_burst_uplink(w, &mb, 1);
		else
			dp_burst_vm(w, &mb, 1);
		assert_int_equal(f->state, DP_FLOW_CLOSING);
		assert_int_equal(f->hold, 0);
		assert_int_equal(f->peer_hold, 0);
		assert_int_equal(w->holds->per_vm[0], held);
		dp_tx_flush(w);
	}
}

/*
 * One segment toward the VM (its sequence number seq, ACK ack, data bytes of payload and
 * pad bytes of Ethernet padding past its IP packet) through the burst.
 */
static void
t_uplink(uint64_t *rng, uint32_t seq, uint32_t ack, size_t data, size_t pad)
{
	static uint8_t b[T_LEN];
	struct rte_mbuf m, *mb;

	t_frame(rng, b, &m, true, PKT_TCP_ACK, seq, ack, data);
	m.data_len = (uint16_t)(m.data_len + pad);
	m.pkt_len = m.data_len;
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_uplink(w, &mb, 1);
}

/*
 * Through the burst, the lean way and the general one (an HA peer to tell): judged bytes
 * (a hello judged whole, its digest kept) go only at an ACK in the server's stream as
 * namegate saw it, from its first byte (801) on. An ACK that covers them from a segment
 * anywhere else, the flow's addresses spoofed off the path, lets nothing go, though the
 * frame goes on to the VM: else a hello the server never read could be rewritten. Data in
 * order moves where the stream stands; Ethernet padding is not data.
 */
static void
test_burst_judged_go_in_the_servers_stream(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = 13;
	struct dp_flow_key k;
	struct rte_mbuf m, *mb;
	struct dp_flow *f;
	uint64_t in;

	(void)state;
	for (int general = 0; general <= 1; general++) {
		f = t_open(&k);
		assert_non_null(f);
		t_frame(&rng, b, &m, true, PKT_TCP_SYN | PKT_TCP_ACK, 800, 5001, 0);
		mb = dpf_mbuf_copy(&ctx, &m);
		dp_burst_uplink(w, &mb, 1);
		assert_true(f->peer_synced);
		assert_int_equal(f->peer_nxt, 801);
		f->judged = 300;
		f->vm_nxt = 5001 + 300;
		w->ctx->ha = general;
		in = w->vm_stats[0].ingress_pkts;
		t_uplink(&rng, 801 + 777777, 5301, 0, 0);	/* anywhere */
		t_uplink(&rng, 802, 5301, 0, 0);		/* just past the stream */
		t_uplink(&rng, 801 - 1, 5301, 0, 0);		/* before its first byte */
		assert_int_equal(f->judged, 300);
		assert_int_equal(w->vm_stats[0].ingress_pkts, in + 3);
		t_uplink(&rng, 801, 5101, 0, 6);		/* in order, padded, ACKs part */
		assert_int_equal(f->peer_nxt, 801);
		t_uplink(&rng, 807, 5301, 0, 0);		/* past the padding: no data */
		assert_int_equal(f->judged, 300);
		t_uplink(&rng, 801, 5201, 10, 0);		/* in order with data */
		assert_int_equal(f->peer_nxt, 811);
		assert_int_equal(f->judged, 300);
		t_uplink(&rng, 811, 5301, 0, 0);		/* in order, ACKs them all */
		assert_int_equal(f->judged, 0);
		assert_int_equal(f->tls, DP_TLS_NONE);
		w->ctx->ha = false;
		dp_tx_flush(w);
		dp_flow_close(w->flows, f);
	}
}

/* A SYN-ACK toward the VM (seq, ack) through the burst. */
static void
t_synack(uint64_t *rng, uint32_t seq, uint32_t ack)
{
	static uint8_t b[T_LEN];
	struct rte_mbuf m, *mb;

	t_frame(rng, b, &m, true, PKT_TCP_SYN | PKT_TCP_ACK, seq, ack, 0);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_uplink(w, &mb, 1);
}

/*
 * Through the burst, the lean way and the general one: a second SYN-ACK with another
 * sequence number, acknowledging the VM's SYN, cuts the connection (one of the two was
 * forged: an accomplice that forged the first would own the stream namegate follows in
 * order), counted as a rewrite. The same SYN-ACK again (the server's retransmission) and
 * one that does not acknowledge the SYN (a guess off the path) change nothing.
 */
static void
test_burst_second_synack(void **state)
{
	uint64_t rng = 17, blocked, in;
	struct dp_flow_key k;
	struct dp_flow *f;

	(void)state;
	for (int general = 0; general <= 1; general++) {
		f = t_open(&k);
		assert_non_null(f);
		w->ctx->ha = general;
		t_synack(&rng, 800, 5001);
		assert_true(f->peer_synced);
		assert_int_equal(f->peer_isn, 801);
		blocked = w->vm_stats[0].blocked[DP_REASON_REWRITE];
		in = w->vm_stats[0].ingress_pkts;
		t_synack(&rng, 800, 5001);			/* the server's, again */
		t_synack(&rng, 900, 5001 + 70000);		/* not for this SYN */
		assert_true(f->in_use);
		assert_int_equal(f->peer_isn, 801);
		assert_int_equal(w->vm_stats[0].ingress_pkts, in + 2);
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], blocked);
		t_synack(&rng, 900, 5001);			/* another ISN */
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], blocked + 1);
		assert_int_equal(w->vm_stats[0].ingress_pkts, in + 2);
		assert_null(dp_flow_lookup(w->flows, &k));
		w->ctx->ha = false;
		dp_tx_flush(w);
	}
}

/*
 * The VM's SYN again, with data (Fast Open), after a SYN-ACK: it goes on without the
 * data, which is not judged again (judged bytes let go by a forged SYN-ACK and ACK would
 * leave it unjudged). Before any SYN-ACK, the same SYN is the stream's judge's.
 */
static void
test_burst_syn_data_again(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = 19;
	struct dp_flow_key k;
	struct rte_mbuf m, *mb;
	struct dp_flow *f;
	uint64_t out;

	(void)state;
	f = t_open(&k);
	assert_non_null(f);
	t_synack(&rng, 800, 5001);
	assert_true(f->peer_synced);
	t_frame(&rng, b, &m, false, PKT_TCP_SYN, 5000, 0, 40);
	mb = dpf_mbuf_copy(&ctx, &m);
	out = w->vm_stats[0].egress_pkts[DP_ALLOWED];
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], out + 1);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 1);
	/* the copy sent on is the SYN alone: its IP total length says no data */
	mb = w->tx[DP_PORT_UPLINK].pkts[0];
	assert_int_equal(fc_r16(rte_pktmbuf_mtod(mb, uint8_t *) + 14 + 2),
	    rte_pktmbuf_data_len(mb) - 14);
	assert_int_equal(rte_pktmbuf_data_len(mb), m.data_len - 40);
	assert_int_equal(f->vm_nxt, 5001);
	dp_tx_flush(w);
	dp_flow_close(w->flows, f);
}

/*
 * Through the burst, the VM's urgent pointer (dp_conn_vm_urgent()) on a flow whose judged
 * bytes the server may not have yet (a banner sniffed, say), or whose hello is pending:
 * cut however it comes, a bare ACK off the steady stage, with a FIN past the steady FIN,
 * or past the lean stage's bare ACK: an RST onward, counted as a rewrite, the flow gone.
 * On a flow with nothing judged it is the application's, and goes on.
 */
static void
test_burst_urgent(void **state)
{
	static const uint8_t flags[] = { PKT_TCP_URG | PKT_TCP_ACK,
		PKT_TCP_URG | PKT_TCP_FIN | PKT_TCP_ACK, PKT_TCP_URG | PKT_TCP_ACK };
	static uint8_t b[T_LEN];
	uint64_t rng = 23, blocked, out;
	const uint8_t *rst;
	struct dp_flow_key k;
	struct rte_mbuf m, *mb;
	struct dp_flow *f;

	(void)state;
	for (size_t i = 0; i < sizeof(flags); i++) {
		f = t_open(&k);
		assert_non_null(f);
		t_synack(&rng, 800, 5001);
		dp_tx_flush(w);
		if (i < 2)
			f->judged = 10;
		else
			f->tls = DP_TLS_PENDING;
		blocked = w->vm_stats[0].blocked[DP_REASON_REWRITE];
		t_frame(&rng, b, &m, false, flags[i], 5001, 801, 0);
		mb = dpf_mbuf_copy(&ctx, &m);
		dp_burst_vm(w, &mb, 1);
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REWRITE], blocked + 1);
		assert_null(dp_flow_lookup(w->flows, &k));
		assert_int_equal(w->tx[DP_PORT_UPLINK].n, 1);	/* the RST onward, alone */
		rst = rte_pktmbuf_mtod(w->tx[DP_PORT_UPLINK].pkts[0], const uint8_t *);
		assert_int_equal(rst[14 + 20 + 13] & (PKT_TCP_RST | PKT_TCP_URG), PKT_TCP_RST);
		dp_tx_flush(w);
	}
	f = t_open(&k);
	assert_non_null(f);
	t_synack(&rng, 800, 5001);
	dp_tx_flush(w);
	out = w->vm_stats[0].egress_pkts[DP_ALLOWED];
	t_frame(&rng, b, &m, false, PKT_TCP_URG | PKT_TCP_ACK, 5001, 801, 10);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], out + 1);
	assert_ptr_equal(dp_flow_lookup(w->flows, &k), f);
	assert_int_equal(f->vm_nxt, 5011);
	dp_tx_flush(w);
	dp_flow_close(w->flows, f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lean_is_general),
		cmocka_unit_test(test_burst_ends),
		cmocka_unit_test(test_burst_fin_rst),
		cmocka_unit_test(test_burst_judged_go_in_the_servers_stream),
		cmocka_unit_test(test_burst_second_synack),
		cmocka_unit_test(test_burst_syn_data_again),
		cmocka_unit_test(test_burst_urgent),
	};

	return dpf_run("test_dp_conn_lean", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
