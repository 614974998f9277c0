/*
 * Hashing what a VM chooses (ports, query IDs, names, addresses it resolved). A VM that
 * could predict where its keys land could fill one bucket, or make two of its names
 * share one entry; so every such hash is keyed with a secret drawn at start. DPDK-free.
 */
#ifndef DP_HASH_H
#define DP_HASH_H

#include <stdbool.h>
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

/*
 * The hash that stands in for a host name (dp_name_hash(): bindings, flows, HA records,
 * never shown to a VM, and the same for one name all the process long). A VM picks the
 * names, and learns, each time a hello's SNI is compared with the name that bound the
 * address, whether their hashes are equal: two names of its choosing must not collide
 * short of a chance it cannot raise. A keyed PRF gives that; SipHash-2-4 (dp_hash_bytes)
 * is one, at about 190 instructions for a 20-byte name.
 *
 * Where the CPU has AES-NI and PCLMULQDQ, and the name is at most DP_HASH_NAME_BYTES, the
 * same property for about a third: the CLNH sum of the name (dp_hash_digest's, under a key
 * of its own), then AES-128 of that sum under another key, its low 64 bits. The classic
 * hash-then-encrypt PRF (Wegman and Carter; Shoup, 1996): two different names collide only
 * when their CLNH sums do, at most 2^-63 whatever the names (equal lengths, dp_hash_digest's
 * bound; different numbers of blocks: a block only one has is (a ^ k0)(b ^ k1), zero for
 * one k0 at most given k1; one number of blocks but different lengths: the length XORed
 * into the sum differs and every block term cancels or is a nonzero polynomial in the key,
 * as above), or when AES, a permutation, maps two different sums to outputs whose low 64
 * bits agree, 2^-64 for a pseudorandom permutation. Each test a VM makes through a cut or
 * allowed connection is one such pair; the sums never leave the process, and what the AES
 * layer shows of them (were a hash ever shown) is indistinguishable from random, so no
 * answer tells the VM anything of the CLNH key beyond the pairs it tried. Longer names
 * (HTTP Host past DP_HASH_NAME_BYTES) take SipHash; which form a name takes depends on
 * its length alone, and the choice is made at the process's start.
 */
#define DP_HASH_NAME_BYTES	256	/* a DNS name's text is at most 253 */

/* Its form for the CPU, chosen once at start (a constructor in dp_hash_name.c). */
extern uint64_t (*dp_hash_name_fn)(const void *buf, size_t len);

static inline uint64_t
dp_hash_name(const void *buf, size_t len)
{
	return dp_hash_name_fn(buf, len);
}

/*
 * For the tests: the same under explicit keys (a CLNH key of DP_HASH_NAME_BYTES / 8 words,
 * an AES-128 key, a SipHash key); AES-128 of one block (false: the CPU has no AES-NI);
 * whether dp_hash_name takes the AES form at all.
 */
uint64_t dp_hash_name_keyed(const uint64_t *nh_key, const uint8_t aes_key[16], uint64_t k0,
    uint64_t k1, const void *buf, size_t len);
bool dp_hash_aes128(const uint8_t key[16], const uint8_t in[16], uint8_t out[16]);
bool dp_hash_has_aes(void);

/*
 * A keyed digest of len bytes, for telling later whether bytes sent again are the bytes
 * that were judged (a one-segment ClientHello namegate kept no copy of). The VM wrote
 * both, so it must not be able to make two contents of one length share a digest: NH over
 * 16-byte blocks with a start-time key as long as the message (Black et al., UMAC, 1999;
 * its L1 hash, RFC 4418 s5.2.3, the length added), kept whole as its 128-bit sum. NH's
 * collision chance for two different messages of one length is 2^-64 whatever they are.
 * A digest is only ever compared with another (dp_digest_eq), never shown or logged, so
 * it needs no PRF over it: a VM learns one bit per connection it has cut, whether two of
 * its messages collide, which for each pair it tries is that 2^-64. Past DP_HASH_NH_BYTES
 * (the key's length) it is SipHash of the whole.
 *
 * Where the CPU multiplies carry-less (PCLMULQDQ, with AVX), the same construction over
 * GF(2)[x] instead (CLNH: Lemire and Kaser, 2016): the XOR of (m0 ^ k0) * (m1 ^ k1) over
 * the blocks, the length XORed in, in about half the instructions. Its bound is NH's: two
 * messages of one length that differ in block j collide when, all other key words fixed,
 * (a ^ k0)(b ^ k1) ^ (a' ^ k0)(b' ^ k1) is one constant; the k0 k1 terms cancel, leaving
 * k1 (a ^ a') ^ k0 (b ^ b') plus a constant, and a nonzero polynomial times one of 2^64
 * key words hits a given product for at most one of them: 2^-64. Which of the two a
 * process uses is fixed at its start; digests are never kept past it.
 */
