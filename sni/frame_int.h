/*
 * Internals shared by the frame builders and patchers (frame*.c); not for other callers.
 * Offsets are into the frame being built; every function here writes without checking
 * cap, so the callers size the frame and check it first.
 */
#ifndef FRAME_INT_H
#define FRAME_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/pkt.h"
#include "wire_int.h"

#define FRAME_ETH_P_IPV4	0x0800
#define FRAME_ETH_P_IPV6	0x86dd
#define FRAME_IPV4_HDR_LEN	20
#define FRAME_IPV6_HDR_LEN	40
#define FRAME_TCP_HDR_LEN	20
#define FRAME_UDP_HDR_LEN	8
#define FRAME_ICMP_HDR_LEN	8
#define FRAME_PROTO_ICMP	1
#define FRAME_PROTO_ICMPV6	58

/* Length of in's Ethernet + VLAN headers, or 0 unless they lead to p's IP version. */
size_t frame_l2_len(const uint8_t *in, size_t len, const struct pkt *p);

/* Length of the IP header frame_put_hdrs() writes for p's family. */
size_t frame_l3_len(const struct pkt *p);

/* Write L2 and IP headers for l4_len bytes of proto; returns the transport offset. */
size_t frame_put_hdrs(const uint8_t *in, size_t l2, const struct pkt *p, bool reply, uint8_t proto,
    size_t l4_len, uint8_t *out);

/* Transport checksum, pseudo-header included where the protocol has one. */
uint16_t frame_l4_csum(const uint8_t *ip, uint8_t family, uint8_t proto, const uint8_t *l4,
    size_t l4_len);

/* A 20-byte TCP header with a zero checksum. */
void frame_put_tcp(uint8_t *th, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
    uint8_t flags, uint16_t win);

/* SEG.LEN: payload + SYN + FIN. */
uint32_t frame_tcp_seg_len(const struct pkt *p);

/*
 * v's two bytes swapped: a checksum patched for bytes at an odd offset takes their share
 * of the sum so (RFC 1071 s2(B)).
 */
static inline uint16_t
frame_swap16(uint16_t v)
{
	return (uint16_t)(v << 8 | v >> 8);
}

#endif
