/*
 * SipHash-2-4, the digests of judged bytes (NH, CLNH) and the process's hash secrets.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <smmintrin.h>
#include <immintrin.h>	// IWYU pragma: keep (PCLMULQDQ; its own wmmintrin.h is no layout header)
#endif

#include "dp_hash.h"
#include "dp_hash_int.h"

static uint64_t dp_hash_k0, dp_hash_k1;
static uint64_t dp_hash_sip[4];	/* SipHash's state under (k0, k1) before any message */
static uint32_t dp_hash_rte_seed;
uint64_t dp_hash_crc_words[DP_HASH_CRC_WORDS];
static uint64_t dp_hash_nh_key[DP_HASH_NH_BYTES / 8];

/* The state a key starts SipHash in (its initialisation, the same for every message). */
static void
dp_siphash24_start(uint64_t k0, uint64_t k1, uint64_t v[4])
{
	v[0] = k0 ^ UINT64_C(0x736f6d6570736575);
	v[1] = k1 ^ UINT64_C(0x646f72616e646f6d);
	v[2] = k0 ^ UINT64_C(0x6c7967656e657261);
	v[3] = k1 ^ UINT64_C(0x7465646279746573);
}

int
dp_hash_init(void)
{
	uint64_t key[3 + DP_HASH_CRC_WORDS];

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -errno;
	dp_hash_k0 = key[0];
	dp_hash_k1 = key[1];
	dp_siphash24_start(dp_hash_k0, dp_hash_k1, dp_hash_sip);
	dp_hash_rte_seed = (uint32_t)key[2];
	memcpy(dp_hash_crc_words, key + 3, sizeof(dp_hash_crc_words));
	if (getrandom(dp_hash_nh_key, sizeof(dp_hash_nh_key), 0) != (ssize_t)sizeof(dp_hash_nh_key))
		return -errno;
	return dp_hash_name_init();
}

uint32_t
dp_hash_crc(const void *key, uint32_t len, uint32_t seed)
{
	return dp_hash_crc_inline(key, len, seed);
}

uint32_t
dp_hash_seed(void)
{
	return dp_hash_rte_seed;
}

static inline uint64_t
dp_rotl(uint64_t x, int b)
{
	return x << b | x >> (64 - b);
}

/* One SipRound over the state v[0..3]. */
static inline void
dp_sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = dp_rotl(v[1], 13) ^ v[0];
	v[0] = dp_rotl(v[0], 32);
	v[2] += v[3];
	v[3] = dp_rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = dp_rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = dp_rotl(v[1], 17) ^ v[2];
	v[2] = dp_rotl(v[2], 32);
}

/* The message is read as little-endian 64-bit words, whatever the CPU. */
static inline uint64_t
dp_le64(const uint8_t *p, size_t n)
{
	uint64_t w = 0;

	for (size_t i = 0; i < n; i++)
		w |= (uint64_t)p[i] << (8 * i);
	return w;
}

