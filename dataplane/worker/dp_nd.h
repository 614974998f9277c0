/*
 * The neighbour protocols a VM needs before any flow, ARP (RFC 826) and IPv6 neighbour
 * discovery (RFC 4861), in the only shapes they have on a link. Anything ND-typed in
 * another shape could carry data anywhere, so it is not ND: it follows the flow rules.
 * libc and sni/ only.
 */
#ifndef DP_ND_H
#define DP_ND_H

#include <stdbool.h>
#include <stddef.h>

#include "dp.h"
#include "sni/pkt.h"

/* ARP from v: the sender must be v itself (frame: its l3 bytes, len of them). */
bool dp_nd_arp_from_vm_ok(const uint8_t *arp, size_t len, const struct dp_vm *v);

/*
 * ICMPv6 from v that is neighbour discovery: a router or neighbour solicitation or a
 * neighbour advertisement, hop limit 255, code 0, a well-formed body, from v's address,
 * a link-local one or (a solicitation for duplicate address detection) ::, to a
 * link-local, solicited-node, all-routers (all-nodes for an advertisement) or on-link
 * address; only when v has IPv6. Never a router advertisement or a redirect. And the
 * MLDv2 reports a host sends for those groups (hop limit 1, to ff02::16).
 */
bool dp_nd_from_vm_ok(const struct pkt *p, const struct dp_vm *v);

/*
 * Is p ICMPv6 of a neighbour discovery type (133-137)? Those are link-only messages: one
 * that fails the shape checks is no ND at all, and is dropped, never routed.
 */
static inline bool
dp_nd_typed(const struct pkt *p)
{
	return p->family == 6 && p->proto == 58 && !p->fragment && p->payload_len > 0 &&
	    p->payload[0] >= 133 && p->payload[0] <= 137;
}

/*
 * ND toward a VM (v, or NULL for a frame to a multicast MAC): types 133-137, hop limit
 * 255, to v's address, a link-local one, or link-local scope multicast.
 */
bool dp_nd_to_vm_ok(const struct pkt *p, const struct dp_vm *v);

#endif
