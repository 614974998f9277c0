/*
 * The index of the flow table (dp_flow.c) and of the binding table (dp_bind.c): from a
 * key's hash to its entry's index in the table's array. Buckets of DP_FT_WAYS slots, one
 * cache line each: a 16-bit tag of the key's hash per slot, compared eight at once with
 * SSE2, and the entry's 32-bit index. A key lives in one of two buckets, its first (the
 * hash's low bits) or the one its tag points at from there (partial-key cuckoo hashing,
 * Fan et al., MemC3, 2013): a lookup reads at most the two bucket lines and, for a tag
 * that matches, the entry's key. Inserts place a key in its first bucket when there is
 * room, so most lookups read one.
 *
 * One writer at a time. Readers on other cores may search while it writes (the binding
 * table's): a slot's index is stored before its tag, with release, and a key moved to its
 * other bucket is there before it leaves the first, with dp_ft.moved counted in between;
 * a reader that found nothing reads moved again and searches anew if it changed (as
 * rte_hash's lock-free mode does). The flow table's one reader is its writer.
 *
 * The hash is dp_hash_crc_inline(), keyed at start (dp_hash.h): a VM chooses its ports
 * and, through DNS, some of its peers, and must not be able to aim keys at a bucket pair.
 * The NIC's RSS hash (m->hash.rss) is not used though the port gives it: it is Toeplitz
 * under a key that is public and, for symmetric RSS, a fixed repeating pattern, and
 * Toeplitz is linear, so a VM can find any number of 5-tuples that share an RSS value;
 * whatever keyed mixing came after, keys with one RSS value would share a bucket pair.
 */
#ifndef DP_FLOW_TAB_H
#define DP_FLOW_TAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <emmintrin.h>
#ifdef __SSE4_1__
#include <smmintrin.h>
#endif

#include "dp_flow.h"
#include "dp_hash.h"

#define DP_FT_WAYS	8		/* slots in a bucket: their tags fill one SSE2 register */
#define DP_FT_LOAD_NUM	5		/* buckets for cap flows: cap * 5 / 4 slots, rounded */
#define DP_FT_LOAD_DEN	4		/* up to 2^n buckets, so at most 80 % of slots used */

struct dp_ft_bucket {
	uint16_t tag[DP_FT_WAYS];	/* 0: the slot is free */
	uint32_t idx[DP_FT_WAYS];	/* the entry in the flow array */
	/*
	 * Nonzero once a key whose first bucket this may be was placed in, or moved to, its
	 * other bucket; never cleared. While zero, a key not among this bucket's tags is in
	 * neither (dp_flow_lookup_start() reads one line for it).
	 */
	uint16_t spilled;
	uint8_t pad[14];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct dp_ft_bucket) == 64, "a bucket is one cache line");

struct dp_ft {
	struct dp_ft_bucket *b;
	uint32_t mask;			/* buckets - 1, buckets a power of two >= 2 */
	uint32_t seed;
	uint32_t moved;			/* keys moved to their other bucket (atomic) */
};

/* Buckets for a table of cap keys. */
uint32_t dp_ft_buckets(uint32_t cap);

/* Allocate the buckets for cap keys. 0 or -ENOMEM. */
int dp_ft_init(struct dp_ft *ft, uint32_t cap, uint32_t seed, int socket);
void dp_ft_fini(struct dp_ft *ft);


/* A flow key's hash: its last word is always zero and tells no two keys apart. */
static inline uint32_t
dp_ft_hash(const struct dp_ft *ft, const struct dp_flow_key *k)
{
	return dp_hash_crc_inline(k, offsetof(struct dp_flow_key, zero), ft->seed);
}

/*
 * dp_ft_hash() of a key whose words, all it hashes, are w0, w1 and w2: where the key is
 * made (dp_lean_key()), from the registers it is stored from rather than read back.
 */
static inline uint32_t
dp_ft_hash_words(const struct dp_ft *ft, uint64_t w0, uint64_t w1, uint64_t w2)
{
	const uint64_t w[] = { w0, w1, w2 };

	_Static_assert(offsetof(struct dp_flow_key, zero) == sizeof(w), "the hashed words");
	return dp_hash_crc_inline(w, sizeof(w), ft->seed);
}

