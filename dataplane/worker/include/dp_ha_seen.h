/*
 * The uplink's stations a standby box saw (HA pair, namegate(8)): a few source MACs, each
 * with its VLAN, written by a worker while its box forwards nothing and read by the main
 * lcore when the box becomes master, which announces them on the VM port so the VM
 * segment's switches learn the new path to the router at once. Plain C, no DPDK.
 */
#ifndef DP_HA_SEEN_H
#define DP_HA_SEEN_H

#include <stdatomic.h>
#include <stdint.h>

#define DP_HA_SEEN_MAX	8	/* a router or two, and the odd host the uplink floods */
#define DP_HA_SEEN_VALID	(1ULL << 63)

/*
 * Each entry one word, so the main lcore never reads half a MAC: DP_HA_SEEN_VALID | vlan
 * << 48 | the MAC's six bytes, first byte highest. 0: empty. Oldest replaced first.
 */
struct dp_ha_seen {
	_Atomic(uint64_t) mac[DP_HA_SEEN_MAX];
	unsigned int next;		/* the worker's: the entry it replaces next */
};

static inline uint64_t
dp_ha_seen_key(const uint8_t *mac, uint16_t vlan)
{
	uint64_t k = 0;

	for (int i = 0; i < 6; i++)
		k = k << 8 | mac[i];
	return DP_HA_SEEN_VALID | (uint64_t)(vlan & 0xfff) << 48 | k;
}

#endif
