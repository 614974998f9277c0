/*
 * The DNS answer path under back-pressure (dataplane/worker/dp_dns.c with dp_evt.c), through
 * the real worker on net_null ports: an answer whose bindings' events would not fit the
 * bind ring is dropped whole, counted (bind_queue_full, or vm_limit for a VM past its
 * share), binds nothing and never reaches the VM; asked again once there is room, it
 * binds, its events are queued, and it goes. And what it binds with: its query's
 * judgement of the name (struct dp_dns_judged), under the generation that made it only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ctl_names.h"
#include "dns_builder.h"
#include "dp.h"
#include "dp_bind.h"
#include "dp_ctx_fixture.h"
#include "dp_dns_budget.h"
#include "dp_evt.h"
#include "dp_burst.h"
#include "dp_dns_int.h"
#include "dp_out.h"
#include "dp_run.h"
#include "policy/load.h"
#include "sni/dns.h"
#include "sni/pkt.h"

#define T_CONFIG(pattern) \
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024,\n" \
	"  max_flows: 4096, max_flows_per_vm: 1024}\n" \
	"slow_path: {enabled: false}\n" \
	"resolvers: [10.77.0.1]\n" \
	"policies:\n" \
	"  web: {allow: [\"" pattern "\"]}\n" \
	"vms:\n" \
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n" \
	"  - {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: web}\n"

static const uint8_t t_vm_mac[6] = { 2, 0, 0, 0, 0, 1 }, t_res_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
static const uint8_t t_vm_ip[4] = { 10, 77, 0, 11 }, t_res_ip[4] = { 10, 77, 0, 1 };

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/* Ethernet, IPv4, UDP (no checksum: IPv4 allows it) around the DNS message d. */
static struct rte_mbuf *
t_frame(const uint8_t *smac, const uint8_t *dmac, const uint8_t *sip, const uint8_t *dip,
    uint16_t sport, uint16_t dport, const struct mb *d)
{
	return dpf_udp4(&ctx, smac, dmac, sip, dip, sport, dport, d);
}

/*
 * The VM asks label.example.com; the ID namegate gave the query on its way out (low 16
 * bits) and the port it sent it from (high 16), where its answer is to come.
 */
static uint32_t
t_ask(const char *label)
{
	struct mb d = { .len = 0 };
	struct dp_txbuf *t = &w->tx[DP_PORT_UPLINK];
	struct pkt p;
	uint32_t id;

	mb_query(&d, 0x1234, label, strlen(label));
	dp_pipeline_vm(w, t_frame(t_vm_mac, t_res_mac, t_vm_ip, t_res_ip, 40000, 53, &d));
	assert_int_equal(t->n, 1);
	assert_int_equal(pkt_decode(rte_pktmbuf_mtod(t->pkts[0], const uint8_t *),
	    rte_pktmbuf_data_len(t->pkts[0]), &p), PKT_OK);
	id = (uint32_t)p.sport << 16 | (uint32_t)(p.payload[0] << 8 | p.payload[1]);
	dp_tx_flush(w);			/* net_null takes it */
	return id;
}

/* The resolver answers query id (t_ask()'s) with naddrs A records, first (host order) on. */
static void
t_answer_at(uint32_t id, const char *label, unsigned int naddrs, uint32_t first)
{
	struct mb d = { .len = 0 };

	mb_u16(&d, id & 0xffff);
	mb_u16(&d, 0x8180);
	mb_u16(&d, 1);
	mb_u16(&d, naddrs);
	mb_u16(&d, 0);
	mb_u16(&d, 0);
	mb_question(&d, label, strlen(label));
	for (unsigned int i = 0; i < naddrs; i++) {
		mb_u16(&d, 0xc00c);
		mb_u16(&d, 1);
		mb_u16(&d, 1);
		mb_u32(&d, 600);
		mb_u16(&d, 4);
		mb_u32(&d, first + i);
	}
	dp_pipeline_uplink(w, t_frame(t_res_mac, t_vm_mac, t_res_ip, t_vm_ip, 53,
	    (uint16_t)(id >> 16), &d));
}

/* The resolver answers query id with naddrs A records, 203.0.113.1 on. */
static void
t_answer(uint32_t id, const char *label, unsigned int naddrs)
{
	t_answer_at(id, label, naddrs, 0xcb007101u);
}

/* Fill the bind ring with events of VM slot vm until fewer than left slots are free. */
static void
t_fill(uint16_t vm, unsigned int left)
{
	static const struct pol_ports every_port = { .any = true };
	struct pol_addr a = { .family = 4, .a = { 198, 18, 0, 1 } };

	while (rte_ring_free_count(w->bind_evts) > left)
		dp_evt_bind(w, vm, &a, "filler.example.com", 18, 600, 600, &every_port);
}