/* SipHash-2-4 of the message from the key's state v (changed). */
static inline __attribute__((always_inline)) uint64_t
dp_siphash24_run(uint64_t v[4], const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t whole = len - len % 8;
	uint64_t m;

	for (size_t i = 0; i < whole; i += 8) {
		m = dp_ld64(p + i);		/* dp_le64 goes a byte at a time */
		v[3] ^= m;
		dp_sipround(v);
		dp_sipround(v);
		v[0] ^= m;
	}
	/*
	 * The last word: the remaining bytes, and the length's low byte at the top. With a
	 * word before them, one load of the 8 bytes that end the message, shifted down.
	 */
	if (len % 8 == 0) {
		m = 0;
	} else if (len > 8) {
		m = dp_ld64(p + len - 8) >> (8 * (8 - len % 8));
	} else {
		m = dp_le64(p + whole, len % 8);
	}
	m |= (uint64_t)(len & 0xff) << 56;
	v[3] ^= m;
	dp_sipround(v);
	dp_sipround(v);
	v[0] ^= m;
	v[2] ^= 0xff;
	dp_sipround(v);		/* four finalisation rounds, unrolled: the loop cost two in fourteen */
	dp_sipround(v);
	dp_sipround(v);
	dp_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t
dp_siphash24(uint64_t k0, uint64_t k1, const void *buf, size_t len)
{
	uint64_t v[4];

	dp_siphash24_start(k0, k1, v);
	return dp_siphash24_run(v, buf, len);
}

uint64_t
dp_hash_bytes(const void *buf, size_t len)
{
	uint64_t v[4] = { dp_hash_sip[0], dp_hash_sip[1], dp_hash_sip[2], dp_hash_sip[3] };

	return dp_siphash24_run(v, buf, len);
}

/* One NH block: 16 bytes of the message at p, the two key words at k. */
static inline unsigned __int128
dp_nh_block(const uint8_t *p, const uint64_t *k)
{
	return (unsigned __int128)(dp_ld64(p) + k[0]) * (dp_ld64(p + 8) + k[1]);
}

/*
 * The last block of a message of len bytes whose whole blocks end at i < len, zero-padded,
 * as two little-endian words.
 */
static inline void
dp_digest_tail(const uint8_t *p, size_t len, size_t i, uint64_t tail[2])
{
	if (len >= 16) {
		/* from the 16 bytes that end the message, shifted */
		unsigned __int128 last = (unsigned __int128)dp_ld64(p + len - 8) << 64 |
		    dp_ld64(p + len - 16);

		last >>= 8 * (16 - (len - i));
		tail[0] = (uint64_t)last;
		tail[1] = (uint64_t)(last >> 64);
	} else {
		tail[0] = dp_le64(p + i, len - i < 8 ? len - i : 8);
		tail[1] = len - i > 8 ? dp_le64(p + i + 8, len - i - 8) : 0;
	}
}

struct dp_digest
dp_hash_digest_nh(const uint64_t *nh_key, uint64_t k0, uint64_t k1, const void *buf,
    size_t len)
{
	const uint8_t *p = buf;
	unsigned __int128 sum = len;	/* RFC 4418 s5.2.3: the length added to NH's sum */
	uint64_t tail[2];
	size_t i;

	if (len > DP_HASH_NH_BYTES)
		return (struct dp_digest){ .lo = dp_siphash24(k0, k1, buf, len) };
	/* NH: the sum mod 2^128 of (m0 + k0 mod 2^64) * (m1 + k1 mod 2^64) over 16-byte blocks */
	/*
	 * A block a step, eight to a turn unrolled by the compiler, which then adds each
	 * product straight into the sum (four written out, it summed them apart first: two
	 * more moves a block)
	 */
#pragma GCC unroll 8
	for (i = 0; i + 16 <= len; i += 16)
		sum += dp_nh_block(p + i, nh_key + i / 8);
	if (i < len) {		/* the length tells a zero-padded block from one with zeros */
		dp_digest_tail(p, len, i, tail);
		sum += (unsigned __int128)(tail[0] + nh_key[i / 8]) * (tail[1] + nh_key[i / 8 + 1]);
	}
	return (struct dp_digest){ .lo = (uint64_t)sum, .hi = (uint64_t)(sum >> 64) };
}

const uint8_t dp_hash_shift[32] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

#if defined(__x86_64__)
/* CLNH's term of one block: (m0 ^ k0) * (m1 ^ k1) carry-less, x the block XOR its key. */
#define DP_CLNH_TERM(x)	_mm_clmulepi64_si128((x), (x), 0x01)

/* The CLNH sum with the block at p (16 bytes), its key at k. */
__attribute__((target("avx,pclmul"))) static inline __m128i
dp_clnh_block(__m128i sum, const uint8_t *p, const void *k)
{
	__m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)p),
	    _mm_loadu_si128((const __m128i *)(const void *)k));

	return _mm_xor_si128(sum, DP_CLNH_TERM(x));
}

/* The digest that is the CLNH sum sum. */
__attribute__((target("avx,pclmul"))) static inline struct dp_digest
dp_clnh_digest(__m128i sum)
{
	return (struct dp_digest){ .lo = (uint64_t)_mm_cvtsi128_si64(sum),
	    .hi = (uint64_t)_mm_extract_epi64(sum, 1) };
}

