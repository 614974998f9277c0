/*
 * The burst's own state (dp_burst.c), shared with the flow re-check of its last stage
 * (dp_burst_flow.c).
 */
#ifndef DP_BURST_INT_H
#define DP_BURST_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_lean.h"
#include "sni/pkt.h"

/* One frame on its way through the stages. */
struct dp_burst_frame {
	struct rte_mbuf *m;		/* NULL: done with in the first stage */
	struct dp_fate fate;		/* as far as the stateless stages decided (a lean
					 * frame's, CONTINUE, stored once it leaves that path) */
	enum pkt_status st;
	uint16_t vm;
	uint8_t key;			/* its flow key's index: set only for a lean frame or
					 * while fate is CONTINUE */
	bool lean;			/* dp_lean() took it: p is not filled, ln is */
	struct dp_lean ln;
	struct pkt p;
};

struct dp_burst {
	struct dp_burst_frame fr[DP_BURST];
	struct dp_flow_key keys[DP_BURST];
	struct dp_flow *found[DP_BURST];
	unsigned int nkeys;
	uint64_t steady;		/* dp_conn_steady_key() */
	uint32_t epoch;			/* the flow table's, as the last frame looked up saw it */
	uint64_t clean;			/* epoch while no key is noted below; then above any */
	uint8_t nmoved;			/* keys whose frames opened or closed flows: */
	uint8_t moved[DP_BURST];
	uint64_t moved_ports[4];	/* and their dp_burst_ports_bit()s (nmoved > 0) */
};

/*
 * dp_burst_flow(), once the flow table's epoch moved since the burst's lookups (epoch):
 * what frame fr's lookup (f) says now.
 */
struct dp_flow *dp_burst_flow_moved(struct dp_worker *w, struct dp_burst *b,
    const struct dp_burst_frame *fr, struct dp_flow *f, uint32_t epoch);

/* dp_burst_flow_moved(), inline (one compare) while no key is noted. */
static inline struct dp_flow *
dp_burst_flow(struct dp_worker *w, struct dp_burst *b, const struct dp_burst_frame *fr)
{
	struct dp_flow *f = b->found[fr->key];
	uint32_t epoch = dp_flows_epoch(w->flows);

	if (likely(epoch == b->clean))
		return f;
	return dp_burst_flow_moved(w, b, fr, f, epoch);
}

#endif
