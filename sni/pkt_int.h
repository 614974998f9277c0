/*
 * For the tests and the fuzzer, which hold pkt_decode()'s straight-through decoder of the
 * common shape and its general walk (sni/pkt_fast.h) to the same answer.
 */
#ifndef SNI_PKT_INT_H
#define SNI_PKT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/pkt.h"
#include "sni/pkt_fast.h"

/* Do a and b say the same of a frame, field by field (padding aside)? */
static inline bool
pkt_same(const struct pkt *a, const struct pkt *b)
{
	return a->dst_mac == b->dst_mac && a->src_mac == b->src_mac &&
	    a->vlan == b->vlan && a->nb_vlans == b->nb_vlans && a->hop_limit == b->hop_limit &&
	    a->ethertype == b->ethertype && a->l3_off == b->l3_off && a->family == b->family &&
	    memcmp(a->src, b->src, 16) == 0 && memcmp(a->dst, b->dst, 16) == 0 &&
	    a->proto == b->proto && a->fragment == b->fragment && a->src_route == b->src_route &&
	    a->l4_off == b->l4_off && a->l4_len == b->l4_len && a->sport == b->sport &&
	    a->dport == b->dport && a->tcp_flags == b->tcp_flags &&
	    a->tcp_wscale == b->tcp_wscale && a->tcp_win == b->tcp_win && a->seq == b->seq &&
	    a->ack == b->ack && a->payload == b->payload && a->payload_len == b->payload_len;
}

#endif
