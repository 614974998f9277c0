/*
 * The daemon: EAL, ports, tables, workers, and the main lcore's loop until a signal.
 */
#ifndef DP_RUN_H
#define DP_RUN_H

struct pol_config;

/*
 * Run namegate with cfg. eal/neal: EAL arguments from the command line, or NULL/0 to use
 * cfg's dataplane.eal. Returns the process exit status: 0 after SIGINT/SIGTERM, 1 when
 * anything fails to start (nothing is forwarded then: fail closed).
 */
int dp_run(const struct pol_config *cfg, char **eal, int neal);

#endif
