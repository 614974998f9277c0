/*
 * Sliding window arithmetic: buckets in a ring, each holding what one `width` of seconds
 * added. Advancing past a bucket subtracts it from used, so used is the window's sum
 * without a walk; a jump of a whole window or more empties it at once.
 */
#include <string.h>

#include "ctl_budget_win.h"

void
ctl_budget_win_init(struct ctl_budget_win *w, uint64_t limit, uint32_t per, uint64_t now)
{
	uint32_t width = (per + CTL_BUDGET_BUCKETS - 1) / CTL_BUDGET_BUCKETS;

	memset(w, 0, sizeof(*w));
	w->limit = limit;
	w->per = per;
	w->width = width == 0 ? 1 : width;
	w->nb = (per + w->width - 1) / w->width;
	if (w->nb == 0)
		w->nb = 1;
	w->head = now / w->width;
}

/* Let out every bucket older than the window ending in bucket number k. */
static void
ctl_budget_win_advance(struct ctl_budget_win *w, uint64_t k)
{
	if (k <= w->head)
		return;
	if (k - w->head >= w->nb) {
		memset(w->bucket, 0, sizeof(w->bucket));
		w->used = 0;
	} else {
		for (uint64_t b = w->head + 1; b <= k; b++) {
			uint64_t *slot = &w->bucket[b % w->nb];

			w->used -= *slot;
			*slot = 0;
		}
	}
	w->head = k;
}

/* At 80 %: used >= limit - limit / 5, without an overflowing product. */
static bool
ctl_budget_win_warm(const struct ctl_budget_win *w)
{
	return w->used >= w->limit - w->limit / 5;
}

/* The crossings since the last judgement. */
static unsigned int
ctl_budget_win_judge(struct ctl_budget_win *w)
{
	unsigned int changed = 0;

	if (!ctl_budget_win_warm(w))
		w->warned = false;		/* re-armed: the next climb warns again */
	else if (!w->warned) {
		w->warned = true;
		changed |= CTL_BUDGET_WARN;
	}
	if (w->used >= w->limit && !w->over) {
		w->over = true;
		changed |= CTL_BUDGET_EXHAUSTED;
	} else if (w->used < w->limit && w->over) {
		w->over = false;
		changed |= CTL_BUDGET_FREED;
	}
	return changed;
}

unsigned int
ctl_budget_win_step(struct ctl_budget_win *w, uint64_t now, uint64_t bytes)
{
	ctl_budget_win_advance(w, now / w->width);
	w->bucket[w->head % w->nb] += bytes;
	w->used += bytes;
	return ctl_budget_win_judge(w);
}

unsigned int
ctl_budget_win_merge(struct ctl_budget_win *w, uint64_t now, uint32_t age, uint64_t bytes,
    bool add)
{
	uint64_t k, *slot;

	ctl_budget_win_advance(w, now / w->width);
	if (age >= w->per || age > now)
		return 0;		/* out of the window already */
	k = (now - age) / w->width;
	if (w->head - k >= w->nb)
		return 0;
	slot = &w->bucket[k % w->nb];
	if (add) {
		*slot += bytes;
		w->used += bytes;
	} else if (bytes > *slot) {
		w->used += bytes - *slot;
		*slot = bytes;
	}
	return ctl_budget_win_judge(w);
}

void
ctl_budget_win_each(const struct ctl_budget_win *w, uint64_t now, ctl_budget_win_fn *fn,
    void *arg)
{
	uint64_t head = now / w->width;

	for (uint64_t d = 0; d < w->nb && d <= w->head; d++) {
		uint64_t k = w->head - d, newest = (k + 1) * w->width - 1;

		if (head - k >= w->nb || w->bucket[k % w->nb] == 0)
			continue;	/* let out by now, or empty */
		fn(newest >= now ? 0 : (uint32_t)(now - newest), w->bucket[k % w->nb], arg);
	}
}

uint64_t
ctl_budget_win_left(const struct ctl_budget_win *w)
{
	return w->used < w->limit ? w->limit - w->used : 0;
}

void
ctl_budget_win_relimit(struct ctl_budget_win *w, uint64_t limit)
{
	w->limit = limit;
}
