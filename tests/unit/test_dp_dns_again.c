/*
 * A VM's query for the name its last query asked (the AAAA after the A), through the real
 * worker on net_null ports: the last one's judgement stands for it (dp_pending_again())
 * only while that query is in flight, from the same VM, for the same name, in the shape
 * every query must have, under the generation that judged it, and when nothing was
 * counted for it (a wildcard's budget counts each question).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <rte_mbuf.h>

#include "ctl_names.h"
#include "dns_builder.h"
#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_dns_budget.h"
#include "dp_evt.h"
#include "dp_out.h"
#include "dp_run.h"
#include "policy/load.h"
#include "sni/dns.h"
#include "sni/pkt.h"

#define T_HEAD \
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024,\n" \
	"  max_flows: 4096, max_flows_per_vm: 1024}\n" \
	"slow_path: {enabled: false}\n" \
	"resolvers: [10.77.0.1]\n"
#define T_VMS \
	"vms:\n" \
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: one}\n" \
	"  - {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: two}\n"
/* agent1 may ask for a, p and w.example.com; agent2 for q.example.com */
#define T_CONFIG \
	T_HEAD "policies:\n" \
	"  one: {allow: [a.example.com, p.example.com, w.example.com]}\n" \
	"  two: {allow: [q.example.com]}\n" T_VMS

#define T_TYPE_A	1
#define T_TYPE_AAAA	28
#define T_CLASS_IN	1
#define T_CLASS_CH	3

static const uint8_t t_vm_mac[2][6] = { { 2, 0, 0, 0, 0, 1 }, { 2, 0, 0, 0, 0, 2 } };
static const uint8_t t_vm_ip[2][4] = { { 10, 77, 0, 11 }, { 10, 77, 0, 12 } };
static const uint8_t t_res_mac[6] = { 2, 0, 0, 0, 0, 0xfe }, t_res_ip[4] = { 10, 77, 0, 1 };

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/*
 * VM slot vm asks label.example.com (qtype, qclass): the ID namegate gave the query on its
 * way to the resolver (low 16 bits) and the port it sent it from (the 16 above), or -1
 * when it did not go (the VM got the refusal).
 */
