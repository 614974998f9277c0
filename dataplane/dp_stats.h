/*
 * Counters summed over the workers, written with SPEC s6's metric names. Until the
 * metrics endpoint exists this is what SIGUSR1 prints; it runs on the main lcore and
 * reads the workers' counters without stopping them (each is a naturally aligned 64-bit
 * word that only its worker writes).
 */
#ifndef DP_STATS_H
#define DP_STATS_H

#include <stdio.h>

#include "dp.h"

void dp_stats_print(const struct dp_ctx *ctx, FILE *out);

#endif
