/*
 * What the sni parsers and frame builders share of the wire and is not a header's layout:
 * the IPv6 next-header values they walk (pkt.c, ipfrag.c) and big-endian writers (frame.c,
 * frame_dns.c, ipfrag.c), the counterparts of sni/rd.h's readers. Not for other callers.
 */
#ifndef SNI_WIRE_INT_H
#define SNI_WIRE_INT_H

#include <stdint.h>

/* IPv6 next-header values (IANA protocol numbers) that name extension headers or stop a walk. */
enum {
	IP6_HOPOPTS = 0,
	IP6_TCP = 6,
	IP6_ROUTING = 43,
	IP6_FRAGMENT = 44,
	IP6_ESP = 50,
	IP6_AH = 51,
	IP6_NONXT = 59,
	IP6_DSTOPTS = 60,
};

/* Writers without a bound: the callers size the buffer and check it first. */
static inline void
wr16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static inline void
wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

#endif
