/*
 * A generation: the VMs, policy and settings the fast path decides with, built from a
 * loaded configuration on the main lcore and then published, immutable, to the workers.
 */
#ifndef DP_GEN_H
#define DP_GEN_H

#include <stdint.h>
#include <string.h>

#include "dp.h"

/* A generation is built by the main lcore from a configuration (dataplane/main/dp_gen_build.h). */
void dp_gen_free(struct dp_gen *g);
/* The EAL memory a generation for max_vms takes with names table entries (dp_mem.h). */
uint64_t dp_gen_mem(uint32_t names, uint16_t max_vms);

/*
 * log2 of the (vlan, MAC) index's entries for max_vms VMs: at least four entries a slot,
 * so the index is at most a quarter full and a probe ends in a step or two. The address
 * index has twice as many (an IPv4 and an IPv6 a slot).
 */
static inline unsigned int
dp_gen_index_bits(uint16_t max_vms)
{
	unsigned int bits = DP_VM_INDEX_MIN_BITS;

	while ((1u << bits) < 4u * max_vms)
		bits++;
	return bits;
}

/*
 * Names the VMs resolved before this generation, with what its policy now allows for each:
 * a flow or binding learned under an older policy is judged again with these. A name not
 * here is not allowed (fail closed). Filled by the main lcore before publishing.
 */
int dp_gen_names_init(struct dp_gen *g, uint32_t cap);
int dp_gen_names_add(struct dp_gen *g, uint16_t slot, uint64_t name_hash,
    const struct pol_ports *ports);
/* The ports the current policy allows for (slot, name), or NULL. */
const struct pol_ports *dp_gen_name_ports(const struct dp_gen *g, uint16_t slot,
    uint64_t name_hash);

/*
 * (vlan, MAC) as one number: the MAC's six bytes as loaded in the host's byte order (only
 * ever compared, never read back as a MAC, so no swap), above the vlan's 16 bits. A vlan
 * is at most 0xfff, so no key is DP_VM_INDEX_EMPTY.
 */
static inline uint64_t
dp_gen_vm_key(uint16_t vlan, const uint8_t *mac)
{
	uint64_t w = 0;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a MAC is a word's low bytes");
	memcpy(&w, mac, 6);
	return w << 16 | vlan;
}

/*
 * dp_gen_vm_key() of a MAC in a frame, two bytes of which follow it (the source MAC's
 * ethertype, the destination's next MAC): one load of 8 bytes, the two past the MAC
 * shifted out.
 */
static inline uint64_t
dp_gen_vm_key_frame(uint16_t vlan, const uint8_t *mac)
{
	uint64_t w;

	memcpy(&w, mac, 8);
	return w << 16 | vlan;
}

/*
 * Where k's probe starts: the top bits of k times a secret odd multiplier (multiply-shift),
 * which every bit of k moves. The high word of the product alone, masked, was three
 * instructions where this is five, but it moves little with k's low bits (its VLAN): one
 * MAC on VLANs 1-1000 took 1,000 entries in a row (test_dp_gen_vm_addr). The builder
 * draws the multiplier again where it leaves a long run (dp_gen_vm_index_build()).
 */
static inline uint64_t
dp_gen_vm_index_at(const struct dp_gen *g, uint64_t k)
{
	return (k * g->vm_index_mul) >> g->vm_index_shift;
}

/*
 * The VM with this (vlan, MAC), or -1: every frame asks, so it is a probe of a small
 * open-addressed table rather than a general hash. Only configured VMs are in it, so what
 * a VM writes in its frames picks where a probe starts (behind a secret multiplier), never
 * how long the table's runs are; at most a quarter full, a probe ends in a step or two.
 * mac is in a frame, two more bytes of it after the MAC (dp_gen_vm_key_frame()).
 */
