/*
 * Telemetry callbacks run on DPDK's telemetry thread: they hold the generation lock, as a
 * metrics scrape does, while they read the VM table.
 */
#include <string.h>

#include <rte_telemetry.h>

#include "dp_bind.h"
#include "dp_control.h"
#include "dp_stats.h"
#include "dp_telemetry.h"

/* Telemetry callbacks take no argument: the one daemon's state. */
static struct dp_control *dp_tel;

static int
dp_tel_vm_slot(const struct dp_gen *g, const char *name)
{
	for (uint16_t i = 0; name != NULL && i < g->nvms; i++)
		if (g->vms[i].present && strcmp(g->vms[i].name, name) == 0)
			return i;
	return -1;
}

static int
dp_tel_vms(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct dp_gen *g;

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	pthread_mutex_lock(&dp_tel->gen_lock);
	g = atomic_load_explicit(&dp_tel->ctx->gen, memory_order_acquire);
	for (uint16_t i = 0; i < g->nvms; i++)
		if (g->vms[i].present)
			rte_tel_data_add_array_string(d, g->vms[i].name);
	pthread_mutex_unlock(&dp_tel->gen_lock);
	return 0;
}

static void
dp_tel_add(struct rte_tel_data *d, const char *prefix, const char *label, uint64_t v)
{
	char key[RTE_TEL_MAX_STRING_LEN];

	snprintf(key, sizeof(key), "%s%s", prefix, label);
	rte_tel_data_add_dict_u64(d, key, v);
}

static int
dp_tel_vm(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_vm_stats s;
	const struct dp_gen *g;
	int slot;

	(void)cmd;
	pthread_mutex_lock(&dp_tel->gen_lock);
	g = atomic_load_explicit(&dp_tel->ctx->gen, memory_order_acquire);
	if ((slot = dp_tel_vm_slot(g, params)) < 0) {
		pthread_mutex_unlock(&dp_tel->gen_lock);
		return -1;
	}
	dp_stats_sum(dp_tel->ctx, (uint16_t)slot, &s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "vm", g->vms[slot].name);
	for (int v = 0; v < DP_VERDICT_MAX; v++) {
		dp_tel_add(d, "egress_packets_", dp_verdict_labels[v], s.egress_pkts[v]);
		dp_tel_add(d, "egress_bytes_", dp_verdict_labels[v], s.egress_bytes[v]);
	}
	rte_tel_data_add_dict_u64(d, "ingress_packets", s.ingress_pkts);
	rte_tel_data_add_dict_u64(d, "ingress_bytes", s.ingress_bytes);
	for (int r = 0; r < DP_REASON_MAX; r++)
		dp_tel_add(d, "blocked_", dp_reason_labels[r], s.blocked[r]);
	rte_tel_data_add_dict_u64(d, "dns_allowed", s.dns_allowed);
	rte_tel_data_add_dict_u64(d, "dns_blocked", s.dns_blocked);
	rte_tel_data_add_dict_u64(d, "bindings", dp_binds_count(dp_tel->ctx->binds,
	    (uint16_t)slot));
	rte_tel_data_add_dict_u64(d, "flows", dp_stats_flows(dp_tel->ctx, (uint16_t)slot));
	pthread_mutex_unlock(&dp_tel->gen_lock);
	return 0;
}

static int
dp_tel_bindings(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct dp_gen *g;
	int slot;

	(void)cmd;
	pthread_mutex_lock(&dp_tel->gen_lock);
	g = atomic_load_explicit(&dp_tel->ctx->gen, memory_order_acquire);
	if ((slot = dp_tel_vm_slot(g, params)) < 0) {
		pthread_mutex_unlock(&dp_tel->gen_lock);
		return -1;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "vm", g->vms[slot].name);
	rte_tel_data_add_dict_u64(d, "bindings", dp_binds_count(dp_tel->ctx->binds,
	    (uint16_t)slot));
	pthread_mutex_unlock(&dp_tel->gen_lock);
	return 0;
}

int
dp_telemetry_register(struct dp_control *c)
{
	dp_tel = c;
	if (rte_telemetry_register_cmd("/namegate/vms", dp_tel_vms,
	    "The configured VMs. Takes no parameters") != 0 ||
	    rte_telemetry_register_cmd("/namegate/vm", dp_tel_vm,
	    "A VM's counters (SPEC s6). Parameters: VM name") != 0 ||
	    rte_telemetry_register_cmd("/namegate/bindings", dp_tel_bindings,
	    "A VM's live bindings. Parameters: VM name") != 0)
		return -1;
	return 0;
}
