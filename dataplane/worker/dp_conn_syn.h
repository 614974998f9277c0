/*
 * A connection's opening SYN from the VM, decided from the lean frame's fields (dp_lean.h)
 * and its key, not decoded into a struct pkt: the commonest opening, a new flow admitted by
 * the first name bound to the peer's address, is what dp_conn_vm_any() would make of it,
 * and the frame goes out. Anything else is left untouched to the general way
 * (test_dp_conn_syn holds the two to one answer).
 */
#ifndef DP_CONN_SYN_H
#define DP_CONN_SYN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_bind_allow.h"
#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_flow_int.h"
#include "dp_gen.h"
#include "dp_lean.h"
#include "sni/pkt.h"
#include "sni/pkt_fast.h"

#define DP_CONN_SYN_DNS_PORT	53	/* a resolver's, or refused: dp_conn_vm_open() asks */

/*
 * Is lean frame l from the VM (its flags and payload_len bytes of data), keyed k, on no
 * flow, one dp_conn_vm_open() opens by a binding and sends on, without a budget
 * (if it finds room for the flow)? The name that admits it in *by. That is a bare SYN
 * (no ACK, RST or data: a Fast Open's is judged) to a port other than DNS's, from a VM
 * with no budget nor address pattern of the family (which the address match would ask
 * first), no flow log (which records the opening from the decoded frame), and the
 * binding lookup's yes in its common case (dp_bind_allows_common(), for a VM without
 * budgets, tested here already); what only its whole way answers goes the general way,
 * which asks it all. The lookup only reads, so asking it again there changes nothing.
 */
static inline bool
dp_conn_vm_syn_admits(struct dp_worker *w, const struct dp_flow_key *k,
    const struct dp_lean *l, struct dp_bind_allow *by)
{
	const struct dp_vm *v = &w->gen->vms[k->vm];
	uint32_t lf;

	/* payload_len and flags side by side: no data, SYN without ACK or RST, one compare */
	_Static_assert(offsetof(struct dp_lean, flags) == offsetof(struct dp_lean, payload_len) +
	    2 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "payload_len low, then flags");
	memcpy(&lf, &l->payload_len, 4);
	if ((lf & ((uint32_t)(PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST) << 16 | 0xffff)) !=
	    (uint32_t)PKT_TCP_SYN << 16 || k->peer_port == DP_CONN_SYN_DNS_PORT ||
	    (v->budgets | (v->addrs & dp_vm_addrs_bit(k->family))) != 0 ||
	    w->flow_recs != NULL)
		return false;
	return dp_bind_allows_common(w->ctx->binds, k->vm, k->family, k->peer, k->peer_port,
	    w->now, w->gen, by);
}

/*
 * Lean frame m from the VM (l what dp_lean() read of it), keyed k (hash h), admitted by
 * by (dp_conn_vm_syn_admits()): its flow opened as dp_conn_vm_open() opens it and
 * DP_FATE_EGRESS (DP_ALLOWED); with the VM at its share of flows, its DP_FLOW_LIMIT
 * block; else CONTINUE, nothing touched, for the general way: a SYN's options in a layout
 * pkt_tcp_wscale_known() does not read, or no free entry or room in k's first bucket
 * (dp_flow_open_first()). Those two the general way answers with calls (the options'
 * walk, dp_flow_open_far()), which here cost every SYN the registers kept across them.
 */
static inline struct dp_fate
dp_conn_vm_syn_open(struct dp_worker *w, const struct rte_mbuf *m, const struct dp_lean *l,
    const struct dp_flow_key *k, uint32_t h, struct dp_bind_allow by)
{
	const struct dp_gen *g = w->gen;
	const uint8_t *th = dp_lean_th(m, l);
	struct dp_flow *f;
	uint8_t ws;

	/* no room to remember it: blocked even in audit mode (fail closed), a TCP refusal */
	if (dp_flow_vm_full(w->flows, k->vm, g->max_flows_per_vm))
		return dp_fate_block(DP_REASON_FLOW_LIMIT, g->on_block_reset ? DP_FATE_REPLY_RST :
		    DP_FATE_REPLY_NONE);
	if (!pkt_tcp_wscale_known(th, &ws) ||
	    (f = dp_flow_open_first(w->flows, k, h, w->now)) == NULL)
		return dp_fate(DP_FATE_CONTINUE);
	f->gen = g->id;
	f->how = DP_ADMIT_BINDING;
	f->name_hash = by.name_hash;
	f->name_bound = true;
	dp_flow_tcp_begin(f, l->seq, 0, ws);
	/* on a TLS port a hello must come; elsewhere the first bytes say what comes */
	f->tls = dp_gen_is_tls_port(g, k->peer_port) ? DP_TLS_PENDING : DP_TLS_SNIFF;
	return dp_fate_egress(DP_ALLOWED);
}

#endif
