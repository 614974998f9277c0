/*
 * Per-worker flow table: an index of its own (dp_flow_tab.h) from key to an entry in a
 * fixed array, a stack of free indexes, and an aging cursor that walks the array a slice
 * at a time. When the table is full, opening a flow walks the cursor on itself to reclaim
 * an idle one, so reclaiming keeps up with the connection rate, not only with the clock.
 * Here the hot path: lookups, opens, closes and aging; the table is made, and read by the
 * control side, in dp_flows_make.c.
 */
#include "api/dp_api.h"
#include "dp_flow_int.h"

/* Idle timeouts (seconds) by state; TCP established is long, as conntrack's default. */
#define DP_FLOW_IDLE_SYN	30
#define DP_FLOW_IDLE_TCP	3600
#define DP_FLOW_IDLE_UDP	120
#define DP_FLOW_IDLE_CLOSING	10
#define DP_FLOW_RECLAIM_SCAN	64	/* entries one open may examine for an idle flow */

struct dp_flow *
dp_flow_lookup(struct dp_flows *t, const struct dp_flow_key *k)
{
	return dp_ft_find(&t->ft, dp_ft_hash(&t->ft, k), t->h.e, k);
}

struct dp_flow *
dp_flow_lookup_hashed(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h)
{
	return dp_ft_find(&t->ft, h, t->h.e, k);
}

void
dp_flow_lookup_burst(struct dp_flows *t, const struct dp_flow_key *restrict keys, unsigned int n,
    struct dp_flow **restrict out)
{
	struct dp_flow_lookup l[DP_BURST];

	for (unsigned int i = 0; i < n; i++)
		l[i].key = keys[i];
	dp_flow_lookup_start(t, l, n);
	/* a NULL is absent: nothing opened between */
	for (unsigned int i = 0; i < n; i++) {
		out[i] = l[i].found;
		if (out[i] != NULL && !dp_flow_entry_is(out[i], &keys[i]))
			out[i] = dp_flow_lookup_hashed(t, &keys[i], l[i].hash);
	}
}

static inline bool dp_flow_idle(const struct dp_flow *f, uint64_t now);

/*
 * Does f hold bytes, its client's or its peer's, for the release (dp_flows_on_release())
 * to free? Most flows aged hold none, and pay no indirect call for them.
 */
static inline bool
dp_flow_holds(const struct dp_flow *f)
{
	return (f->hold | f->peer_hold) != 0;
}
static inline void dp_flow_close_open(struct dp_flows *t, struct dp_flow *f,
    enum dp_flow_end end, bool aging);

/* How f ended, unless something said so first (a FIN, an RST, a cut). */
static void
dp_flow_end_as(struct dp_flows *t, const struct dp_flow *f, enum dp_flow_end end)
{
	struct dp_flow_acct *a = dp_flow_acct(t, f);

	if (a->end == DP_FLOW_END_OPEN)
		a->end = (uint8_t)end;
}

/*
 * The table is full: examine up to DP_FLOW_RECLAIM_SCAN entries from the aging cursor,
 * within the credit aging gave, for an idle flow to close. A VM opening flows into a full
 * table of live ones costs the worker no more than aging would over the same time.
 */
static void
dp_flows_reclaim(struct dp_flows *t, uint64_t now)
{
	for (unsigned int n = 0; n < DP_FLOW_RECLAIM_SCAN && t->reclaim_credit > 0; n++) {
		struct dp_flow *f = &t->h.e[t->cursor];

		t->reclaim_credit--;
		t->cursor = t->cursor + 1 == t->cap ? 0 : t->cursor + 1;
		if (!dp_flow_idle(f, now))
			continue;
		if (t->release != NULL && dp_flow_holds(f))
			t->release(f, t->release_arg);
		if (f->in_use)
			dp_flow_close_open(t, f, DP_FLOW_END_IDLE, false);
		return;
	}
}

