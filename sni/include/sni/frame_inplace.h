/*
 * A reply built in the buffer of the frame it answers, where that frame goes no further:
 * it takes no second buffer and no free of the first. The ICMP port unreachable for a
 * blocked datagram quotes the datagram where it lies, without a copy.
 */
#ifndef SNI_FRAME_INPLACE_H
#define SNI_FRAME_INPLACE_H

#include <stddef.h>
#include <stdint.h>

#include "sni/pkt.h"

/*
 * What frame_icmp_unreach_in_place() writes before the frame: the new IP (20 or 40 bytes)
 * and ICMP (8) headers. Inline: the caller asks it for each blocked datagram it answers.
 */
static inline size_t
frame_icmp_room(const struct pkt *p)
{
	return (p->family == 4 ? 20u : 40u) + 8u;
}

/*
 * frame_icmp_unreach() for the frame in (len bytes, decoded as p), written over it: the
 * reply starts frame_icmp_room(p) bytes before in (which must be writable) and quotes in's
 * IP packet where it is. Returns the reply's length, or -1 where frame_icmp_unreach() gives
 * none (then nothing was written).
 */
int frame_icmp_unreach_in_place(uint8_t *in, size_t len, const struct pkt *p);

/*
 * frame_tcp_rst() for the segment in (len bytes, decoded as p), written over it from in:
 * the RST's length, or -1 where frame_tcp_rst() gives none (then nothing was written).
 */
int frame_tcp_rst_in_place(uint8_t *in, size_t len, const struct pkt *p);

#endif