static long
t_ask(unsigned int vm, const char *label, uint16_t qtype, uint16_t qclass)
{
	struct mb d = { .len = 0 };
	struct dp_txbuf *t = &w->tx[DP_PORT_UPLINK];
	struct pkt p;
	long id;

	mb_query(&d, 0x1234, label, strlen(label));
	d.b[d.len - 4] = (uint8_t)(qtype >> 8);		/* the question's type and class */
	d.b[d.len - 3] = (uint8_t)qtype;
	d.b[d.len - 2] = (uint8_t)(qclass >> 8);
	d.b[d.len - 1] = (uint8_t)qclass;
	dp_pipeline_vm(w, dpf_udp4(&ctx, t_vm_mac[vm], t_res_mac, t_vm_ip[vm], t_res_ip, 40000, 53,
	    &d));
	if (t->n == 0) {
		assert_int_equal(w->tx[DP_PORT_VM].n, 1);	/* the refusal */
		dp_tx_flush(w);
		return -1;
	}
	assert_int_equal(t->n, 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	assert_int_equal(pkt_decode(rte_pktmbuf_mtod(t->pkts[0], const uint8_t *),
	    rte_pktmbuf_data_len(t->pkts[0]), &p), PKT_OK);
	id = (long)p.sport << 16 | p.payload[0] << 8 | p.payload[1];
	dp_tx_flush(w);			/* net_null takes it */
	return id;
}

static long
t_ask_a(unsigned int vm, const char *label)
{
	return t_ask(vm, label, T_TYPE_A, T_CLASS_IN);
}

/*
 * The resolver answers VM slot vm's query id (t_ask()'s) for label.example.com of qtype
 * (A or AAAA) with one address of that type.
 */
static void
t_answer(unsigned int vm, long id, const char *label, uint16_t qtype)
{
	static const uint8_t addr[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	struct mb d = { .len = 0 };

	assert_true(id >= 0);
	mb_u16(&d, (unsigned int)(id & 0xffff));
	mb_u16(&d, 0x8180);
	mb_u16(&d, 1);
	mb_u16(&d, 1);
	mb_u16(&d, 0);
	mb_u16(&d, 0);
	mb_question(&d, label, strlen(label));
	d.b[d.len - 3] = (uint8_t)qtype;
	mb_u16(&d, 0xc00c);
	mb_u16(&d, qtype);
	mb_u16(&d, 1);
	mb_u32(&d, 600);
	mb_u16(&d, qtype == T_TYPE_A ? 4 : 16);
	mb_bytes(&d, qtype == T_TYPE_A ? (const uint8_t[]){ 203, 0, 113, 1 } : addr,
	    qtype == T_TYPE_A ? 4 : 16);
	dp_pipeline_uplink(w, dpf_udp4(&ctx, t_res_mac, t_vm_mac[vm], t_res_ip, t_vm_ip[vm], 53,
	    (uint16_t)(id >> 16), &d));
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
}

static void
t_drain(void)
{
	static struct dp_evt out[256];

	while (dp_evt_drain(w, out, 256) > 0)
		;
}

/* The A and the AAAA of an allowed name go, and the AAAA's answer binds the name. */
static void
test_again_goes_and_binds(void **state)
{
	static struct dp_evt out[8];
	uint64_t allowed = w->vm_stats[0].dns_allowed;
	long id;

	(void)state;
	t_drain();
	assert_true(t_ask_a(0, "a") >= 0);
	id = t_ask(0, "a", T_TYPE_AAAA, T_CLASS_IN);
	assert_int_equal(w->vm_stats[0].dns_allowed, allowed + 2);
	t_answer(0, id, "a", T_TYPE_AAAA);
	assert_int_equal(dp_evt_drain(w, out, 8), 1);
	assert_int_equal(out[0].type, DP_EVT_BIND);
	assert_int_equal(out[0].family, 6);
	assert_int_equal(out[0].name_len, strlen("a.example.com"));
	assert_memory_equal(out[0].name, "a.example.com", strlen("a.example.com"));
	assert_int_equal(out[0].gen, w->gen->id);
	assert_true(out[0].ports.all);
}

/* The same name in a question of class CH: refused, whatever the A before it was. */
static void
test_again_keeps_the_shape(void **state)
{
	uint64_t blocked = w->vm_stats[0].dns_blocked;

	(void)state;
	assert_true(t_ask_a(0, "w") >= 0);
	assert_int_equal(t_ask(0, "w", T_TYPE_A, T_CLASS_CH), -1);
	assert_int_equal(w->vm_stats[0].dns_blocked, blocked + 1);
}

/* Another name after an allowed one is judged as itself. */
static void
test_again_only_the_same_name(void **state)
{
	(void)state;
	assert_true(t_ask_a(0, "a") >= 0);
	assert_int_equal(t_ask_a(0, "q"), -1);		/* agent2's, not agent1's */
	assert_true(t_ask_a(0, "a") >= 0);
	assert_int_equal(t_ask_a(0, "ab"), -1);
}

/*
 * The entry of agent1's last query, answered, holds agent2's query for a name agent2 may
 * ask for and agent1 may not: agent1 asking for it is refused.
 */
static void
test_again_only_the_same_vm(void **state)
{
	long id;

	(void)state;
	id = t_ask_a(0, "p");
	t_answer(0, id, "p", T_TYPE_A);		/* its entry is the next one taken */
	assert_true(t_ask_a(1, "q") >= 0);
	assert_int_equal(t_ask_a(0, "q"), -1);
}

/* A reload that denies the name: its next question is refused, though the A went. */
static void
test_again_not_across_generations(void **state)
{
	struct pol_config *next = dpf_load(T_HEAD "policies:\n"
	    "  one: {allow: [p.example.com]}\n"
	    "  two: {allow: [q.example.com]}\n" T_VMS);
	struct ctl_names *names = ctl_names_create(64, 8);

	(void)state;
	assert_non_null(names);
	assert_true(t_ask_a(0, "w") >= 0);
	assert_int_equal(dpf_publish(&ctx, w, next, names), 0);
	assert_int_equal(t_ask(0, "w", T_TYPE_AAAA, T_CLASS_IN), -1);
	ctl_names_free(names);	/* next stays: the generation holds it until the end */
}

/*
 * Under a wildcard with a budget of new questions each question of a name is counted,
 * its type the VM's choice: the name asked with one type too many is refused.
 */
static void
test_again_counts_the_budget(void **state)
{
	struct pol_config *next = dpf_load(T_HEAD "policies:\n"
	    "  one: {allow: [\"*.example.com\"]}\n"
	    "  two: {allow: [q.example.com]}\n" T_VMS
	    "dns: {max_names_per_suffix: {count: 8, per: 1h}}\n");
	struct ctl_names *names = ctl_names_create(64, 8);
	uint64_t budget = w->vm_stats[0].blocked[DP_REASON_DNS_BUDGET];
	uint32_t n;

	(void)state;
	assert_non_null(names);
	assert_int_equal(dpf_publish(&ctx, w, next, names), 0);
	n = w->gen->names_per_suffix;
	assert_true(n > 0 && n < 100);
	dp_name_budget_forget(w->name_budget, 0);
	for (uint32_t i = 0; i < n; i++)
		assert_true(t_ask(0, "t", (uint16_t)(100 + i), T_CLASS_IN) >= 0);
	assert_int_equal(t_ask(0, "t", (uint16_t)(100 + n), T_CLASS_IN), -1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_DNS_BUDGET], budget + 1);
	ctl_names_free(names);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_again_goes_and_binds),
		cmocka_unit_test(test_again_keeps_the_shape),
		cmocka_unit_test(test_again_only_the_same_name),
		cmocka_unit_test(test_again_only_the_same_vm),
		/* last: new policies */
		cmocka_unit_test(test_again_not_across_generations),
		cmocka_unit_test(test_again_counts_the_budget),
	};

	return dpf_run("test_dp_dns_again", T_CONFIG, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
