/*
 * Frames namegate sends on its own behalf: TCP RSTs, and (in frame_icmp.c and frame_dns.c)
 * ICMP port unreachable and DNS refusals. Each builder sizes the whole frame first and writes only
 * once it knows the frame fits, so a short out is never touched.
 */
#include <string.h>

#include "sni/csum.h"
#include "sni/frame.h"
#include "sni/frame_inplace.h"
#include "sni/frame_rebind.h"
#include "frame_int.h"
#include "sni/rd.h"

#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88a8
#define IPV4_DF		0x4000
#define DP_HOP_LIMIT	64

/*
 * Ethernet II, then up to PKT_VLAN_MAX 802.1Q/802.1ad tags, as pkt_decode() read them into
 * p: the header is the l3_off bytes p says, not walked again. The ethertype that ends it
 * is still read from in, so that a p that is not in's does not send an IP header where
 * in has none. Returns the header length, or 0 unless that ethertype is p's IP version.
 */
size_t
frame_l2_len(const uint8_t *in, size_t len, const struct pkt *p)
{
	size_t l2 = p->l3_off;
	uint16_t type;

	if (l2 < 14 || l2 > 14 + 4 * PKT_VLAN_MAX || l2 > len)
		return 0;
	type = rd_be16(in + l2 - 2);
	if ((p->family != 4 || type != FRAME_ETH_P_IPV4) && (p->family != 6 || type != FRAME_ETH_P_IPV6))
		return 0;
	return l2;
}

size_t
frame_l3_len(const struct pkt *p)
{
	return p->family == 4 ? FRAME_IPV4_HDR_LEN : FRAME_IPV6_HDR_LEN;
}

/* v as sni/csum.h's sums add it: a 16-bit word in network order, loaded */
static inline uint64_t
frame_csum_be16(uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap16(v);
#else
	return v;
#endif
}

/*
 * The checksum field's value (for wr16()) of what acc, a sni/csum.h sum, summed: one sum
 * of host-order words folded once, where frame_csum_add() folds and swaps each piece.
 */
static inline uint16_t
frame_csum_field(uint64_t acc)
{
	return (uint16_t)~frame_csum_be16(csum_fold(acc));
}

/*
 * Ethernet (with in's tags) and IP headers for l4_len bytes of proto; returns the offset of
 * the transport header. reply: back to p's sender, MACs and addresses swapped; otherwise
 * onward in p's direction, both kept.
 */
size_t
frame_put_hdrs(const uint8_t *in, size_t l2, const struct pkt *p, bool reply, uint8_t proto,
    size_t l4_len, uint8_t *out)
{
	const uint8_t *src = reply ? p->dst : p->src, *dst = reply ? p->src : p->dst;
	uint8_t *ip = out + l2;

	memcpy(out, in, l2);
	if (reply) {
		memcpy(out, in + 6, 6);
		memcpy(out + 6, in, 6);
	}
	if (p->family == 4) {
		/* ver 4 ihl 5 | tos | total | id | flags frag | ttl | proto | sum | src | dst */
		ip[0] = 0x45;
		ip[1] = 0;
		wr16(ip + 2, (uint16_t)(FRAME_IPV4_HDR_LEN + l4_len));
		wr16(ip + 4, 0);
		wr16(ip + 6, IPV4_DF);
		ip[8] = DP_HOP_LIMIT;
		ip[9] = proto;
		wr16(ip + 10, 0);
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		wr16(ip + 10, frame_csum_field(csum_sum(ip, FRAME_IPV4_HDR_LEN, 0)));
		return l2 + FRAME_IPV4_HDR_LEN;
	}
	/* ver 6 tc 0 flow 0 | payload_len | next | hop_limit | src | dst */
	wr32(ip, 0x60000000);
	wr16(ip + 4, (uint16_t)l4_len);
	ip[6] = proto;
	ip[7] = DP_HOP_LIMIT;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	return l2 + FRAME_IPV6_HDR_LEN;
}

/*
 * Checksum of the l4_len-byte transport message at l4 behind the IP header at ip: over the
 * pseudo-header (RFC 768, RFC 9293 s3.1, RFC 8200 s8.1) too, except for ICMPv4 (RFC 792).
 */
uint16_t
frame_l4_csum(const uint8_t *ip, uint8_t family, uint8_t proto, const uint8_t *l4, size_t l4_len)
{
	uint64_t acc = csum_sum(l4, l4_len, 0);	/* the only piece that may be odd: last */

	if (family == 6)
		acc = csum_sum(ip + 8, 32, acc);
	else if (proto != FRAME_PROTO_ICMP)
		acc = csum_sum(ip + 12, 8, acc);
	if (family == 6 || proto != FRAME_PROTO_ICMP)
		acc = csum_add(acc, frame_csum_be16((uint16_t)(l4_len >> 16)) +
		    frame_csum_be16((uint16_t)l4_len) + frame_csum_be16(proto));
	return frame_csum_field(acc);
}

