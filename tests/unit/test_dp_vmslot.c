/*
 * dataplane/main/dp_vmslot: a slot a reload frees goes to a new VM only once everything of
 * the old VM is gone, and the new VM starts with none of it: no flows, bindings, counters,
 * budget cells, names or mirrored bindings. max_vms 2, so a third VM needs the freed slot.
 * The real dataplane (dp_ctx_fixture.h), this thread playing worker 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <rte_rcu_qsbr.h>

#include "ctl_mirror.h"
#include "ctl_names.h"
#include "dns_builder.h"
#include "dp.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "dp_stats.h"
#include "dp_vmslot.h"
#include "policy/load.h"
#include "sni/frame.h"
#include "sni/pkt.h"

#define T_HEAD	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_vms: 2,\n" \
		"  max_bindings: 1024, max_flows: 4096, max_flows_per_vm: 1024}\n" \
		"slow_path: {enabled: false}\n" \
		"resolvers: [10.77.0.1]\n" \
		"policies:\n" \
		"  web: {allow: [\"198.51.100.0/24:8080\", pypi.org]}\n" \
		"vms:\n"
#define T_OLD	"  - {name: old, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n"
#define T_KEPT	"  - {name: kept, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: web}\n"
#define T_NEW	"  - {name: new, mac: \"02:00:00:00:00:03\", ipv4: 10.77.0.13, policy: web}\n"

static const char t_config[] = T_HEAD T_OLD T_KEPT;

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;

/* A SYN from the VM with mac's last byte and address 10.77.0.ip to 198.51.100.7:8080. */
static struct rte_mbuf *
t_syn(uint8_t mac, uint8_t ip, uint16_t sport)
{
	const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, mac };
	const uint8_t src[4] = { 10, 77, 0, ip }, dst[4] = { 198, 51, 100, 7 };
	struct mb f = { .len = 0 };

	dpf_eth_ipv4(&f, vm, gw, 6, src, dst, 20);
	mb_u16(&f, sport);
	mb_u16(&f, 8080);
	mb_u32(&f, 1000);
	mb_u32(&f, 0);
	mb_u8(&f, 5 << 4);
	mb_u8(&f, PKT_TCP_SYN);
	mb_u16(&f, 65535);
	mb_u32(&f, 0);			/* checksum, urgent pointer */
	frame_tcp_csum_set(f.b + 14, 4, f.b + 34, 20);
	return dpf_mbuf(&ctx, &f);
}


/* The main loop's second: the worker passed a quiescent point, then the slots' tick. */
static unsigned int
t_tick(const struct dp_vmslot_ctl *sc)
{
	rte_rcu_qsbr_quiescent(ctx.qsbr, 0);
	return dp_vmslots_tick(&ctx, sc);
}

static int
t_slot_of(const char *name)
{
	const struct dp_gen *g = atomic_load(&ctx.gen);

	for (uint16_t s = 0; s < g->nvms; s++)
		if (g->vms[s].present && strcmp(g->vms[s].name, name) == 0)
			return s;
	return -1;
}

static void
t_count_name(const char *name, void *arg)
{
	(void)name;
	++*(unsigned int *)arg;
}

static void
t_count_binding(const struct ctl_mirror_ent *e, void *arg)
{
	(void)e;
	++*(unsigned int *)arg;
}

