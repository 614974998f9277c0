/*
 * The sizes DPDK's own allocators ask the heap for: see dp_mem.h. rte_hash keeps its
 * layout private, so its pieces are written out from DPDK 22.11's rte_cuckoo_hash.c
 * (a bucket is one cache line of 8 entries); the rings and pools have public size
 * functions.
 */
#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring_elem.h>

#include "dp_mem.h"

#define DP_MEM_HASH_BUCKET	64	/* struct rte_hash_bucket */
#define DP_MEM_HASH_BUCKET_KEYS	8	/* RTE_HASH_BUCKET_ENTRIES */
#define DP_MEM_PAGE		4096	/* the smallest page EAL may place objects on */
#define DP_MEM_HASH_FIXED	4096	/* struct rte_hash, its tailq entry, lock, counter */

uint64_t
dp_mem_ring(uint32_t count, uint32_t esize)
{
	ssize_t n = rte_ring_get_memsize_elem(esize, rte_align32pow2(count));

	return dp_mem_alloc(n > 0 ? (uint64_t)n : (uint64_t)count * esize);
}

uint64_t
dp_mem_hash(uint32_t entries, uint32_t key_len)
{
	uint64_t slots = (uint64_t)entries + 1, buckets, key_entry;

	buckets = rte_align32pow2(entries) / DP_MEM_HASH_BUCKET_KEYS;
	key_entry = RTE_ALIGN(sizeof(void *) + key_len, 16);
	return dp_mem_ring((uint32_t)slots, sizeof(uint32_t)) +
	    dp_mem_alloc(buckets * DP_MEM_HASH_BUCKET) + dp_mem_alloc(key_entry * slots) +
	    DP_MEM_HASH_FIXED;
}

/*
 * A pool's objects do not cross a page boundary unless they are larger than a page, when
 * each starts on its own. Pages of 4 KiB (--no-huge) are the dearest layout: a 2.4 KiB
 * mbuf takes a page of its own; with hugepages the same pool takes less.
 */
uint64_t
dp_mem_pool(uint32_t n, uint16_t data_room, bool cached)
{
	const uint64_t page = DP_MEM_PAGE;
	struct rte_mempool_objsz sz;
	uint64_t bytes, per_page;

	rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + data_room, 0, &sz);
	per_page = page / sz.total_size;
	if (per_page > 0)
		bytes = ((uint64_t)n + per_page - 1) / per_page * page;
	else
		bytes = (uint64_t)n * RTE_ALIGN_CEIL((uint64_t)sz.total_size, page);
	bytes += sizeof(struct rte_mempool) + sizeof(struct rte_pktmbuf_pool_private) +
	    dp_mem_ring(n + 1, sizeof(void *));
	if (cached)
		bytes += (uint64_t)RTE_MAX_LCORE * sizeof(struct rte_mempool_cache);
	/* a pool is a memzone per chunk, each page-aligned */
	return bytes + 2 * page + DP_MEM_ELEM;
}