static unsigned int
t_drain(void)
{
	static struct dp_evt out[256];
	unsigned int n, total = 0;

	while ((n = dp_evt_drain(w, out, 256)) > 0)
		total += n;
	return total;
}

/* A full ring (another VM's events): the answer is refused, counted, binds nothing. */
static void
test_full_ring_refuses_the_answer(void **state)
{
	static const uint8_t zero[12];
	uint64_t vm_tx = w->port_pkts[DP_PORT_VM][1];
	struct dp_evt out[4];
	uint32_t id;

	(void)state;
	id = t_ask("a");
	t_fill(1, 0);
	t_answer(id, "a", 3);
	assert_int_equal(w->drops[DP_DROP_BIND_QUEUE_FULL], 1);
	assert_int_equal(dp_binds_count(ctx.binds, 0), 0);
	assert_int_equal(w->port_pkts[DP_PORT_VM][1], vm_tx);	/* the VM got nothing */
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	/* the main lcore takes the ring's events; asked again, the answer binds and goes */
	t_drain();
	id = t_ask("a");
	atomic_store(&ctx.main_asleep, true);	/* the answer's events wake it */
	t_answer(id, "a", 3);
	assert_false(atomic_load(&ctx.main_asleep));
	assert_int_equal(dp_binds_count(ctx.binds, 0), 3);
	assert_int_equal(rte_ring_count(w->bind_evts), 3);	/* one event per binding */
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
	assert_int_equal(w->drops[DP_DROP_BIND_QUEUE_FULL], 1);
	/* each event's IPv4 address, and nothing in the twelve bytes past it */
	assert_int_equal(dp_evt_drain(w, out, 4), 3);
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(out[i].family, 4);
		assert_memory_equal(out[i].addr + 4, zero, sizeof(zero));
	}
	assert_int_equal(t_drain(), 0);
}

/* A VM holding its share is charged with vm_limit; its neighbour still binds. */
static void
test_vm_share_charges_the_vm(void **state)
{
	unsigned int cap = rte_ring_get_capacity(w->bind_evts);
	uint64_t limited = w->vm_stats[0].blocked[DP_REASON_VM_LIMIT];
	uint64_t binds = dp_binds_count(ctx.binds, 0);
	uint32_t id;

	(void)state;
	id = t_ask("b");
	t_fill(0, cap / 2 + 2);		/* agent1 holds nearly half: 4 more would pass it */
	t_answer(id, "b", 4);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_VM_LIMIT], limited + 1);
	assert_int_equal(dp_binds_count(ctx.binds, 0), binds);
	assert_int_equal(w->tx[DP_PORT_VM].n, 0);
	/* a smaller answer fits agent1's share still */
	id = t_ask("c");
	t_answer(id, "c", 1);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_VM_LIMIT], limited + 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
	assert_int_equal(w->drops[DP_DROP_BIND_QUEUE_FULL], 1);	/* nothing else was lost */
	assert_int_equal(w->evt_dropped, 0);
	t_drain();
}

/* The one binding event queued since the last drain: for name under gen, opening ports. */
static void
t_bound(const char *name, uint32_t gen, bool all, uint16_t port)
{
	static struct dp_evt out[8];

	assert_int_equal(dp_evt_drain(w, out, 8), 1);
	assert_int_equal(out[0].type, DP_EVT_BIND);
	assert_int_equal(out[0].name_len, strlen(name));
	assert_memory_equal(out[0].name, name, strlen(name));
	assert_int_equal(out[0].gen, gen);
	assert_int_equal(out[0].ports.all, all);
	assert_int_equal(out[0].ports.n, all ? 0 : 1);
	if (!all)
		assert_int_equal(out[0].ports.port[0], port);
}