uint32_t
dp_flow_hash(const struct dp_flows *t, const struct dp_flow_key *k)
{
	return dp_ft_hash(&t->ft, k);
}

struct dp_flow *
dp_flow_open(struct dp_flows *t, const struct dp_flow_key *k, uint32_t max_per_vm,
    uint64_t now)
{
	return dp_flow_open_hashed(t, k, dp_ft_hash(&t->ft, k), max_per_vm, now);
}

struct dp_flow *
dp_flow_open_far(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h, uint64_t now)
{
	uint32_t idx;

	if (!dp_slots_get(&t->slots, &idx)) {
		dp_flows_reclaim(t, now);
		if (!dp_slots_get(&t->slots, &idx))
			return NULL;
	}
	/* taken before the insert and given back on its failure: the stack as it was */
	if (dp_ft_insert(&t->ft, h, idx) != 0) {
		dp_slots_put(&t->slots, idx);
		return NULL;
	}
	return dp_flow_opened(t, k, idx, h, dp_ft_place_of(&t->ft, h, idx), now);
}

struct dp_flow *
dp_flow_open_hashed(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h,
    uint32_t max_per_vm, uint64_t now)
{
	return dp_flow_open_near(t, k, h, max_per_vm, now);
}

static inline void dp_flows_cursor_past(struct dp_flows *t, const struct dp_flow *f);

/*
 * Drop the slot of f (entry idx) that a move took from the place f kept: found by its
 * key's hash (rare: a key moves only when an insert finds both its buckets full).
 */
static __attribute__((noinline)) void
dp_flow_unindex_moved(struct dp_flows *t, const struct dp_flow *f, uint32_t idx)
{
	dp_ft_delete(&t->ft, dp_ft_hash(&t->ft, &f->key), idx);
}

/*
 * Close f, which is open, as end (DP_FLOW_END_OPEN: as whatever said so first, else idle).
 * Inlined in aging's loop too (aging), where a call cost each flow aged its spills.
 */
static inline __attribute__((always_inline)) void
dp_flow_close_open(struct dp_flows *t, struct dp_flow *f, enum dp_flow_end end, bool aging)
{
	uint32_t idx = (uint32_t)(f - t->h.e);

	/*
	 * most flows have nothing to report: no indirect call for them, and their account
	 * (only a flow log keeps one: dp_flowlog_opened()) is not touched
	 */
	if ((t->closed_ha >> (f->ha & 7)) & 1) {
		if (aging)
			dp_flows_cursor_past(t, f);
		if (end != DP_FLOW_END_OPEN)
			dp_flow_end_as(t, f, end);
		t->closed(f, dp_flow_acct(t, f), t->report_arg);
	}
	if (unlikely(!dp_ft_delete_at(&t->ft, t->at[idx], idx)))
		dp_flow_unindex_moved(t, f, idx);
	t->per_vm[f->key.vm]--;
	f->in_use = false;
	f->key.zero = DP_FLOW_KEY_CLOSED;	/* no key matches it now: dp_flow_entry_is() */
	dp_slots_put(&t->slots, idx);
}

void
dp_flow_close(struct dp_flows *t, struct dp_flow *f)
{
	if (f->in_use)
		dp_flow_close_open(t, f, DP_FLOW_END_OPEN, false);
}

static inline uint64_t
dp_flow_idle_limit(const struct dp_flow *f)
{
	if (f->state == DP_FLOW_CLOSING)
		return DP_FLOW_IDLE_CLOSING;
	if (f->key.proto != 6)
		return DP_FLOW_IDLE_UDP;
	return f->state == DP_FLOW_SYN_SENT ? DP_FLOW_IDLE_SYN : DP_FLOW_IDLE_TCP;
}

/*
 * A flow whose first bytes are being held is cut by dp_tls_expire(), which owns the hold.
 * One still waiting for its first byte holds nothing and ages like any other: a SYN that
 * never sends a hello must not keep its flow, or a VM's SYNs would fill its share for good.
 */
