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

/* The components of part[] that are not NULL, joined by '_'. */
static void
dp_tel_key(char *key, size_t size, const char *const part[4])
{
	size_t len = 0;

	key[0] = '\0';
	for (size_t k = 0; k < 4 && len < size; k++)
		if (part[k] != NULL)
			len += (size_t)snprintf(key + len, size - len, "%s%s", len > 0 ? "_" : "",
			    part[k]);
}

/*
 * One VM's families of api/dp_counters.h, each value under the key json_key_dim1_dim2:
 * egress_packets_allowed, ingress_bytes, blocked_sni_denied, dns_allowed, flows.
 */
static void
dp_tel_counters(struct rte_tel_data *d, const struct dp_ctx *ctx, uint16_t vm)
{
	char key[RTE_TEL_MAX_STRING_LEN];

	for (enum dp_cnt f = 0; f < DP_CNT_MAX; f++) {
		const struct dp_cnt_def *def = dp_cnt_def(f);
		unsigned int n1, n2;
		const char *const *v1 = dp_stats_dim(def->dim[0], &n1);
		const char *const *v2 = dp_stats_dim(def->dim[1], &n2);

		if (def->scope != DP_CNT_VM)
			continue;
		for (unsigned int i = 0; i < n1; i++)
			for (unsigned int j = 0; j < n2; j++) {
				dp_tel_key(key, sizeof(key), (const char *const[4]){ def->json,
				    def->key, v1[i], v2[j] });
				rte_tel_data_add_dict_u64(d, key, dp_stats_value(ctx, f, vm, i, j));
			}
	}
}

/* The dict of one VM (named by params): its name, then what fill adds, under the lock. */
static int
dp_tel_vm_dict(const char *params, struct rte_tel_data *d,
    void (*fill)(struct rte_tel_data *d, const struct dp_ctx *ctx, uint16_t slot))
{
	const struct dp_gen *g;
	int slot;

	pthread_mutex_lock(&dp_tel->gen_lock);
	g = atomic_load_explicit(&dp_tel->ctx->gen, memory_order_acquire);
	if ((slot = dp_tel_vm_slot(g, params)) < 0) {
		pthread_mutex_unlock(&dp_tel->gen_lock);
		return -1;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "vm", g->vms[slot].name);
	fill(d, dp_tel->ctx, (uint16_t)slot);
	pthread_mutex_unlock(&dp_tel->gen_lock);
	return 0;
}

static void
dp_tel_bindings_fill(struct rte_tel_data *d, const struct dp_ctx *ctx, uint16_t slot)
{
	rte_tel_data_add_dict_u64(d, "bindings", dp_binds_count(ctx->binds, slot));
}

static int
dp_tel_vm(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	return dp_tel_vm_dict(params, d, dp_tel_counters);
}

static int
dp_tel_bindings(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	return dp_tel_vm_dict(params, d, dp_tel_bindings_fill);
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
