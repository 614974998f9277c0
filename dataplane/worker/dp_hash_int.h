/*
 * Shared by dp_hash.c (SipHash, the digests) and dp_hash_name.c (the name hash).
 */
#ifndef DP_HASH_INT_H
#define DP_HASH_INT_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/* The little-endian 64-bit word at p: one load. */
static inline uint64_t
dp_ld64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return le64toh(w);
}

/*
 * PSHUFB masks: from byte s on (dp_hash_shift + s), bytes s.. moved to 0.., zeros (0x80)
 * in the rest: the last n bytes of a 16-byte load, zero-padded, from dp_hash_shift + 16 - n.
 */
extern const uint8_t dp_hash_shift[32];

/* Draw dp_hash_name()'s keys and expand its AES key (dp_hash_init()). 0, or -errno. */
int dp_hash_name_init(void);

#endif