#define DP_HASH_NH_BYTES	4096

struct dp_digest {
	uint64_t lo, hi;
};

/*
 * Its form for the CPU, chosen once at start (a constructor in dp_hash.c): every digest,
 * one for each allowed one-segment hello, is one call that asks nothing of the CPU.
 */
extern struct dp_digest (*dp_hash_digest_fn)(const void *buf, size_t len);

static inline struct dp_digest
dp_hash_digest(const void *buf, size_t len)
{
	return dp_hash_digest_fn(buf, len);
}

/* The same under an explicit NH key (DP_HASH_NH_BYTES / 8 words) and SipHash key. */
struct dp_digest dp_hash_digest_keyed(const uint64_t *nh_key, uint64_t k0, uint64_t k1,
    const void *buf, size_t len);

/* Its two forms, for the tests: NH; CLNH, only where dp_hash_has_clnh(). */
struct dp_digest dp_hash_digest_nh(const uint64_t *nh_key, uint64_t k0, uint64_t k1,
    const void *buf, size_t len);
struct dp_digest dp_hash_digest_clnh(const uint64_t *nh_key, uint64_t k0, uint64_t k1,
    const void *buf, size_t len);
bool dp_hash_has_clnh(void);

/* Are two digests of bytes of one length the same? */
static inline bool
dp_digest_eq(struct dp_digest a, struct dp_digest b)
{
	return ((a.lo ^ b.lo) | (a.hi ^ b.hi)) == 0;
}

#define DP_HASH_CRC_WORDS	4	/* the longest key dp_hash_crc takes, in 64-bit words */

/* The start-time words dp_hash_crc adds to each key word (read by the inline form). */
extern uint64_t dp_hash_crc_words[DP_HASH_CRC_WORDS];

/*
 * The per-frame hash of a flow key (len a multiple of 8, at most 32 bytes): CRC-32C in
 * hardware, one instruction a word, over each word plus a secret word, from a secret
 * seed. CRC alone is linear: two keys whose XOR is in its kernel collide under every seed,
 * which a VM could aim at. The secret additions carry between bits in ways that depend on
 * the secret, so which keys collide depends on it too. Not a PRF (SipHash is, at ten
 * times the cost): what it guards is a bucket-cuckoo table, where a VM that still managed
 * to aim keys at one bucket pair would fill only its own flows' room, with lookups bounded
 * either way. The signature fits rte_hash's hash_func, which calls it on add and delete.
 */
static inline uint32_t
dp_hash_crc_inline(const void *key, uint32_t len, uint32_t seed)
{
	const uint8_t *p = key;
	uint32_t n = len / 8 < DP_HASH_CRC_WORDS ? len / 8 : DP_HASH_CRC_WORDS;
	uint64_t h = seed, w;

	/* unrolled for a constant len (gcc -O2 keeps the loop otherwise, a third of the cost) */
#pragma GCC unroll 4
	for (uint32_t i = 0; i < n; i++) {
		__builtin_memcpy(&w, p + 8 * i, 8);
		w += dp_hash_crc_words[i];
#ifdef __SSE4_2__
		h = __builtin_ia32_crc32di(h, w);
#else
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);	/* a build without SSE4.2 */
		h ^= h >> 29;
#endif
	}
#ifdef __SSE4_2__
	return (uint32_t)h;	/* CRC32's high half is zero: folding it in would change nothing */
#else
	return (uint32_t)(h ^ h >> 32);
#endif
}

uint32_t dp_hash_crc(const void *key, uint32_t len, uint32_t seed);

/*
 * The rte_hash size for a table that holds at most cap keys: a quarter more, which
 * rte_hash rounds up to the next power of two of buckets, so the table is never more
 * than about 80 % (usually 50 %) full. A cuckoo hash near full spends its adds searching
 * for room and then fails them: a full flow table took 1 k connections a second.
 */
static inline uint32_t
dp_hash_entries(uint32_t cap)
{
	return cap > UINT32_MAX / 2 ? cap : cap + cap / 4 + 8;
}

#endif
