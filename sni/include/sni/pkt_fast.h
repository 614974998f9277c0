/*
 * pkt_decode() in the open: its straight-through decoder of the shape nearly every frame
 * has, inline, so that a caller on the hot path (the dataplane's receive) pays no call for
 * it and learns the frame is that shape. pkt_decode() is this, behind one call; test_pkt and
 * fuzz_pkt hold the straight-through decoder to the general walk.
 */
#ifndef SNI_PKT_FAST_H
#define SNI_PKT_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/pkt.h"
#include "sni/rd.h"

#define PKT_ETH_P_IPV4		0x0800
#define PKT_ETH_P_IPV6		0x86dd
#define PKT_ETH_P_8021Q		0x8100

/* Any frame, every shape: the general walk, which fills *out from zero as far as it gets. */
enum pkt_status pkt_decode_walk(const uint8_t *frame, size_t len, struct pkt *out);

/*
 * The window scale of a SYN the straight-through decoder took (its options lie within the
 * header it checked), read apart from it: a call there would cost every frame the
 * registers it saves. PKT_OK.
 */
enum pkt_status pkt_decode_syn(const uint8_t *frame, struct pkt *out);

/*
 * The window scale of a SYN whose TCP header th a caller checked (its options within the
 * frame): pkt_decode_syn()'s read, for one that has the header but no struct pkt to fill.
 */
uint8_t pkt_tcp_syn_wscale(const uint8_t *th);

#define PKT_TCP_WSCALE_MAX	14	/* RFC 7323 s2.3: larger values are taken as 14 */

/*
 * The window scale of the SYN whose TCP header (its length checked) is at h, when its
 * options have one of the two layouts nearly every SYN has, told by their fixed bytes
 * (the walk would step over the same well-formed options to the same scale): into *ws,
 * true; else false, for the walk (pkt_tcp_syn_wscale()). Linux: MSS, SACK-permitted,
 * timestamps, NOP, window scale; BSD, Windows and this bench: MSS, NOP, window scale
 * (what follows it is not read). The header's length asked of its offset byte whole
 * (off:4 rsv:4, so off >= 7 is the byte >= 0x70), a layout's last word read once,
 * little-endian (its first byte lowest).
 */
static inline __attribute__((always_inline)) bool
pkt_tcp_wscale_known(const uint8_t *h, uint8_t *ws)
{
	uint8_t off = h[12];
	uint32_t w;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a word's first byte lowest");
	if (off < 0x70 || rd_be16(h + 20) != 0x0204)		/* MSS, in 8 bytes or more */
		return false;
	memcpy(&w, h + 24, sizeof(w));
	if ((w & 0xffffff) != 0x030301) {			/* not NOP, window scale */
		if (w != 0x0a080204 || off < 0xa0)		/* SACK-permitted, timestamps */
			return false;
		memcpy(&w, h + 36, sizeof(w));
		if ((w & 0xffffff) != 0x030301)
			return false;
	}
	w >>= 24;
	*ws = (uint8_t)(w > PKT_TCP_WSCALE_MAX ? PKT_TCP_WSCALE_MAX : w);
	return true;
}

/*
 * An IPv4 address (4 bytes at ip4) as the 16 bytes of struct pkt's, zero past it, written
 * whole (GCC: two 8-byte stores) rather than zeroed and then copied into
 */
static inline void
pkt_addr4(uint8_t addr[16], const uint8_t *ip4)
{
	uint32_t words[4] = { 0, 0, 0, 0 };

	memcpy(words, ip4, 4);
	memcpy(addr, words, 16);
}

/*
 * Both ports of a TCP or UDP header at l4 into *out (sport, then dport, each in host order)
 * from one load: swapped whole, the source port lands high, so a rotation puts it first.
 */
static inline __attribute__((always_inline)) void
pkt_fast_ports(const uint8_t *l4, struct pkt *out)
{
	uint32_t ports;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the ports' order in memory");
	_Static_assert(offsetof(struct pkt, dport) == offsetof(struct pkt, sport) + 2,
	    "the ports side by side");
	memcpy(&ports, l4, 4);
	ports = __builtin_bswap32(ports);
	ports = ports << 16 | ports >> 16;
	memcpy(&out->sport, &ports, 4);
}

/*
 * A TCP header's sequence and ACK numbers at l4 + 4 into *out (seq, then ack, host order)
 * from one load, likewise: swapped whole, the sequence number lands high.
 */
static inline __attribute__((always_inline)) void
pkt_fast_seq_ack(const uint8_t *l4, struct pkt *out)
{
	uint64_t nums;

	_Static_assert(offsetof(struct pkt, ack) == offsetof(struct pkt, seq) + 4,
	    "the numbers side by side");
	memcpy(&nums, l4 + 4, 8);
	nums = __builtin_bswap64(nums);
	nums = nums << 32 | nums >> 32;
	memcpy(&out->seq, &nums, 8);
}

/*
 * The transport header of a frame of the fast shape, its IP header's fields already in
 * *out: TCP or UDP whose lengths fit (l4_len bytes from l4 are inside the frame).
 */