/* The digest from the CLNH sum of the whole blocks before i, len - i < 16 bytes left. */
__attribute__((target("avx,pclmul"))) static inline struct dp_digest
dp_clnh_end(__m128i sum, const uint64_t *nh_key, const uint8_t *p, size_t len, size_t i)
{
	uint64_t tail[2];
	__m128i x;

	if (i < len) {
		dp_digest_tail(p, len, i, tail);
		x = _mm_set_epi64x((long long)(tail[1] ^ nh_key[i / 8 + 1]),
		    (long long)(tail[0] ^ nh_key[i / 8]));
		sum = _mm_xor_si128(sum, DP_CLNH_TERM(x));
	}
	return dp_clnh_digest(sum);
}

/*
 * CLNH, as dp_hash.h says: NH with the carry-less product and XOR for its sums. AVX's
 * three-operand forms let each key block be an unaligned operand of its XOR, four
 * instructions a block where NH takes seven.
 */
__attribute__((target("avx,pclmul"))) static struct dp_digest
dp_hash_clnh_run(const uint64_t *nh_key, const uint8_t *p, size_t len)
{
	__m128i sum = _mm_cvtsi64_si128((long long)len);
	size_t i;

#pragma GCC unroll 8
	for (i = 0; i + 16 <= len; i += 16)
		sum = dp_clnh_block(sum, p + i, nh_key + i / 8);
	return dp_clnh_end(sum, nh_key, p, len, i);
}

/*
 * 32 bytes at p XOR 32 at k, each loaded unaligned in one instruction: gcc's generic tune
 * splits such a load in two (a load and an insert of the upper half), and gcc will not
 * inline dp_digest_tail() into a function tuned otherwise.
 */
__attribute__((target("avx2"))) static inline __m256i
dp_clnh_xor32(const uint8_t *p, const void *k)
{
	struct dp_b32 { uint8_t b[32]; };
	__m256i x;

	__asm__("vmovdqu %1, %0\n\tvpxor %2, %0, %0" : "=&x"(x) :
	    "m"(*(const struct dp_b32 *)(const void *)p),
	    "m"(*(const struct dp_b32 *)k));
	return x;
}

/* The CLNH sum with the two blocks at p (32 bytes), their key at k. */
__attribute__((target("avx2,pclmul"), always_inline)) static inline __m128i
dp_clnh_pair(__m128i sum, const uint8_t *p, const void *k)
{
	__m256i x = dp_clnh_xor32(p, k);
	__m128i lo = DP_CLNH_TERM(_mm256_castsi256_si128(x));
	__m128i hi = _mm256_extracti128_si256(x, 1);

	return _mm_xor_si128(_mm_xor_si128(sum, lo), DP_CLNH_TERM(hi));
}

/*
 * The same where the CPU has AVX2: two blocks a step, one 32-byte load XORed with their
 * key in one instruction, the upper block moved down for its product: seven instructions
 * for two blocks where one at a time takes eight. Blocks are XORed into the sum in
 * another order, which XOR does not see. Eight blocks a turn, counted by an index to 0
 * from the end of the whole turns (message and key at one offset from their ends), then
 * four, two and one block by the bits of len, as csum_sum_avx2() does: a loop of two a
 * turn and its own count cost some twenty instructions a digest more.
 */
__attribute__((target("avx2,pclmul,ssse3"), always_inline)) static inline struct dp_digest
dp_hash_clnh_run2(const uint64_t *nh_key, const uint8_t *p, size_t len)
{
	__m128i sum = _mm_cvtsi64_si128((long long)len), lo;
	size_t whole = len & ~(size_t)127;
	const uint8_t *k = (const uint8_t *)nh_key + whole;
	ptrdiff_t i = -(ptrdiff_t)whole;

	p += whole;
	for (; i != 0; i += 128) {
		__asm__("" : "+r"(i));	/* an index to 0 that ends the loop, not a compare */
		sum = dp_clnh_pair(sum, p + i, k + i);
		sum = dp_clnh_pair(sum, p + i + 32, k + i + 32);
		sum = dp_clnh_pair(sum, p + i + 64, k + i + 64);
		sum = dp_clnh_pair(sum, p + i + 96, k + i + 96);
	}
	if (len & 64) {
		sum = dp_clnh_pair(sum, p, k);
		sum = dp_clnh_pair(sum, p + 32, k + 32);
		p += 64;
		k += 64;
	}
	if (len & 32) {
		sum = dp_clnh_pair(sum, p, k);
		p += 32;
		k += 32;
	}
	if (len & 16) {
		sum = dp_clnh_block(sum, p, k);
		p += 16;
		k += 16;
	}
	if ((len & 15) == 0)
		return dp_clnh_digest(sum);
	if (len < 16)		/* no block before it: the words of dp_digest_tail() */
		return dp_clnh_end(sum, nh_key, p, len, 0);
	/*
	 * The last block zero-padded (dp_digest_tail()'s words): the 16 bytes that end the
	 * message, moved down over those a block took, in one shuffle where the words took
	 * some twenty instructions
	 */
	lo = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)
	    (p + (len & 15) - 16)), _mm_loadu_si128((const __m128i *)(const void *)
	    (dp_hash_shift + 16 - (len & 15))));
	lo = _mm_xor_si128(lo, _mm_loadu_si128((const __m128i *)(const void *)k));
	return dp_clnh_digest(_mm_xor_si128(sum, DP_CLNH_TERM(lo)));
}

