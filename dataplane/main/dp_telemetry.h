/*
 * DPDK telemetry commands with the metrics' data (SPEC s6): /namegate/vms,
 * /namegate/vm,<name> and /namegate/bindings,<name>, for dpdk-telemetry.py.
 */
#ifndef DP_TELEMETRY_H
#define DP_TELEMETRY_H

struct dp_control;

/* Register the commands; they read c (which must outlive the process's EAL). 0 or -1. */
int dp_telemetry_register(struct dp_control *c);

#endif
