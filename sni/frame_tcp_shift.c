/*
 * A TCP segment's numbers of one stream moved in place (frame.h): what a sequence number
 * modulator does to every segment it passes. The checksum is patched (RFC 1624), not
 * computed again, so that a segment its sender got wrong stays wrong.
 */
#include "frame_int.h"
#include "sni/frame.h"
#include "sni/rd.h"

#define TCP_SEQ_OFF	4
#define TCP_ACK_OFF	8
#define TCP_CSUM_OFF	16
#define TCP_OPT_EOL	0
#define TCP_OPT_NOP	1
#define TCP_OPT_SACK	5
#define TCP_SACK_EDGE	4	/* a SACK block is two edges of 4 bytes */

/*
 * Add delta to the 32-bit number at offset at of the TCP segment tcp, its checksum
 * patched. At an odd offset the number straddles three of the summed words; its share of
 * the sum, byte-swapped, is its two halves as if aligned (RFC 1071 s2(B)), so the checksum
 * is patched swapped.
 */
static void
frame_tcp_add32(uint8_t *tcp, size_t at, uint32_t delta)
{
	uint32_t old = rd_be32(tcp + at), new = old + delta;
	uint16_t csum = rd_be16(tcp + TCP_CSUM_OFF);
	bool odd = (at & 1) != 0;

	wr32(tcp + at, new);
	if (odd)
		csum = frame_swap16(csum);
	csum = frame_csum_update16(csum, (uint16_t)(old >> 16), (uint16_t)(new >> 16));
	csum = frame_csum_update16(csum, (uint16_t)old, (uint16_t)new);
	if (odd)
		csum = frame_swap16(csum);
	wr16(tcp + TCP_CSUM_OFF, csum);
}

void
frame_tcp_seq_add(uint8_t *tcp, uint32_t delta)
{
	frame_tcp_add32(tcp, TCP_SEQ_OFF, delta);
}

void
frame_tcp_ack_add(uint8_t *tcp, size_t hdr_len, uint32_t delta)
{
	size_t at = FRAME_TCP_HDR_LEN, len;

	frame_tcp_add32(tcp, TCP_ACK_OFF, delta);
	while (at < hdr_len && tcp[at] != TCP_OPT_EOL) {
		if (tcp[at] == TCP_OPT_NOP) {
			at++;
			continue;
		}
		/* a length that does not fit: the rest is no option a receiver reads either */
		if (at + 1 >= hdr_len || (len = tcp[at + 1]) < 2 || len > hdr_len - at)
			return;
		if (tcp[at] == TCP_OPT_SACK)
			for (size_t e = at + 2; e + TCP_SACK_EDGE <= at + len; e += TCP_SACK_EDGE)
				frame_tcp_add32(tcp, e, delta);
		at += len;
	}
}