/*
 * A hash's tag: its high half, never 0 (a free slot's). With more than 2^16 buckets its
 * low bits are also the first bucket's high bits; within a bucket tags still differ in
 * 14 bits or more at 2^18 buckets, for a million flows.
 */
static inline uint16_t
dp_ft_tag(uint32_t h)
{
	uint16_t tag = (uint16_t)(h >> 16);

	return tag != 0 ? tag : 1;
}

static inline uint32_t
dp_ft_first(const struct dp_ft *ft, uint32_t h)
{
	return h & ft->mask;
}

/* The other bucket of a key in bucket b with tag tag: either one from the other. */
static inline uint32_t
dp_ft_alt(const struct dp_ft *ft, uint32_t b, uint16_t tag)
{
	uint32_t off = (uint32_t)tag * UINT32_C(0x9e3779b1) & ft->mask;

	return b ^ (off != 0 ? off : 1);
}

/*
 * dp_ft_tag(h) in each of eight words, from h as it is: its high half spread by a
 * shuffle, 0 made 1 by an unsigned max (no scalar shift and select before it).
 */
static inline __m128i
dp_ft_tag_vec(uint32_t h)
{
#ifdef __SSE4_1__
	__m128i v = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)h), _mm_set1_epi16(0x0302));

	return _mm_max_epu16(v, _mm_set1_epi16(1));
#else
	return _mm_set1_epi16((short)dp_ft_tag(h));
#endif
}

/* dp_ft_tag_vec(*h), the hash loaded into the vector register (no scalar move between). */
static inline __m128i
dp_ft_tag_vec_at(const uint32_t *h)
{
#ifdef __SSE4_1__
	__m128i v = _mm_shuffle_epi8(_mm_loadu_si32(h), _mm_set1_epi16(0x0302));

	return _mm_max_epu16(v, _mm_set1_epi16(1));
#else
	return _mm_set1_epi16((short)dp_ft_tag(*h));
#endif
}

/* dp_ft_match_pairs() of a tag dp_ft_tag_vec() spread. */
static inline uint32_t
dp_ft_match_pairs_vec(const struct dp_ft_bucket *b, __m128i tag)
{
	__m128i tags = _mm_load_si128((const __m128i *)(const void *)b->tag);

	return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(tags, tag));
}

/*
 * Slots of bucket b whose tag is tag: bits 2 * slot and 2 * slot + 1 set for each, for a
 * caller that needs only whether one matches and the first (__builtin_ctz(): 2 * slot).
 */
static inline uint32_t
dp_ft_match_pairs(const struct dp_ft_bucket *b, uint16_t tag)
{
	return dp_ft_match_pairs_vec(b, _mm_set1_epi16((short)tag));
}

/*
 * Slots of bucket b whose tag is tag: bit 2 * slot set for each. A reader beside a writer
 * orders the slots' idx and the entries after it with an acquire fence.
 */
static inline uint32_t
dp_ft_match(const struct dp_ft_bucket *b, uint16_t tag)
{
	return dp_ft_match_pairs(b, tag) & 0x5555u;
}

/*
 * The lowest set bit of m, nonzero, as a 64-bit word: gcc widens __builtin_ctz()'s int
 * with an instruction of its own before it can index with it.
 */
static inline uint64_t
dp_ft_low_bit(uint32_t m)
{
	uint64_t bit;

	__asm__("bsfl %1, %k0" : "=r"(bit) : "rm"(m) : "cc");
	return bit;
}

/*
 * Whether m has a bit set and, if so, its lowest in *bit, as dp_ft_low_bit(): bsf's zero
 * flag answers the first, so that the burst's lookup tests no match before it.
 */
static inline bool
dp_ft_low_bit_if(uint32_t m, uint64_t *bit)
{
	bool none;

	__asm__("bsfl %2, %k0" : "=r"(*bit), "=@ccz"(none) : "rm"(m));
	return !none;
}

