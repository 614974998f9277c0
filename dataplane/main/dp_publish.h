/*
 * Reload's publish: a configuration (the file's, or a grants view of it) put in force on
 * every worker. control/ reaches it through the plane's generation.
 */
#ifndef DP_PUBLISH_H
#define DP_PUBLISH_H

#include <stdbool.h>
#include <stdio.h>

struct dp_ctx;
struct ctl_names;
struct pol_config;

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
