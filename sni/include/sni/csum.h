/*
 * The Internet checksum's one's-complement sum (RFC 1071), fast: every frame without
 * checksum offload is summed whole on receive, so this is on the hot path.
 *
 * The sum is kept in a 64-bit accumulator of host-order words with the carry of each add
 * brought back around (end-around carry), 8 bytes a step: the same sum once folded to 16
 * bits (RFC 1071 s2(B): byte order only swaps the result's bytes, and words may be added
 * in any grouping). Buffers past CSUM_VEC_MIN go to a vectorised sum chosen by the CPU at
 * run time (AVX2 where it has it, SSE2 otherwise: Debian builds for a baseline CPU).
 * DPDK-free.
 */
#ifndef SNI_CSUM_H
#define SNI_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CSUM_VEC_MIN	128	/* shorter buffers are summed inline, a word at a time */

/* a + b with the carry out of bit 63 added back in: what one's-complement addition is */
static inline uint64_t
csum_add(uint64_t a, uint64_t b)
{
	uint64_t s = a + b;

	return s + (s < b);
}

/*
 * csum_add(), its sum then kept as it is: told nothing of it, GCC folds the adc $0 into
 * the next add and must then compare for that add's own carry, a compare a word.
 */
static inline uint64_t
csum_add_step(uint64_t a, uint64_t b)
{
	uint64_t s = csum_add(a, b);

	__asm__("" : "+r"(s));
	return s;
}

/*
 * a + b + c and a + b + c + d with end-around carry, an add and an adc $0 a word. The
 * add-with-carry builtin's chain (add, adc..., then adc $0) is an instruction a word
 * shorter, but GCC 12 keeps its sum in memory: a store each step, and inside the burst
 * loop the slot's address reloaded from the stack first, which cost more than the adc $0s.
 */
static inline uint64_t
csum_add3(uint64_t a, uint64_t b, uint64_t c)
{
	return csum_add(csum_add_step(a, b), c);
}

static inline uint64_t
csum_add4w(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	__asm__("" : "+r"(a));	/* a sum of small terms, else merged into the first add */
	return csum_add(csum_add_step(csum_add_step(a, b), c), d);
}

/* acc plus the sum of n bytes at buf, vectorised (csum.c): for n >= CSUM_VEC_MIN */
uint64_t csum_sum_long(const void *buf, size_t n, uint64_t acc);

/* csum_sum() of a length not known at build time (csum.c) */
uint64_t csum_sum_any(const void *buf, size_t n, uint64_t acc);

