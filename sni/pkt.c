/*
 * Frame decoder: Ethernet / VLAN / IPv4 | IPv6 / TCP | UDP, down to the payload.
 */
#include <string.h>

#include "sni/pkt.h"
#include "sni/pkt_fast.h"
#include "sni/rd.h"
#include "wire_int.h"

#define ETH_P_8021AD	0x88a8

#define IPV6_EXT_MAX	8	/* more extension headers than this is not a host's traffic */

#define TCP_OPT_EOL	0
#define TCP_OPT_NOP	1
#define TCP_OPT_WSCALE	3

/*
 * A SYN's window scale (RFC 7323 s2): options are kind | len | body, but for EOL and NOP,
 * which are one byte. Malformed options end the walk: the receiver ignores what follows.
 * A pointer walk against its end, each option's length checked against what is left before
 * any of it is read: a bounded reader's check at every byte cost a SYN half its options'
 * walk.
 */
static __attribute__((noinline)) uint8_t
pkt_tcp_wscale_walk(const uint8_t *o, size_t len)
{
	const uint8_t *end = o + len;

	while (o != end && o[0] != TCP_OPT_EOL) {
		size_t n;

		if (o[0] == TCP_OPT_NOP) {
			o++;
			continue;
		}
		if (end - o < 2 || (n = o[1]) < 2 || n > (size_t)(end - o))
			break;
		if (o[0] == TCP_OPT_WSCALE && n == 3)
			return o[2] > PKT_TCP_WSCALE_MAX ? PKT_TCP_WSCALE_MAX : o[2];
		o += n;
	}
	return PKT_WSCALE_NONE;
}

/*
 * The window scale of the SYN whose TCP header (its length checked) is at h: its two
 * common layouts read in place (pkt_tcp_wscale_known()), else pkt_tcp_wscale_walk() over
 * its options. Inlined in both callers, the walk not: a SYN and a SYN-ACK each paid a
 * call for a few compares.
 */
static inline __attribute__((always_inline)) uint8_t
pkt_tcp_wscale(const uint8_t *h)
{
	uint8_t ws;

	if (pkt_tcp_wscale_known(h, &ws))
		return ws;
	return pkt_tcp_wscale_walk(h + 20, (h[12] >> 4) * 4u - 20);
}

/*
 * TCP (RFC 9293 s3.1): sport | dport | seq | ack | off:4 rsv:4 | flags | win | sum | urg
 * | options (off*4 - 20) | payload
 */
static enum pkt_status
pkt_tcp(struct rd ip_payload, struct pkt *out)
{
	const uint8_t *h = ip_payload.p;
	uint8_t off, flags;

	/* one bound for the fixed header, then plain reads: every frame pays this */
	if (ip_payload.len < 20)
		return PKT_MALFORMED;
	out->sport = rd_be16(h);
	out->dport = rd_be16(h + 2);
	out->seq = rd_be32(h + 4);
	out->ack = rd_be32(h + 8);
	off = h[12] >> 4;
	flags = h[13];
	out->tcp_win = rd_be16(h + 14);
	if (off < 5 || ip_payload.len < (size_t)off * 4)
		return PKT_MALFORMED;
	out->tcp_flags = flags;
	out->tcp_wscale = flags & PKT_TCP_SYN ? pkt_tcp_wscale(h) :
	    PKT_WSCALE_NONE;
	out->payload = ip_payload.p + off * 4;
	out->payload_len = ip_payload.len - (size_t)off * 4;
	return PKT_OK;
}

/* UDP (RFC 768): sport | dport | length (header included) | checksum | payload */
static enum pkt_status
pkt_udp(struct rd ip_payload, struct pkt *out)
{
	const uint8_t *h = ip_payload.p;
	uint16_t ulen;

	if (ip_payload.len < 8)
		return PKT_MALFORMED;
	out->sport = rd_be16(h);
	out->dport = rd_be16(h + 2);
	ulen = rd_be16(h + 4);
	if (ulen < 8 || ulen > ip_payload.len)
		return PKT_MALFORMED;
	out->payload = h + 8;
	out->payload_len = ulen - 8u;
	return PKT_OK;
}

