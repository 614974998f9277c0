/*
 * Generations: configuration in the fast path's shape.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "dp_hash.h"
#include "dp_gen.h"
#include "dp_mem.h"
#include "policy/load.h"
#include "sni/dns.h"

/* The slot of VM name in prev, or -1. */
static int
dp_gen_prev_slot(const struct dp_gen *prev, const char *name)
{
	for (uint16_t i = 0; prev != NULL && i < prev->nvms; i++)
		if (prev->vms[i].present && strcmp(prev->vms[i].name, name) == 0)
			return i;
	return -1;
}

/* One worker's part of a per-VM quota over all workers: at least 1. */
static uint32_t
dp_gen_share(uint32_t quota, unsigned int nworkers)
{
	uint32_t share = quota / (nworkers ? nworkers : 1);

	return share ? share : 1;
}

static void
dp_gen_settings(struct dp_gen *g, const struct pol_config *cfg, unsigned int nworkers)
{
	for (size_t i = 0; i < cfg->nresolvers; i++) {
		g->resolvers[i].family = cfg->resolvers[i].family;
		memcpy(g->resolvers[i].a, cfg->resolvers[i].a, 16);
	}
	g->nresolvers = (unsigned int)cfg->nresolvers;
	memcpy(g->tls_ports, cfg->tls_ports, cfg->ntls_ports * sizeof(g->tls_ports[0]));
	g->ntls_ports = (unsigned int)cfg->ntls_ports;
	g->min_ttl = cfg->dns_min_ttl;
	g->max_ttl = cfg->dns_max_ttl;
	g->blocked_rcode = cfg->dns_blocked_rcode == POL_RCODE_NXDOMAIN ? DNS_RCODE_NXDOMAIN :
	    DNS_RCODE_REFUSED;
	g->on_block_reset = cfg->on_block == POL_ON_BLOCK_RESET;
	g->sni_strict = cfg->sni_binding == POL_SNI_STRICT;
	g->ech_strip = cfg->dns_ech == POL_ECH_STRIP;
	g->quic_inspect = cfg->quic == POL_QUIC_INSPECT;
	/* every worker gets its share, so one VM cannot fill a worker's table */
	g->max_flows_per_vm = dp_gen_share(cfg->max_flows_per_vm, nworkers);
	g->max_pending_per_vm = dp_gen_share(cfg->max_pending_per_vm, nworkers);
	g->max_holds_per_vm = dp_gen_share(cfg->max_holds_per_vm, nworkers);
	g->max_frags_per_vm = dp_gen_share(cfg->max_fragments_per_vm, nworkers);
	g->max_bindings_per_vm = cfg->max_bindings_per_vm;
	/*
	 * RSS spreads a VM's queries (random source ports) over the workers, so each admits
	 * its share of new names and a flood gets count in all; 0 stays off.
	 */
	g->names_per_suffix = cfg->dns_names_count != 0 ?
	    dp_gen_share(cfg->dns_names_count, nworkers) : 0;
	g->names_window = cfg->dns_names_per;
	g->ask = cfg->ask;
	g->ask_timeout = cfg->approval_timeout;
	g->max_asks_per_vm = dp_gen_share(cfg->approval_max_per_vm, nworkers);
}

/*
 * (vlan, MAC) key k to slot. The loader refuses two VMs with one MAC; should a key come
 * twice anyway, the later VM has it, as a hash table's update would.
 */
static void
dp_gen_vm_index_add(struct dp_gen *g, uint64_t k, int slot)
{
	uint32_t i = (uint32_t)((k * g->vm_index_mul) >> (64 - DP_VM_INDEX_BITS));

	while (g->vm_keys[i] != DP_VM_INDEX_EMPTY && g->vm_keys[i] != k)
		i = (i + 1) & (DP_VM_INDEX - 1);
	g->vm_keys[i] = k;
	g->vm_slots[i] = (uint16_t)slot;
}

_Static_assert(DP_RESOLVERS_MAX >= POL_RESOLVERS_MAX && DP_TLS_PORTS_MAX >= POL_TLS_PORTS_MAX,
    "a generation holds every resolver and TLS port the loader accepts");

struct dp_gen *
dp_gen_create(const struct pol_config *cfg, uint32_t id, unsigned int nworkers,
    const struct dp_gen *prev)
{
	struct dp_gen *g;

	if (cfg->nresolvers > DP_RESOLVERS_MAX || cfg->ntls_ports > DP_TLS_PORTS_MAX) {
		rte_errno = E2BIG;
		return NULL;
	}
	if ((g = rte_zmalloc("dp_gen", sizeof(*g), RTE_CACHE_LINE_SIZE)) == NULL)
		return NULL;
	g->id = id;
	g->set = cfg->set;
	g->budget_set = cfg->budget_set;
	g->nvms = prev != NULL ? prev->nvms : 0;
	g->vms = rte_zmalloc("dp_vms", (DP_VM_SLOTS + 1) * sizeof(g->vms[0]), 0);
	g->vm_keys = rte_malloc("dp_vm_keys", DP_VM_INDEX * sizeof(g->vm_keys[0]),
	    RTE_CACHE_LINE_SIZE);
	g->vm_slots = rte_malloc("dp_vm_slots", DP_VM_INDEX * sizeof(g->vm_slots[0]), 0);
	if (g->vms == NULL || g->vm_keys == NULL || g->vm_slots == NULL)
		goto fail;
	memset(g->vm_keys, 0xff, DP_VM_INDEX * sizeof(g->vm_keys[0]));	/* DP_VM_INDEX_EMPTY */
	g->vm_index_mul = dp_hash_bytes(&g->id, sizeof(g->id)) | 1;
	for (size_t i = 0; i < cfg->nvms; i++) {
		const struct pol_vm *pv = &cfg->vms[i];
		int slot = dp_gen_prev_slot(prev, pv->name);
		struct dp_vm *v;

		if (slot < 0) {
			if (g->nvms == DP_VM_SLOTS) {
				rte_errno = E2BIG;
				goto fail;
			}
			slot = g->nvms++;
		}
		v = &g->vms[slot];
		*v = (struct dp_vm){ .name = pv->name, .present = true, .id = pv->id,
			.policy = pv->policy, .conf_policy = pv->ask_policy,
			.audit = pv->mode == POL_MODE_AUDIT,
			.budgets = (uint8_t)pol_config_budgets(cfg, pv->ask_policy) };
		dp_gen_vm_index_add(g, dp_gen_vm_key(pv->id.vlan, pv->id.mac), slot);
	}
	g->vms[DP_VM_UNKNOWN] = (struct dp_vm){ .name = "unknown", .present = true };
	g->slots_free = (uint16_t)(DP_VM_SLOTS - g->nvms);
	dp_gen_settings(g, cfg, nworkers);
	return g;
fail:
	dp_gen_free(g);
	if (rte_errno == 0)
		rte_errno = ENOMEM;
	return NULL;
}

