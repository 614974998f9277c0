/*
 * A VM's SYN through dp_conn_vm_any() on the real worker: its fate is its fields' and the
 * policy's (sent on, allowed, or with its data to the module that judges first bytes), and
 * what admitted it (a binding, an address pattern of either family) is kept in the flow it
 * opens, with the budgets its bytes count in.
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
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "policy/match.h"
#include "sni/pkt.h"
#include "t_conn_cfg.h"

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/*
 * A SYN's fate is its fields' and nothing else: sent on, allowed, or with data (Fast
 * Open) to the module that judges the flow's first bytes; to the resolver, always to DNS
 * over TCP's, which shifts its sequence number. Opened by a binding on a TLS port and on
 * another, and to the resolver (DNS over TCP), each without data and with.
 */
static void
test_syn_fate(void **state)
{
	static const struct {
		uint8_t dst[4];
		uint16_t dport;
		uint8_t tls;
	} t[] = {
		{ { 198, 51, 100, 7 }, 443, DP_TLS_PENDING },
		{ { 198, 51, 100, 7 }, 8080, DP_TLS_SNIFF },
		{ { 10, 77, 0, 1 }, 53, DP_TLS_DNS },
	};
	static const uint8_t data[16];
	struct pol_addr a = { .family = 4, .a = { 198, 51, 100, 7 } };
	struct pol_ports ports;

	(void)state;
	assert_true(pol_match_name_ports(w->gen->set, w->gen->vms[0].policy, "a.example", 9,
	    &ports));
	assert_int_equal(dp_bind_learn(w->ctx->binds, 0, &a, dp_name_hash("a.example", 9),
	    &ports, w->gen->id, w->now + 300, 1024), 0);
	for (unsigned int i = 0; i < 2 * sizeof(t) / sizeof(t[0]); i++) {
		struct pkt p = { .family = 4, .proto = PKT_PROTO_TCP, .sport = (uint16_t)(42000 + i),
			.dport = t[i / 2].dport, .tcp_flags = PKT_TCP_SYN, .seq = 77,
			.tcp_wscale = PKT_WSCALE_NONE, .payload = data,
			.payload_len = i % 2 ? sizeof(data) : 0 };
		struct dp_flow_key k;
		struct dp_flow *fp = NULL;
		struct dp_fate fate;

		memcpy(p.dst, t[i / 2].dst, 4);
		dp_conn_key(&k, 0, &p, true);
		fate = dp_conn_vm_general(w, &p, &k, dp_flow_hash(w->flows, &k), NULL, &fp);
		/* a bare SYN goes on, but to a resolver: modulated there (dp_dns_tcp_mod.h) */
		assert_true(dp_fate_eq(fate, i % 2 || t[i / 2].tls == DP_TLS_DNS ?
		    dp_fate(DP_FATE_STREAM) : dp_fate_egress(DP_ALLOWED)));
		assert_non_null(fp);
		assert_int_equal(fp->tls, t[i / 2].tls);
		dp_flow_close(w->flows, fp);
	}
}

/* The slot of the VM named name. */
static uint16_t
t_slot(const char *name)
{
	for (uint16_t i = 0; i < w->gen->nvms; i++)
		if (w->gen->vms[i].present && strcmp(w->gen->vms[i].name, name) == 0)
			return i;
	fail_msg("no VM %s", name);
	return 0;
}

/*
 * A SYN to an address its VM's policy allows opens on that ground, in either family, and
 * one to an address it does not is refused. The generation says which families a VM's
 * policy has address patterns of, and a SYN to another family asks no address match: a
 * generation that said it wrong would refuse the first ones.
 */
static void
test_syn_by_address(void **state)
{
	static const struct {
		const char *vm;
		uint8_t family;
		uint8_t dst[16];
		bool allowed;
	} t[] = {
		{ "agent1", 4, { 203, 0, 113, 5 }, true },
		{ "agent1", 4, { 203, 0, 113, 6 }, false },
		{ "agent1", 6, { 0x20, 0x01, 0x0d, 0xb8, [15] = 5 }, false },
		{ "agent2", 6, { 0x20, 0x01, 0x0d, 0xb8, [15] = 5 }, true },
		{ "agent2", 6, { 0x20, 0x01, 0x0d, 0xb9, [15] = 5 }, false },
		{ "agent2", 4, { 203, 0, 113, 5 }, false },
	};

	(void)state;
	assert_int_equal(w->gen->vms[t_slot("agent1")].addrs, dp_vm_addrs_bit(4));
	assert_int_equal(w->gen->vms[t_slot("agent2")].addrs, dp_vm_addrs_bit(6));
	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint16_t vm = t_slot(t[i].vm);
		struct pkt p = { .family = t[i].family, .proto = PKT_PROTO_TCP,
			.sport = (uint16_t)(43000 + i), .dport = 443, .tcp_flags = PKT_TCP_SYN,
			.seq = 77, .tcp_wscale = PKT_WSCALE_NONE };
		struct dp_flow_key k;
		struct dp_flow *fp = NULL;
		struct dp_fate fate;

		memcpy(p.dst, t[i].dst, sizeof(p.dst));
		dp_conn_key(&k, vm, &p, true);
		fate = dp_conn_vm_general(w, &p, &k, dp_flow_hash(w->flows, &k), NULL, &fp);
		if (!t[i].allowed) {
			assert_null(fp);
			assert_int_equal(fate.why, DP_REASON_NO_BINDING);
			continue;
		}
		assert_true(dp_fate_eq(fate, dp_fate_egress(DP_ALLOWED)));
		assert_non_null(fp);
		assert_int_equal(fp->how, DP_ADMIT_ADDR);
		dp_flow_close(w->flows, fp);
	}
}

