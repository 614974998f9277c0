/*
 * Generations: configuration in the fast path's shape.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "dp_hash.h"
#include "dp_gen.h"
#include "dp_mem.h"

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
	rte_free(g->vm_addrs);
	rte_free(g->vm_addr_family);
	rte_hash_free(g->names);
	rte_free(g->names_ports);
	rte_free(g->vms);
	rte_free(g);
}

void
dp_gen_resolvers_set(struct dp_gen *g, const struct pol_addr *r, size_t n)
{
	g->nresolvers4 = g->nresolvers6 = 0;
	for (size_t i = 0; i < n; i++) {
		g->resolvers[i].family = r[i].family;
		memcpy(g->resolvers[i].a, r[i].a, 16);
		if (r[i].family == 4)
			memcpy(&g->resolvers4[g->nresolvers4++], r[i].a, 4);
		else if (r[i].family == 6)
			memcpy(g->resolvers6[g->nresolvers6++], r[i].a, 16);
	}
	g->nresolvers = (unsigned int)n;
}

uint64_t
dp_gen_mem(uint32_t names, uint16_t max_vms)
{
	uint64_t index = 1ull << dp_gen_index_bits(max_vms), addrs = 2 * index;
	struct dp_gen *g = NULL;

	names = names < 64 ? 64 : names;
	return dp_mem_alloc(sizeof(*g)) +
	    dp_mem_alloc(((uint64_t)max_vms + 1) * sizeof(g->vms[0])) +
	    dp_mem_alloc(index * sizeof(g->vm_keys[0])) +
	    dp_mem_alloc(index * sizeof(g->vm_slots[0])) +
	    dp_mem_alloc(addrs * sizeof(g->vm_addrs[0])) +
	    dp_mem_alloc(addrs * sizeof(g->vm_addr_family[0])) +
	    dp_mem_alloc((uint64_t)names * sizeof(g->names_ports[0])) +
	    dp_mem_hash(dp_hash_entries(names), sizeof(struct dp_name_key));
}
