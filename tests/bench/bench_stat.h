/*
 * What the in-process benchmarks share: a clock, a cheap reproducible random stream (the
 * same draws every run, so two runs time the same work), and an order for qsort() to take
 * medians and spreads of per-round figures with.
 */
#ifndef BENCH_STAT_H
#define BENCH_STAT_H

#include <stdint.h>
#include <time.h>

static inline double
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* xorshift64 on *s (never 0). */
static inline uint32_t
bench_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