static inline __attribute__((always_inline)) bool
pkt_fast_l4(const uint8_t *frame, const uint8_t *l4, uint16_t l4_len, struct pkt *out)
{
	out->l4_off = (uint16_t)(l4 - frame);
	out->l4_len = l4_len;
	if (out->proto == PKT_PROTO_TCP) {
		uint8_t off;

		if (l4_len < 20)
			return false;
		off = l4[12] >> 4;
		if (off < 5 || l4_len < off * 4u)
			return false;
		pkt_fast_ports(l4, out);
		out->tcp_flags = l4[13];
		out->tcp_wscale = PKT_WSCALE_NONE;	/* a SYN's: pkt_decode_syn() */
		out->tcp_win = rd_be16(l4 + 14);
		pkt_fast_seq_ack(l4, out);
		out->payload = l4 + off * 4;
		out->payload_len = l4_len - off * 4u;
		return true;
	}
	if (out->proto == PKT_PROTO_UDP) {
		uint16_t ulen;

		if (l4_len < 8)
			return false;
		ulen = rd_be16(l4 + 4);
		if (ulen < 8 || ulen > l4_len)
			return false;
		pkt_fast_ports(l4, out);
		out->tcp_flags = 0;
		out->tcp_wscale = 0;
		out->tcp_win = 0;
		out->seq = 0;
		out->ack = 0;
		out->payload = l4 + 8;
		out->payload_len = ulen - 8u;
		return true;
	}
	return false;
}

/* IPv4 without options, not a fragment, at ip (the frame's first 38 bytes are there) */
static inline __attribute__((always_inline)) bool
pkt_fast_ip4(const uint8_t *frame, size_t len, const uint8_t *ip, struct pkt *out)
{
	uint16_t total = rd_be16(ip + 2);

	if (ip[0] != 0x45 || (rd_be16(ip + 6) & 0x3fff) != 0 || total < 20 ||
	    total > len - (size_t)(ip - frame))
		return false;
	out->ethertype = PKT_ETH_P_IPV4;
	out->family = 4;
	out->hop_limit = ip[8];
	out->proto = ip[9];
	pkt_addr4(out->src, ip + 12);
	pkt_addr4(out->dst, ip + 16);
	return pkt_fast_l4(frame, ip + 20, (uint16_t)(total - 20), out);
}

/* IPv6 whose next header is the transport's, at ip */
static inline __attribute__((always_inline)) bool
pkt_fast_ip6(const uint8_t *frame, size_t len, const uint8_t *ip, struct pkt *out)
{
	uint16_t plen;

	if ((size_t)(ip - frame) + 40 > len)
		return false;
	plen = rd_be16(ip + 4);
	if (ip[0] >> 4 != 6 || plen == 0 || (size_t)(ip - frame) + 40 + plen > len)
		return false;
	out->ethertype = PKT_ETH_P_IPV6;
	out->family = 6;
	out->proto = ip[6];
	out->hop_limit = ip[7];
	memcpy(out->src, ip + 8, 16);
	memcpy(out->dst, ip + 24, 16);
	return pkt_fast_l4(frame, ip + 40, plen, out);
}

/*
 * The shape nearly every frame has, decoded straight through with each field written
 * once: untagged or one 802.1Q tag, then IPv4 without options and not a fragment, or IPv6
 * whose next header is TCP or UDP, then TCP or UDP whose lengths fit. false for anything
 * else, which pkt_decode_walk() takes (from a zeroed *out: what this wrote is scratch);
 * for these frames both give the same *out, but for a SYN's window scale
 * (pkt_decode_syn()). Each header's fields are stored as soon as read, and each family's
 * path is its own straight line: the registers of an inlined caller stay its own.
 */
static inline __attribute__((always_inline)) bool
pkt_decode_fast(const uint8_t *frame, size_t len, struct pkt *out)
{
	const uint8_t *ip = frame + 14;
	uint16_t type, vlan = 0;
	uint8_t nb_vlans = 0;

	if (len < 18 + 20)		/* a tag and an IPv4 header: IPv6 asks for its own */
		return false;
	type = rd_be16(frame + 12);
	if (type == PKT_ETH_P_8021Q) {
		vlan = rd_be16(frame + 14) & 0x0fff;
		type = rd_be16(frame + 16);
		nb_vlans = 1;
		ip += 4;
	}
	out->dst_mac = frame;
	out->src_mac = frame + 6;
	out->vlan = vlan;
	out->nb_vlans = nb_vlans;
	out->l3_off = (uint16_t)(ip - frame);
	out->fragment = false;
	out->src_route = false;
	if (type == PKT_ETH_P_IPV4)
		return pkt_fast_ip4(frame, len, ip, out);
	if (type == PKT_ETH_P_IPV6)
		return pkt_fast_ip6(frame, len, ip, out);
	return false;
}

/* pkt_decode(), inline */
static inline enum pkt_status
pkt_decode_inline(const uint8_t *frame, size_t len, struct pkt *out)
{
	if (!pkt_decode_fast(frame, len, out))
		return pkt_decode_walk(frame, len, out);
	if (out->tcp_flags & PKT_TCP_SYN)	/* TCP only: UDP's flags are zero */
		return pkt_decode_syn(frame, out);
	return PKT_OK;
}

#endif