static void
test_slot_reused_clean(void **state)
{
	struct pol_config *without = dpf_load(T_HEAD T_KEPT);
	struct pol_config *with_new = dpf_load(T_HEAD T_KEPT T_NEW);
	struct ctl_names *names = ctl_names_create(1024, 64), *tried = ctl_names_create(64, 8);
	struct ctl_mirror *mirror = ctl_mirror_create(1024, 1024);
	const struct dp_vmslot_ctl sc = { .names = names, .tried = tried, .mirror = mirror };
	const struct dp_vm_stats zero = { 0 };
	struct pol_addr addr = { .family = 4, .a = { 198, 51, 100, 9 } };
	struct pol_ports ports = { 0 };
	struct dp_evt_ports eports = { 0 };
	struct rte_mbuf *syn = t_syn(1, 11, 40000);
	struct dp_budget_cell *cell;
	unsigned int n = 0;
	uint32_t cursor = 0;
	const char *stored;
	int old;

	(void)state;
	assert_non_null(names);
	assert_non_null(tried);
	assert_non_null(mirror);
	assert_int_equal(old = t_slot_of("old"), 0);
	/* what the old VM leaves: a flow and its counters, a binding, names, a budget cell */
	dp_burst_vm(w, &syn, 1);
	dp_tx_flush(w);
	assert_int_equal(dp_flows_count(w->flows, 0), 1);
	assert_true(w->vm_stats[0].egress_pkts[DP_ALLOWED] > 0);
	assert_int_equal(dp_bind_learn(ctx.binds, 0, &addr, dp_name_hash("pypi.org", 8), &ports,
	    atomic_load(&ctx.gen)->id, w->now + 2, 100), 0);
	assert_int_equal(ctl_names_add(names, 0, "pypi.org", 8, &stored), 0);
	assert_int_equal(ctl_names_add(tried, 0, "evil.example", 12, NULL), 0);
	assert_int_equal(ctl_mirror_bind(mirror, 0, 4, addr.a, stored, w->now + 2,
	    atomic_load(&ctx.gen)->id, &eports), 0);
	cell = dp_budget_cell_of(w, 0, 0);
	cell->spent = 5;
	cell->epoch = 9;
	atomic_store(&cell->allow, DP_BUDGET_PUBLISHED | 100);

	/* the old VM removed: its slot drains, and a new VM cannot have it yet */
	assert_int_equal(dpf_publish(&ctx, w, without, names), 0);
	assert_int_equal(t_slot_of("kept"), 1);
	assert_int_equal(ctx.vmslots->state[0], DP_VMSLOT_DRAINING);
	for (int i = 0; i < 4; i++)
		assert_int_equal(t_tick(&sc), 0);	/* its flow and binding are there */
	assert_int_equal(dpf_publish(&ctx, w, with_new, names), -ENOMEM);
	assert_int_equal(t_slot_of("new"), -1);

	/* the flow ends (a sweep would end it: test_dp_flow): the binding still holds the slot */
	dp_flow_close(w->flows, dp_flow_lookup(w->flows, &(struct dp_flow_key){ .vm = 0,
	    .family = 4, .proto = 6, .vm_port = 40000, .peer_port = 8080,
	    .peer = { 198, 51, 100, 7 } }));
	for (int i = 0; i < 4; i++)
		assert_int_equal(t_tick(&sc), 0);
	assert_int_not_equal(ctx.vmslots->state[0], DP_VMSLOT_FREE);
	/* a sweep that is not told the generation keeps the binding till it expires */
	while (dp_binds_sweep(ctx.binds, w->now, NULL, 4096, &cursor) > 0 || cursor != 0)
		;
	assert_int_equal(dp_binds_count(ctx.binds, 0), 1);
	/*
	 * the main loop's sweep ends it though it has not expired (its VM is in no
	 * generation): found empty, a grace period, one more turn, and the slot is free
	 */
	while (dp_binds_sweep(ctx.binds, w->now, atomic_load(&ctx.gen), 4096, &cursor) > 0 ||
	    cursor != 0)
		;
	assert_int_equal(dp_binds_count(ctx.binds, 0), 0);
	assert_int_equal(t_tick(&sc), 0);		/* quiet: a grace period starts */
	assert_int_equal(t_tick(&sc), 0);		/* graced */
	assert_int_equal(t_tick(&sc), 1);		/* purged */
	assert_int_equal(ctx.vmslots->state[0], DP_VMSLOT_FREE);
	assert_int_equal(ctx.vmslots->draining, 0);

	/* the new VM gets the old one's slot, with nothing of it */
	assert_int_equal(dpf_publish(&ctx, w, with_new, names), 0);
	assert_int_equal(t_slot_of("new"), old);
	assert_int_equal(t_slot_of("kept"), 1);
	assert_int_equal(ctx.vmslots->state[0], DP_VMSLOT_LIVE);
	assert_memory_equal(&w->vm_stats[0], &zero, sizeof(zero));
	assert_int_equal(dp_stats_value(&ctx, DP_CNT_EGRESS_PACKETS, 0, DP_ALLOWED, 0), 0);
	assert_int_equal(dp_flows_count(w->flows, 0), 0);
	assert_int_equal(dp_binds_count(ctx.binds, 0), 0);
	assert_int_equal(atomic_load(&cell->allow), 0);
	assert_int_equal(cell->spent, 0);
	ctl_names_of(names, 0, t_count_name, &n);
	ctl_names_of(tried, 0, t_count_name, &n);
	ctl_mirror_walk(mirror, 0, w->now, t_count_binding, &n);
	assert_int_equal(n, 0);
	assert_int_equal(ctl_names_count(names), 0);
	/* a name the new VM resolves takes the forgotten entry, and is found */
	assert_int_equal(ctl_names_add(names, 0, "example.org", 11, NULL), 0);
	assert_int_equal(ctl_names_add(names, 0, "example.org", 11, NULL), 0);
	assert_int_equal(ctl_names_count(names), 1);
	/* the new VM's own frames count from zero */
	syn = t_syn(3, 13, 40001);
	dp_burst_vm(w, &syn, 1);
	dp_tx_flush(w);
	assert_int_equal(dp_flows_count(w->flows, 0), 1);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], 1);
	ctl_mirror_free(mirror);
	ctl_names_free(tried);
	ctl_names_free(names);
	/* the configurations outlive their generations: freed with the context */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_reused_clean),
	};

	return dpf_run("test_dp_vmslot", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