/* The answer binds the name its query judged: its text from the wire form, lower case. */
static void
test_answer_binds_the_judged_name(void **state)
{
	uint32_t id;

	(void)state;
	t_drain();
	id = t_ask("MiXeD");
	t_answer(id, "mixed", 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
	t_bound("mixed.example.com", w->gen->id, true, 0);
}

/*
 * The VM reads its question as it spelled it, whatever case the resolver's answer holds:
 * asked in lower case and answered in capitals, the capitals go (the shortcut past the
 * spelling, dp_dns_spelled(), must see them); asked in capitals, they come back.
 */
static void
test_answer_spelled_as_asked(void **state)
{
	static const char *const case_[][3] = {
		{ "spell", "SPELL", "spell" }, { "SpElL", "spell", "SpElL" },
		{ "spell", "spell", "spell" },
	};
	struct pkt p;

	(void)state;
	for (size_t i = 0; i < sizeof(case_) / sizeof(case_[0]); i++) {
		t_drain();
		t_answer(t_ask(case_[i][0]), case_[i][1], 1);
		assert_int_equal(w->tx[DP_PORT_VM].n, 1);
		assert_int_equal(pkt_decode(rte_pktmbuf_mtod(w->tx[DP_PORT_VM].pkts[0],
		    const uint8_t *), rte_pktmbuf_data_len(w->tx[DP_PORT_VM].pkts[0]), &p), PKT_OK);
		assert_memory_equal(p.payload + DNS_HDR_LEN + 1, case_[i][2], 5);
		dp_tx_flush(w);
	}
}

/*
 * A query leaves from a port of namegate's, drawn with its ID (RFC 5452 s9.2), never the
 * VM's: an answer to the VM's port, with the query's own ID even (an accomplice that knows
 * the port and tries every ID), finds no query and reaches no one; the answer to the port
 * the query left from goes back to the VM's port with the VM's ID.
 */
static void
test_query_leaves_from_a_drawn_port(void **state)
{
	uint32_t id, ports = 0;
	struct pkt p;

	(void)state;
	for (unsigned int i = 0; i < 4; i++) {
		t_drain();
		id = t_ask("port");
		assert_true(id >> 16 >= 1024);
		ports |= id ^ (t_ask("port") & 0xffff0000u);	/* two queries, two ports */
		t_answer_at((id & 0xffff) | 40000u << 16, "port", 1, 0xcb007101u);
		assert_int_equal(w->tx[DP_PORT_VM].n, 0);
		t_answer(id, "port", 1);
		assert_int_equal(w->tx[DP_PORT_VM].n, 1);
		assert_int_equal(pkt_decode(rte_pktmbuf_mtod(w->tx[DP_PORT_VM].pkts[0],
		    const uint8_t *), rte_pktmbuf_data_len(w->tx[DP_PORT_VM].pkts[0]), &p), PKT_OK);
		assert_int_equal(p.dport, 40000);
		assert_int_equal(p.sport, 53);
		assert_int_equal(p.payload[0] << 8 | p.payload[1], 0x1234);
		dp_tx_flush(w);
	}
	assert_true((ports >> 16) != 0);
}

/*
 * DP_PENDING_SAME_MAX queries of one question in flight go; the next is answered SERVFAIL
 * and charged to the VM (vm_limit), not forwarded: each one in flight is one more key a
 * forged answer may hit. One answered, one more goes.
 */
static void
test_same_question_in_flight_bounded(void **state)
{
	uint64_t limit = w->vm_stats[0].blocked[DP_REASON_VM_LIMIT];
	uint32_t id[DP_PENDING_SAME_MAX + 1];
	struct mb d = { .len = 0 };

	(void)state;
	t_drain();
	for (unsigned int i = 0; i < DP_PENDING_SAME_MAX; i++)
		id[i] = t_ask("same");
	mb_query(&d, 0x1234, "same", 4);
	dp_pipeline_vm(w, t_frame(t_vm_mac, t_res_mac, t_vm_ip, t_res_ip, 40000, 53, &d));
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	assert_int_equal(rte_pktmbuf_mtod(w->tx[DP_PORT_VM].pkts[0], const uint8_t *)[
	    rte_pktmbuf_data_len(w->tx[DP_PORT_VM].pkts[0]) - d.len + 3] & 0xf, 2);
	dp_tx_flush(w);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_VM_LIMIT], limit + 1);
	t_answer(id[0], "same", 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
	id[DP_PENDING_SAME_MAX] = t_ask("same");
	for (unsigned int i = 1; i <= DP_PENDING_SAME_MAX; i++) {
		t_answer(id[i], "same", 1);
		dp_tx_flush(w);
	}
	t_drain();
}

/*
 * An answer giving the resolver's own address, or a VM's, binds neither (one probe of the
 * generation's address index answers both, dp_gen_addr_kind()): counted as rebind, and the
 * answer goes without it; the address after each (no VM's) still binds.
 */
static void
test_answer_own_addresses_not_bound(void **state)
{
	static const uint32_t own[] = { 0x0a4d0001u, 0x0a4d000cu };	/* resolver, agent2 */
	uint64_t rebind = w->vm_stats[0].blocked[DP_REASON_REBIND];

	(void)state;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		uint64_t binds = dp_binds_count(ctx.binds, 0);
		uint32_t id;

		t_drain();
		id = t_ask("own");
		t_answer_at(id, "own", 2, own[i]);
		assert_int_equal(w->vm_stats[0].blocked[DP_REASON_REBIND], rebind + i + 1);
		assert_int_equal(dp_binds_count(ctx.binds, 0), binds + 1);
		assert_int_equal(w->tx[DP_PORT_VM].n, 1);
		dp_tx_flush(w);
	}
}

