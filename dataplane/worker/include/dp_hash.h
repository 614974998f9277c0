/*
 * Hashing what a VM chooses (ports, query IDs, names, addresses it resolved). A VM that
 * could predict where its keys land could fill one bucket, or make two of its names
 * share one entry; so every such hash is keyed with a secret drawn at start. DPDK-free.
 */
#ifndef DP_HASH_H
#define DP_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Draw the secrets (once, before any table is made): from getrandom(2). 0, or -errno. */
int dp_hash_init(void);

/* The 32-bit seed for rte_hash tables (hash_func_init_val). */
uint32_t dp_hash_seed(void);

/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012) of len bytes under the start-time key: a
 * 64-bit keyed PRF, so names are told apart by a value nobody outside can aim at.
 */
uint64_t dp_hash_bytes(const void *buf, size_t len);

/* The same under an explicit 128-bit key (k0, k1): for the test vectors. */
uint64_t dp_siphash24(uint64_t k0, uint64_t k1, const void *buf, size_t len);

#endif
