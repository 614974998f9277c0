/*
 * The flow log's writer, on the main lcore: it takes the workers' flow records
 * (worker/include/dp_flowlog.h), gives them their strings (the VM's name and address,
 * the name a flow's hash stands for among those the VM resolved, its budgets' patterns)
 * and appends each as one JSON line (control/events ctl_flowlog.h) to the flow log, a
 * file, stdout or a collector's socket (ctl_logfile.h). What is lost, on a worker's ring
 * (a VM past its share) or in the writer (a full disk), is counted per VM:
 * namegate_flow_records_dropped_total{vm}.
 */
#ifndef DP_FLOWLOG_OUT_H
#define DP_FLOWLOG_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct dp_ctx;
struct ctl_names;
struct pol_config;
struct dp_flowlog_out;

/* A writer to path for max_vms VM slots; NULL and err on failure. */
struct dp_flowlog_out *dp_flowlog_out_open(const char *path, uint16_t max_vms, char *err,
    size_t errlen);
void dp_flowlog_out_close(struct dp_flowlog_out *o);

/*
 * Every record the workers have waiting, written: names from names (keyed by their hash),
 * budgets as cfg's policies list them.
 */
void dp_flowlog_out_drain(struct dp_flowlog_out *o, struct dp_ctx *ctx,
    const struct ctl_names *names, const struct pol_config *cfg);

/*
 * The workers stopped: a final record ("end":"stop") of every flow still open, written
 * with what was waiting. Main lcore, after rte_eal_mp_wait_lcore().
 */
void dp_flowlog_out_stop(struct dp_flowlog_out *o, struct dp_ctx *ctx,
    const struct ctl_names *names, const struct pol_config *cfg);

/* logrotate's postrotate (SIGUSR2, namegatectl reopen): 0 or -errno. */
int dp_flowlog_out_reopen(struct dp_flowlog_out *o);
/* Once a second: the path renamed or removed is opened again. */
void dp_flowlog_out_tick(struct dp_flowlog_out *o);
const char *dp_flowlog_out_path(const struct dp_flowlog_out *o);

/* The slot's VM is gone: its count of lost records and its name go with it (dp_vmslot.h). */
void dp_flowlog_out_forget_slot(struct dp_flowlog_out *o, uint16_t slot);

/* namegate_flow_records_dropped_total{vm} and namegate_flow_records_total. */
void dp_flowlog_out_render(const struct dp_flowlog_out *o, const struct dp_ctx *ctx,
    FILE *out);

#endif