/* the 8-byte word at p */
static inline uint64_t
csum_word(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/* acc plus the words (a constant: unrolled) 8-byte words at p, csum_add3()'s way */
static inline uint64_t
csum_add_words(uint64_t acc, const uint8_t *p, unsigned int words)
{
#pragma GCC unroll 8
	for (unsigned int i = 0; i < words; i++)
		acc = csum_add_step(acc, csum_word(p + 8 * i));
	return acc;
}

/* acc plus the four 8-byte words at p */
static inline uint64_t
csum_add4(uint64_t acc, const uint8_t *p)
{
	return csum_add_words(acc, p, 4);
}

/*
 * The last n & 7 bytes of the n (>= 8) at p, as a word whose first bytes they are, zero
 * past them: one load of the 8 bytes that end the buffer (inside it, as n >= 8), the bytes
 * before them shifted out. Each byte lands where a load of its own word would put it, so
 * it sums as the zero-padded tail would.
 */
static inline uint64_t
csum_tail(const uint8_t *p, size_t n)
{
	uint64_t w = csum_word(p + n - 8);

	/* 64 - 8 * (n & 7), n & 7 not 0: the shift of 8 * n's negation within a word */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return w << ((0 - 8 * n) & 63);
#else
	return w >> ((0 - 8 * n) & 63);
#endif
}

/*
 * csum_sum() for 8 <= n < CSUM_VEC_MIN, straight-line, inline: the 8-byte words for each
 * bit of n from 64 down to 8, then the tail in one load (csum_tail()) rather than a 4-,
 * 2- and 1-byte step. A short segment's sum (every small frame's) costs no call.
 */
static inline uint64_t
csum_sum_short(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;

	_Static_assert(CSUM_VEC_MIN == 128, "the bits of a shorter length: 64 down to 8");
	if (n & 64) {
		acc = csum_add_words(acc, p, 8);
		p += 64;
	}
	if (n & 32) {
		acc = csum_add4(acc, p);
		p += 32;
	}
	if (n & 16) {
		acc = csum_add_words(acc, p, 2);
		p += 16;
	}
	if (n & 8)
		acc = csum_add(acc, csum_word(p));
	if (n & 7)
		acc = csum_add(acc, csum_tail(buf, n));
	return acc;
}

/* csum_sum() of n < 8 bytes: a word of each size n holds */
static inline uint64_t
csum_sum_tiny(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	uint32_t w4;
	uint16_t w2;

	if (n & 4) {
		memcpy(&w4, p, 4);
		acc = csum_add(acc, w4);
		p += 4;
	}
	if (n & 2) {
		memcpy(&w2, p, 2);
		acc = csum_add(acc, w2);
		p += 2;
	}
	if (n & 1) {		/* the first byte of a word: where a load of the word puts it */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		acc = csum_add(acc, (uint64_t)*p << 8);
#else
		acc = csum_add(acc, *p);
#endif
	}
	return acc;
}

/*
 * acc plus the one's-complement sum of the n bytes at buf, taken as 16-bit words from
 * buf's first byte (an odd last byte is the first byte of a word padded with zero).
 * Below CSUM_VEC_MIN, no loop: a length known at build time (a header's) folds to its
 * run of adds here; any other goes to csum_sum_any(), one jump to its length's run
 * (every frame's short segments come there, and a loop's or a test per bit's counting
 * cost as much as the adds).
 */
static inline uint64_t
csum_sum(const void *buf, size_t n, uint64_t acc)
{
	if (!__builtin_constant_p(n))
		return csum_sum_any(buf, n, acc);
	if (n >= CSUM_VEC_MIN)
		return csum_sum_long(buf, n, acc);
	if (n >= 8)
		return csum_sum_short(buf, n, acc);
	return csum_sum_tiny(buf, n, acc);
}

/*
 * The 16-bit one's-complement sum acc stands for, in host order: 0xffff when what was
 * summed carried its own correct checksum. Byte-swapped on a little-endian CPU, it is the
 * sum of the same words read in network order.
 */
static inline uint16_t
csum_fold(uint64_t acc)
{
	/*
	 * A word plus itself rotated by half its width holds, in its upper half, the two
	 * halves' sum with the carry out of the lower half added back: end-around carry.
	 */
	uint32_t s = (uint32_t)((acc + (acc >> 32 | acc << 32)) >> 32);

	return (uint16_t)((s + (s >> 16 | s << 16)) >> 16);
}

/*
 * csum_fold(acc) == 0xffff, the test of a received checksum, in a multiply and a compare
 * instead of the fold's two rounds. 65535 divides 2^64 - 1, so acc is the sum it stands
 * for modulo 65535, and the fold is 0xffff exactly when acc is a nonzero multiple of 65535
 * (it is zero only for acc zero). Q = 0x0001000100010001 = (2^64 - 1) / 65535, so -Q is
 * 65535's inverse modulo 2^64 and acc * -Q is acc / 65535 for a multiple: in 1..Q for a
 * nonzero one, and for no other acc (the map is one to one). So acc * Q lies in -Q..-1,
 * exactly where adding Q to it carries out of 64 bits.
 */
static inline bool
csum_ok(uint64_t acc)
{
	const uint64_t q = UINT64_C(0x0001000100010001);
	uint64_t wrapped;

	return __builtin_add_overflow(acc * q, q, &wrapped);
}

#endif
