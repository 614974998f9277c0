/*
 * AES-128 encryption of one block with AES-NI (FIPS-197): the key schedule, made once, and
 * the ten rounds, one instruction each. dp_hash.c's name hash is its only user; callers
 * check the CPU has AES-NI (and AVX, whose encodings these take) first.
 */
#ifndef DP_AES_H
#define DP_AES_H

#if defined(__x86_64__)
#include <stdint.h>

#include <immintrin.h>	// IWYU pragma: keep (AES-NI; its own wmmintrin.h is no layout header)

/* One step of the AES-128 key schedule (FIPS-197 s5.2): the last round key and its assist. */
__attribute__((target("avx,aes"))) static inline __m128i
dp_aes_key_step(__m128i k, __m128i assist)
{
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 8));	/* each word the XOR of those before */
	return _mm_xor_si128(k, _mm_shuffle_epi32(assist, 0xff));
}

#define DP_AES_STEP(rk, i, rcon) \
	((rk)[i] = dp_aes_key_step((rk)[(i) - 1], _mm_aeskeygenassist_si128((rk)[(i) - 1], rcon)))

__attribute__((target("avx,aes"))) static inline void
dp_aes_expand(const uint8_t key[16], __m128i rk[11])
{
	rk[0] = _mm_loadu_si128((const __m128i *)(const void *)key);
	DP_AES_STEP(rk, 1, 0x01);
	DP_AES_STEP(rk, 2, 0x02);
	DP_AES_STEP(rk, 3, 0x04);
	DP_AES_STEP(rk, 4, 0x08);
	DP_AES_STEP(rk, 5, 0x10);
	DP_AES_STEP(rk, 6, 0x20);
	DP_AES_STEP(rk, 7, 0x40);
	DP_AES_STEP(rk, 8, 0x80);
	DP_AES_STEP(rk, 9, 0x1b);
	DP_AES_STEP(rk, 10, 0x36);
}

__attribute__((target("avx,aes"))) static inline __m128i
dp_aes_encrypt(const __m128i rk[11], __m128i x)
{
	x = _mm_xor_si128(x, rk[0]);
#pragma GCC unroll 9
	for (int i = 1; i < 10; i++)
		x = _mm_aesenc_si128(x, rk[i]);
	return _mm_aesenclast_si128(x, rk[10]);
}
#endif

#endif
