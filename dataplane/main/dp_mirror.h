/*
 * The live bindings with their names, as the main lcore learns them from the workers'
 * BIND events: what `namegatectl bindings VM` lists, and what the nftables sets are
 * rebuilt from. The fast path's own table (dp_bind.c) keeps only name hashes.
 */
#ifndef DP_MIRROR_H
#define DP_MIRROR_H

#include <stdint.h>

struct dp_mirror;

struct dp_mirror_ent {
	uint64_t key;			/* 0: empty, 1: deleted */
	uint64_t expires;		/* seconds, dp_now() */
	const char *name;		/* owned by the name set (dp_names) */
	uint16_t slot;
	uint8_t family;
	uint8_t addr[16];
};

/* Room for cap bindings; NULL on allocation failure. */
struct dp_mirror *dp_mirror_create(uint32_t cap);
void dp_mirror_free(struct dp_mirror *m);

/* (slot, addr) is bound to name until expires; a later expiry wins. -ENOSPC when full. */
int dp_mirror_bind(struct dp_mirror *m, uint16_t slot, uint8_t family, const uint8_t *addr,
    const char *name, uint64_t expires);

/* Forget up to budget expired bindings. */
void dp_mirror_expire(struct dp_mirror *m, uint64_t now, unsigned int budget);

/* fn for every binding of slot live at now. */
void dp_mirror_walk(const struct dp_mirror *m, uint16_t slot, uint64_t now,
    void (*fn)(const struct dp_mirror_ent *e, void *arg), void *arg);

#endif
