/*
 * What a flow aging closes leaves behind, through the real worker (dp_ctx_setup on
 * net_null ports, a flow log on): the HA peer hears the end of a flow it was told of and
 * nothing of one it never was; the flow log has every closed flow's final record. Most
 * flows need neither, so the worker asks before it does anything (dp_worker_closed()):
 * each half of that question left out fails one half here. Without a flow log the worker
 * keeps no account; with one, each flow's starts afresh and says how it ended.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "api/dp_api.h"
#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_evt.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "sni/pkt.h"

/* One VM, allowed to its server by address; the flow log on, though it writes nowhere. */
static const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_flows: 1024,\n"
	"  max_flows_per_vm: 256, max_bindings: 256}\n"
	"slow_path: {enabled: false}\n"
	"flow_log: /dev/null\n"
	"resolvers: [10.88.0.1]\n"
	"policies: {app: {allow: [\"192.0.2.0/24:9443\"]}}\n"
	"vms: [{name: vm1, mac: \"02:00:00:00:00:07\", ipv4: 10.88.0.7, policy: app}]\n";

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/* A TCP segment between vm1's port sport and 192.0.2.9:9443, from the VM or toward it. */
static void
t_tcp(bool from_vm, uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 7 };
	static const uint8_t vm_ip[4] = { 10, 88, 0, 7 }, peer[4] = { 192, 0, 2, 9 };
	struct rte_mbuf *m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = from_vm ? vm : gw,
	    .dmac = from_vm ? gw : vm, .sip = from_vm ? vm_ip : peer,
	    .dip = from_vm ? peer : vm_ip, .sport = from_vm ? sport : 9443,
	    .dport = from_vm ? 9443 : sport, .seq = seq, .ack = ack, .flags = flags });

	if (from_vm)
		dp_burst_vm(w, &m, 1);
	else
		dp_burst_uplink(w, &m, 1);
	dp_tx_flush(w);
}

/* A connection from port both ends opened (its verdict final), or the VM's SYN alone. */
static void
t_open(uint16_t port, bool answered)
{
	t_tcp(true, port, 1000, 0, PKT_TCP_SYN);
	if (answered)
		t_tcp(false, port, 7000, 1001, PKT_TCP_SYN | PKT_TCP_ACK);
}

/* Every flow aged out: idle past any timeout. */
static void
t_age_all(void)
{
	dp_flows_age(w->flows, w->now + 2 * 3600, dp_flows_cap(w->flows), NULL, w->gen, NULL,
	    NULL);
	assert_int_equal(dp_flows_count(w->flows, 0), 0);
}

/* The events the worker left of type, their VM ports in *port (the last one's). */
static unsigned int
t_events(uint16_t type, uint16_t *port)
{
	static struct dp_evt out[64];
	unsigned int n = dp_evt_drain(w, out, 64), k = 0;

	for (unsigned int i = 0; i < n; i++)
		if (out[i].type == type) {
			*port = out[i].flow.vm_port;
			k++;
		}
	return k;
}

/* The flow log's final records on the ring, emptied, their VM ports in *port (the last). */
static unsigned int
t_final_records(uint16_t *port)
{
	struct dp_flow_rec r;
	unsigned int k = 0;

	while (rte_ring_dequeue_elem(w->flow_recs, &r, sizeof(r)) == 0)
		if (r.final) {
			*port = r.vm_port;
			k++;
		}
	return k;
}

static struct rte_ring *t_recs;

/* An HA pair, and no flow log. */
static int
t_ha_alone(void **state)
{
	(void)state;
	t_recs = w->flow_recs;
	w->flow_recs = NULL;
	ctx.ha = true;
	return 0;
}

/* The flow log back, no HA pair, and whatever a failed test left open gone. */
static int
t_log_alone(void **state)
{
	(void)state;
	w->flow_recs = t_recs;
	ctx.ha = false;
	dp_flows_age(w->flows, w->now + 2 * 3600, dp_flows_cap(w->flows), NULL, w->gen, NULL,
	    NULL);
	return 0;
}

/* No flow log: a flow the peer was told of ends to it once it ages out; one it was not, not. */
static void
test_aged_end_to_the_peer(void **state)
{
	uint16_t port = 0;

	(void)state;
	t_open(40100, true);
	t_open(40101, false);
	assert_int_equal(t_events(DP_EVT_FLOW, &port), 1);
	assert_int_equal(port, 40100);
	t_age_all();
	assert_int_equal(t_events(DP_EVT_FLOW_END, &port), 1);
	assert_int_equal(port, 40100);
}

/* No HA peer: the flow log has each aged flow's final record. */
static void
test_aged_record_to_the_log(void **state)
{
	uint16_t port = 0;

	(void)state;
	t_open(40200, true);
	assert_int_equal(t_final_records(&port), 0);
	t_age_all();
	assert_int_equal(t_final_records(&port), 1);
	assert_int_equal(port, 40200);
	assert_int_equal(t_events(DP_EVT_FLOW_END, &port), 0);
}

/*
 * Every flow aged out, and the flow log's last final record (the ring emptied after it):
 * the flow of port, ended as end, with these packets from the VM and toward it.
 */
static void
t_aged_as(uint16_t port, uint8_t end, uint64_t out, uint64_t in)
{
	struct dp_flow_rec r, last = { .final = 0 };

	t_age_all();
	while (rte_ring_dequeue_elem(w->flow_recs, &r, sizeof(r)) == 0)
		if (r.final)
			last = r;
	assert_true(last.final);
	assert_int_equal(last.vm_port, port);
	assert_int_equal(last.end, end);
	assert_int_equal(last.packets_out, out);
	assert_int_equal(last.packets_in, in);
}

/*
 * No HA peer: a flow that a FIN from each side closed ends as "fin", counted both ways;
 * the next flow, in the entry the first left (the table hands the last freed out first),
 * starts an account of its own: not the first's FIN, nor its counts.
 */
static void
test_fin_then_fresh_account(void **state)
{
	(void)state;
	t_open(40300, true);
	t_tcp(true, 40300, 1001, 7001, PKT_TCP_ACK | PKT_TCP_FIN);
	t_tcp(false, 40300, 7001, 1002, PKT_TCP_ACK | PKT_TCP_FIN);
	t_aged_as(40300, DP_FLOW_END_FIN, 2, 2);
	t_open(40301, false);
	t_aged_as(40301, DP_FLOW_END_IDLE, 1, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_aged_end_to_the_peer, t_ha_alone, t_log_alone),
		cmocka_unit_test(test_aged_record_to_the_log),
		cmocka_unit_test(test_fin_then_fresh_account),
	};

	return dpf_run("test_dp_flow_closed", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
