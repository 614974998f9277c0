/*
 * Egress budgets, the control loop's side: each (VM, budget) window fed once a second
 * from the workers' byte counts (the plane's budget_used), the allowance each worker may
 * spend until the next second (budget_allow), the 80 % / 100 % / freed events, and the
 * metrics namegate_vm_budget_used_bytes and namegate_vm_budget_limit_bytes.
 */
#ifndef CTL_BUDGETS_H
#define CTL_BUDGETS_H

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

/* Every window's series, with # HELP and # TYPE: any thread (the scrape). */
void ctl_budgets_render(struct ctl_budgets *b, FILE *out);

#endif
