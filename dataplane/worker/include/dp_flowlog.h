/*
 * Flow records from a worker to the main lcore, for the flow log (api/dp_api.h struct
 * dp_flow_rec): one when a flow closes, one per flow_log_interval while it stays open
 * (aging passes it), and one for a connection attempt refused before it had a flow.
 *
 * Each worker has a ring of its own for them, where each VM has a share: a VM may have in
 * flight at most as many records as the ring has free after them (one VM alone half of it,
 * two a third each...), so a VM that churns flows loses its own records, counted against
 * it, and a quiet neighbour still finds room. Never blocks, never allocates.
 */
#ifndef DP_FLOWLOG_H
#define DP_FLOWLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/dp_api.h"
#include "dp.h"
#include "dp_flow.h"
#include "sni/pkt.h"

#define DP_FLOWLOG_RING_DEFAULT	8192	/* records a worker may have waiting */

/* Worker id's ring for size records (a power of two); NULL and rte_errno on failure. */
struct rte_ring *dp_flowlog_ring_create(unsigned int id, unsigned int size, int socket);
/* The EAL memory that ring takes. */
uint64_t dp_flowlog_ring_mem(unsigned int size);

/* dp_flows_on_report()'s callbacks, arg the worker: a final record, an interim one if due. */
void dp_flowlog_closed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg);
void dp_flowlog_passed(const struct dp_flow *f, struct dp_flow_acct *a, void *arg);

/*
 * f, just adopted from the HA peer's record (vm_addr: the VM's address in the frame that
 * adopted it): its account started here, the frame left to be counted as any on the flow.
 */
void dp_flowlog_adopted(struct dp_worker *w, struct dp_flow *f, const uint8_t *vm_addr,
    uint8_t name_kind);

/* dp_flowlog_opened() with a flow log. */
void dp_flowlog_opened_rec(struct dp_worker *w, struct dp_flow *f, const struct pkt *p,
    uint8_t name_kind);

/*
 * f, just opened by p (from its VM): its account started afresh, the opening frame
 * counted. Without a flow log nothing reads the account, and nothing keeps it (the flow
 * table leaves it as the slot's last flow left it): one test inline, every SYN makes it.
 */
static inline void
dp_flowlog_opened(struct dp_worker *w, struct dp_flow *f, const struct pkt *p,
    uint8_t name_kind)
{
	if (w->flow_recs != NULL)
		dp_flowlog_opened_rec(w, f, p, name_kind);
}

/*
 * f is being cut for r: its record says so, and names the name it was refused for (an
 * SNI, a Host: kind), when name is not NULL and f closes before another cut is named.
 */
void dp_flowlog_cut(struct dp_worker *w, const struct dp_flow *f, uint8_t r);
void dp_flowlog_name(struct dp_worker *w, const struct dp_flow *f, const char *name,
    size_t len, uint8_t kind);

/* p, a connection attempt of vm (key k), refused for r before it had a flow. */
void dp_flowlog_refused(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint8_t r, bool would_block);

/*
 * Main lcore, the worker stopped: a final record ("stop") of each open flow of w's from
 * entry at on, until the ring's room for them runs out. Returns where it stopped (the
 * table's capacity when every one has its record): drain, and call again from there.
 */
uint32_t dp_flowlog_stop_from(struct dp_worker *w, uint32_t at);

/* dp_flowlog_end() with a flow log. */
static inline void
dp_flowlog_end_rec(struct dp_worker *w, const struct dp_flow *f, uint8_t end)
{
	struct dp_flow_acct *a = dp_flow_acct(w->flows, f);

	if (a->end == DP_FLOW_END_OPEN)
		a->end = end;
}

/*
 * f ends as end (enum dp_flow_end), unless something said otherwise first. Inline: every
 * FIN says it. Without a flow log the account is nobody's (dp_flowlog_opened()): its line
 * is not touched.
 */
static inline void
dp_flowlog_end(struct dp_worker *w, const struct dp_flow *f, uint8_t end)
{
	if (w->flow_recs != NULL)
		dp_flowlog_end_rec(w, f, end);
}

/*
 * Main lcore: take up to n records off worker w's ring into out, and count them as taken
 * (their VMs' shares free up).
 */
unsigned int dp_flowlog_drain(struct dp_worker *w, struct dp_flow_rec *out, unsigned int n);

#endif
