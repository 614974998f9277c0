/*
 * The VM's opening SYN decided from the lean frame's fields (dp_conn_syn.h) held to the
 * general flow stage it stands for, through the real worker: segments of the lean shape
 * on no flow (every mix of the TCP flags, a SYN's options in each layout or none, data or
 * none, IPv4 and IPv6) from VMs of every kind (names only, address patterns of one family
 * or the other, budgets, audit mode) to peers of every standing (bound to a name allowed
 * on some ports or on all, bound under another generation, bound but expired, unbound, a
 * resolver, an address the policy allows) on ports of each kind (TLS, other, DNS), with
 * and without a flow log, an HA peer, room for the flow, a free entry, on_block reset.
 * What the lean check reads of each frame must get from dp_conn_vm_syn_admits() and
 * _open() the fate dp_conn_vm_any() gives the decoded frame, the flow opened alike and
 * the counters alike; or nothing touched. And through the burst, an opening goes out and
 * a refusal for want of room is answered as it would be.
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
#include "dp_conn_syn.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_lean.h"
#include "dp_out.h"
#include "frame_check.h"
#include "policy/match.h"
#include "sni/pkt.h"

#define ROUNDS	200000
#define T_LEN	(14 + 40 + 60 + 64)	/* the longest frame drawn */
#define T_NVMS	5

static const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_flows: 4096,\n"
	"  max_flows_per_vm: 512, max_bindings: 1024}\n"
	"slow_path: {enabled: false}\n"
	"flow_log: /dev/null\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {names: {allow: [\"a.example:443\", \"a.example:8080\", c.example]},\n"
	"  six: {allow: [\"[2001:db8:1::/48]:443\", \"a.example:443\", c.example]},\n"
	"  four: {allow: [\"203.0.113.5:443\", \"a.example:443\", c.example]},\n"
	"  metered: {allow: [\"a.example:443\", c.example],\n"
	"    budgets: [{host: a.example, upload: 1MB, per: 1h}]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11,\n"
	"    ipv6: \"fd00::11\", policy: names},\n"
	"  {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, ipv6: \"fd00::12\",\n"
	"    policy: six},\n"
	"  {name: agent3, mac: \"02:00:00:00:00:03\", ipv4: 10.77.0.13, ipv6: \"fd00::13\",\n"
	"    policy: metered},\n"
	"  {name: agent4, mac: \"02:00:00:00:00:04\", ipv4: 10.77.0.14, ipv6: \"fd00::14\",\n"
	"    policy: names, mode: audit},\n"
	"  {name: agent5, mac: \"02:00:00:00:00:05\", ipv4: 10.77.0.15, ipv6: \"fd00::15\",\n"
	"    policy: four}]\n";

static const uint8_t gw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
/*
 * peers: bound to a.example, to c.example, under a later generation; unbound; a resolver;
 * an address a policy allows (bound too)
 */
static const uint8_t peer4[][4] = { { 198, 51, 100, 21 }, { 198, 51, 100, 23 },
	{ 198, 51, 100, 25 }, { 198, 51, 100, 99 }, { 10, 77, 0, 1 }, { 203, 0, 113, 5 } };
static const uint8_t peer6[][16] = {
	{ 0x20, 0x01, 0x0d, 0xb8, [15] = 0x21 }, { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x23 },
	{ 0x20, 0x01, 0x0d, 0xb8, [15] = 0x25 }, { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x99 },
	{ 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 5 } };
static const uint16_t ports[] = { 443, 8080, 8443, 80, 53 };
static struct dp_worker *w;
static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };

/* The slot of agent n (1 to T_NVMS). */
static uint16_t
t_slot(unsigned int n)
{
	const struct pol_vm_id *id;

	for (uint16_t i = 0; i < w->gen->nvms; i++)
		if (w->gen->vms[i].present && (id = &w->gen->vms[i].id)->mac[5] == n)
			return i;
	fail_msg("no agent%u", n);
	return 0;
}

