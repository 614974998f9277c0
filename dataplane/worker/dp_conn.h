/*
 * The flow stage of the per-frame decision: a whole datagram's connection, opened,
 * tracked, or refused. Returns the frame's fate; *fp is set to the flow for fates that
 * need it (DP_FATE_STREAM).
 */
#ifndef DP_CONN_H
#define DP_CONN_H

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "sni/pkt.h"

#include <string.h>

/*
 * The flow key of p, a frame from VM vm (from_vm) or toward it, written in place: the
 * burst stage builds a burst's keys side by side and looks them up together.
 */
static inline void
dp_conn_key(struct dp_flow_key *k, uint16_t vm, const struct pkt *p, bool from_vm)
{
	k->vm = vm;
	k->family = p->family;
	k->proto = p->proto;
	k->vm_port = from_vm ? p->sport : p->dport;
	k->peer_port = from_vm ? p->dport : p->sport;
	memcpy(k->peer, from_vm ? p->dst : p->src, 16);	/* an IPv4 address's tail is zero */
	k->zero = 0;
}

/*
 * A TCP or UDP datagram from VM vm that no earlier stage decided, with key k and f, the
 * flow k looked up to (NULL: none).
 */
struct dp_fate dp_conn_vm(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp);

/* A TCP or UDP datagram from the uplink toward its VM, whose flow is f (NULL: none). */
struct dp_fate dp_conn_uplink(struct dp_worker *w, const struct pkt *p, struct dp_flow *f,
    struct dp_flow **fp);

#endif
