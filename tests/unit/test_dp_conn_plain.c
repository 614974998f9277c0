/*
 * dp_conn_vm_any() decides a VM's plain frame (a TCP segment on its flow, neither opening
 * nor resetting anything, nothing else to tell) inline, without dp_conn_vm_general(), a
 * FIN's flow log note too. Held to the general path through the real
 * worker: on one real flow given many states (every tls mode, judged bytes or none,
 * would_block, where the VM's stream stands) and many frames (every mix of the TCP flags,
 * UDP, data or none, before or past the stream's end), with and without a flow log, both
 * must give the same fate and leave the flow and its account the same. Each check of the
 * plain path left out in turn fails it.
 *
 * Not drawn: another generation and budgets (the general path may revoke or cut the flow
 * there, ending it), an HA peer, and a SYN that reopens the flow; the plain path leaves
 * all of those to the general one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_burst.h"
#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_conn_lean.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "policy/match.h"
#include "sni/pkt.h"
#include "t_conn_cfg.h"

#define ROUNDS	200000

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/* xorshift64*: the next number from *rng. */
static uint32_t
rnd(uint64_t *rng)
{
	*rng ^= *rng >> 12;
	*rng ^= *rng << 25;
	*rng ^= *rng >> 27;
	return (uint32_t)((*rng * UINT64_C(0x2545f4914f6cdd1d)) >> 32);
}

/* The flow of a SYN from agent1's port 41000 to 203.0.113.5:443, admitted by address. */
static struct dp_flow *
t_open(struct dp_flow_key *k)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 }, dst[4] = { 203, 0, 113, 5 };
	struct rte_mbuf *m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw,
	    .sip = src, .dip = dst, .sport = 41000, .dport = 443, .seq = 5000,
	    .flags = PKT_TCP_SYN });

	*k = (struct dp_flow_key){ .vm = 0, .family = 4, .proto = PKT_PROTO_TCP,
		.vm_port = 41000, .peer_port = 443, .peer = { 203, 0, 113, 5 } };
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	return dp_flow_lookup(w->flows, k);
}

/* Flow state base drawn from what a flow may hold; its generation and budgets kept. */
static void
t_draw_flow(uint64_t *rng, struct dp_flow *f)
{
	static const uint8_t tls[] = { DP_TLS_NONE, DP_TLS_PENDING, DP_TLS_VERIFY, DP_TLS_DNS,
		DP_TLS_SNIFF, DP_TLS_HTTP, DP_TLS_QUIC, DP_TLS_UDP };

	f->tls = tls[rnd(rng) % sizeof(tls)];
	f->judged = rnd(rng) % 3 == 0 ? 1 + rnd(rng) % 600 : 0;
	f->would_block = rnd(rng) % 4 == 0;
	f->state = (uint8_t)(rnd(rng) % 2 == 0 ? DP_FLOW_SYN_SENT : DP_FLOW_ESTABLISHED);
	f->vm_nxt = f->isn + rnd(rng) % 2000;
	f->last_seen = rnd(rng);
	f->hold = 0;			/* a hold is a pool's slot: none here */
	f->peer_hold = 0;
}

/* A frame from the VM on f: its flags, protocol, data and place drawn. */
static void
t_draw_frame(uint64_t *rng, const struct dp_flow *f, struct pkt *p)
{
	static uint8_t data[256];
	static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_ACK, PKT_TCP_FIN, PKT_TCP_RST,
		PKT_TCP_PSH, PKT_TCP_URG };

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)rnd(rng);
	memset(p, 0, sizeof(*p));
	p->family = 4;
	p->proto = rnd(rng) % 8 == 0 ? PKT_PROTO_UDP : PKT_PROTO_TCP;
	p->sport = 41000;
	p->dport = 443;
	p->tcp_flags = PKT_TCP_ACK;
	for (size_t i = 0; i < sizeof(flags); i++)
		if (rnd(rng) % 6 == 0)
			p->tcp_flags ^= flags[i];
	p->payload = data;
	p->payload_len = rnd(rng) % 2 == 0 ? 0 : 1 + rnd(rng) % 200;
	p->seq = f->isn + rnd(rng) % 2400 - 200;
	if (p->tcp_flags & PKT_TCP_SYN) {	/* its opening SYN again: not a reopening */
		p->seq = f->isn - 1;
		p->tcp_flags &= (uint8_t)~PKT_TCP_ACK;
	}
	p->ack = rnd(rng);
	p->tcp_win = (uint16_t)rnd(rng);
}