/* dp_hash_clnh_run2() as a call, for dp_hash_digest_clnh(), which is built for any CPU. */
__attribute__((target("avx2,pclmul,ssse3"))) static struct dp_digest
dp_hash_clnh_run2_keyed(const uint64_t *nh_key, const uint8_t *p, size_t len)
{
	return dp_hash_clnh_run2(nh_key, p, len);
}

static bool dp_hash_clmul;	/* the CPU has AVX and PCLMULQDQ: dp_hash_digest is CLNH */
static bool dp_hash_clmul2;	/* and AVX2: two blocks a step */

/* dp_hash_digest() where the CPU has AVX2 too: two blocks a step, the start-time keys. */
__attribute__((target("avx2,pclmul,ssse3"))) static struct dp_digest
dp_hash_digest_avx2(const void *buf, size_t len)
{
	if (len > DP_HASH_NH_BYTES)
		return (struct dp_digest){ .lo = dp_hash_bytes(buf, len) };
	return dp_hash_clnh_run2(dp_hash_nh_key, buf, len);
}

__attribute__((constructor)) static void
dp_hash_clmul_probe(void)
{
	__builtin_cpu_init();
	dp_hash_clmul = __builtin_cpu_supports("avx") && __builtin_cpu_supports("pclmul");
	dp_hash_clmul2 = dp_hash_clmul && __builtin_cpu_supports("avx2");
	if (dp_hash_clmul2)
		dp_hash_digest_fn = dp_hash_digest_avx2;
}
#endif

bool
dp_hash_has_clnh(void)
{
#if defined(__x86_64__)
	return dp_hash_clmul;
#else
	return false;
#endif
}

struct dp_digest
dp_hash_digest_clnh(const uint64_t *nh_key, uint64_t k0, uint64_t k1, const void *buf,
    size_t len)
{
	if (len > DP_HASH_NH_BYTES)
		return (struct dp_digest){ .lo = dp_siphash24(k0, k1, buf, len) };
#if defined(__x86_64__)
	return dp_hash_clmul2 ? dp_hash_clnh_run2_keyed(nh_key, buf, len) :
	    dp_hash_clnh_run(nh_key, buf, len);
#else
	(void)nh_key;
	return (struct dp_digest){ 0 };	/* never called: dp_hash_has_clnh() is false */
#endif
}

struct dp_digest
dp_hash_digest_keyed(const uint64_t *nh_key, uint64_t k0, uint64_t k1, const void *buf,
    size_t len)
{
	return dp_hash_has_clnh() ? dp_hash_digest_clnh(nh_key, k0, k1, buf, len) :
	    dp_hash_digest_nh(nh_key, k0, k1, buf, len);
}

/* dp_hash_digest()'s form before dp_hash_clmul_probe(), and where the CPU has no AVX2. */
static struct dp_digest
dp_hash_digest_any(const void *buf, size_t len)
{
	return dp_hash_digest_keyed(dp_hash_nh_key, dp_hash_k0, dp_hash_k1, buf, len);
}

struct dp_digest (*dp_hash_digest_fn)(const void *buf, size_t len) = dp_hash_digest_any;