/* name bound to address a (family) for VM vm under generation gen, as a DNS answer binds. */
static void
t_bind(uint16_t vm, const char *name, uint8_t family, const uint8_t *a, uint32_t gen)
{
	struct pol_addr addr = { .family = family };
	struct pol_ports p;

	memcpy(addr.a, a, family == 4 ? 4 : 16);
	pol_match_name_ports(w->gen->set, w->gen->vms[vm].policy, name, strlen(name), &p);
	p.budget = dp_budget_of_name(w->gen, vm, name, strlen(name));
	assert_int_equal(dp_bind_learn(w->ctx->binds, vm, &addr, dp_name_hash(name, strlen(name)),
	    &p, gen, w->now + 300, 1024), 0);
}

/*
 * Each VM's bindings: peer 0 to a.example, 1 to c.example, 2 under a later generation, and
 * the last, an address a policy allows, to a.example.
 */
static void
t_bind_all(void)
{
	for (unsigned int n = 1; n <= T_NVMS; n++) {
		uint16_t vm = t_slot(n);

		t_bind(vm, "a.example", 4, peer4[0], w->gen->id);
		t_bind(vm, "c.example", 4, peer4[1], w->gen->id);
		t_bind(vm, "a.example", 4, peer4[2], w->gen->id + 1);
		t_bind(vm, "a.example", 6, peer6[0], w->gen->id);
		t_bind(vm, "c.example", 6, peer6[1], w->gen->id);
		t_bind(vm, "a.example", 6, peer6[2], w->gen->id + 1);
		/* an address a policy allows, bound too: the address match comes first */
		t_bind(vm, "a.example", 4, peer4[5], w->gen->id);
		t_bind(vm, "a.example", 6, peer6[4], w->gen->id);
	}
}

/*
 * A SYN's options into o, in one of the layouts stacks send (the two read in place,
 * pkt_tcp_wscale_known(), and one only the walk reads), or garbage, or none.
 */
static size_t
t_syn_opts(uint64_t *rng, uint8_t *o)
{
	static const uint8_t linux_[] = { 2, 4, 5, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8,
		1, 3, 3, 7 };

	switch (fc_rnd(rng) % 5) {
	case 0:
		memcpy(o, linux_, sizeof(linux_));
		o[19] = (uint8_t)(fc_rnd(rng) % 16);
		return sizeof(linux_);
	case 4:		/* BSD's and Windows': MSS, NOP, window scale */
		memcpy(o, (const uint8_t[]){ 2, 4, 5, 0xb4, 1, 3, 3, (uint8_t)(fc_rnd(rng) % 16) },
		    8);
		return 8;
	case 1:		/* the scale first, then the end of the list */
		memcpy(o, (const uint8_t[]){ 3, 3, (uint8_t)(fc_rnd(rng) % 16), 0 }, 4);
		return 4;
	case 2:
		for (size_t i = 0; i < 12; i++)
			o[i] = (uint8_t)fc_rnd(rng);
		return 12;
	default:
		return 0;
	}
}

/* What a round draws: the frame's sender and shape, its peer, port, flags and data. */
struct t_syn {
	unsigned int agent;		/* 1 to T_NVMS */
	uint8_t family;
	const uint8_t *peer;
	uint16_t sport, dport;
	uint8_t flags;
	uint32_t seq;
	size_t data;
};

/*
 * Segment s from its VM into b, its checksums marked good by the port in *m (an mbuf on
 * the stack, one segment).
 */
