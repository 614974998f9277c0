/*
 * dp_conn.h's steady test: one compare of a flow's gen, tls and budgets with a word made
 * once a burst stands for four of the conditions it names (the generation, no budget, no
 * module, no flow log). Held equal to those conditions, spelled out as they were before,
 * over every mix of them and of what else a flow or frame holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "dp.h"
#include "dp_conn.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/* The steady test as each condition reads on its own. */
static bool
t_steady_spelled_out(const struct dp_worker *w, const struct dp_flow *f, const struct pkt *p,
    bool from_vm)
{
	return f->gen == w->gen->id && f->budgets == 0 && f->tls == DP_TLS_NONE &&
	    (f->judged == 0 || (from_vm && p->payload_len == 0)) && w->flow_recs == NULL &&
	    (p->proto == PKT_PROTO_UDP ||
	    !(p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_FIN | PKT_TCP_RST | PKT_TCP_URG)));
}

/* A few values of each field, the edges of each byte of the word among them. */
static const uint32_t t_gens[] = { 0, 1, 7, 0x100, 0x10000, 0x1000000, 0xffffffffu };
static const uint8_t t_tls[] = { DP_TLS_NONE, DP_TLS_PENDING, DP_TLS_VERIFY, DP_TLS_DNS,
	DP_TLS_SNIFF, DP_TLS_HTTP, DP_TLS_QUIC, DP_TLS_UDP };
static const uint8_t t_budgets[] = { 0, 1, 0x80, 0xff };
static const uint8_t t_flags[] = { 0, PKT_TCP_ACK, PKT_TCP_ACK | PKT_TCP_PSH, PKT_TCP_SYN,
	PKT_TCP_FIN | PKT_TCP_ACK, PKT_TCP_RST, PKT_TCP_URG };

#define T_N(a)	(sizeof(a) / sizeof((a)[0]))

/* Case i of every mix: each field's index in turn, then six bits of yes-or-no. */
static bool
t_case(unsigned int i, struct dp_gen *g, struct dp_worker *w, struct dp_flow *f, struct pkt *p)
{
	static struct rte_ring *recs[] = { NULL, (struct rte_ring *)&recs };
	unsigned int bits = i % 64;

	/* whatever else the flow and the frame hold must not count */
	memset(f, (int)(0x5a ^ i), sizeof(*f));
	memset(p, (int)(0xa5 ^ i), sizeof(*p));
	i /= 64;
	p->tcp_flags = t_flags[i % T_N(t_flags)];
	i /= T_N(t_flags);
	f->budgets = t_budgets[i % T_N(t_budgets)];
	i /= T_N(t_budgets);
	f->tls = t_tls[i % T_N(t_tls)];
	i /= T_N(t_tls);
	f->gen = t_gens[i % T_N(t_gens)];
	i /= T_N(t_gens);
	w->flow_recs = recs[i % T_N(recs)];
	i /= T_N(recs);
	g->id = t_gens[i % T_N(t_gens)];
	f->in_use = bits & 2;
	f->would_block = bits & 4;
	f->judged = bits & 8 ? 100 : 0;
	p->payload_len = bits & 16 ? 64 : 0;
	p->proto = bits & 32 ? PKT_PROTO_UDP : PKT_PROTO_TCP;
	return bits & 1;
}

static void
test_steady_word_is_the_conditions(void **state)
{
	unsigned int cases = 64 * T_N(t_flags) * T_N(t_budgets) * T_N(t_tls) * T_N(t_gens) * 2 *
	    T_N(t_gens), steady = 0;
	struct dp_gen gen = { 0 };
	struct dp_worker w = { .gen = &gen };

	(void)state;
	for (unsigned int i = 0; i < cases; i++) {
		struct dp_flow f;
		struct pkt p;
		bool from_vm = t_case(i, &gen, &w, &f, &p);
		bool want = t_steady_spelled_out(&w, &f, &p, from_vm);

		assert_int_equal(dp_conn_steady(dp_conn_steady_key(&w), &f, &p, from_vm), want);
		steady += want;
	}
	assert_true(steady > 0 && steady < cases);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_word_is_the_conditions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