static enum pkt_status
pkt_transport(const uint8_t *frame, struct rd ip_payload, struct pkt *out)
{
	/* frames are at most 64 KiB (a DPDK segment): the offsets fit */
	out->l4_off = (uint16_t)(ip_payload.p - frame);
	out->l4_len = (uint16_t)ip_payload.len;
	if (out->fragment)
		return PKT_OTHER;	/* ports and payload are not all here */
	switch (out->proto) {
	case PKT_PROTO_TCP:
		return pkt_tcp(ip_payload, out);
	case PKT_PROTO_UDP:
		return pkt_udp(ip_payload, out);
	default:
		/* ICMP and the rest: the caller may still want to look inside (ND, echo) */
		out->payload = ip_payload.p;
		out->payload_len = ip_payload.len;
		return PKT_OTHER;
	}
}

#define IP4_OPT_EOL	0
#define IP4_OPT_NOP	1
#define IP4_OPT_LSRR	131
#define IP4_OPT_SSRR	137

/*
 * IPv4 options (RFC 791 s3.1): EOL and NOP are one byte; the rest type | len | body with
 * len counting both. A list that does not add up is dropped by the receiver (Linux's
 * ip_options_compile), so it is malformed here too. Loose or strict source routes would
 * send the packet on from its destination to wherever the VM wrote.
 */
static bool
pkt_ipv4_options(struct rd opts, struct pkt *out)
{
	uint8_t type, len;

	while (rd_u8(&opts, &type) && type != IP4_OPT_EOL) {
		if (type == IP4_OPT_NOP)
			continue;
		if (!rd_u8(&opts, &len) || len < 2 || !rd_skip(&opts, len - 2u))
			return false;
		if (type == IP4_OPT_LSRR || type == IP4_OPT_SSRR)
			out->src_route = true;
	}
	return true;
}

/*
 * IPv4 (RFC 791): ver:4 ihl:4 | tos | total_len | id | flags:3 frag_off:13 | ttl | proto
 * | sum | src | dst | options (ihl*4 - 20). Bytes past total_len are link padding.
 */
static enum pkt_status
pkt_ipv4(const uint8_t *frame, struct rd r, struct pkt *out)
{
	const uint8_t *start = r.p;
	size_t avail = r.len;
	uint8_t vihl;
	uint16_t total, frag;

	if (r.len < 20)
		return PKT_MALFORMED;
	vihl = start[0];
	total = rd_be16(start + 2);
	frag = rd_be16(start + 6);
	out->hop_limit = start[8];
	out->proto = start[9];
	memcpy(out->src, start + 12, 4);
	memcpy(out->dst, start + 16, 4);
	out->family = 4;
	if (vihl >> 4 != 4 || (vihl & 0xf) < 5 || total < (vihl & 0xf) * 4u || total > avail ||
	    ((vihl & 0xf) > 5 &&
	    !pkt_ipv4_options(rd_make(start + 20, (vihl & 0xf) * 4u - 20), out)))
		return PKT_MALFORMED;
	out->fragment = (frag & 0x3fff) != 0;	/* MF set or a non-zero offset */
	return pkt_transport(frame, rd_make(start + (vihl & 0xf) * 4, total - (vihl & 0xf) * 4u),
	    out);
}

/*
 * IPv6 (RFC 8200): ver:4 tc:8 flow:20 | payload_len | next | hop_limit | src | dst,
 * then extension headers, each: next | hdr_ext_len (8-byte units past the first 8) | ...
 */
