/*
 * Live reload (SIGHUP): parse, validate, build and publish a new generation off the fast
 * path; any failure keeps the running one.
 */
#ifndef DP_RELOAD_H
#define DP_RELOAD_H

#include <stdbool.h>
#include <stdio.h>

struct dp_ctx;
struct ctl_grants_live;
struct ctl_names;
struct pol_config;
struct pol_errs;

/*
 * Load (*cfgp)->path again. On success the new generation (the file's policies with the
 * live grants of grants, which may be NULL, on top) is in force on every worker when this
 * returns, the old one and the old *cfgp are freed, and *cfgp is the new configuration: 0.
 * On failure (errors printed to err as FILE:LINE:COL: message) nothing changes: -errno.
 * The file's errors, if it had any, are left on errs (started zeroed; the caller frees).
 */
int dp_reload(struct dp_ctx *ctx, struct pol_config **cfgp, const struct ctl_names *names,
    struct ctl_grants_live *grants, struct pol_errs *errs, FILE *err);

/*
 * Build the next generation from cfg exactly as given (a grants view: its set and its VMs'
 * policies), judge every name in names under it, publish it and retire the running one
 * once every worker has moved: what cfg no longer allows is cut on its next packet. cfg
 * must outlive the generation. 0, or -errno with a message on err and nothing changed.
 * closing (a revoke, an expiry, a reload) never waits on room: should the names table
 * refuse names, the generation is published without them, and what passed through them
 * is cut as not allowed (fail closed) until the VM resolves them again.
 */
int dp_publish(struct dp_ctx *ctx, const struct pol_config *cfg, const struct ctl_names *names,
    bool closing, FILE *err);

#endif
