/*
 * ICMP port unreachable (RFC 792, RFC 4443 s3.1), built into a buffer of its own or over
 * the frame it answers (sni/frame_inplace.h). Like every builder of frame.c it sizes the
 * whole frame first and writes only once it knows the frame fits.
 */
#include <string.h>

#include "sni/frame.h"
#include "sni/frame_inplace.h"
#include "frame_int.h"
#include "sni/rd.h"

#define ICMP4_UNREACH		3
#define ICMP4_UNREACH_PORT	3
#define ICMP6_UNREACH		1
#define ICMP6_UNREACH_PORT	4

/* frame_icmp_room() (frame_inplace.h) counts the headers frame_icmp_put() writes. */
_Static_assert(FRAME_IPV4_HDR_LEN == 20 && FRAME_IPV6_HDR_LEN == 40 && FRAME_ICMP_HDR_LEN == 8,
    "frame_icmp_room() counts the headers frame_icmp_put() writes");

static bool
frame_icmp_forbidden(const struct pkt *p)
{
	static const uint8_t any6[16], loop6[16] = { [15] = 1 };

	if (p->family == 4)
		return p->dst[0] >= 224 || p->src[0] >= 224 || p->src[0] == 0 || p->src[0] == 127;
	return p->dst[0] == 0xff || p->src[0] == 0xff || memcmp(p->src, any6, 16) == 0 ||
	    memcmp(p->src, loop6, 16) == 0;
}

/*
 * The checks and sizes of an ICMP port unreachable for p (frame_icmp_unreach()): in's
 * link header length in *l2, how much of its IP packet is quoted in *quote; false when
 * none may be sent.
 */
static inline __attribute__((always_inline)) bool
frame_icmp_quote(const uint8_t *in, size_t len, const struct pkt *p, size_t *l2, size_t *quote)
{
	size_t limit, at;

	if ((p->proto != PKT_PROTO_TCP && p->proto != PKT_PROTO_UDP) || p->fragment ||
	    frame_icmp_forbidden(p) || (*l2 = frame_l2_len(in, len, p)) == 0)
		return false;
	/*
	 * The invoking packet ends at its IP length: bytes past it are link padding. The
	 * length field is 2 bytes into an IPv4 header, 4 into an IPv6 one.
	 */
	at = p->family == 4 ? 2 : 4;
	if (len - *l2 < at + 2)
		return false;
	*quote = rd_be16(in + *l2 + at);
	if (p->family == 4) {
		limit = FRAME_ICMP4_QUOTE_TOTAL - FRAME_IPV4_HDR_LEN - FRAME_ICMP_HDR_LEN;
	} else {
		*quote += FRAME_IPV6_HDR_LEN;
		limit = FRAME_ICMP6_QUOTE_TOTAL - FRAME_IPV6_HDR_LEN - FRAME_ICMP_HDR_LEN;
	}
	if (*quote > len - *l2 || *quote < frame_icmp_room(p) - FRAME_ICMP_HDR_LEN)
		return false;
	if (*quote > limit)
		*quote = limit;
	return true;
}

/*
 * The reply's headers into out and quote bytes of in's IP packet after them, copied unless
 * they are there already (frame_icmp_unreach_in_place()); its length.
 */
static inline __attribute__((always_inline)) int
frame_icmp_put(const uint8_t *in, size_t l2, const struct pkt *p, size_t quote, uint8_t *out)
{
	uint8_t proto = p->family == 4 ? FRAME_PROTO_ICMP : FRAME_PROTO_ICMPV6;
	size_t l4 = frame_put_hdrs(in, l2, p, true, proto, FRAME_ICMP_HDR_LEN + quote, out);

	out[l4] = p->family == 4 ? ICMP4_UNREACH : ICMP6_UNREACH;
	out[l4 + 1] = p->family == 4 ? ICMP4_UNREACH_PORT : ICMP6_UNREACH_PORT;
	wr16(out + l4 + 2, 0);
	wr32(out + l4 + 4, 0);
	if (out + l4 + FRAME_ICMP_HDR_LEN != in + l2)
		memcpy(out + l4 + FRAME_ICMP_HDR_LEN, in + l2, quote);
	wr16(out + l4 + 2, frame_l4_csum(out + l2, p->family, proto, out + l4,
	    FRAME_ICMP_HDR_LEN + quote));
	return (int)(l4 + FRAME_ICMP_HDR_LEN + quote);
}

/*
 * ICMPv4 (RFC 792) / ICMPv6 (RFC 4443 s3.1) destination unreachable:
 *   u8 type | u8 code | u16 checksum | u32 unused (0) | as much of the invoking packet as fits
 */
int
frame_icmp_unreach(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out, size_t cap)
{
	size_t l2, quote;

	if (!frame_icmp_quote(in, len, p, &l2, &quote) ||
	    l2 + frame_l3_len(p) + FRAME_ICMP_HDR_LEN + quote > cap)
		return -1;
	return frame_icmp_put(in, l2, p, quote, out);
}

/*
 * The new headers end where the quote starts, l2 bytes past the frame's own link header:
 * that header (up to PKT_VLAN_MAX tags) is copied out before the first of them is
 * written over it.
 */
_Static_assert(14 + 4 * PKT_VLAN_MAX <= FRAME_IPV4_HDR_LEN + FRAME_ICMP_HDR_LEN,
    "the link header is read before the new headers cover it");

int
frame_icmp_unreach_in_place(uint8_t *in, size_t len, const struct pkt *p)
{
	size_t l2, quote;

	if (!frame_icmp_quote(in, len, p, &l2, &quote))
		return -1;
	return frame_icmp_put(in, l2, p, quote, in - frame_icmp_room(p));
}
