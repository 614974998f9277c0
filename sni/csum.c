/*
 * The vectorised one's-complement sum for long buffers (sni/csum.h), picked once at start
 * by what the CPU has: Debian builds for a baseline x86-64, so AVX2 is asked for at run
 * time rather than assumed at build time.
 *
 * A vector's 16-bit words are added in pairs into 32-bit lanes by one multiply-add by 1
 * (pmaddwd), which takes words as signed: each word has 0x8000 flipped first, so it counts
 * as itself less 32768, and 32768 per word is added back at the end. So a step costs a
 * flip (its load folded in), a multiply-add and an add. SSE2's lanes are exact integers:
 * a lane gains between -65536 and 65534 a vector, and the lanes of two vectors' halves
 * are added once before the sum, so none can wrap within CSUM_VECS vectors; longer buffers
 * go in chunks of that. AVX2's lanes may wrap: only their total modulo 2^32 is read, exact
 * up to CSUM_AVX2_MAX bytes (csum_int.h).
 */
#include <stdbool.h>

#include "csum_int.h"
#include "sni/csum.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CSUM_X86 1
#endif

#define CSUM_VECS	8192	/* 2 * 8192 * 65536 = 2^30: a lane's bound, either sign */
#define CSUM_BIAS	32768	/* what the flip took from each word */

#ifdef CSUM_X86
/* The vectors of a chunk: as many as n holds, but never so many that a lane could wrap. */
static inline size_t
csum_chunk(size_t n, size_t width)
{
	return n / width < CSUM_VECS ? n / width : CSUM_VECS;
}

/* acc plus a chunk's lanes (signed, four 32-bit ones in v) and the bias of its words */
__attribute__((target("sse2"))) static inline uint64_t
csum_lanes128(uint64_t acc, __m128i v, size_t words)
{
	int32_t lane[4];
	int64_t sum = (int64_t)words * CSUM_BIAS;

	_mm_storeu_si128((__m128i *)(void *)lane, v);
	sum += (int64_t)lane[0] + lane[1] + lane[2] + lane[3];
	return csum_add(acc, (uint64_t)sum);	/* the words' exact sum: never negative */
}

/* v's words, flipped and added in pairs into 32-bit lanes */
__attribute__((target("sse2"))) static inline __m128i
csum_pairs128(__m128i v)
{
	return _mm_madd_epi16(_mm_xor_si128(v, _mm_set1_epi16((short)0x8000)),
	    _mm_set1_epi16(1));
}

__attribute__((target("sse2"))) uint64_t
csum_sum_sse2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;

	while (n >= 16) {
		__m128i s0 = _mm_setzero_si128(), s1 = _mm_setzero_si128();
		size_t vecs = csum_chunk(n, 16);
		const uint8_t *end = p + vecs * 16;

		n -= vecs * 16;
		for (; end - p >= 32; p += 32) {
			s0 = _mm_add_epi32(s0, csum_pairs128(_mm_loadu_si128((const void *)p)));
			s1 = _mm_add_epi32(s1, csum_pairs128(_mm_loadu_si128((const void *)(p + 16))));
		}
		if (p < end) {
			s0 = _mm_add_epi32(s0, csum_pairs128(_mm_loadu_si128((const void *)p)));
			p += 16;
		}
		acc = csum_lanes128(acc, _mm_add_epi32(s0, s1), vecs * 8);
	}
	return csum_sum(p, n, acc);	/* fewer than 16 bytes left */
}

/*
 * AVX2's two constants, the flip and the 1 of each word, then the multipliers of the last
 * vector's words: 0 for the 16 words before byte 64, 1 for the 16 after, so the 32 bytes
 * from byte 64 + k (k even) keep a vector's last k / 2 words. csum_sum_avx2() loads them
 * through a pointer GCC cannot see through: told their values, it built each from an
 * immediate in three instructions.
 */
