/*
 * What the tables cost in EAL memory, computed without EAL: so `namegate --check` can say
 * whether a configuration's tables fit before anything starts, and the daemon can size EAL
 * from them. Each table's module adds its own cost next to its create function, with the
 * same expressions; these are the pieces DPDK allocates for it (DPDK 22.11's layouts).
 * tests/unit/test_dp_mem.c holds the sum against what EAL's heap really gives out.
 */
#ifndef DP_MEM_H
#define DP_MEM_H

#include <stdbool.h>
#include <stdint.h>

#define DP_MEM_ELEM	128	/* rte_malloc's header and alignment, per allocation, at most */

/* rte_hash_create() of one writer, no RCU: buckets, key store, free-slot ring. */
uint64_t dp_mem_hash(uint32_t entries, uint32_t key_len);

/* rte_ring_create_elem() of count elements of esize bytes (count rounded up to 2^n). */
uint64_t dp_mem_ring(uint32_t count, uint32_t esize);

/* rte_pktmbuf_pool_create() of n buffers of data_room bytes, with or without lcore caches. */
uint64_t dp_mem_pool(uint32_t n, uint16_t data_room, bool cached);

/* rte_zmalloc() of n bytes. */
static inline uint64_t
dp_mem_alloc(uint64_t n)
{
	return n + DP_MEM_ELEM;
}

#endif
