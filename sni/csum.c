/*
 * The vectorised one's-complement sum for long buffers (sni/csum.h), picked once at start
 * by what the CPU has: Debian builds for a baseline x86-64, so AVX2 is asked for at run
 * time rather than assumed at build time.
 *
 * Each 32-bit lane keeps the low and the high 16-bit word of its column apart, in two
 * accumulators, so nothing carries between words: a lane gains at most 0xffff a step, so
 * it cannot wrap within CSUM_LANE_STEPS steps; longer buffers go in chunks of that.
 */
#include <stdbool.h>

#include "csum_int.h"
#include "sni/csum.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CSUM_X86 1
#endif

#define CSUM_LANE_STEPS	32768	/* 32768 * 2 * 0xffff < 2^32 */

/* the words of the last bytes, fewer than a vector (so fewer than CSUM_VEC_MIN) */
static inline uint64_t
csum_tail(const uint8_t *p, size_t n, uint64_t acc)
{
	return csum_sum(p, n, acc);
}

#ifdef CSUM_X86
static uint64_t
csum_lanes(const uint32_t *lane, unsigned int n, uint64_t acc)
{
	for (unsigned int i = 0; i < n; i++)
		acc = csum_add(acc, lane[i]);
	return acc;
}

__attribute__((target("sse2"))) uint64_t
csum_sum_sse2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	const __m128i low = _mm_set1_epi32(0xffff);

	while (n >= 32) {
		__m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
		uint32_t lanes[8];

		for (unsigned int step = 0; step < CSUM_LANE_STEPS && n >= 32;
		    step++, p += 32, n -= 32) {
			__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
			__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));

			lo = _mm_add_epi32(lo, _mm_and_si128(v0, low));
			hi = _mm_add_epi32(hi, _mm_srli_epi32(v0, 16));
			lo = _mm_add_epi32(lo, _mm_and_si128(v1, low));
			hi = _mm_add_epi32(hi, _mm_srli_epi32(v1, 16));
		}
		_mm_storeu_si128((__m128i *)(void *)lanes, lo);
		_mm_storeu_si128((__m128i *)(void *)(lanes + 4), hi);
		acc = csum_lanes(lanes, 8, acc);
	}
	return csum_tail(p, n, acc);
}

__attribute__((target("avx2"))) uint64_t
csum_sum_avx2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	const __m256i low = _mm256_set1_epi32(0xffff);

	while (n >= 64) {
		__m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
		uint32_t lanes[16];

		for (unsigned int step = 0; step < CSUM_LANE_STEPS && n >= 64;
		    step++, p += 64, n -= 64) {
			__m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
			__m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));

			lo = _mm256_add_epi32(lo, _mm256_and_si256(v0, low));
			hi = _mm256_add_epi32(hi, _mm256_srli_epi32(v0, 16));
			lo = _mm256_add_epi32(lo, _mm256_and_si256(v1, low));
			hi = _mm256_add_epi32(hi, _mm256_srli_epi32(v1, 16));
		}
		_mm256_storeu_si256((__m256i *)(void *)lanes, lo);
		_mm256_storeu_si256((__m256i *)(void *)(lanes + 8), hi);
		acc = csum_lanes(lanes, 16, acc);
	}
	return csum_sum_sse2(p, n, acc);	/* fewer than 64 bytes left */
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
	return csum_tail(p, n, acc);
}
#endif

uint64_t
csum_sum_long(const void *buf, size_t n, uint64_t acc)
{
	return csum_long(buf, n, acc);
}
