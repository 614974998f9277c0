/*
 * Egress budgets, the control loop's side: each (VM, budget) window fed once a second
 * from the workers' byte counts (the plane's budget_used), the allowance each worker may
 * spend until the next second (budget_allow), the 80 % / 100 % / freed events, and the
 * metrics namegate_vm_budget_used_bytes and namegate_vm_budget_limit_bytes.
 */
#ifndef CTL_BUDGETS_H
#define CTL_BUDGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_budgets;
struct ctl_events;
struct dp_plane;
struct pol_config;

/* cfgp, events (may be NULL) and plane are kept. NULL when out of memory. */
struct ctl_budgets *ctl_budgets_new(struct pol_config *const *cfgp, struct ctl_events *events,
    const struct dp_plane *plane);
void ctl_budgets_free(struct ctl_budgets *b);

/*
 * Each turn of the control loop, now in the workers' seconds: returns at once unless the
 * second or the generation changed. On a new generation the windows are matched to its
 * budgets by VM and host pattern (a reload keeps what was spent), and every allowance is
 * published before the workers can open a flow through a new budget for long.
 */
void ctl_budgets_tick(struct ctl_budgets *b, uint64_t now);

/*
 * The HA pair (namegate(8), HA PAIR): what this box's workers spent in a window goes to
 * the peer, whose window counts it too, so a VM cannot spend its budget once on each box
 * across a failover. Times cross as ages (seconds before the record left), as the
 * bindings' TTLs do, since the boxes' clocks need not agree.
 *
 * fn hears, at each second's step, the bytes each window took from this box's own workers
 * since the last (add: never what the peer sent, so nothing echoes back); NULL stops it.
 */
typedef void ctl_budget_sync_fn(void *arg, const char *vm, const char *rule, uint32_t per,
    uint32_t age, uint64_t bytes, bool add);
void ctl_budgets_set_sync(struct ctl_budgets *b, ctl_budget_sync_fn *fn, void *arg);

/*
 * A resync's step: fn gets each window's buckets that hold bytes, with their ages at now
 * (not add: each the whole count at its age), from window number at (0: the first) until
 * about max records went; returns the window to go on from, 0 when all went.
 */
uint32_t ctl_budgets_resync(struct ctl_budgets *b, uint64_t now, uint32_t at, size_t max,
    ctl_budget_sync_fn *fn, void *arg);

/*
 * The peer's record (ctl_ha_wire.h BUDGET; add as ctl_budget_win_merge()) into VM vm's
 * window for host pattern rule (neither NUL-terminated): 0, -ENOENT when this box has no
 * such window (another configuration, or not built yet), -ESRCH when its window is not per
 * seconds long. The workers' allowances follow at the next second's step.
 */
int ctl_budgets_peer(struct ctl_budgets *b, uint64_t now, const char *vm, size_t vm_len,
    const char *rule, size_t rule_len, uint32_t per, uint32_t age, uint64_t bytes, bool add);

/* Every window's series, with # HELP and # TYPE: any thread (the scrape). */
void ctl_budgets_render(struct ctl_budgets *b, FILE *out);

#endif