/* VM vm's SYN from sport to dst:443: its fate, and its flow in *fp (NULL: none opened). */
static struct dp_fate
t_syn(uint16_t vm, uint16_t sport, const uint8_t *dst, struct dp_flow **fp)
{
	struct pkt p = { .family = 4, .proto = PKT_PROTO_TCP, .sport = sport, .dport = 443,
		.tcp_flags = PKT_TCP_SYN, .seq = 77, .tcp_wscale = PKT_WSCALE_NONE };
	struct dp_flow_key k;

	memcpy(p.dst, dst, 4);
	dp_conn_key(&k, vm, &p, true);
	*fp = NULL;
	return dp_conn_vm_general(w, &p, &k, dp_flow_hash(w->flows, &k), NULL, fp);
}

/* name bound to dst for VM vm as its DNS answer binds it: its ports and its budget. */
static uint8_t
t_bind(uint16_t vm, const char *name, const uint8_t *dst)
{
	struct pol_addr a = { .family = 4 };
	struct pol_ports ports;

	memcpy(a.a, dst, 4);
	assert_true(pol_match_name_ports(w->gen->set, w->gen->vms[vm].policy, name,
	    strlen(name), &ports));
	ports.budget = dp_budget_of_name(w->gen, vm, name, strlen(name));
	assert_int_equal(dp_bind_learn(w->ctx->binds, vm, &a, dp_name_hash(name, strlen(name)),
	    &ports, w->gen->id, w->now + 300, 1024), 0);
	return ports.budget;
}

/*
 * A SYN admitted by a binding keeps what the lookup found: the name that allowed it, and
 * the budgets its bytes count in, by which a spent one refuses the next connection. For a
 * VM without budgets (the common pass) and one with (each name's budget read).
 */
static void
test_syn_by_binding(void **state)
{
	static const uint8_t a[4] = { 198, 51, 100, 21 }, b[4] = { 198, 51, 100, 22 };
	uint16_t vm1 = t_slot("agent1"), vm3 = t_slot("agent3");
	struct dp_budget_cell *cell;
	struct dp_flow *fp;
	uint8_t budget;

	(void)state;
	assert_int_equal(t_bind(vm1, "a.example", a), 0);
	assert_true(dp_fate_eq(t_syn(vm1, 44000, a, &fp), dp_fate_egress(DP_ALLOWED)));
	assert_non_null(fp);
	assert_int_equal(fp->how, DP_ADMIT_BINDING);
	assert_int_equal(fp->name_hash, dp_name_hash("a.example", 9));
	assert_int_equal(fp->budgets, 0);
	dp_flow_close(w->flows, fp);
	assert_int_not_equal(budget = t_bind(vm3, "b.example", b), 0);
	assert_true(dp_fate_eq(t_syn(vm3, 44001, b, &fp), dp_fate_egress(DP_ALLOWED)));
	assert_non_null(fp);
	assert_int_equal(fp->how, DP_ADMIT_BINDING);
	assert_int_equal(fp->name_hash, dp_name_hash("b.example", 9));
	assert_int_equal(fp->budgets, dp_budget_bit(budget));
	dp_flow_close(w->flows, fp);
	/* the budget spent in this window: the next SYN through it is refused */
	cell = dp_budget_cell_of(w, vm3, budget - 1u);
	atomic_store(&cell->allow, DP_BUDGET_PUBLISHED);
	assert_int_equal(t_syn(vm3, 44002, b, &fp).why, DP_REASON_BUDGET);
	assert_null(fp);
	atomic_store(&cell->allow, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syn_fate),
		cmocka_unit_test(test_syn_by_address),
		cmocka_unit_test(test_syn_by_binding),
	};

	return dpf_run("test_dp_conn_open", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
