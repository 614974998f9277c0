/* The burst's own state (dp_burst.c). */
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
					 * frame's, CONTINUE, is never stored) */
	enum pkt_status st;		/* the decode's, for the stateless stages (not a
					 * lean frame's) */
	uint16_t vm;
	struct dp_lean ln;		/* dp_lean() took it (dp_burst_frame_lean()), else
					 * th_off is zero and p is filled */
	struct pkt p;
};

/*
 * Did dp_lean() take fr (its ln filled, p not)? The TCP header's offset it keeps is never
 * zero, and the first stage zeroes it for any other frame: the one store a lean frame has
 * anyway tells it, no flag stored beside it.
 */
static __rte_always_inline bool
dp_burst_frame_lean(const struct dp_burst_frame *fr)
{
	return fr->ln.th_off != 0;
}

struct dp_burst {
	struct dp_burst_frame fr[DP_BURST];
	/* a lean frame's or one whose fate is CONTINUE, in the order of the frames */
	struct dp_flow_lookup look[DP_BURST];
	uint64_t steady;		/* dp_conn_steady_key() */
};

/* dp_burst_flow() when the entry lookup l named is not its key's (or none was). */
struct dp_flow *dp_burst_flow_find(struct dp_worker *w, const struct dp_flow_lookup *l);

/*
 * A lean frame fr from the VM on no flow, l its key's lookup: a SYN that opens one as
 * dp_conn_vm_syn_admits() and _open() decide (dp_conn_syn.h), sent on, or refused for
 * want of room (true); else false, nothing touched. A call, as the other lean stages.
 */
bool dp_burst_lean_syn(struct dp_worker *w, struct dp_burst_frame *fr,
    const struct dp_flow_lookup *l);

/*
 * A lean frame fr from the VM with data on flow f, whose hello is pending: its flow stage
 * and the TLS stage's fate as dp_conn_vm_any() and dp_tls_client() decide them, acted on
 * (true); false, nothing touched, when its flow stage is not a plain one
 * (dp_burst_hello.c).
 */
bool dp_burst_lean_hello(struct dp_worker *w, struct dp_burst_frame *fr, struct dp_flow *f);

/*
 * The flow of a frame's key, looked up by l, as the table has it now: confirmed when the
 * frame is reached, not before, so that whatever an earlier frame of the burst opened or
 * closed is seen, and the entry's line has had the stages between to arrive. A key the
 * lookup found absent is looked up again only if a key of its bit opened since.
 */
static __rte_always_inline struct dp_flow *
dp_burst_flow(struct dp_worker *w, const struct dp_flow_lookup *l)
{
	struct dp_flow *f = l->found;

	if (likely(f != NULL && dp_flow_entry_is(f, &l->key)))
		return f;
	if (f == NULL && dp_flow_still_absent(w->flows, l->hash))
		return NULL;
	return dp_burst_flow_find(w, l);
}

/* A fragment's datagram, once whole, in fr to decide on; false until then (dp_burst_frag.c) */
bool dp_burst_whole(struct dp_worker *w, struct dp_burst_frame *fr);

#endif
