/*
 * A generation from a configuration: the loader's view (policy/load) put in the fast
 * path's shape, so that the workers never read a configuration themselves.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_gen.h"
#include "dp_gen_build.h"
#include "dp_hash.h"
#include "dp_vmslot.h"
#include "policy/load.h"
#include "sni/dns.h"

/*
 * prev's VMs by name, for a reload to find each VM's slot: a scan of prev per VM made a
 * reload of n VMs n^2 / 2 comparisons (16,384 VMs: 134 million). Open addressing over at
 * least twice prev's slots; an entry is a slot + 1, 0 empty. The names are the operator's.
 */
struct dp_gen_prev {
	const struct dp_gen *g;
	uint32_t *e;
	uint32_t mask;
};

static uint32_t
dp_gen_name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* 0, or -ENOMEM; x->e NULL without prev. */
static int
dp_gen_prev_index(struct dp_gen_prev *x, const struct dp_gen *prev)
{
	uint32_t size = 16;

	*x = (struct dp_gen_prev){ .g = prev };
	if (prev == NULL)
		return 0;
	while (size < 2u * prev->nvms)
		size <<= 1;
	if ((x->e = calloc(size, sizeof(x->e[0]))) == NULL)
		return -ENOMEM;
	x->mask = size - 1;
	for (uint16_t s = 0; s < prev->nvms; s++) {
		uint32_t i;

		if (!prev->vms[s].present)
			continue;
		for (i = dp_gen_name_hash(prev->vms[s].name) & x->mask; x->e[i] != 0;
		    i = (i + 1) & x->mask)
			;
		x->e[i] = s + 1u;
	}
	return 0;
}

/* The slot of VM name in prev, or -1. */
static int
dp_gen_prev_slot(const struct dp_gen_prev *x, const char *name)
{
	if (x->e == NULL)
		return -1;
	for (uint32_t i = dp_gen_name_hash(name) & x->mask; x->e[i] != 0; i = (i + 1) & x->mask)
		if (strcmp(x->g->vms[x->e[i] - 1].name, name) == 0)
			return (int)(x->e[i] - 1);
	return -1;
}

/*
 * The slot for a VM new to g: the lowest a removed VM left and dp_vmslot.c purged (from
 * *cursor on), else the lowest never handed out; -1 when there is none.
 */
static int
dp_gen_new_slot(struct dp_gen *g, const struct dp_vmslots *slots, uint16_t *cursor)
{
	for (; *cursor < g->nvms; (*cursor)++)
		if (dp_vmslots_free(slots, *cursor) && !g->vms[*cursor].present)
			return (*cursor)++;
	return g->nvms < g->max_vms ? g->nvms++ : -1;
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
	dp_gen_resolvers_set(g, cfg->resolvers, cfg->nresolvers);
	memcpy(g->tls_ports, cfg->tls_ports, cfg->ntls_ports * sizeof(g->tls_ports[0]));
	g->tls_ports[cfg->ntls_ports] = 0;
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
	g->names_to_peer = cfg->ha_sync_peer != NULL;
	g->ask = cfg->ask;
	g->ask_timeout = cfg->approval_timeout;
	g->max_asks_per_vm = dp_gen_share(cfg->approval_max_per_vm, nworkers);
}

#define DP_VM_INDEX_TRIES	32	/* multipliers dp_gen_vm_index_build() draws at most */

/* A configured VM's (vlan, MAC) key and its slot, kept so the index can be built again. */
struct dp_gen_vm_entry {
	uint64_t key;
	uint16_t slot;
};

/*
 * (vlan, MAC) key k to slot. The loader refuses two VMs with one MAC; should a key come
 * twice anyway, the later VM has it, as a hash table's update would.
 */
static void
dp_gen_vm_index_add(struct dp_gen *g, uint64_t k, uint16_t slot)
{
	uint64_t i = dp_gen_vm_index_at(g, k);

	while (g->vm_keys[i] != DP_VM_INDEX_EMPTY && g->vm_keys[i] != k)
		i = (i + 1) & g->vm_index_mask;
	g->vm_keys[i] = k;
	g->vm_slots[i] = slot;
}