static const uint16_t csum_k256[4][16] __attribute__((aligned(32))) = {
	{ 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
	  0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000 },
	{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
	{ 0 },
	{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
};

/* v's words, flipped (flip) and added in pairs (times mul's words) into 32-bit lanes */
__attribute__((target("avx2"))) static inline __m256i
csum_pairs256(__m256i v, __m256i flip, __m256i mul)
{
	return _mm256_madd_epi16(_mm256_xor_si256(v, flip), mul);
}

/* s plus the k (a constant: unrolled) vectors at p, their words in lanes */
__attribute__((target("avx2"))) static inline __m256i
csum_vecs256(__m256i s, const uint8_t *p, unsigned int k, __m256i flip, __m256i one)
{
#pragma GCC unroll 8
	for (unsigned int i = 0; i < k; i++)
		s = _mm256_add_epi32(s, csum_pairs256(_mm256_loadu_si256((const void *)(p + 32 * i)),
		    flip, one));
	return s;
}

/* csum_sum_avx2() for a buffer too short for a vector, or too long for one pass */
__attribute__((cold, noinline)) static uint64_t
csum_avx2_outside(const uint8_t *p, size_t n, uint64_t acc)
{
	for (; n > CSUM_AVX2_MAX; p += CSUM_AVX2_MAX, n -= CSUM_AVX2_MAX)
		acc = csum_sum_avx2(p, CSUM_AVX2_MAX, acc);	/* even: words stay words */
	return n >= 32 ? csum_sum_avx2(p, n, acc) : csum_sum(p, n, acc);
}

/*
 * The lanes are added modulo 2^32 and may wrap: only their total is read, and with the
 * bias of the words added back (the flip took 32768 from each: 16384 a byte of n, less an
 * odd last one's) and that odd byte (a word's first), it is the words' exact sum, as that
 * is below 2^32 (CSUM_AVX2_MAX). The lanes start with the last 0..30 even bytes, as the
 * vector that ends with them, its words before them multiplied by 0 (csum_k256[2..3]; it
 * starts inside buf, n being at least 32); then the vectors go eight at a time, then
 * four, two and one by the bits of n. The total is taken with two horizontal adds, an
 * instruction each where a shuffle and an add are two.
 */
__attribute__((target("avx2"))) uint64_t
csum_sum_avx2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	const uint16_t (*kk)[16] = csum_k256;
	uint32_t first = (uint32_t)n << 14, sum;
	ptrdiff_t i;
	__m256i flip, one, s;
	__m128i x;

	if (n - 32 > CSUM_AVX2_MAX - 32)
		return csum_avx2_outside(p, n, acc);
	if (n & 1)
		first += p[n - 1] - 16384u;
	__asm__("" : "+r"(kk));
	flip = _mm256_load_si256((const void *)kk[0]);
	one = _mm256_load_si256((const void *)kk[1]);
	s = csum_pairs256(_mm256_loadu_si256((const void *)(p + (n & ~(size_t)1) - 32)), flip,
	    _mm256_loadu_si256((const void *)((const uint8_t *)kk[2] + (n & 30))));
	i = -(ptrdiff_t)(n & ~(size_t)255);
	p += n & ~(size_t)255;
	for (; i != 0; i += 256) {
		__asm__("" : "+r"(i));	/* an index to 0 that ends the loop, not a compare */
		s = csum_vecs256(s, p + i, 8, flip, one);
	}
	if (n & 128) {
		s = csum_vecs256(s, p, 4, flip, one);
		p += 128;
	}
	if (n & 64) {
		s = csum_vecs256(s, p, 2, flip, one);
		p += 64;
	}
	if (n & 32)
		s = csum_vecs256(s, p, 1, flip, one);
	x = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
	x = _mm_hadd_epi32(x, x);	/* lanes 0+1, 2+3 */
	x = _mm_hadd_epi32(x, x);	/* and the two together */
	sum = (uint32_t)_mm_cvtsi128_si32(x) + first;
	return csum_add(acc, sum);
}

static uint64_t (*csum_long)(const void *, size_t, uint64_t) = csum_sum_sse2;

__attribute__((constructor)) static void
csum_pick(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		csum_long = csum_sum_avx2;
}

bool
csum_has_avx2(void)
{
	return csum_long == csum_sum_avx2;
}
#else
static uint64_t
csum_long(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;

	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		acc = csum_add(acc, w);
	}
	return csum_sum(p, n, acc);
}
#endif

uint64_t
csum_sum_long(const void *buf, size_t n, uint64_t acc)
{
	return csum_long(buf, n, acc);
}