static inline bool
dp_flow_idle(const struct dp_flow *f, uint64_t now)
{
	return f->in_use && !(f->hold != 0 && (f->tls == DP_TLS_PENDING ||
	    f->tls == DP_TLS_SNIFF)) && now - f->last_seen >= dp_flow_idle_limit(f);
}

/*
 * A flow of a VM the generation no longer has: no frame finds it again (its MAC is no
 * VM's now), and its slot waits for it before another VM may have it. Held first bytes
 * stay their judge's, who cuts them within seconds.
 */
static bool
dp_flow_orphan(const struct dp_flow *f, const struct dp_gen *g)
{
	return f->in_use && g != NULL && f->key.vm <= g->max_vms && !g->vms[f->key.vm].present &&
	    !(f->hold != 0 && (f->tls == DP_TLS_PENDING || f->tls == DP_TLS_SNIFF));
}

/*
 * The aging cursor past f, stored before aging calls anything (a release, a report), as
 * the callbacks may read it; a flow closed with nothing called leaves it to the end.
 */
static inline void
dp_flows_cursor_past(struct dp_flows *t, const struct dp_flow *f)
{
	uint32_t cur = (uint32_t)(f - t->h.e) + 1;

	t->cursor = cur == t->cap ? 0 : cur;
}

/* Aging's judgement of f, an open flow: closed (true), or passed on to the report. */
static bool
dp_flows_age_one(struct dp_flows *t, struct dp_flow *f, uint64_t now, uint64_t *closed_per_vm,
    const struct dp_gen *g, void (*release)(struct dp_flow *, void *), void *arg)
{
	enum dp_flow_end end;

	if (dp_flow_orphan(f, g)) {
		end = DP_FLOW_END_GONE;
	} else if (dp_flow_idle(f, now)) {
		end = DP_FLOW_END_IDLE;
	} else {
		if (t->passed != NULL) {
			dp_flows_cursor_past(t, f);
			t->passed(f, dp_flow_acct(t, f), t->report_arg);
		}
		return false;
	}
	if (release != NULL && dp_flow_holds(f)) {
		dp_flows_cursor_past(t, f);
		release(f, arg);
	}
	if (closed_per_vm != NULL)
		closed_per_vm[f->key.vm]++;
	if (f->in_use) {	/* the release's (dp_flows_on_release()) to free, not to close */
		dp_flow_close_open(t, f, end, true);
	}
	return true;
}

unsigned int
dp_flows_age(struct dp_flows *t, uint64_t now, unsigned int budget, uint64_t *closed_per_vm,
    const struct dp_gen *g, void (*release)(struct dp_flow *, void *), void *arg)
{
	unsigned int closed = 0, left = budget < t->cap ? budget : t->cap;
	uint32_t cur = t->cursor;

	/* what opens into a full table may examine: as much again as aging does */
	t->reclaim_credit = budget > t->cap - t->reclaim_credit ? t->cap :
	    t->reclaim_credit + budget;
	/*
	 * In runs up to the array's end, the cursor in a register: most entries of a table
	 * sized for its peak are free, and each costs a load and a test. An open entry is
	 * asked first (one test), a free one whether the three after it are free too.
	 */
	while (left > 0) {
		struct dp_flow *f = &t->h.e[cur], *end;

		end = &t->h.e[t->cap - cur < left ? t->cap : cur + left];
		left -= (unsigned int)(end - f);
		while (f < end) {
			if (f->in_use)
				closed += dp_flows_age_one(t, f++, now, closed_per_vm, g, release,
				    arg);
			else if (end - f >= 4 && !(f[1].in_use | f[2].in_use | f[3].in_use))
				f += 4;
			else
				f++;
		}
		cur = (uint32_t)(end - t->h.e);
		cur = cur == t->cap ? 0 : cur;
	}
	t->cursor = cur;
	return closed;
}