/* A flow stage's decision: dp_conn_uplink_any()'s shape (VM slot 0's, from the VM). */
typedef struct dp_fate (*t_decide)(struct dp_worker *, const struct pkt *,
    const struct dp_flow_key *, struct dp_flow *, struct dp_flow **);

static struct dp_fate
t_vm_any(struct dp_worker *wk, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	return dp_conn_vm_any(wk, p, k, dp_flow_hash(wk->flows, k), f, fp);
}

static struct dp_fate
t_vm_general(struct dp_worker *wk, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	return dp_conn_vm_general(wk, p, k, dp_flow_hash(wk->flows, k), f, fp);
}

/*
 * any and general each deciding p on f, f as base and its account as acct before each:
 * the same fate, the same flow given back, the flow and its account left the same.
 * Returns the fate; *after, the flow as any left it.
 */
static struct dp_fate
t_same(t_decide any, t_decide general, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, const struct dp_flow *base, const struct dp_flow_acct *acct,
    struct dp_flow *after)
{
	struct dp_flow *fp_any = NULL, *fp_general = NULL;
	struct dp_flow_acct acct_after;
	struct dp_fate a, g;

	*f = *base;
	*dp_flow_acct(w->flows, f) = *acct;
	a = any(w, p, k, f, &fp_any);
	*after = *f;
	acct_after = *dp_flow_acct(w->flows, f);
	*f = *base;
	*dp_flow_acct(w->flows, f) = *acct;
	g = general(w, p, k, f, &fp_general);
	assert_true(dp_fate_eq(a, g));
	assert_ptr_equal(fp_any, fp_general);
	assert_memory_equal(after, f, sizeof(*after));
	assert_memory_equal(&acct_after, dp_flow_acct(w->flows, f), sizeof(acct_after));
	return a;
}

static void
test_plain_is_general(void **state)
{
	struct dp_flow_key k;
	struct dp_flow *f = t_open(&k), base, saved, after;
	struct dp_flow_acct acct;
	struct rte_ring *recs = w->flow_recs;
	uint64_t rng = UINT64_C(0x6a09e667f3bcc908);
	unsigned int plain = 0, would_block = 0;

	(void)state;
	assert_non_null(f);
	saved = *f;
	acct = *dp_flow_acct(w->flows, f);
	for (int r = 0; r < ROUNDS; r++) {
		struct dp_fate any;
		struct pkt p;

		base = saved;
		t_draw_flow(&rng, &base);
		t_draw_frame(&rng, &base, &p);
		/* a flow log's counts: any frame might be one to count */
		w->flow_recs = rnd(&rng) % 4 == 0 ? (struct rte_ring *)&recs : NULL;
		plain += p.proto == PKT_PROTO_TCP && w->flow_recs == NULL &&
		    !(p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST));
		any = t_same(t_vm_any, t_vm_general, &p, &k, f, &base, &acct, &after);
		/* an egress is the flow's verdict and nothing else, as its fields spell it */
		if (any.act == DP_FATE_EGRESS) {
			assert_true(dp_fate_eq(any, dp_fate_pass(after.would_block)));
			would_block += after.would_block;
		}
	}
	w->flow_recs = recs;
	*f = saved;
	*dp_flow_acct(w->flows, f) = acct;
	assert_true(plain > ROUNDS / 8);	/* the plain path taken often, not only its edges */
	assert_true(would_block > 0);
}

/*
 * The server's ACK of judged bytes on the lean path (dp_conn_uplink_judged(), dp_burst.c)
 * held to dp_conn_uplink_any() likewise: on the flow given many states (every tls mode,
 * judged bytes, another generation, a budget, an HA peer, where each stream stands) and
 * segments of the lean shape toward the VM (no SYN, FIN or RST; any ACK, window, PSH,
 * URG), each one it takes must get the same fate and leave the flow and its account as
 * the general path does; each one it leaves, the flow as it was.
 */