/*
 * The index in the slot of bit, the low bit of its pair in a match (an even number): the
 * byte offset of idx[bit / 2] is bit * 2, one scaled load with no shift before it.
 */
static inline uint32_t
dp_ft_idx_at(const struct dp_ft_bucket *b, uint64_t bit)
{
	uint32_t idx;

	memcpy(&idx, (const uint8_t *)b->idx + 2 * bit, sizeof(idx));
	return idx;
}

static inline bool
dp_ft_key_eq(const struct dp_flow_key *a, const struct dp_flow_key *b)
{
	const __m128i *x = (const __m128i *)(const void *)a, *y = (const __m128i *)(const void *)b;
	__m128i lo = _mm_cmpeq_epi8(_mm_loadu_si128(x), _mm_loadu_si128(y));
	__m128i hi = _mm_cmpeq_epi8(_mm_loadu_si128(x + 1), _mm_loadu_si128(y + 1));

	return _mm_movemask_epi8(_mm_and_si128(lo, hi)) == 0xffff;
}

/* k's entry among the slots of bucket b that match tag, or NULL. */
static inline struct dp_flow *
dp_ft_find_in(const struct dp_ft_bucket *b, uint16_t tag, struct dp_flow *e,
    const struct dp_flow_key *k)
{
	for (uint32_t m = dp_ft_match(b, tag); m != 0; m &= m - 1) {
		struct dp_flow *f = &e[b->idx[__builtin_ctz(m) / 2]];

		if (dp_ft_key_eq(&f->key, k))
			return f;
	}
	return NULL;
}

/* k's entry (h its hash) in the flow array e, or NULL. */
static inline struct dp_flow *
dp_ft_find(const struct dp_ft *ft, uint32_t h, struct dp_flow *e, const struct dp_flow_key *k)
{
	uint16_t tag = dp_ft_tag(h);
	uint32_t b = dp_ft_first(ft, h);
	struct dp_flow *f;

	if ((f = dp_ft_find_in(&ft->b[b], tag, e, k)) != NULL)
		return f;
	return dp_ft_find_in(&ft->b[dp_ft_alt(ft, b, tag)], tag, e, k);
}

/* The first free slot of bucket b, or -1. */
static inline int
dp_ft_free_slot(const struct dp_ft_bucket *b)
{
	uint32_t m = dp_ft_match(b, 0);

	return m != 0 ? __builtin_ctz(m) / 2 : -1;
}

/* Place idx with tag in slot s of bucket bk: its index first, then the tag (release). */
static inline void
dp_ft_place(struct dp_ft_bucket *bk, int s, uint16_t tag, uint32_t idx)
{
	__atomic_store_n(&bk->idx[s], idx, __ATOMIC_RELAXED);
	__atomic_store_n(&bk->tag[s], tag, __ATOMIC_RELEASE);
}

/* dp_ft_insert() when the key's first bucket, b1, is full. */
int dp_ft_insert_far(struct dp_ft *ft, uint32_t b1, uint16_t tag, uint32_t idx);

/*
 * Index idx under hash h (its key not in the table). -ENOSPC when neither bucket nor a
 * bounded search for a chain of moves to a free slot found room. Most keys find room in
 * their first bucket: that case inline (each connection's opening inserts its flow), the
 * other apart, so that it takes no stack frame and leaves the other bucket uncomputed.
 */
static inline int
dp_ft_insert(struct dp_ft *ft, uint32_t h, uint32_t idx)
{
	struct dp_ft_bucket *bk = &ft->b[dp_ft_first(ft, h)];
	int s;

	if ((s = dp_ft_free_slot(bk)) < 0)
		return dp_ft_insert_far(ft, dp_ft_first(ft, h), dp_ft_tag(h), idx);
	dp_ft_place(bk, s, dp_ft_tag(h), idx);
	return 0;
}

/*
 * The place of idx's slot in bucket b, whose tags tag matches: its tag's byte offset from
 * the first bucket's (dp_ft_place_bit()); UINT32_MAX when b does not hold it. A match's bit
 * (2 * slot) is the byte offset of the slot's tag and half that of its index.
 */
