/*
 * Live reload (SIGHUP): parse, validate, build and publish a new generation off the fast
 * path; any failure keeps the running one.
 */
#ifndef DP_RELOAD_H
#define DP_RELOAD_H

#include <stdio.h>

struct dp_ctx;
struct dp_names;
struct pol_config;

/*
 * Load (*cfgp)->path again. On success the new generation is in force on every worker when
 * this returns, the old one and the old *cfgp are freed, and *cfgp is the new
 * configuration: 0. On failure (errors printed to err as FILE:LINE:COL: message) nothing
 * changes: -errno.
 */
int dp_reload(struct dp_ctx *ctx, struct pol_config **cfgp, const struct dp_names *names,
    FILE *err);

#endif
