/*
 * What ipfrag.c (reassembly) and ipfrag_cut.c (the cut) share: the headers' fixed sizes
 * and bits, and the checksum of a header.
 */
#ifndef IPFRAG_INT_H
#define IPFRAG_INT_H

#include <stdint.h>

#include "sni/rd.h"

#define IP4_HDR_MIN	20
#define IP6_HDR_LEN	40
#define IP6_FRAG_LEN	8
#define IP6_EXT_MAX	8	/* extension headers walked before giving up */
#define IP4_DF		0x4000
#define IP4_MF		0x2000
#define IP4_OFF_MASK	0x1fff
#define IP4_OPT_COPIED	0x80
#define L4_MIN		8	/* RFC 7112 asks for the upper-layer header; 8 bytes is UDP,
				 * ICMP, and the ports, SPI or type of anything else */

/* RFC 1071 over a header we have just checked or built: sums to 0 when it is right. */
static inline uint16_t
ipfrag_csum(struct rd r)
{
	uint32_t sum = 0;
	uint16_t w;
	uint8_t b;

	while (rd_u16(&r, &w))
		sum += w;
	if (rd_u8(&r, &b))
		sum += (uint32_t)b << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

#endif
