/*
 * DNS name budgets (SPEC s8, dns.max_names_per_suffix): under a wildcard every new
 * distinct name a VM asks for is data it chose, carried out in the labels. So a VM may
 * introduce at most count new names under one allowed suffix per window of per seconds;
 * past that, new names under the suffix are refused (reason dns_budget), while names it
 * asked for within the window keep resolving. Exact patterns allow one name each and are
 * never budgeted.
 *
 * One struct dp_name_budget per worker, made with it: for each VM slot a fixed region of name
 * entries and of suffix counters, so a VM can only ever fill its own (a full region fails
 * closed for that VM: reason vm_limit) and a lookup never allocates. Keys are SipHash under
 * the start-time secret, so a VM cannot aim its names at one bucket.
 */
#ifndef DP_DNS_BUDGET_H
#define DP_DNS_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp.h"

#define DP_NAMES_PER_VM		2048	/* names remembered per VM, per worker */
#define DP_NAMES_WAYS		8	/* entries per bucket: one cache line */
#define DP_NAMES_BUCKETS	(DP_NAMES_PER_VM / DP_NAMES_WAYS)
#define DP_SUFFIXES_PER_VM	32	/* suffixes counted at once per VM, per worker */

/*
 * A sliding window as two fixed ones (Cloudflare's rate limiter, 2017): counts in the
 * current fixed window [k * per, (k + 1) * per) and the previous one, the previous
 * weighted by the share of it the sliding window [now - per, now) still covers. Two
 * counters instead of a timestamp per admitted name, and the estimate is exact when
 * names come at a steady rate. Admission keeps cur + prev * (per - elapsed) / per below
 * count, so each fixed window admits at most count, and any span of per seconds, which
 * meets at most two of them, at most 2 * count (a burst at the end of one window, then
 * the next one's room as the burst's weight fades).
 */
struct dp_window {
	uint64_t k;		/* index of the current fixed window: now / per */
	uint32_t per;		/* the window length the counts were taken with */
	uint32_t cur, prev;	/* new names admitted in window k, and in k - 1 */
};

/* Move w to the fixed window holding now (per seconds long; counts restart if per changed). */
void dp_window_roll(struct dp_window *w, uint32_t per, uint64_t now);

/* After a roll: does the weighted estimate leave room for one more below count? */
bool dp_window_room(const struct dp_window *w, uint32_t count, uint64_t now);

/* Does w still weigh anything at now (its current or previous window is now's)? */
bool dp_window_live(const struct dp_window *w, uint64_t now);

enum dp_name_budget_verdict {
	DP_NB_OK,		/* seen in the window, or new and within the budget */
	DP_NB_SPENT,		/* new, and the suffix's budget is spent */
	DP_NB_FULL,		/* new, and the VM's region has no room to remember it */
};

struct dp_name_budget;

/* The table for VM slots 0 .. nvms (nvms + 1 regions); NULL and rte_errno on failure. */
struct dp_name_budget *dp_name_budget_create(uint16_t nvms, int socket);
void dp_name_budget_free(struct dp_name_budget *t);
/* The EAL memory dp_name_budget_create() takes (dp_mem.h). */
uint64_t dp_name_budget_mem(uint16_t nvms);
/* Forget what vm asked for (main lcore, once no frame of vm can reach the worker). */
void dp_name_budget_forget(struct dp_name_budget *t, uint16_t vm);

/*
 * Charge the question (name, qtype): name is len bytes of text, any case, no trailing
 * dot, whose last suffix_len bytes are the allowed wildcard's suffix; to vm at now: count
 * new questions per suffix per window of per seconds. Each distinct question counts, not
 * each name: the type a VM chooses carries 16 bits of its own. A question asked within
 * the last per seconds is DP_NB_OK and its memory renewed; a new one is remembered and
 * counted only when admitted.
 */
enum dp_name_budget_verdict dp_name_budget_charge(struct dp_name_budget *t, uint16_t vm,
    const char *name, size_t len, uint16_t qtype, size_t suffix_len, uint32_t count,
    uint32_t per, uint64_t now);

/*
 * The budget for an allowed query on worker w: rule is the allow rule that decided for
 * name (len bytes). DP_REASON_ALLOWED when the query may go (an exact rule, the budget off,
 * a name seen or within budget), DP_REASON_DNS_BUDGET, or DP_REASON_VM_LIMIT when vm's
 * region is full. A new question admitted goes to the main lcore (dp_evt_name_new()).
 */
/* New questions t ever counted: a charge that admitted one adds 1. */
uint64_t dp_name_budget_admitted(const struct dp_name_budget *t);

/*
 * Worker w, housekeeping: the HA peer's admitted questions (the main lcore's, on
 * w->peer_names) charged here as if asked here, so they count in this box's budget and
 * stay seen for their window; a budget spent already takes none.
 */
void dp_dns_budget_peer(struct dp_worker *w);

enum dp_reason dp_dns_budget_judge(struct dp_worker *w, uint16_t vm, const struct pol_rule *rule,
    const char *name, size_t len, uint16_t qtype);

#endif
