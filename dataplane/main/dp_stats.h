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

/* VM slot vm's counters summed over the workers. */
void dp_stats_sum(const struct dp_ctx *ctx, uint16_t vm, struct dp_vm_stats *sum);

/* Open flows of VM slot vm, all workers. */
uint64_t dp_stats_flows(const struct dp_ctx *ctx, uint16_t vm);

/* SPEC s6 label values. */
extern const char *const dp_verdict_labels[DP_VERDICT_MAX];
extern const char *const dp_reason_labels[DP_REASON_MAX];

#endif
