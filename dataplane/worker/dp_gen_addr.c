/*
 * The VMs' own addresses, which a DNS answer must never bind: asked for every address of
 * every answer, so a probe of a small open-addressed table built with the generation
 * rather than a scan of every VM (with 1,000 VMs the scan cost the mix 53 % more instructions).
 * The resolvers' addresses, which no answer may bind either, are in it too: each entry's
 * family byte carries what the address is (DP_ADDR_VM, DP_ADDR_RESOLVER), so one probe
 * answers both for an answer's address. A filter of a bit per address's last twelve bits
 * (dp_gen_addr_kind(), inline) spares most of an answer's addresses the probe and its hash.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "dp_gen.h"
#include "dp_hash.h"

/* IPv4 and IPv6 keys share the words, not the table entry: the family tells them apart. */
static inline void
dp_vm_addr_key(uint8_t family, const uint8_t *addr, struct dp_vm_addr *k)
{
	if (family == 4) {
		k->w[0] = 0;
		k->w[1] = 0;
		memcpy(k->w, addr, 4);
	} else {
		memcpy(k->w, addr, 16);
	}
}

/*
 * Only the configured VMs' addresses are in the table, so the address an answer carries
 * picks where a probe starts (behind a secret), never how long the table's runs are.
 */
static inline uint32_t
dp_vm_addr_pos(const struct dp_gen *g, const struct dp_vm_addr *k)
{
	return dp_hash_crc_inline(k->w, sizeof(k->w), g->vm_addr_seed) & g->vm_addr_mask;
}

#define DP_ADDR_FAMILY	0x0f	/* an entry's family byte: the family, and what it is */

/*
 * An address two VMs share, or a VM and a resolver, is one entry: the question is only
 * whether some VM has it, and whether a resolver does.
 */
static void
dp_vm_addr_add(struct dp_gen *g, uint8_t family, const uint8_t *addr, uint8_t kind)
{
	struct dp_vm_addr k;
	uint32_t i;

	dp_vm_addr_key(family, addr, &k);
	for (i = dp_vm_addr_pos(g, &k); g->vm_addr_family[i] != 0; i = (i + 1) & g->vm_addr_mask)
		if ((g->vm_addr_family[i] & DP_ADDR_FAMILY) == family &&
		    memcmp(&g->vm_addrs[i], &k, sizeof(k)) == 0) {
			g->vm_addr_family[i] |= kind;
			return;
		}
	g->vm_addrs[i] = k;
	g->vm_addr_family[i] = family | kind;
	i = dp_gen_addr_seen_bit(family, addr);
	g->vm_addr_seen[i / 64] |= 1ull << (i % 64);
}

int
dp_gen_vm_addrs_init(struct dp_gen *g)
{
	/* not vm_index_mul's input: a secret of its own */
	const uint32_t in[2] = { g->id, 1 };
	size_t n = 2 * ((size_t)g->vm_index_mask + 1);	/* twice the (vlan, MAC) index's */

	g->vm_addr_mask = (uint32_t)n - 1;
	memset(g->vm_addr_seen, 0, sizeof(g->vm_addr_seen));
	g->vm_addrs = rte_zmalloc("dp_vm_addrs", n * sizeof(g->vm_addrs[0]), RTE_CACHE_LINE_SIZE);
	g->vm_addr_family = rte_zmalloc("dp_vm_addr_family", n * sizeof(g->vm_addr_family[0]),
	    RTE_CACHE_LINE_SIZE);
	if (g->vm_addrs == NULL || g->vm_addr_family == NULL)
		return -ENOMEM;
	g->vm_addr_seed = (uint32_t)dp_hash_bytes(in, sizeof(in));
	/* the slots the scan this replaced looked at, so that every answer stays the same */
	for (uint16_t s = 0; s < g->nvms; s++) {
		const struct dp_vm *v = &g->vms[s];

		if (!v->present)
			continue;
		if (v->id.has4)
			dp_vm_addr_add(g, 4, v->id.ip4, DP_ADDR_VM);
		if (v->id.has6)
			dp_vm_addr_add(g, 6, v->id.ip6, DP_ADDR_VM);
	}
	/* the few resolvers: the table has room for twice every VM's two addresses */
	for (unsigned int r = 0; r < g->nresolvers; r++)
		if (g->resolvers[r].family == 4 || g->resolvers[r].family == 6)
			dp_vm_addr_add(g, g->resolvers[r].family, g->resolvers[r].a,
			    DP_ADDR_RESOLVER);
	return 0;
}

uint8_t
dp_gen_addr_probe(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	struct dp_vm_addr k;
	uint32_t i;

	if (family != 4 && family != 6)
		return 0;
	dp_vm_addr_key(family, addr, &k);
	/* at most a quarter full (two addresses a slot), a probe ends in a step or two */
	for (i = dp_vm_addr_pos(g, &k); g->vm_addr_family[i] != 0; i = (i + 1) & g->vm_addr_mask)
		if ((g->vm_addr_family[i] & DP_ADDR_FAMILY) == family &&
		    g->vm_addrs[i].w[0] == k.w[0] && g->vm_addrs[i].w[1] == k.w[1])
			return g->vm_addr_family[i] & (DP_ADDR_VM | DP_ADDR_RESOLVER);
	return 0;
}

bool
dp_gen_is_vm_addr(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	return (dp_gen_addr_kind(g, family, addr) & DP_ADDR_VM) != 0;
}