void
frame_tcp_csum_set(uint8_t *ip, uint8_t family, uint8_t *tcp, size_t tcp_len)
{
	tcp[16] = tcp[17] = 0;
	wr16(tcp + 16, frame_l4_csum(ip, family, PKT_PROTO_TCP, tcp, tcp_len));
}

/* TCP header (RFC 9293 s3.1), no options; the checksum is filled in by the caller. */
void
frame_put_tcp(uint8_t *th, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
    uint8_t flags, uint16_t win)
{
	wr16(th, sport);
	wr16(th + 2, dport);
	wr32(th + 4, seq);
	wr32(th + 8, ack);
	th[12] = (FRAME_TCP_HDR_LEN / 4) << 4;
	th[13] = flags;
	wr16(th + 14, win);
	wr16(th + 16, 0);
	wr16(th + 18, 0);
}

/* SEG.LEN (RFC 9293 s3.4): the octets a segment occupies in sequence space. */
uint32_t
frame_tcp_seg_len(const struct pkt *p)
{
	return (uint32_t)p->payload_len + ((p->tcp_flags & PKT_TCP_SYN) != 0) +
	    ((p->tcp_flags & PKT_TCP_FIN) != 0);
}

static int
frame_rst(const uint8_t *in, size_t len, const struct pkt *p, bool reply, uint32_t seq,
    uint32_t ack, uint8_t flags, uint8_t *out, size_t cap)
{
	size_t l2, l4, n;

	/* RFC 9293 s3.10.7.1: an RST is never answered, whichever way it went */
	if (p->proto != PKT_PROTO_TCP || p->fragment || (p->tcp_flags & PKT_TCP_RST) ||
	    (l2 = frame_l2_len(in, len, p)) == 0)
		return -1;
	n = l2 + frame_l3_len(p) + FRAME_TCP_HDR_LEN;
	if (n > cap)
		return -1;
	l4 = frame_put_hdrs(in, l2, p, reply, PKT_PROTO_TCP, FRAME_TCP_HDR_LEN, out);
	frame_put_tcp(out + l4, reply ? p->dport : p->sport, reply ? p->sport : p->dport, seq, ack,
	    flags, 0);
	wr16(out + l4 + 16, frame_l4_csum(out + l2, p->family, PKT_PROTO_TCP, out + l4,
	    FRAME_TCP_HDR_LEN));
	return (int)n;
}

int
frame_tcp_rst(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out, size_t cap)
{
	if (p->tcp_flags & PKT_TCP_ACK)
		return frame_rst(in, len, p, true, p->ack, 0, PKT_TCP_RST, out, cap);
	return frame_rst(in, len, p, true, 0, p->seq + frame_tcp_seg_len(p), PKT_TCP_RST | PKT_TCP_ACK,
	    out, cap);
}

int
frame_tcp_rst_to_dst(const uint8_t *in, size_t len, const struct pkt *p, bool seg_forwarded,
    uint8_t *out, size_t cap)
{
	uint32_t seq = p->seq + (seg_forwarded ? frame_tcp_seg_len(p) : 0);

	if (p->tcp_flags & PKT_TCP_ACK)
		return frame_rst(in, len, p, false, seq, p->ack, PKT_TCP_RST | PKT_TCP_ACK, out, cap);
	return frame_rst(in, len, p, false, seq, 0, PKT_TCP_RST, out, cap);
}

/*
 * p's segment onward with only its first keep payload bytes: the same headers and options,
 * lengths and checksums made good. A FIN goes only with the payload's last byte.
 */
static int
frame_tcp_keep(const uint8_t *in, size_t len, const struct pkt *p, size_t keep_payload,
    uint8_t *out, size_t cap)
{
	size_t hdrs = (size_t)(p->payload - in), keep = hdrs + keep_payload;
	uint8_t *ip = out + p->l3_off, *th = out + p->l4_off;

	if (p->proto != PKT_PROTO_TCP || p->fragment || keep > len || keep > cap ||
	    keep_payload > p->payload_len)
		return -1;
	memcpy(out, in, keep);
	if (keep_payload == p->payload_len) {
		/*
		 * All of the payload (a slow writer's first segment, sent on whole): the lengths
		 * and IP header stay as they came, and the segment's sum, checked when it came in,
		 * changes only by a FIN taken off. Summing its bytes again cost as much as the
		 * rest of the connection's opening.
		 */
		uint16_t flags = rd_be16(th + 12);

		th[13] &= (uint8_t)~PKT_TCP_FIN;
		wr16(th + 16, frame_csum_update16(rd_be16(th + 16), flags, rd_be16(th + 12)));
		return (int)keep;
	}
	th[13] &= (uint8_t)~PKT_TCP_FIN;
	if (p->family == 4) {
		wr16(ip + 2, (uint16_t)(keep - p->l3_off));
		wr16(ip + 10, 0);
		wr16(ip + 10, frame_csum_fold(frame_csum_add(0, ip, (size_t)(ip[0] & 0xf) * 4)));
	} else {
		wr16(ip + 4, (uint16_t)(keep - p->l3_off - FRAME_IPV6_HDR_LEN));
	}
	frame_tcp_csum_set(ip, p->family, th, keep - p->l4_off);
	return (int)keep;
}

