/*
 * The HA pair's flows through the real worker (dp_ctx_setup on net_null ports, ha: on):
 * a TCP flow is reported to the main lcore once both ends opened it (its verdict final:
 * allowed by its address), with its sequence state, again as aging passes it once its last
 * report is DP_HA_REFRESH_SECONDS old, and its end once; after a takeover a
 * mid-stream segment with no flow adopts the record the peer reported, from the VM or from
 * the uplink, and goes on; without a record, or with one the policy in force no longer
 * allows, it opens nothing and leaves nothing, counted by reason; and a box without ha:
 * never looks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rte_mbuf.h>

#include "api/dp_api.h"
#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_evt.h"
#include "dp_flow.h"
#include "dp_ha_adopt.h"
#include "dp_ha_flows.h"
#include "dp_out.h"
#include "dp_run.h"
#include "sni/pkt.h"

static const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024,\n"
	"  max_flows: 4096, max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies:\n"
	"  web: {allow: [\"198.51.100.0/24:8080\"]}\n"
	"vms:\n"
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n";

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
static const uint8_t vm_ip[4] = { 10, 77, 0, 11 };

/* A TCP segment between agent1's port sport and peer:8080, from the VM or toward it. */
static struct rte_mbuf *
t_tcp(bool from_vm, uint16_t sport, const uint8_t *peer, uint32_t seq, uint32_t ack,
    uint8_t flags)
{
	return dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = from_vm ? vm : gw,
	    .dmac = from_vm ? gw : vm, .sip = from_vm ? vm_ip : peer, .dip = from_vm ? peer :
	    vm_ip, .sport = from_vm ? sport : 8080, .dport = from_vm ? 8080 : sport,
	    .seq = seq, .ack = ack, .flags = flags, .payload = "data", .len = 4 });
}

static struct dp_flow_key
t_key(uint16_t sport, const uint8_t *peer)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = sport,
		.peer_port = 8080 };

	memcpy(k.peer, peer, 4);
	return k;
}

/* The peer's record of the connection, as the main lcore installs it. */
static void
t_record(uint16_t sport, const uint8_t *peer)
{
	struct dp_ha_flow r = { .key = t_key(sport, peer), .how = DP_ADMIT_ADDR, .isn = 1001,
		.vm_nxt = 5001, .peer_ack = 5001, .peer_wnd = 65535, .peer_isn = 9001,
		.expires = UINT64_MAX };

	assert_int_equal(dp_ha_flows_put(ctx.ha_flows, &r), 0);
}

/* What left by port since the last call, and the queues emptied. */
static unsigned int
t_sent(unsigned int port)
{
	unsigned int n = w->tx[port].n;

	dp_tx_flush(w);
	return n;
}

/* The next event the worker left for the main lcore of type (FLOW, FLOW_END), or NULL. */
static const struct dp_evt *
t_evt(uint16_t type)
{
	static struct dp_evt out[64];
	unsigned int n = dp_evt_drain(w, out, 64);

	for (unsigned int i = 0; i < n; i++)
		if (out[i].type == type)
			return &out[i];
	return NULL;
}

static const uint8_t allowed[4] = { 198, 51, 100, 7 }, other[4] = { 198, 51, 100, 8 };

static void
test_final_flow_reported(void **state)
{
	struct rte_mbuf *m = t_tcp(true, 40000, allowed, 1000, 0, PKT_TCP_SYN);
	struct dp_flow_key k = t_key(40000, allowed);
	const struct dp_evt *e;
	struct dp_flow *f;

	(void)state;
	dp_burst_vm(w, &m, 1);
	assert_null(t_evt(DP_EVT_FLOW));	/* the SYN alone: not final */
	m = t_tcp(false, 40000, allowed, 7000, 1001, PKT_TCP_SYN | PKT_TCP_ACK);
	dp_burst_uplink(w, &m, 1);
	assert_non_null(e = t_evt(DP_EVT_FLOW));
	assert_int_equal(e->flow.vm_port, 40000);
	assert_int_equal(e->port, 8080);
	assert_memory_equal(e->addr, allowed, 4);
	assert_int_equal(e->flow.isn, 1001);
	assert_int_equal(e->flow.peer_isn, 7001);
	assert_int_equal(e->flow.how, DP_ADMIT_ADDR);
	/* aging passes it: nothing until its report is old, then again, as it is now */
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	dp_flows_age(w->flows, w->now, dp_flows_cap(w->flows), NULL, w->gen, NULL, NULL);
	assert_null(t_evt(DP_EVT_FLOW));
	f->ha_at = (uint32_t)(w->now - DP_HA_REFRESH_SECONDS);
	f->vm_nxt = 1234;
	dp_flows_age(w->flows, w->now, dp_flows_cap(w->flows), NULL, w->gen, NULL, NULL);
	assert_non_null(e = t_evt(DP_EVT_FLOW));
	assert_int_equal(e->flow.vm_nxt, 1234);
	f->vm_nxt = 1001;
	m = t_tcp(true, 40000, allowed, 1001, 7001, PKT_TCP_FIN | PKT_TCP_ACK);
	dp_burst_vm(w, &m, 1);
	assert_non_null(t_evt(DP_EVT_FLOW_END));
	m = t_tcp(false, 40000, allowed, 7001, 1002, PKT_TCP_FIN | PKT_TCP_ACK);
	dp_burst_uplink(w, &m, 1);
	assert_null(t_evt(DP_EVT_FLOW_END));	/* its end once */
	t_sent(DP_PORT_UPLINK);
	t_sent(DP_PORT_VM);
}