/*
 * A label no host name has ('.' or a NUL among its bytes) is refused unnamed, though its
 * text would read as a name the policy allows: the VM gets the refusal, the resolver
 * nothing.
 */
static void
test_query_label_not_a_hosts(void **state)
{
	static const char *const labels[] = { "a.b", "a\0b", "a b" };
	uint64_t blocked = w->vm_stats[0].dns_blocked;

	(void)state;
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		struct mb d = { .len = 0 };

		mb_query(&d, 0x1234, labels[i], 3);
		dp_pipeline_vm(w, t_frame(t_vm_mac, t_res_mac, t_vm_ip, t_res_ip, 40000, 53, &d));
		assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
		assert_int_equal(w->tx[DP_PORT_VM].n, 1);	/* the refusal */
		dp_tx_flush(w);
		assert_int_equal(w->vm_stats[0].dns_blocked, blocked + i + 1);
	}
}

/* A reload between query and answer: the answer binds under the new policy, not the old. */
static void
test_reload_between_query_and_answer(void **state)
{
	struct pol_config *next = dpf_load(T_CONFIG("*.example.com:8443"));
	struct ctl_names *names = ctl_names_create(64, 8);
	uint32_t before = w->gen->id;
	uint32_t id;

	(void)state;
	assert_non_null(names);
	t_drain();
	id = t_ask("d");
	assert_int_equal(dpf_publish(&ctx, w, next, names), 0);
	assert_int_not_equal(w->gen->id, before);
	t_answer(id, "d", 1);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);
	dp_tx_flush(w);
	t_bound("d.example.com", w->gen->id, false, 8443);
	ctl_names_free(names);	/* next stays: the generation holds it until the end */
}

/*
 * Under a budget of new names a suffix (this worker's share of it), a wildcard's next new
 * name past it is refused (dns_budget): the VM gets the refusal, the resolver nothing; a
 * name seen goes again, and so does an exact pattern's name, which is never counted.
 */
static void
test_budget_counts_wildcard_names(void **state)
{
	struct pol_config *next = dpf_load(T_CONFIG("*.example.com\", \"x.example.com")
	    "dns: {max_names_per_suffix: {count: 8, per: 1h}}\n");
	struct ctl_names *names = ctl_names_create(64, 8);
	uint64_t budget = w->vm_stats[0].blocked[DP_REASON_DNS_BUDGET];
	struct mb d = { .len = 0 };
	char label[16];

	(void)state;
	assert_non_null(names);
	assert_int_equal(dpf_publish(&ctx, w, next, names), 0);
	assert_true(w->gen->names_per_suffix > 0 && w->gen->names_per_suffix < 100);
	/* the names the tests before asked were counted under the default budget */
	dp_name_budget_forget(w->name_budget, 0);
	t_drain();
	/* each answered, so that no VM's share of the queries in flight is the limit */
	for (uint32_t i = 0; i <= w->gen->names_per_suffix; i++) {
		if (i < w->gen->names_per_suffix)
			snprintf(label, sizeof(label), "b%u", (unsigned int)i);
		else
			memcpy(label, "x", 2);	/* its exact pattern: not counted */
		t_answer(t_ask(label), label, 1);
		dp_tx_flush(w);
	}
	mb_query(&d, 0x1234, "new", 3);
	dp_pipeline_vm(w, t_frame(t_vm_mac, t_res_mac, t_vm_ip, t_res_ip, 40000, 53, &d));
	assert_int_equal(w->tx[DP_PORT_UPLINK].n, 0);
	assert_int_equal(w->tx[DP_PORT_VM].n, 1);	/* the refusal */
	dp_tx_flush(w);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_DNS_BUDGET], budget + 1);
	(void)t_ask("b0");	/* seen */
	ctl_names_free(names);	/* next stays: the generation holds it until the end */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_ring_refuses_the_answer),
		cmocka_unit_test(test_vm_share_charges_the_vm),
		cmocka_unit_test(test_answer_binds_the_judged_name),
		cmocka_unit_test(test_answer_spelled_as_asked),
		cmocka_unit_test(test_query_leaves_from_a_drawn_port),
		cmocka_unit_test(test_same_question_in_flight_bounded),
		cmocka_unit_test(test_query_label_not_a_hosts),
		cmocka_unit_test(test_answer_own_addresses_not_bound),
		/* last: new policies */
		cmocka_unit_test(test_reload_between_query_and_answer),
		cmocka_unit_test(test_budget_counts_wildcard_names),
	};

	return dpf_run("test_dp_dns_room", T_CONFIG("*.example.com"), &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