static inline uint32_t
dp_ft_place_in(const struct dp_ft *ft, uint32_t b, __m128i tag, uint32_t idx)
{
	for (uint32_t m = dp_ft_match_pairs_vec(&ft->b[b], tag) & 0x5555u; m != 0; m &= m - 1) {
		uint64_t bit = dp_ft_low_bit(m);

		if (dp_ft_idx_at(&ft->b[b], bit) == idx)
			return b * (uint32_t)sizeof(ft->b[0]) + (uint32_t)bit;
	}
	return UINT32_MAX;
}

/* The place of idx's slot (h its key's hash), UINT32_MAX when neither bucket holds it. */
static inline uint32_t
dp_ft_place_of(const struct dp_ft *ft, uint32_t h, uint32_t idx)
{
	uint32_t b = dp_ft_first(ft, h), at = dp_ft_place_in(ft, b, dp_ft_tag_vec(h), idx);

	if (at != UINT32_MAX)
		return at;
	return dp_ft_place_in(ft, dp_ft_alt(ft, b, dp_ft_tag(h)), dp_ft_tag_vec(h), idx);
}

/*
 * Drop idx's slot (h its key's hash). Inline: the DNS queries' drop, and a moved flow's.
 * A match's bit (2 * slot) is the byte offset of the slot's tag and half that of its index.
 */
static inline void
dp_ft_delete(struct dp_ft *ft, uint32_t h, uint32_t idx)
{
	__m128i tag = dp_ft_tag_vec(h);
	uint32_t b = dp_ft_first(ft, h);

	for (int i = 0; i < 2; i++, b = dp_ft_alt(ft, b, dp_ft_tag(h)))
		for (uint32_t m = dp_ft_match_pairs_vec(&ft->b[b], tag) & 0x5555u; m != 0;
		    m &= m - 1) {
			uint64_t bit = dp_ft_low_bit(m);

			if (dp_ft_idx_at(&ft->b[b], bit) == idx) {
				__atomic_store_n((uint16_t *)(void *)((uint8_t *)ft->b[b].tag + bit),
				    0, __ATOMIC_RELAXED);
				return;
			}
		}
}

/*
 * dp_ft_place() into bucket bk's slot of bit (2 * slot, as dp_ft_idx_at()'s): its place,
 * its tag's byte offset from the first bucket's, is bk's plus bit. A flow keeps its slot's
 * place, so that its close drops the slot without a search (dp_ft_delete_at()).
 */
static inline void
dp_ft_place_bit(struct dp_ft_bucket *bk, uint64_t bit, uint16_t tag, uint32_t idx)
{
	__atomic_store_n((uint32_t *)(void *)((uint8_t *)bk->idx + 2 * bit), idx,
	    __ATOMIC_RELAXED);
	__atomic_store_n((uint16_t *)(void *)((uint8_t *)bk->tag + bit), tag, __ATOMIC_RELEASE);
}

/*
 * Drop idx's slot if it is at place at (dp_ft_place_bit()): true; else false and nothing
 * dropped (a move took its key to the key's other bucket: the slot is free, or another
 * key's). A slot in use holds one entry's index, no other slot that one's, so a nonzero
 * tag with idx beside it is idx's slot; a free slot keeps the index it last held.
 */
static inline bool
dp_ft_delete_at(struct dp_ft *ft, uint32_t at, uint32_t idx)
{
	uint8_t *tag = (uint8_t *)ft->b + at;
	uint32_t held;
	uint16_t t;

	/* idx[s] lies 2 s bytes further into the bucket than tag[s]: at % 64 past it */
	_Static_assert(sizeof(struct dp_ft_bucket) == 64 && offsetof(struct dp_ft_bucket, idx) ==
	    DP_FT_WAYS * sizeof(uint16_t), "a slot's index is found from its tag's place");
	memcpy(&held, tag + offsetof(struct dp_ft_bucket, idx) + (at & 63), sizeof(held));
	memcpy(&t, tag, sizeof(t));
	if (unlikely(t == 0 || held != idx))
		return false;
	__atomic_store_n((uint16_t *)(void *)tag, 0, __ATOMIC_RELAXED);
	return true;
}

#endif