static void
test_adopts_from_the_vm(void **state)
{
	struct rte_mbuf *m = t_tcp(true, 41000, allowed, 5001, 9001, PKT_TCP_ACK | PKT_TCP_PSH);
	struct dp_flow_key k = t_key(41000, allowed);
	uint64_t adopted = w->ha_adopted;
	struct dp_flow *f;

	(void)state;
	t_record(41000, allowed);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(DP_PORT_UPLINK), 1);
	assert_int_equal(w->ha_adopted, adopted + 1);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->state, DP_FLOW_ESTABLISHED);
	assert_int_equal(f->isn, 1001);
	assert_int_equal(f->vm_nxt, 5005);	/* the record's, moved by the segment */
	assert_int_equal(f->ha, DP_FLOW_HA_SYNCED);
	assert_non_null(t_evt(DP_EVT_FLOW));	/* now this box's: reported as it is */
}

static void
test_adopts_from_the_uplink(void **state)
{
	struct rte_mbuf *m = t_tcp(false, 42000, allowed, 9001, 5001, PKT_TCP_ACK | PKT_TCP_PSH);
	struct dp_flow_key k = t_key(42000, allowed);

	(void)state;
	t_record(42000, allowed);
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(t_sent(DP_PORT_VM), 1);
	assert_non_null(dp_flow_lookup(w->flows, &k));
}

static void
test_no_record_opens_nothing(void **state)
{
	struct rte_mbuf *m = t_tcp(true, 43000, allowed, 5001, 9001, PKT_TCP_ACK | PKT_TCP_PSH);
	struct dp_flow_key k = t_key(43000, allowed);
	uint64_t refused = w->ha_refused[DP_HA_REFUSE_NO_RECORD];

	(void)state;
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(DP_PORT_UPLINK), 0);
	assert_null(dp_flow_lookup(w->flows, &k));
	m = t_tcp(false, 43000, allowed, 9001, 5001, PKT_TCP_ACK | PKT_TCP_PSH);
	dp_burst_uplink(w, &m, 1);
	assert_int_equal(t_sent(DP_PORT_VM), 0);
	assert_null(dp_flow_lookup(w->flows, &k));
	assert_int_equal(w->ha_refused[DP_HA_REFUSE_NO_RECORD], refused + 2);
	t_sent(DP_PORT_UPLINK);		/* the RST the uplink's ACK is answered with */
}

static void
test_record_the_policy_refuses(void **state)
{
	static const uint8_t denied[4] = { 203, 0, 113, 9 };
	struct rte_mbuf *m = t_tcp(true, 44000, denied, 5001, 9001, PKT_TCP_ACK | PKT_TCP_PSH);
	struct dp_flow_key k = t_key(44000, denied);
	uint64_t refused = w->ha_refused[DP_HA_REFUSE_POLICY];

	(void)state;
	t_record(44000, denied);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(t_sent(DP_PORT_UPLINK), 0);
	assert_null(dp_flow_lookup(w->flows, &k));
	assert_int_equal(w->ha_refused[DP_HA_REFUSE_POLICY], refused + 1);
	t_sent(DP_PORT_VM);
}

static void
test_without_ha_no_lookup(void **state)
{
	struct rte_mbuf *m = t_tcp(true, 45000, other, 5001, 9001, PKT_TCP_ACK | PKT_TCP_PSH);
	struct dp_flow_key k = t_key(45000, other);
	uint64_t refused = w->ha_refused[DP_HA_REFUSE_NO_RECORD];

	(void)state;
	t_record(45000, other);
	ctx.ha = false;
	dp_burst_vm(w, &m, 1);
	ctx.ha = true;
	assert_int_equal(t_sent(DP_PORT_UPLINK), 0);
	assert_null(dp_flow_lookup(w->flows, &k));
	assert_int_equal(w->ha_refused[DP_HA_REFUSE_NO_RECORD], refused);
	t_sent(DP_PORT_VM);
}

static int
t_setup(void **state)
{
	(void)state;
	ctx.ha = true;
	ctx.ha_flows = dp_ha_flows_create(64, 16, ctx.max_vms, SOCKET_ID_ANY);
	return ctx.ha_flows != NULL ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_final_flow_reported, t_setup),
		cmocka_unit_test(test_adopts_from_the_vm),
		cmocka_unit_test(test_adopts_from_the_uplink),
		cmocka_unit_test(test_no_record_opens_nothing),
		cmocka_unit_test(test_record_the_policy_refuses),
		cmocka_unit_test(test_without_ha_no_lookup),
	};

	return dpf_run("test_dp_ha_adopt", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