static inline int
dp_gen_vm_by_mac(const struct dp_gen *g, uint16_t vlan, const uint8_t *mac)
{
	uint64_t k = dp_gen_vm_key_frame(vlan, mac);
	uint64_t i = dp_gen_vm_index_at(g, k);

	/*
	 * most probes find their key first, compared where it lies; the rest go on from the
	 * next entry, not asking whether the first was empty (a key whose first entry is
	 * empty is in no entry, and is not found past it either)
	 */
	if (__builtin_expect(g->vm_keys[i] == k, 1))
		return g->vm_slots[i];
	for (;;) {
		uint64_t e;

		i = (i + 1) & g->vm_index_mask;
		e = g->vm_keys[i];
		if (e == k)	/* no key is the empty one */
			return g->vm_slots[i];
		if (e == DP_VM_INDEX_EMPTY)
			return -1;
	}
}

/* g's resolvers: the n of r, and each in its family's words. */
void dp_gen_resolvers_set(struct dp_gen *g, const struct pol_addr *r, size_t n);

/*
 * Is addr (family 4: four bytes, 6: sixteen) one of the configured resolvers? Inline, a
 * word compare each: every DNS datagram asks, both ways.
 */
static inline bool
dp_gen_is_resolver(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	uint64_t a6[2];
	uint32_t a4;

	if (family == 4) {
		memcpy(&a4, addr, 4);
		for (unsigned int i = 0; i < g->nresolvers4; i++)
			if (g->resolvers4[i] == a4)
				return true;
		return false;
	}
	if (family != 6)
		return false;
	memcpy(a6, addr, 16);
	for (unsigned int i = 0; i < g->nresolvers6; i++)
		if (((g->resolvers6[i][0] ^ a6[0]) | (g->resolvers6[i][1] ^ a6[1])) == 0)
			return true;
	return false;
}

/*
 * Is port one of tls_ports? Inlined: every SYN admitted by a binding asks. Walked to its
 * 0, asked first (port 0 is none of them), where a count cost the loop's setup.
 */
static inline bool
dp_gen_is_tls_port(const struct dp_gen *g, uint16_t port)
{
	for (const uint16_t *p = g->tls_ports; *p != 0; p++)
		if (*p == port)
			return true;
	return false;
}

/*
 * Index the addresses of g's present VMs for dp_gen_is_vm_addr(), once its VMs are in
 * place (dp_gen_build.c); freed with g. 0, or -ENOMEM.
 */
int dp_gen_vm_addrs_init(struct dp_gen *g);

/* Is addr (family 4 or 6) a present VM's address (a DNS answer must never bind it)? */
bool dp_gen_is_vm_addr(const struct dp_gen *g, uint8_t family, const uint8_t *addr);

#define DP_ADDR_VM		0x10	/* dp_gen_is_vm_addr() */
#define DP_ADDR_RESOLVER	0x20	/* dp_gen_is_resolver() */

/* dp_gen_addr_kind() past its filter: the table probed. */
uint8_t dp_gen_addr_probe(const struct dp_gen *g, uint8_t family, const uint8_t *addr);

/*
 * addr's bit in vm_addr_seen (family 4: four bytes, 6: sixteen): its last twelve bits, which
 * the configured VMs' addresses spread over and an answer's rarely share. Not a secret: a bit
 * an answer finds set costs it the probe, whose runs it still cannot choose.
 */
static inline uint32_t
dp_gen_addr_seen_bit(uint8_t family, const uint8_t *addr)
{
	size_t n = family == 4 ? 4 : 16;

	return ((uint32_t)addr[n - 2] << 8 | addr[n - 1]) % DP_ADDR_SEEN_BITS;
}

/*
 * What addr is, both questions in one probe: DP_ADDR_VM and DP_ADDR_RESOLVER, or 0. Inline:
 * every address of every answer asks, and most are answered by their filter bit alone.
 */
static inline uint8_t
dp_gen_addr_kind(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	uint32_t b;

	if (family != 4 && family != 6)
		return 0;
	b = dp_gen_addr_seen_bit(family, addr);
	if ((g->vm_addr_seen[b / 64] >> (b % 64) & 1) == 0)
		return 0;
	return dp_gen_addr_probe(g, family, addr);
}

#endif