static void
test_uplink_judged_is_general(void **state)
{
	static const uint8_t flags[] = { PKT_TCP_ACK, PKT_TCP_PSH, PKT_TCP_URG };
	static const uint8_t server_data[1400];
	struct dp_flow_key k;
	struct dp_flow *f = t_open(&k), base, saved, after;
	struct dp_flow_acct acct, acct_after;
	struct rte_ring *recs = w->flow_recs;
	uint64_t rng = UINT64_C(0xbb67ae8584caa73b);
	unsigned int taken = 0, let_go = 0;

	(void)state;
	assert_non_null(f);
	saved = *f;
	acct = *dp_flow_acct(w->flows, f);
	for (int r = 0; r < ROUNDS; r++) {
		struct dp_flow *fp = NULL;
		struct dp_fate general;
		struct pkt p;
		bool lean, ha;

		base = saved;
		t_draw_flow(&rng, &base);
		if (rnd(&rng) % 2 == 0)
			base.tls = DP_TLS_NONE;	/* the hello's verdict in: the shape it stands for */
		if (rnd(&rng) % 8 == 0)
			base.gen++;
		if (rnd(&rng) % 8 == 0)
			base.budgets = 1;
		base.peer_synced = rnd(&rng) % 4 != 0;
		base.peer_ack = base.isn + rnd(&rng) % 1200;
		base.peer_wscale = (uint8_t)(rnd(&rng) % 15);
		/* the server's stream seen in order so far: nothing yet at times */
		base.peer_isn = rnd(&rng);
		base.peer_nxt = base.peer_isn + (rnd(&rng) % 2 == 0 ? 0 : rnd(&rng) % 3000);
		memset(&p, 0, sizeof(p));
		p.family = 4;
		p.proto = PKT_PROTO_TCP;
		p.sport = 443;
		p.dport = 41000;
		p.tcp_flags = 0;
		for (size_t i = 0; i < sizeof(flags); i++)
			if (rnd(&rng) % 4 != 0)
				p.tcp_flags |= flags[i];
		/* in the server's stream as seen (from its first byte on), past it, or anywhere */
		switch (rnd(&rng) % 4) {
		case 0:
		case 1:
			p.seq = base.peer_isn + rnd(&rng) % (base.peer_nxt - base.peer_isn + 1);
			break;
		case 2:
			p.seq = base.peer_nxt + 1 + rnd(&rng) % 3000;
			break;
		default:
			p.seq = rnd(&rng);
		}
		p.payload = server_data;
		p.payload_len = rnd(&rng) % 2 == 0 ? 0 : 1 + rnd(&rng) % sizeof(server_data);
		p.ack = base.isn + rnd(&rng) % 2400 - 200;
		p.tcp_win = (uint16_t)rnd(&rng);
		ha = rnd(&rng) % 8 == 0;
		w->ctx->ha = ha;
		w->flow_recs = rnd(&rng) % 4 == 0 ? (struct rte_ring *)&recs : NULL;
		*f = base;
		*dp_flow_acct(w->flows, f) = acct;
		lean = f->judged != 0 && dp_conn_judged_word(dp_conn_steady_key(w), f) &&
		    dp_conn_uplink_judged(w, f, p.tcp_flags, p.seq, p.payload,
		    (uint32_t)p.payload_len, p.ack, p.tcp_win);
		w->ctx->ha = false;
		/* a budget (spent, it cuts) and an HA peer (told): the general path's alone */
		assert_false(lean && (base.budgets != 0 || ha));
		if (!lean) {
			assert_memory_equal(&base, f, sizeof(base));
			continue;
		}
		taken++;
		let_go += f->judged == 0;
		after = *f;
		acct_after = *dp_flow_acct(w->flows, f);
		*f = base;
		*dp_flow_acct(w->flows, f) = acct;
		general = dp_conn_uplink_any(w, &p, &k, f, &fp);
		assert_true(dp_fate_eq(general, dp_fate(DP_FATE_INGRESS)));
		assert_ptr_equal(fp, f);
		assert_memory_equal(&after, f, sizeof(after));
		assert_memory_equal(&acct_after, dp_flow_acct(w->flows, f), sizeof(acct_after));
	}
	w->flow_recs = recs;
	*f = saved;
	*dp_flow_acct(w->flows, f) = acct;
	print_message("%u of %d taken, %u letting the judged bytes go\n", taken, ROUNDS, let_go);
	/* taken often, and both ways: judged bytes kept, and let go */
	assert_true(taken > ROUNDS / 16 && let_go > 0 && let_go < taken);
}

/*
 * dp_conn_uplink_any() decides the server's plain segments (its flow current, in no
 * budget, nothing judged, no HTTP reader, no flow log or HA peer, no RST) without
 * dp_conn_uplink_general(). Held to it likewise: on the flow given many states (every
 * tls mode, judged bytes or none, the peer's SYN-ACK seen or not, where each stream and
 * window stands, another generation, a spent budget, an HA peer) and many frames toward the
 * VM (every mix of the TCP flags, SYN-ACKs acknowledging the SYN or not, window scales,
 * data, UDP), with and without a flow log, both must give the same fate and leave the
 * flow and its account the same.
 */
