/*
 * Counters summed over the workers, rendered as Prometheus text with the names of
 * api/dp_counters.h: what GET /metrics serves and SIGUSR1 prints. It runs on the main
 * lcore or the metrics thread and reads the workers' counters without stopping them (each
 * is a naturally aligned 64-bit word that only its worker writes).
 */
#ifndef DP_STATS_H
#define DP_STATS_H

#include <stdio.h>

#include "api/dp_counters.h"
#include "dp.h"

/*
 * Every family of api/dp_counters.h, in its order, each as # HELP, # TYPE and all its
 * samples (present VMs in slot order), then flushes out.
 */
void dp_stats_print(const struct dp_ctx *ctx, FILE *out);

/*
 * The label values of dimension d, *n of them: DP_CNT_DIM_NONE has one, NULL, so a
 * family's samples are always the product of its two dimensions.
 */
const char *const *dp_stats_dim(enum dp_cnt_dim d, unsigned int *n);

/*
 * Family f's value for its samples' i-th dim1 value and j-th dim2 value (0 for NONE),
 * summed over the workers; vm is the VM slot for scope VM, ignored for GLOBAL.
 */
uint64_t dp_stats_value(const struct dp_ctx *ctx, enum dp_cnt f, uint16_t vm, unsigned int i,
    unsigned int j);

/* SPEC s6 label values. */
extern const char *const dp_verdict_labels[DP_VERDICT_MAX];
extern const char *const dp_reason_labels[DP_REASON_MAX];

#endif
