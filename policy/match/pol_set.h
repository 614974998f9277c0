/*
 * Layout of a compiled struct pol_set, shared by the builder and the lookups. Private to
 * policy/match.
 *
 * One allocation, in this order: the struct pol_set header, the policies, the hash
 * slots, the per-key rule lists, the rule descriptions, then the strings. Every pointer
 * points inside the same block, so pol_set_free() is one free().
 */
#ifndef POL_SET_H
#define POL_SET_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "policy/match.h"
#include "sni/ascii8.h"

#define POL_PLEN_WORDS	3	/* bitmap words for prefix lengths 0..128 */

/*
 * One key: (policy, kind, name or prefix). Open addressing, linear probing, at most half
 * full, so a probe ends at an empty slot; hash 0 marks an empty slot.
 */
struct pol_slot {
	uint64_t hash;
	uint32_t policy;
	uint32_t key_off;	/* into pol_set.keys */
	uint16_t key_len;
	uint8_t kind;		/* enum pol_kind */
	uint32_t first;		/* into pol_set.prule: ndeny deny entries, then nallow allow */
	uint32_t ndeny, nallow;
};

/*
 * One (list, port) of a key; port 0 (any port) sorts first, then ports ascending, so a
 * port is found by binary search. Duplicates keep the first rule written.
 */
struct pol_prule {
	uint32_t rule;		/* into pol_set.rule */
	uint16_t port;
};

struct pol_policy {
	const char *name;
	struct pol_policy_stats st;
	uint64_t plen4;			/* bit n: some IPv4 pattern is a /n */
	uint64_t plen6[POL_PLEN_WORDS];
	bool wild;			/* has wildcards: probe parent suffixes */
};

struct pol_set {
	size_t size;
	uint32_t npol, nrule, nslot, mask;
	const struct pol_policy *pol;
	const struct pol_slot *slot;
	const struct pol_prule *prule;
	const struct pol_rule *rule;
	const char *keys;
};

#define POL_FNV_OFFSET	0xcbf29ce484222325ULL
#define POL_FNV_PRIME	0x100000001b3ULL

static inline uint8_t
pol_fold(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
}

/*
 * Is key (len bytes) the stored key? stored is already lower case; address keys (kind >=
 * POL_ADDR4) compare as bytes, and so does a name key the caller folded (no upper-case
 * letter). Every probe's hit ends in this compare: a name is compared a word at a time.
 */
static inline __attribute__((always_inline)) bool
pol_key_eq(const char *stored, const char *key, size_t len, uint8_t kind, bool folded)
{
	size_t i = 0;

	if (kind == POL_ADDR4 || kind == POL_ADDR6)
		return memcmp(stored, key, len) == 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t sw, kw;

		memcpy(&sw, stored + i, 8);
		memcpy(&kw, key + i, 8);
		if (sw != (folded ? kw : ascii_lower8(kw)))	/* pol_fold() of each byte */
			return false;
	}
	if (i < len && len >= 8) {
		/* the tail as the last eight bytes, some compared already */
		uint64_t sw, kw;

		memcpy(&sw, stored + len - 8, 8);
		memcpy(&kw, key + len - 8, 8);
		return sw == (folded ? kw : ascii_lower8(kw));
	}
	for (; i < len; i++)
		if ((uint8_t)stored[i] != (folded ? (uint8_t)key[i] : pol_fold((uint8_t)key[i])))
			return false;
	return true;
}

static inline uint64_t
pol_hash_step(uint64_t h, uint8_t c)
{
	return (h ^ c) * POL_FNV_PRIME;
}

/*
 * A name key is hashed eight bytes at a time from its end: the words end where the key
 * ends, the leftmost one holding what is left in its high bytes (its low bytes zero), so a
 * suffix of a name shares its words with the name's and, walked from the end, the hash of
 * every parent suffix is at hand (pol_walk.h). Each word is case-folded (ascii_lower8()).
 * The rotation carries a word's high bytes into the low ones the next multiply spreads.
 */
static inline uint64_t
pol_hash_word_lower(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h << 31 | h >> 33;
}

/* pol_hash_word_lower() is the step of a word with no upper-case letter, folded already. */
static inline uint64_t
pol_hash_word(uint64_t h, uint64_t w)
{
	return pol_hash_word_lower(h, ascii_lower8(w));
}

/*
 * The finaliser (murmur3 fmix64) mixes in policy and kind and spreads the bits for the
 * mask.
 */
static inline uint64_t
pol_hash_final(uint64_t h, uint32_t policy, uint8_t kind)
{
	h ^= ((uint64_t)policy << 8 | kind) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h | 1;
}

/* The len bytes at key (1..8) as a word's high bytes, the low ones zero. */
static inline uint64_t
pol_word_high(const uint8_t *key, size_t len)
{
	uint64_t w = 0;

	for (size_t i = 0; i < len; i++)
		w |= (uint64_t)key[i] << (8 * (8 - len + i));
	return w;
}

/* The unfinished hash of a name key (pol_hash_word()), byte by byte for its leftmost word. */
static inline uint64_t
pol_hash_name(const uint8_t *key, size_t len)
{
	uint64_t h = POL_FNV_OFFSET, w;

	for (; len >= 8; len -= 8) {
		memcpy(&w, key + len - 8, 8);
		h = pol_hash_word(h, w);
	}
	return len > 0 ? pol_hash_word(h, pol_word_high(key, len)) : h;
}

/* Names are hashed a word at a time (case-folded); address keys are bytes (FNV-1a). */
static inline uint64_t
pol_hash_key(const uint8_t *key, size_t len, uint32_t policy, uint8_t kind)
{
	uint64_t h = POL_FNV_OFFSET;

	if (kind == POL_NAME_EXACT || kind == POL_NAME_WILD)
		return pol_hash_final(pol_hash_name(key, len), policy, kind);
	while (len-- > 0)
		h = pol_hash_step(h, key[len]);
	return pol_hash_final(h, policy, kind);
}

/* Address keys: the prefix length, then the masked address. */
static inline size_t
pol_addr_key(uint8_t *key, const uint8_t *addr, size_t alen, unsigned int plen)
{
	key[0] = (uint8_t)plen;
	for (size_t i = 0; i < alen; i++) {
		unsigned int bits = plen > i * 8 ? plen - i * 8 : 0;

		key[1 + i] = bits >= 8 ? addr[i] : (uint8_t)(addr[i] & (0xff00u >> bits));
	}
	return alen + 1;
}

#endif /* POL_SET_H */
