/*
 * Egress budgets, the main lcore's side: each (VM, budget) window fed once a second from
 * the workers' byte cells (worker/include/dp_budget.h), the allowance each worker may
 * spend until the next second, the 80 % / 100 % / freed events, and the metrics
 * namegate_vm_budget_used_bytes and namegate_vm_budget_limit_bytes.
 */
#ifndef DP_BUDGETS_H
#define DP_BUDGETS_H

#include <stdio.h>

struct dp_control;

/*
 * Main lcore, each turn of its loop: returns at once unless the second or the generation
 * changed. On a new generation the windows are matched to its budgets by VM and host
 * pattern (a reload keeps what was spent), and every allowance is published before the
 * workers can open a flow through a new budget for long.
 */
void dp_budget_tick(struct dp_control *c);

/* Every window's series, with # HELP and # TYPE (the scrape thread, under gen_lock). */
void dp_budget_render(struct dp_control *c, FILE *out);

/* Free the windows (at exit). */
void dp_budget_free(void);

#endif