static void
t_frame(uint64_t *rng, uint8_t *b, struct rte_mbuf *m, const struct t_syn *s)
{
	size_t ipl = s->family == 4 ? 20 : 40, opts = 0;
	uint8_t *ip = b + 14, *th = ip + ipl;

	memset(b, 0, T_LEN);
	memcpy(b, gw_mac, 6);
	memcpy(b + 6, (const uint8_t[]){ 2, 0, 0, 0, 0, (uint8_t)s->agent }, 6);
	if (s->flags & PKT_TCP_SYN)
		opts = t_syn_opts(rng, th + 20);
	if (s->family == 4) {
		fc_w16(b + 12, 0x0800);
		ip[0] = 0x45;
		fc_w16(ip + 2, (uint16_t)(20 + 20 + opts + s->data));
		ip[8] = 64;
		ip[9] = PKT_PROTO_TCP;
		memcpy(ip + 12, (const uint8_t[]){ 10, 77, 0, (uint8_t)(10 + s->agent) }, 4);
		memcpy(ip + 16, s->peer, 4);
	} else {
		fc_w16(b + 12, 0x86dd);
		ip[0] = 0x60;
		fc_w16(ip + 4, (uint16_t)(20 + opts + s->data));
		ip[6] = PKT_PROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, (const uint8_t[]){ 0xfd, [15] = (uint8_t)(0x10 + s->agent) }, 16);
		memcpy(ip + 24, s->peer, 16);
	}
	fc_w16(th, s->sport);
	fc_w16(th + 2, s->dport);
	fc_w32(th + 4, s->seq);
	fc_w32(th + 8, fc_rnd(rng));
	th[12] = (uint8_t)((20 + opts) / 4 << 4);
	th[13] = s->flags;
	fc_w16(th + 14, (uint16_t)fc_rnd(rng));
	for (size_t i = 0; i < s->data; i++)
		th[20 + opts + i] = (uint8_t)fc_rnd(rng);
	memset(m, 0, sizeof(*m));
	m->buf_addr = b;
	m->data_len = (uint16_t)(14 + ipl + 20 + opts + s->data);
	m->pkt_len = m->data_len;
	m->nb_segs = 1;
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
}

/* A round's draw: mostly bare SYNs, at times any mix of flags or data. */
static void
t_draw(uint64_t *rng, struct t_syn *s)
{
	static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_ACK, PKT_TCP_FIN, PKT_TCP_RST,
		PKT_TCP_PSH, PKT_TCP_URG };

	s->agent = 1 + fc_rnd(rng) % T_NVMS;
	s->family = fc_rnd(rng) % 4 == 0 ? 6 : 4;
	s->peer = s->family == 4 ? peer4[fc_rnd(rng) % 6] : peer6[fc_rnd(rng) % 5];
	s->sport = (uint16_t)(1024 + fc_rnd(rng) % 60000);
	s->dport = ports[fc_rnd(rng) % (sizeof(ports) / sizeof(ports[0]))];
	s->flags = PKT_TCP_SYN;
	if (fc_rnd(rng) % 4 == 0)
		for (size_t i = 0; i < sizeof(flags); i++)
			if (fc_rnd(rng) % 4 == 0)
				s->flags ^= flags[i];
	s->seq = fc_rnd(rng);
	s->data = fc_rnd(rng) % 8 == 0 ? 1 + fc_rnd(rng) % 64 : 0;
}

/* What the lean stage took: counts of each kind, for the test's bounds. */
struct t_took {
	unsigned int opened, full, v6, sniff, scaled;
};

/*
 * Frame m of agent s->agent on no flow: when dp_conn_vm_syn_admits() takes it, the general stage
 * given its decoding must answer alike (the flow and the VM's counters too); when not,
 * nothing may have changed.
 */