int
frame_tcp_strip(const uint8_t *in, size_t len, const struct pkt *p, uint8_t *out, size_t cap)
{
	return p->payload_len > 0 ? frame_tcp_keep(in, len, p, 0, out, cap) : -1;
}

int
frame_tcp_prefix(const uint8_t *in, size_t len, const struct pkt *p, size_t keep,
    uint8_t *out, size_t cap)
{
	return frame_tcp_keep(in, len, p, keep, out, cap);
}

/*
 * The RST is no longer than the segment (its headers have no options): written from the
 * frame's start once its link header, all the builder reads of the frame, is set aside.
 */
int
frame_tcp_rst_in_place(uint8_t *in, size_t len, const struct pkt *p)
{
	uint8_t head[14 + 4 * PKT_VLAN_MAX];
	size_t n = len < sizeof(head) ? len : sizeof(head);

	memcpy(head, in, n);
	return frame_tcp_rst(head, n, p, in, len);
}

/* Where RFC 6052 s2.2 puts the IPv4 address after a NAT64 prefix of 48, 56, 64, 96 bits. */
static const uint8_t frame_nat64_at[][4] = {
	{ 6, 7, 9, 10 }, { 7, 9, 10, 11 }, { 9, 10, 11, 12 }, { 12, 13, 14, 15 },
};

static size_t
frame_v4_put(uint8_t out[][4], size_t n, size_t max, const uint8_t *a6, const uint8_t *at,
    uint8_t flip)
{
	if (n < max)
		for (int i = 0; i < 4; i++)
			out[n][i] = a6[at[i]] ^ flip;
	return n + 1;
}

size_t
frame_addr_embedded_v4(const uint8_t *a6, uint8_t out[][4], size_t max)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff }, compat[12] = { 0 };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	static const uint8_t last[4] = { 12, 13, 14, 15 }, after_16[4] = { 2, 3, 4, 5 };
	static const uint8_t after_32[4] = { 4, 5, 6, 7 };
	size_t n = 0;

	if (memcmp(a6, mapped, 12) == 0 || memcmp(a6, compat, 12) == 0 ||
	    memcmp(a6, nat64, 12) == 0)
		n = frame_v4_put(out, n, max, a6, last, 0);
	/*
	 * The local-use prefix's length is the operator's: every layout is a candidate but
	 * those in 0/8, which are the zero bytes of the real layout read at another length
	 * (and which no translator sends anywhere).
	 */
	if (memcmp(a6, nat64_local, 6) == 0)
		for (size_t i = 0; i < sizeof(frame_nat64_at) / sizeof(frame_nat64_at[0]); i++)
			if (a6[frame_nat64_at[i][0]] != 0)
				n = frame_v4_put(out, n, max, a6, frame_nat64_at[i], 0);
	if (a6[0] == 0x20 && a6[1] == 0x02)	/* 6to4: 2002:a.b.c.d::/48 */
		n = frame_v4_put(out, n, max, a6, after_16, 0);
	if (a6[0] == 0x20 && a6[1] == 0x01 && a6[2] == 0 && a6[3] == 0) {
		/* Teredo: the server, then the client's address with every bit inverted */
		n = frame_v4_put(out, n, max, a6, after_32, 0);
		n = frame_v4_put(out, n, max, a6, last, 0xff);
	}
	return n < max ? n : max;
}

/*
 * Does IPv6 addr rebind, itself or as an IPv4 address a host reaches through it (which is
 * that address)? Out of line: the IPv4 path needs neither the room for embedded addresses
 * nor the registers this saves.
 */
static __attribute__((noinline)) bool
frame_addr_rebind6(const uint8_t *addr)
{
	uint8_t v4[FRAME_EMBEDDED_V4_MAX][4];
	size_t n = frame_addr_embedded_v4(addr, v4, FRAME_EMBEDDED_V4_MAX);

	for (size_t i = 0; i < n; i++)
		if (frame_rebind4(v4[i]))
			return true;
	return frame_rebind6(addr);
}

bool
frame_addr_rebind(uint8_t family, const uint8_t *addr)
{
	if (family == 4)
		return frame_rebind4(addr);
	return family != 6 || frame_addr_rebind6(addr);
}