static enum pkt_status
pkt_ipv6(const uint8_t *frame, struct rd r, struct pkt *out)
{
	struct rd payload;
	uint32_t vtf;
	uint16_t plen;
	uint8_t next, hops;

	if (!rd_u32(&r, &vtf) || !rd_u16(&r, &plen) || !rd_u8(&r, &next) || !rd_u8(&r, &hops) ||
	    r.len < 32)
		return PKT_MALFORMED;
	memcpy(out->src, r.p, 16);
	memcpy(out->dst, r.p + 16, 16);
	out->family = 6;
	out->hop_limit = hops;
	rd_skip(&r, 32);
	/* plen 0 would be a jumbogram (RFC 2675), which no Ethernet frame can carry */
	if (vtf >> 28 != 6 || plen == 0 || !rd_sub(&r, plen, &payload))
		return PKT_MALFORMED;
	for (unsigned int n = 0; n <= IPV6_EXT_MAX; n++) {
		uint8_t ext_next, ext_len;
		size_t hdr_len;

		switch (next) {
		case IP6_HOPOPTS:
		case IP6_ROUTING:
		case IP6_DSTOPTS:
		case IP6_AH:
		case IP6_FRAGMENT:
			break;
		default:
			out->proto = next;
			return pkt_transport(frame, payload, out);
		}
		if (payload.len < 8)
			return PKT_MALFORMED;
		ext_next = payload.p[0];
		ext_len = payload.p[1];
		if (next == IP6_FRAGMENT) {
			/*
			 * next | rsv | offset:13 rsv:2 M:1 | id. Offset 0 with M clear is an
			 * atomic fragment, processed as the whole datagram it is (RFC 6946).
			 */
			if ((payload.p[2] << 8 | payload.p[3]) & 0xfff9)
				out->fragment = true;
			hdr_len = 8;
		} else if (next == IP6_ROUTING) {
			/* next | len | type | segments left: type 0 is deprecated (RFC 5095) */
			if (payload.p[2] == 0 || payload.p[3] != 0)
				out->src_route = true;
			hdr_len = ((size_t)ext_len + 1) * 8;
		} else if (next == IP6_AH) {
			hdr_len = ((size_t)ext_len + 2) * 4;	/* RFC 4302 s2.2: 4-byte units */
		} else {
			hdr_len = ((size_t)ext_len + 1) * 8;
		}
		if (!rd_skip(&payload, hdr_len))
			return PKT_MALFORMED;
		next = ext_next;
	}
	return PKT_MALFORMED;
}

/* Ethernet II: dst | src | ethertype, with up to PKT_VLAN_MAX 802.1Q/802.1ad tags first */
enum pkt_status
pkt_decode_walk(const uint8_t *frame, size_t len, struct pkt *out)
{
	struct rd r = rd_make(frame, len);
	uint16_t type, tci;

	memset(out, 0, sizeof(*out));
	if (r.len < 14)
		return PKT_MALFORMED;
	out->dst_mac = r.p;
	out->src_mac = r.p + 6;
	rd_skip(&r, 12);
	rd_u16(&r, &type);
	for (unsigned int tags = 0; type == PKT_ETH_P_8021Q || type == ETH_P_8021AD; tags++) {
		if (tags == PKT_VLAN_MAX || !rd_u16(&r, &tci) || !rd_u16(&r, &type))
			return PKT_MALFORMED;
		/* the switch delivered the frame by its outer tag; an inner one is the sender's */
		if (tags == 0)
			out->vlan = tci & 0x0fff;
		out->nb_vlans = (uint8_t)(tags + 1);
	}
	out->ethertype = type;
	out->l3_off = (uint16_t)(len - r.len);
	switch (type) {
	case PKT_ETH_P_IPV4:
		return pkt_ipv4(frame, r, out);
	case PKT_ETH_P_IPV6:
		return pkt_ipv6(frame, r, out);
	default:
		return PKT_OTHER;
	}
}

enum pkt_status
pkt_decode_syn(const uint8_t *frame, struct pkt *out)
{
	out->tcp_wscale = pkt_tcp_wscale(frame + out->l4_off);
	return PKT_OK;
}

uint8_t
pkt_tcp_syn_wscale(const uint8_t *th)
{
	return pkt_tcp_wscale(th);
}

enum pkt_status
pkt_decode(const uint8_t *frame, size_t len, struct pkt *out)
{
	return pkt_decode_inline(frame, len, out);
}