/*
 * acc plus the quads (a constant: unrolled) 4-byte words at p, in one carry chain: out of
 * line, GCC stores the chain's sum once, at its end (inline in the burst, once a step)
 */
static inline uint64_t
csum_add_quads(uint64_t acc, const uint8_t *p, unsigned int quads)
{
	uint32_t w4 = 0;

	if (quads & 1)
		memcpy(&w4, p + 8 * (quads / 2), 4);
#ifdef __x86_64__
	unsigned long long s = acc;
	unsigned char c = 0;

	if (quads & 1)
		c = __builtin_ia32_addcarryx_u64(c, s, w4, &s);
#pragma GCC unroll 32
	for (unsigned int i = 0; i < quads / 2; i++)
		c = __builtin_ia32_addcarryx_u64(c, s, csum_word(p + 8 * i), &s);
	return (uint64_t)s + c;		/* at most 2^64 - 2 plus 1: no carry out */
#else
	acc = csum_add_words(acc, p, quads / 2);
	return quads & 1 ? csum_add(acc, w4) : acc;
#endif
}

/*
 * The last n & 3 bytes of the n (>= 4) at p as a word whose first bytes they are, zero
 * past them: csum_tail() from a 4-byte load, its shift of 32 - 8 * (n & 3) the 32-bit
 * shift's own count of 8 * n's negation.
 */
static inline uint32_t
csum_tail4(const uint8_t *p, size_t n)
{
	uint32_t w;

	memcpy(&w, p + n - 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return w << ((0 - 8 * (unsigned int)n) & 31);
#else
	return w >> ((0 - 8 * (unsigned int)n) & 31);
#endif
}

/* csum_sum_any()'s cases: CSUM_QUADSk(j) those of j to j + k - 1 words of 4 bytes */
#define CSUM_QUADS(k)	case (k): acc = csum_add_quads(acc, p, (k)); break
#define CSUM_QUADS2(k)	CSUM_QUADS(k); CSUM_QUADS((k) + 1)
#define CSUM_QUADS4(k)	CSUM_QUADS2(k); CSUM_QUADS2((k) + 2)
#define CSUM_QUADS8(k)	CSUM_QUADS4(k); CSUM_QUADS4((k) + 4)

/*
 * Below this many bytes the carry chains of csum_sum_any() cost less than a vectorised
 * sum: a chain takes 17 instructions a 128 bytes to AVX2's 13, but the vectors' setup,
 * last bytes and reduction cost more. Measured: 512 gained less than 256 (lifecycle
 * 5,517.2 against 5,506.5 Ir/conn).
 */
#define CSUM_ANY_VEC_MIN	256

/*
 * A short length's 4-byte words in one carry chain of their own, reached by one jump on
 * n / 4 (a jump table of a case for each 4 bytes below CSUM_ANY_VEC_MIN), then the last
 * n & 3 bytes in one load; long ones go on to the CPU's vectors, asked first (a received
 * segment's long sum, a hello's, is the common call: one compare to its kernel). One
 * chain from 128 bytes too, not a 128-byte one before the table's: no second compare, no
 * carry brought around between them, no pointer and length moved on.
 */
uint64_t
csum_sum_any(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	unsigned int q;

	if (n >= CSUM_ANY_VEC_MIN)
		return csum_long(buf, n, acc);
	q = (unsigned int)(n >> 2);
	__asm__("" : "+r"(q));	/* else GCC tests n < 256 again; masked, q needs no test */
	_Static_assert(CSUM_ANY_VEC_MIN == 256, "a case for each 4 bytes below it");
	switch (q & 63) {
	case 0:
	case 1:
		return csum_sum_tiny(p, n, acc);
	CSUM_QUADS2(2); CSUM_QUADS4(4); CSUM_QUADS8(8); CSUM_QUADS8(16);
	CSUM_QUADS8(24); CSUM_QUADS8(32); CSUM_QUADS8(40); CSUM_QUADS8(48); CSUM_QUADS8(56);
	default:
		__builtin_unreachable();
	}
	if (n & 3)
		acc = csum_add(acc, csum_tail4(p, n));
	return acc;
}
