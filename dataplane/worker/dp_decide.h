/*
 * The stateless stages (dp_decide.c) for the shape nearly every frame has: a whole TCP or
 * UDP datagram that routes nowhere (pkt_decode() said PKT_OK, no source route). For it
 * most of the questions the staged functions ask (ARP? ND? not IP? a fragment?) have
 * their answer already, so both stages come down to a few compares, made inline; the
 * rest is asked of dp_decide_vm_datagram() and dp_decide_uplink_datagram() as before.
 * test_dp_decide holds each to the two stages it stands for.
 */
#ifndef DP_DECIDE_H
#define DP_DECIDE_H

#include <string.h>

#include "dp_fate.h"

#define DP_DECIDE_DNS_PORT	53
#define DP_DECIDE_QUIC_PORT	443

/*
 * As many tags as v's configuration has: its own VLAN's, or none (a priority tag, VLAN 0,
 * counts as none). A tag inside would be read by whatever is behind the next switch.
 */
static inline bool
dp_vlan_tags_ok(const struct pkt *p, const struct dp_vm *v)
{
	if (v->id.vlan != 0)
		return p->nb_vlans == 1;
	return p->nb_vlans == 0 || (p->nb_vlans == 1 && p->vlan == 0);
}

static inline bool
dp_src_is_vm(const struct pkt *p, const struct dp_vm *v)
{
	if (p->family == 4)
		return v->id.has4 && memcmp(p->src, v->id.ip4, 4) == 0;
	return v->id.has6 && memcmp(p->src, v->id.ip6, 16) == 0;
}

/* A plain datagram from the VM port: dp_decide_vm_frame(), then dp_decide_vm_datagram(). */
static inline struct dp_fate
dp_decide_vm_plain(const struct dp_gen *g, const struct pkt *p, int vm)
{
	if (vm < 0 || !dp_vlan_tags_ok(p, &g->vms[vm]) || !dp_src_is_vm(p, &g->vms[vm]))
		return dp_fate_block(DP_REASON_SPOOFED, DP_FATE_REPLY_NONE);
	if (p->proto == PKT_PROTO_UDP &&
	    (p->dport == DP_DECIDE_DNS_PORT || p->dport == DP_DECIDE_QUIC_PORT))
		return dp_decide_vm_datagram(g, p, PKT_OK, (uint16_t)vm);
	return dp_fate(DP_FATE_CONTINUE);
}

/* A plain datagram from the uplink: dp_decide_uplink_frame(), then _datagram(). */
static inline struct dp_fate
dp_decide_uplink_plain(const struct dp_gen *g, const struct pkt *p, int vm)
{
	if (vm < 0 || !dp_vlan_tags_ok(p, &g->vms[vm]))
		return dp_fate_drop(DP_DROP_NOT_IP);	/* as a frame for no VM, or a tag inside */
	if (p->proto == PKT_PROTO_UDP && p->sport == DP_DECIDE_DNS_PORT)
		return dp_decide_uplink_datagram(g, p, PKT_OK);
	return dp_fate(DP_FATE_CONTINUE);
}

#endif
