/*
 * The vectorised sums behind csum_sum_long(), each callable for the tests whatever the
 * CPU picked (x86 only; the AVX2 one only where csum_has_avx2()).
 */
#ifndef SNI_CSUM_INT_H
#define SNI_CSUM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The longest buffer csum_sum_avx2() sums in one pass: its words' sum, at most 65535 * 65536
 * and an odd last byte, fits the 32 bits its lanes add up to. Longer ones go in such passes.
 */
#define CSUM_AVX2_MAX	(UINT32_C(1) << 17)

uint64_t csum_sum_sse2(const void *buf, size_t n, uint64_t acc);
uint64_t csum_sum_avx2(const void *buf, size_t n, uint64_t acc);
bool csum_has_avx2(void);

#endif
