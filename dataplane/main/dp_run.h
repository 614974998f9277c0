/*
 * The daemon: EAL, ports, tables, workers, and the main lcore's loop until a signal.
 */
#ifndef DP_RUN_H
#define DP_RUN_H

struct dp_ctx;
struct pol_config;

/*
 * After rte_eal_init(): the mbuf pool, both ports, the tables, the first generation and
 * the workers (not launched). ctx->port[] must start as RTE_MAX_ETHPORTS. Returns 0, or
 * after printing why -ENOMEM when a table found no room in EAL's memory, -1 for anything
 * else; dp_ctx_teardown() releases what was set up either way.
 */
int dp_ctx_setup(struct dp_ctx *ctx, const struct pol_config *cfg);
void dp_ctx_teardown(struct dp_ctx *ctx);

/*
 * Run namegate with *cfgp. eal/neal: EAL arguments from the command line, or NULL/0 to use
 * its dataplane.eal. A reload replaces *cfgp (the caller frees the last one). Returns the
 * process exit status: 0 after SIGINT/SIGTERM, 1 when anything fails to start (nothing is
 * forwarded then: fail closed).
 */
int dp_run(struct pol_config **cfgp, char **eal, int neal);

#endif