/* The index filled with multiplier mul; returns its longest run of taken entries. */
static uint32_t
dp_gen_vm_index_fill(struct dp_gen *g, const struct dp_gen_vm_entry *e, size_t n, uint64_t mul)
{
	uint32_t size = g->vm_index_mask + 1, start = 0, run = 0, longest = 0;

	/* DP_VM_INDEX_EMPTY */
	memset(g->vm_keys, 0xff, (size_t)size * sizeof(g->vm_keys[0]));
	g->vm_index_mul = mul;
	for (size_t j = 0; j < n; j++)
		dp_gen_vm_index_add(g, e[j].key, e[j].slot);
	/* at most a quarter full, so there is an empty entry to start from */
	while (g->vm_keys[start] != DP_VM_INDEX_EMPTY)
		start++;
	for (uint32_t j = 1; j <= size; j++) {
		run = g->vm_keys[(start + j) & g->vm_index_mask] != DP_VM_INDEX_EMPTY ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	return longest;
}

/*
 * Multiply-shift spreads any two keys well, but not every set of them: keys in a
 * progression (MACs numbered in their last bytes, one MAC on VLANs 1-1000) fall into long
 * runs under a few multipliers in a hundred, and one of 200 put 334 of 1,000 in a row.
 * Only configured VMs are in the index, so its runs are known here, before any frame
 * probes it: a multiplier is drawn again while the longest run is over bits + 4 (where
 * random places stay at a quarter full nearly always), and the best of the tries kept.
 */
static void
dp_gen_vm_index_build(struct dp_gen *g, const struct dp_gen_vm_entry *e, size_t n,
    unsigned int bits)
{
	uint32_t best = UINT32_MAX, longest = UINT32_MAX;
	uint64_t best_mul = 1, mul = 1;

	for (uint32_t t = 0; t < DP_VM_INDEX_TRIES && best > bits + 4; t++) {
		/* not the address index's input: a secret of its own (dp_gen_addr.c) */
		const uint32_t in[3] = { g->id, 2, t };

		mul = dp_hash_bytes(in, sizeof(in)) | 1;
		longest = dp_gen_vm_index_fill(g, e, n, mul);
		if (longest < best) {
			best = longest;
			best_mul = mul;
		}
	}
	if (best_mul != mul)
		dp_gen_vm_index_fill(g, e, n, best_mul);
}

_Static_assert(DP_RESOLVERS_MAX >= POL_RESOLVERS_MAX && DP_TLS_PORTS_MAX >= POL_TLS_PORTS_MAX,
    "a generation holds every resolver and TLS port the loader accepts");

struct dp_gen *
dp_gen_create(const struct pol_config *cfg, uint32_t id, unsigned int nworkers,
    const struct dp_gen *prev, const struct dp_vmslots *slots)
{
	struct dp_gen_prev by_name = { 0 };
	struct dp_gen_vm_entry *entries = NULL;
	uint16_t cursor = 0;
	unsigned int bits;
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
	/* sized once, at start: a reload keeps the running number (ctl_reload says so) */
	g->max_vms = prev != NULL ? prev->max_vms : (uint16_t)cfg->max_vms;
	bits = dp_gen_index_bits(g->max_vms);
	g->vm_index_mask = (uint32_t)((1ull << bits) - 1);
	g->vm_index_shift = (uint8_t)(64 - bits);
	g->vms = rte_zmalloc("dp_vms", ((size_t)g->max_vms + 1) * sizeof(g->vms[0]), 0);
	g->vm_keys = rte_malloc("dp_vm_keys", ((size_t)g->vm_index_mask + 1) *
	    sizeof(g->vm_keys[0]), RTE_CACHE_LINE_SIZE);
	g->vm_slots = rte_malloc("dp_vm_slots", ((size_t)g->vm_index_mask + 1) *
	    sizeof(g->vm_slots[0]), 0);
	entries = malloc(((size_t)cfg->nvms + 1) * sizeof(entries[0]));
	if (g->vms == NULL || g->vm_keys == NULL || g->vm_slots == NULL || entries == NULL ||
	    dp_gen_prev_index(&by_name, prev) != 0)
		goto fail;
	for (size_t i = 0; i < cfg->nvms; i++) {
		const struct pol_vm *pv = &cfg->vms[i];
		int slot = dp_gen_prev_slot(&by_name, pv->name);
		struct dp_vm *v;

		if (slot < 0 && (slot = dp_gen_new_slot(g, slots, &cursor)) < 0) {
			rte_errno = E2BIG;
			goto fail;
		}
		v = &g->vms[slot];
		*v = (struct dp_vm){ .name = pv->name, .present = true, .id = pv->id,
			.policy = pv->policy, .conf_policy = pv->ask_policy,
			.audit = pv->mode == POL_MODE_AUDIT,
			.budgets = (uint8_t)pol_config_budgets(cfg, pv->ask_policy),
			.addrs = (uint8_t)((pol_policy_has_addrs(cfg->set, pv->policy, 4) ?
			    dp_vm_addrs_bit(4) : 0) | (pol_policy_has_addrs(cfg->set, pv->policy,
			    16) ? dp_vm_addrs_bit(6) : 0)) };
		entries[i] = (struct dp_gen_vm_entry){ .key = dp_gen_vm_key(pv->id.vlan, pv->id.mac),
			.slot = (uint16_t)slot };
	}
	dp_gen_vm_index_build(g, entries, cfg->nvms, bits);
	g->vms[DP_VM_UNKNOWN(g)] = (struct dp_vm){ .name = "unknown", .present = true };
	dp_gen_settings(g, cfg, nworkers);
	/* after the settings: the resolvers are indexed with the VMs' addresses */
	if (dp_gen_vm_addrs_init(g) != 0)
		goto fail;
	free(entries);
	free(by_name.e);
	return g;
fail:
	free(entries);
	free(by_name.e);
	dp_gen_free(g);
	if (rte_errno == 0)
		rte_errno = ENOMEM;
	return NULL;
}