static void
t_same(struct rte_mbuf *m, uint16_t vm, struct t_took *took)
{
	struct dp_vm_stats stats = w->vm_stats[vm];
	uint32_t per_vm = dp_flows_count(w->flows, vm);
	struct dp_flow after, *f, *fp = NULL;
	struct dp_fate lean, general;
	struct dp_bind_allow by;
	struct dp_flow_key k;
	struct dp_lean l;
	struct pkt p;
	uint32_t h;

	assert_int_equal(dp_lean(w->gen, m, &k, &l, true), vm);
	assert_null(dp_flow_lookup(w->flows, &k));
	h = dp_flow_hash(w->flows, &k);
	lean = dp_conn_vm_syn_admits(w, &k, &l, &by) ?
	    dp_conn_vm_syn_open(w, m, &l, &k, h, by) : dp_fate(DP_FATE_CONTINUE);
	f = dp_flow_lookup(w->flows, &k);
	assert_memory_equal(&stats, &w->vm_stats[vm], sizeof(stats));
	if (lean.act == DP_FATE_CONTINUE) {
		assert_null(f);
		assert_int_equal(dp_flows_count(w->flows, vm), per_vm);
		return;
	}
	if (f != NULL) {
		after = *f;
		dp_flow_close(w->flows, f);
		took->opened++;
		took->v6 += k.family == 6;
		took->sniff += after.tls == DP_TLS_SNIFF;
		took->scaled += after.vm_wscale != PKT_WSCALE_NONE;
	} else {
		took->full++;
	}
	dp_lean_decode(m, &l, &p, true);
	general = dp_conn_vm_any(w, &p, &k, h, NULL, &fp);
	assert_true(dp_fate_eq(lean, general));
	assert_memory_equal(&stats, &w->vm_stats[vm], sizeof(stats));
	assert_ptr_equal(fp, dp_flow_lookup(w->flows, &k));
	if (f == NULL) {
		assert_null(fp);
		return;
	}
	assert_non_null(fp);
	assert_memory_equal(&after, fp, sizeof(after));
	dp_flow_close(w->flows, fp);
	assert_int_equal(dp_flows_count(w->flows, vm), per_vm);
}

static void
test_syn_is_general(void **state)
{
	static uint8_t b[T_LEN];
	uint64_t rng = UINT64_C(0x9b05688c2b3e6c1f), now = w->now;
	struct dp_gen *g = (struct dp_gen *)(uintptr_t)w->gen;
	struct rte_ring *recs = w->flow_recs;
	uint32_t max_per_vm = g->max_flows_per_vm;
	bool reset = g->on_block_reset;
	struct t_took took = { 0 };
	uint32_t nfree;

	(void)state;
	assert_non_null(recs);
	t_bind_all();
	for (int r = 0; r < ROUNDS; r++) {
		struct rte_mbuf m;
		struct t_syn s;

		t_draw(&rng, &s);
		t_frame(&rng, b, &m, &s);
		/* at times, every binding expired */
		w->now = fc_rnd(&rng) % 16 == 0 ? now + 1000 : now;
		w->ctx->ha = fc_rnd(&rng) % 16 == 0;
		w->flow_recs = fc_rnd(&rng) % 8 == 0 ? recs : NULL;
		g->max_flows_per_vm = fc_rnd(&rng) % 16 == 0 ? 0 : max_per_vm;
		g->on_block_reset = fc_rnd(&rng) % 2 == 0;
		/* at times, no entry free (their stack hidden): the lean stage leaves it be */
		nfree = w->flows->slots.n;
		w->flows->slots.n = fc_rnd(&rng) % 16 == 0 ? 0 : nfree;
		t_same(&m, t_slot(s.agent), &took);
		w->flows->slots.n = nfree;
	}
	w->now = now;
	w->ctx->ha = false;
	w->flow_recs = recs;
	g->max_flows_per_vm = max_per_vm;
	g->on_block_reset = reset;
	print_message("%d frames: %u opened (%u IPv6, %u sniffed, %u scaled), %u refused for"
	    " room\n", ROUNDS, took.opened, took.v6, took.sniff, took.scaled, took.full);
	assert_true(took.opened > ROUNDS / 64 && took.full > ROUNDS / 4096);
	assert_true(took.v6 > 0 && took.sniff > 0 && took.scaled > 0);
}