static void
test_uplink_plain_is_general(void **state)
{
	static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_ACK, PKT_TCP_FIN, PKT_TCP_RST,
		PKT_TCP_PSH, PKT_TCP_URG };
	static uint8_t data[64];
	uint64_t rng = UINT64_C(0x3c6ef372fe94f82b);
	unsigned int plain = 0, synack = 0;
	struct rte_ring *recs = w->flow_recs;
	struct dp_flow_key k;
	struct dp_flow *f = t_open(&k), base, saved, after;
	struct dp_flow_acct acct;
	struct dp_vm *vm = (struct dp_vm *)(uintptr_t)&w->gen->vms[0];
	struct dp_budget_cell *cell = dp_budget_cell_of(w, 0, 0), cell_saved = *cell;
	bool audit = vm->audit;

	(void)state;
	assert_non_null(f);
	saved = *f;
	acct = *dp_flow_acct(w->flows, f);
	/* budget 1 spent, and the VM audited: a flow through it is marked, not cut */
	atomic_store(&cell->allow, DP_BUDGET_PUBLISHED);
	cell->epoch = 0;
	vm->audit = true;
	for (int r = 0; r < ROUNDS; r++) {
		struct pkt p;

		base = saved;
		t_draw_flow(&rng, &base);
		if (rnd(&rng) % 2 == 0)
			base.judged = 0;
		if (rnd(&rng) % 16 == 0)
			base.gen++;
		if (rnd(&rng) % 16 == 0)
			base.budgets = 1;	/* spent: audited, the flow goes on as would_block */
		base.http_phase = (uint8_t)(rnd(&rng) % 4);	/* a CONNECT's answer read */
		base.peer_synced = rnd(&rng) % 2 == 0;
		base.peer_isn = rnd(&rng);
		base.peer_ack = base.isn + rnd(&rng) % 1200;
		base.vm_wscale = (uint8_t)(rnd(&rng) % 4 == 0 ? PKT_WSCALE_NONE : rnd(&rng) % 15);
		base.peer_wscale = (uint8_t)(rnd(&rng) % 15);
		if (rnd(&rng) % 4 == 0)
			base.vm_nxt = base.isn;		/* nothing sent: the server may speak first */
		memset(&p, 0, sizeof(p));
		p.family = 4;
		p.proto = rnd(&rng) % 8 == 0 ? PKT_PROTO_UDP : PKT_PROTO_TCP;
		p.sport = 443;
		p.dport = 41000;
		p.tcp_flags = PKT_TCP_ACK;
		for (size_t i = 0; i < sizeof(flags); i++)
			if (rnd(&rng) % 5 == 0)
				p.tcp_flags ^= flags[i];
		if (rnd(&rng) % 4 == 0)
			p.tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK;
		p.seq = rnd(&rng) % 2 == 0 ? base.peer_isn : rnd(&rng);
		p.ack = rnd(&rng) % 4 == 0 ? base.isn : base.isn + rnd(&rng) % 2400 - 200;
		p.tcp_win = (uint16_t)rnd(&rng);
		p.tcp_wscale = (uint8_t)(rnd(&rng) % 4 == 0 ? PKT_WSCALE_NONE : rnd(&rng) % 15);
		p.payload = data;
		p.payload_len = rnd(&rng) % 2 == 0 ? 0 : 1 + rnd(&rng) % sizeof(data);
		w->ctx->ha = rnd(&rng) % 16 == 0;
		w->flow_recs = rnd(&rng) % 4 == 0 ? (struct rte_ring *)&recs : NULL;
		plain += !(p.tcp_flags & PKT_TCP_RST) &&
		    base.judged == 0 && base.tls != DP_TLS_HTTP && base.gen == saved.gen &&
		    base.budgets == 0 && !w->ctx->ha;
		t_same(dp_conn_uplink_any, dp_conn_uplink_general, &p, &k, f, &base, &acct, &after);
		w->ctx->ha = false;
		synack += !base.peer_synced && after.peer_synced;
	}
	w->flow_recs = recs;
	*f = saved;
	*dp_flow_acct(w->flows, f) = acct;
	*cell = cell_saved;
	vm->audit = audit;
	print_message("%u of %d plain, %u SYN-ACKs taken\n", plain, ROUNDS, synack);
	assert_true(plain > ROUNDS / 16 && synack > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_is_general),
		cmocka_unit_test(test_uplink_judged_is_general),
		cmocka_unit_test(test_uplink_plain_is_general),
	};

	return dpf_run("test_dp_conn_plain", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
