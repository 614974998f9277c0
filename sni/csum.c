/*
 * The vectorised one's-complement sum for long buffers (sni/csum.h), picked once at start
 * by what the CPU has: Debian builds for a baseline x86-64, so AVX2 is asked for at run
 * time rather than assumed at build time.
 *
 * A vector's 16-bit words are added in pairs into 32-bit lanes by one multiply-add by 1
 * (pmaddwd), which takes words as signed: each word has 0x8000 flipped first, so it counts
 * as itself less 32768, and 32768 per word is added back at the end. So the sums are exact
 * integers, and a step costs a flip, a multiply-add and an add. A lane gains between
 * -65536 and 65534 a vector, and the lanes of two vectors' halves are added once before
 * the sum, so none can wrap within CSUM_VECS vectors; longer buffers go in chunks of that
 * (AVX2's, which adds all its lanes in the vector, in chunks of CSUM_VECS_AVX2).
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
 * AVX2's two constants, the flip and the 1 of each word: csum_sum_avx2() loads them once
 * through a pointer GCC cannot see through, as told their values it built each from an
 * immediate in three instructions, at the start and again for the tail.
 */
static const uint16_t csum_k256[2][16] __attribute__((aligned(32))) = {
	{ 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
	  0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000 },
	{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
};

/* v's words, flipped (flip) and added in pairs (one) into 32-bit lanes */
__attribute__((target("avx2"))) static inline __m256i
csum_pairs256(__m256i v, __m256i flip, __m256i one)
{
	return _mm256_madd_epi16(_mm256_xor_si256(v, flip), one);
}

/* the 32 bytes at p, their words in lanes */
__attribute__((target("avx2"))) static inline __m256i
csum_load256(const uint8_t *p, __m256i flip, __m256i one)
{
	return csum_pairs256(_mm256_loadu_si256((const void *)p), flip, one);
}

/*
 * AVX2's chunk: the eight lanes are added in the vector, into one 32-bit sum, so a chunk
 * and the tail after it (CSUM_VECS_AVX2 + 1 vectors) stay within 2^19 a vector: 2^30.
 */
#define CSUM_VECS_AVX2	2048

/* 0 in the first 32 bytes, 0xff in the last: the 32 from byte k keep a vector's last k */
static const uint8_t csum_keep[64] __attribute__((aligned(64))) = {
	[32] = 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

/* acc plus the lanes of v (signed, their total within 2^31), extra and the words' bias */
__attribute__((target("avx2"))) static inline uint64_t
csum_lanes256(uint64_t acc, __m256i v, size_t words, int64_t extra)
{
	__m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));	/* lanes 0+2, 1+3 */
	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));	/* and the two together */
	return csum_add(acc, (uint64_t)((int64_t)_mm_cvtsi128_si32(x) + extra +
	    (int64_t)words * CSUM_BIAS));	/* the words' exact sum: never negative */
}

/*
 * The chunks of whole vectors, then the last 0..31 bytes without a scalar step: their
 * even part as one vector that ends with them, its bytes before them masked to zero (it
 * starts an even number of bytes into buf, n being at least 32, so its words are buf's;
 * the zeros count as words summing to 0), and an odd last byte, a word's first byte.
 */
__attribute__((target("avx2"))) uint64_t
csum_sum_avx2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf, *end = p + n;
	const uint16_t (*kk)[16] = csum_k256;
	__m256i flip, one;

	if (n < 32)
		return csum_sum(p, n, acc);
	__asm__("" : "+r"(kk));
	flip = _mm256_load_si256((const void *)kk[0]);
	one = _mm256_load_si256((const void *)kk[1]);
	for (;;) {
		__m256i s0 = _mm256_setzero_si256(), keep;
		size_t vecs = (size_t)(end - p) / 32, left, even;

		if (vecs > CSUM_VECS_AVX2)
			vecs = CSUM_VECS_AVX2;
		for (size_t k = vecs / 4; k > 0; k--, p += 128) {
			s0 = _mm256_add_epi32(s0, _mm256_add_epi32(_mm256_add_epi32(
			    csum_load256(p, flip, one), csum_load256(p + 32, flip, one)),
			    _mm256_add_epi32(csum_load256(p + 64, flip, one),
			    csum_load256(p + 96, flip, one))));
		}
		/* the 0..3 whole vectors left: two, then one, with no loop to count them */
		if (vecs & 2) {
			s0 = _mm256_add_epi32(s0, _mm256_add_epi32(csum_load256(p, flip, one),
			    csum_load256(p + 32, flip, one)));
			p += 64;
		}
		if (vecs & 1) {
			s0 = _mm256_add_epi32(s0, csum_load256(p, flip, one));
			p += 32;
		}
		if ((left = (size_t)(end - p)) >= 32) {		/* a chunk, more after it */
			acc = csum_lanes256(acc, s0, vecs * 16, 0);
			continue;
		}
		even = left & ~(size_t)1;
		keep = _mm256_loadu_si256((const void *)(csum_keep + even));
		s0 = _mm256_add_epi32(s0, csum_pairs256(_mm256_and_si256(keep,
		    _mm256_loadu_si256((const void *)(p + even - 32))), flip, one));
		return csum_lanes256(acc, s0, vecs * 16 + 16, (left & 1) ? p[left - 1] : 0);
	}
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