/* Swap the n bytes at b + i with those at b + j. */
static void
t_swap(uint8_t *b, size_t i, size_t j, size_t n)
{
	uint8_t t[8];

	memcpy(t, b + i, n);
	memcpy(b + i, b + j, n);
	memcpy(b + j, t, n);
}

/*
 * Through the burst: agent1's SYN to a name's address opens its flow as the binding says
 * (the name, a hello awaited on a TLS port, the SYN's sequence number and window scale)
 * and goes out, counted allowed; with no room for a flow, the next is blocked and counted
 * so, and answered with an RST under on_block reset. The server's SYN opens nothing.
 */
static void
test_burst_syn(void **state)
{
	static uint8_t b[T_LEN];
	struct dp_gen *g = (struct dp_gen *)(uintptr_t)w->gen;
	uint32_t max_per_vm = g->max_flows_per_vm;
	bool reset = g->on_block_reset;
	uint16_t vm = t_slot(1);
	struct dp_vm_stats s0 = w->vm_stats[vm];
	struct t_syn s = { .agent = 1, .family = 4, .peer = peer4[0], .sport = 45000,
		.dport = 443, .flags = PKT_TCP_SYN, .seq = 7000 };
	struct rte_ring *recs = w->flow_recs;
	struct dp_flow_key k = { .vm = vm, .family = 4, .proto = PKT_PROTO_TCP,
		.vm_port = 45000, .peer_port = 443 };
	uint64_t rng = 3;
	struct rte_mbuf m, *mb;
	struct dp_flow *f;

	(void)state;
	t_bind_all();		/* again: each binding's expiry extended */
	w->flow_recs = NULL;
	memcpy(k.peer, peer4[0], 4);
	do	/* the Linux layout: its window scale last */
		t_frame(&rng, b, &m, &s);
	while (m.data_len != 14 + 20 + 40);
	b[14 + 20 + 39] = 6;
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 1);
	dp_tx_flush(w);
	assert_int_equal(w->vm_stats[vm].egress_pkts[DP_ALLOWED], s0.egress_pkts[DP_ALLOWED] + 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->how, DP_ADMIT_BINDING);
	assert_int_equal(f->name_hash, dp_name_hash("a.example", 9));
	assert_true(f->name_bound);
	assert_int_equal(f->tls, DP_TLS_PENDING);
	assert_int_equal(f->isn, 7001);
	assert_int_equal(f->vm_nxt, 7001);
	assert_int_equal(f->vm_wscale, 6);
	assert_int_equal(f->gen, w->gen->id);
	dp_flow_close(w->flows, f);
	g->max_flows_per_vm = 0;
	g->on_block_reset = true;
	s.sport = 45001;
	t_frame(&rng, b, &m, &s);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_vm(w, &mb, 1);
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);	/* the RST */
	dp_tx_flush(w);
	assert_int_equal(w->vm_stats[vm].blocked[DP_REASON_FLOW_LIMIT],
	    s0.blocked[DP_REASON_FLOW_LIMIT] + 1);
	k.vm_port = 45001;
	assert_null(dp_flow_lookup(w->flows, &k));
	g->max_flows_per_vm = max_per_vm;
	/* the server's SYN toward the VM on no flow opens nothing: only the VM's may */
	s.sport = 45002;
	t_frame(&rng, b, &m, &s);
	t_swap(b, 0, 6, 6);
	t_swap(b, 14 + 12, 14 + 16, 4);
	t_swap(b, 14 + 20, 14 + 22, 2);
	mb = dpf_mbuf_copy(&ctx, &m);
	dp_burst_uplink(w, &mb, 1);
	k.vm_port = 45002;
	assert_null(dp_flow_lookup(w->flows, &k));
	dp_tx_flush(w);
	g->on_block_reset = reset;
	w->flow_recs = recs;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syn_is_general),
		cmocka_unit_test(test_burst_syn),
	};

	return dpf_run("test_dp_conn_syn", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
