/*
 * The sliding window of one (VM, egress budget): bytes per bucket of `width` seconds over
 * the last `nb` buckets, so bytes leave the window between per - width and per seconds
 * after they were sent (width is per / CTL_BUDGET_BUCKETS rounded up: 1 s for windows up to
 * 30 s, 2 min for an hour). Plain C, no DPDK: the control loop's arithmetic, unit-tested.
 */
#ifndef CTL_BUDGET_WIN_H
#define CTL_BUDGET_WIN_H

#include <stdbool.h>
#include <stdint.h>

#define CTL_BUDGET_BUCKETS	30

struct ctl_budget_win {
	uint64_t limit;			/* bytes per window */
	uint32_t per;			/* the window, seconds */
	uint32_t width;			/* seconds per bucket */
	uint32_t nb;			/* buckets in the window: per / width rounded up */
	uint64_t head;			/* the newest bucket's number: second / width */
	uint64_t used;			/* the sum of the buckets */
	uint64_t bucket[CTL_BUDGET_BUCKETS];	/* bucket number k at k % nb */
	bool warned;			/* the 80 % event went out since used was below 80 % */
	bool over;			/* used >= limit */
};

/* What a step changed: a bit set per crossing, each reported once. */
#define CTL_BUDGET_WARN		1u	/* used reached 80 % of the limit */
#define CTL_BUDGET_EXHAUSTED	2u	/* used reached the limit: the budget refuses */
#define CTL_BUDGET_FREED		4u	/* back under the limit as old bytes left the window */

/* An empty window of limit bytes per per seconds (per >= 1), starting at second now. */
void ctl_budget_win_init(struct ctl_budget_win *w, uint64_t limit, uint32_t per, uint64_t now);

/*
 * Move the window to second now (now never goes back), letting out the buckets it passed,
 * then count bytes sent since the last step in the current bucket. Returns the crossings
 * (DP_BUDGET_* bits): WARN once per climb past 80 % (again only after falling under it),
 * EXHAUSTED at the limit, FREED when it drops under the limit again.
 */
unsigned int ctl_budget_win_step(struct ctl_budget_win *w, uint64_t now, uint64_t bytes);

/*
 * bytes the HA peer counted age seconds before now (a distance on its clock: the boxes'
 * clocks need not agree), into the bucket holding second now - age: added (add: the peer
 * spent them since its last second), or raising that bucket to bytes (a resync's whole
 * count, which may hold bytes the peer's stream brought before: taken once, not twice).
 * Ages at or past the window count nothing. Returns the crossings, as a step does.
 */
unsigned int ctl_budget_win_merge(struct ctl_budget_win *w, uint64_t now, uint32_t age,
    uint64_t bytes, bool add);

/* Calls fn for each bucket with bytes in it: its age at now (of its newest second). */
typedef void ctl_budget_win_fn(uint32_t age, uint64_t bytes, void *arg);
void ctl_budget_win_each(const struct ctl_budget_win *w, uint64_t now, ctl_budget_win_fn *fn,
    void *arg);

/* What the window has left: limit - used, or 0. */
uint64_t ctl_budget_win_left(const struct ctl_budget_win *w);

/*
 * The same window with a new limit (a reload that kept the budget's host and window):
 * the bytes stay, the crossings are judged again at the next step.
 */
void ctl_budget_win_relimit(struct ctl_budget_win *w, uint64_t limit);

#endif
