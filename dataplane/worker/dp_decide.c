/*
 * The stateless stages of the per-frame decision (SPEC s4 steps 1-3 and 8): who sent it,
 * whether it may be what it claims, and which path it takes. They read the frame and the
 * generation only, and return a fate; the flow stages in dp_burst.c come after.
 */
#include "dp_decide.h"
#include "dp_gen.h"
#include "dp_nd.h"

#define ETH_P_ARP	0x0806
#define DNS_PORT	DP_DECIDE_DNS_PORT
#define QUIC_PORT	DP_DECIDE_QUIC_PORT
#define PROTO_ICMPV6	58

struct dp_fate
dp_decide_vm_frame(const struct dp_gen *g, const struct pkt *p, int vm, const uint8_t *l3,
    size_t l3_len)
{
	const struct dp_vm *v;

	/* by the outer tag; a frame with more tags than its VM has could hop VLANs */
	if (vm < 0)
		return dp_fate_block(DP_REASON_SPOOFED, DP_FATE_REPLY_NONE);
	v = &g->vms[vm];
	if (!dp_vlan_tags_ok(p, v))
		return dp_fate_block(DP_REASON_SPOOFED, DP_FATE_REPLY_NONE);
	if (p->ethertype == ETH_P_ARP)
		return dp_nd_arp_from_vm_ok(l3, l3_len, v) ? dp_fate_egress(DP_ALLOWED) :
		    dp_fate_block(DP_REASON_SPOOFED, DP_FATE_REPLY_NONE);
	if (p->family == 0)
		return dp_fate_drop(DP_DROP_NOT_IP);
	if (p->family == 6 && p->proto == PROTO_ICMPV6 && dp_nd_from_vm_ok(p, v))
		return dp_fate_egress(DP_ALLOWED);
	/* ND-shaped in no shape ND has, or another's source: a way out */
	if (dp_nd_typed(p) || !dp_src_is_vm(p, v))
		return dp_fate_block(DP_REASON_SPOOFED, DP_FATE_REPLY_NONE);
	return dp_fate(p->fragment ? DP_FATE_REASSEMBLE : DP_FATE_CONTINUE);
}

struct dp_fate
dp_decide_vm_datagram(const struct dp_gen *g, const struct pkt *p, enum pkt_status st,
    uint16_t vm)
{
	const struct dp_vm *v = &g->vms[vm];

	/* the packet would go on from its destination to wherever the VM wrote */
	if (p->src_route)
		return dp_fate_block(DP_REASON_SOURCE_ROUTE, DP_FATE_REPLY_NONE);
	/* ICMP and other protocols: the kernel judges them (SPEC s4 step 8) */
	if (st != PKT_OK)
		return dp_fate(DP_FATE_SLOW);
	if (p->proto == PKT_PROTO_UDP && p->dport == DNS_PORT) {
		if (dp_gen_is_resolver(g, p->family, p->dst))
			return dp_fate(DP_FATE_DNS);
		return dp_fate_refuse(v, DP_REASON_DNS_DENIED, dp_fate_refusal(g, p));
	}
	/*
	 * UDP 443 is QUIC: ICMP port unreachable makes clients fall back to TCP at once. In
	 * audit mode it is noted and goes on to be admitted like any datagram.
	 */
	if (p->proto == PKT_PROTO_UDP && p->dport == QUIC_PORT && !g->quic_inspect) {
		if (v->audit)
			return (struct dp_fate){ .act = DP_FATE_CONTINUE, .why = DP_REASON_QUIC,
				.log = true, .counted = true };
		return dp_fate_block(DP_REASON_QUIC, DP_FATE_REPLY_ICMP);
	}
	return dp_fate(DP_FATE_CONTINUE);
}

struct dp_fate
dp_decide_uplink_frame(const struct dp_gen *g, const struct pkt *p, int vm)
{
	const struct dp_vm *v = vm >= 0 ? &g->vms[vm] : NULL;

	if (v != NULL && !dp_vlan_tags_ok(p, v))
		return dp_fate_drop(DP_DROP_NOT_IP);	/* a tag inside the VM's own: not for it */
	/* the router's ARP and neighbour discovery reach the VMs, broadcast or not */
	if (p->ethertype == ETH_P_ARP ||
	    (p->proto == PROTO_ICMPV6 && p->family == 6 && dp_nd_to_vm_ok(p, v)))
		return dp_fate(v != NULL ? DP_FATE_INGRESS : DP_FATE_FLOOD);
	if (dp_nd_typed(p))
		return dp_fate_drop(DP_DROP_ND_INVALID);	/* routed ND: no neighbour sent it */
	if (v == NULL || p->family == 0)
		return dp_fate_drop(DP_DROP_NOT_IP);
	return dp_fate(p->fragment ? DP_FATE_REASSEMBLE : DP_FATE_CONTINUE);
}

struct dp_fate
dp_decide_uplink_datagram(const struct dp_gen *g, const struct pkt *p, enum pkt_status st)
{
	/* a VM's stack drops these too (accept_source_route 0) */
	if (p->src_route)
		return (struct dp_fate){ .act = DP_FATE_DISCARD, .why = DP_REASON_SOURCE_ROUTE };
	if (st != PKT_OK)
		return dp_fate(DP_FATE_SLOW);
	if (p->proto == PKT_PROTO_UDP && p->sport == DNS_PORT &&
	    dp_gen_is_resolver(g, p->family, p->src))
		return dp_fate(DP_FATE_DNS);
	return dp_fate(DP_FATE_CONTINUE);
}