struct dp_name_key {
	uint16_t slot;
	uint16_t zero[3];
	uint64_t hash;
};

int
dp_gen_names_init(struct dp_gen *g, uint32_t cap)
{
	char name[RTE_HASH_NAMESIZE];
	/*
	 * cap keys in a cuckoo hash of cap entries would fail some adds, by the luck of the
	 * secret drawn at start, and the generation with them: room to spare, as every table.
	 */
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = dp_hash_entries(cap < 64 ? 64 : cap),
		.key_len = sizeof(struct dp_name_key),
		.hash_func = rte_jhash,
		.hash_func_init_val = dp_hash_seed(),
		.socket_id = (int)rte_socket_id(),
	};

	snprintf(name, sizeof(name), "ng_names_%u", g->id);
	g->names_cap = cap < 64 ? 64 : cap;
	g->names_ports = rte_zmalloc("dp_names", (size_t)g->names_cap * sizeof(g->names_ports[0]),
	    0);
	if (g->names_ports == NULL || (g->names = rte_hash_create(&hp)) == NULL)
		return -ENOMEM;
	return 0;
}

int
dp_gen_names_add(struct dp_gen *g, uint16_t slot, uint64_t name_hash,
    const struct pol_ports *ports)
{
	struct dp_name_key k = { .slot = slot, .hash = name_hash };
	void *data;

	if (g->names == NULL)
		return -EINVAL;
	if (rte_hash_lookup_data(g->names, &k, &data) >= 0) {
		g->names_ports[(uintptr_t)data] = *ports;
		return 0;
	}
	if (g->nnames == g->names_cap)
		return -ENOSPC;
	g->names_ports[g->nnames] = *ports;
	if (rte_hash_add_key_data(g->names, &k, (void *)(uintptr_t)g->nnames) != 0)
		return -ENOSPC;
	g->nnames++;
	return 0;
}

const struct pol_ports *
dp_gen_name_ports(const struct dp_gen *g, uint16_t slot, uint64_t name_hash)
{
	struct dp_name_key k = { .slot = slot, .hash = name_hash };
	void *data;

	if (g->names == NULL || rte_hash_lookup_data(g->names, &k, &data) < 0)
		return NULL;
	return &g->names_ports[(uintptr_t)data];
}

void
dp_gen_free(struct dp_gen *g)
{
	if (g == NULL)
		return;
	rte_free(g->vm_keys);
	rte_free(g->vm_slots);
	rte_hash_free(g->names);
	rte_free(g->names_ports);
	rte_free(g->vms);
	rte_free(g);
}

static bool
dp_addr_eq(uint8_t family, const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, family == 4 ? 4 : 16) == 0;
}

bool
dp_gen_is_resolver(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	for (unsigned int i = 0; i < g->nresolvers; i++)
		if (g->resolvers[i].family == family && dp_addr_eq(family, g->resolvers[i].a, addr))
			return true;
	return false;
}

bool
dp_gen_is_tls_port(const struct dp_gen *g, uint16_t port)
{
	for (unsigned int i = 0; i < g->ntls_ports; i++)
		if (g->tls_ports[i] == port)
			return true;
	return false;
}

bool
dp_gen_is_vm_addr(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	/* A linear scan: called per DNS answer address, never per data packet. */
	for (uint16_t i = 0; i < g->nvms; i++) {
		const struct dp_vm *v = &g->vms[i];

		if (!v->present)
			continue;
		if (family == 4 && v->id.has4 && dp_addr_eq(4, v->id.ip4, addr))
			return true;
		if (family == 6 && v->id.has6 && dp_addr_eq(6, v->id.ip6, addr))
			return true;
	}
	return false;
}

uint64_t
dp_gen_mem(uint32_t names)
{
	struct dp_gen *g = NULL;

	names = names < 64 ? 64 : names;
	return dp_mem_alloc(sizeof(*g)) + dp_mem_alloc((DP_VM_SLOTS + 1) * sizeof(g->vms[0])) +
	    dp_mem_alloc(DP_VM_INDEX * sizeof(g->vm_keys[0])) +
	    dp_mem_alloc(DP_VM_INDEX * sizeof(g->vm_slots[0])) +
	    dp_mem_alloc((uint64_t)names * sizeof(g->names_ports[0])) +
	    dp_mem_hash(dp_hash_entries(names), sizeof(struct dp_name_key), DP_MEM_HASH_SINGLE);
}
