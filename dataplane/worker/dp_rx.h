/*
 * Receiving a frame: counted, made contiguous, decoded, and its checksums verified, so
 * that nothing the receiver's stack would discard ever changes a flow, a held stream, a
 * pending query or a binding (an "insertion": a segment the filter reads and the server
 * never does). Every frame comes through here, so it is inline (RFC 1071 sums; RFC 768,
 * 9293, 8200 pseudo-headers).
 */
#ifndef DP_RX_H
#define DP_RX_H

#include <endian.h>
#include <stdbool.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_out.h"
#include "sni/csum.h"
#include "sni/pkt.h"
#include "sni/pkt_fast.h"

#define DP_RX_UDP_CSUM_OFF	6

/*
 * The one's-complement sum of a whole header or segment, checksum field included, is
 * 0xffff exactly when the checksum is right (sni/csum.h sums it 8 bytes a step, and long
 * segments with the CPU's vectors): every frame without checksum offload pays this.
 */
static inline bool
dp_rx_ip4_csum_ok(const struct rte_mbuf *m, const struct pkt *p)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l3_off);
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (fl == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		return true;
	if (fl == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return csum_ok(csum_sum(ip, (size_t)(ip[0] & 0xf) * 4, 0));
}

/*
 * The transport checksum of a decoded TCP or UDP packet (st == PKT_OK), in software or from
 * the port's offload flags. Separate because a reassembled datagram is checked only whole.
 */
static inline bool
dp_rx_l4_csum_ok(const struct rte_mbuf *m, const struct pkt *p)
{
	const uint8_t *l4 = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l4_off);
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	size_t alen = p->family == 4 ? 4 : 16;
	uint32_t len = p->l4_len;
	uint64_t sum;

	if (fl == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return true;
	if (fl == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	if (p->proto == PKT_PROTO_UDP) {
		/* zero: the sender computed none, which only IPv4 allows (RFC 8200 s8.1) */
		if (l4[DP_RX_UDP_CSUM_OFF] == 0 && l4[DP_RX_UDP_CSUM_OFF + 1] == 0)
			return p->family == 4;
		len = (uint32_t)p->payload_len + 8;	/* the UDP length: what it covers */
	}
	sum = csum_sum(p->src, alen, 0);
	sum = csum_sum(p->dst, alen, sum);
	sum = csum_add(sum, (uint64_t)htobe16((uint16_t)len) + htobe16(p->proto));
	sum = csum_sum(l4, len, sum);
	return csum_ok(sum);
}

/*
 * csum_sum() of n >= 8 bytes with its short case inline: out of line (GCC's choice for a
 * function this size) it was a call for every short segment off the lean path. A long
 * one goes to csum_sum_any(), whose carry chain takes 128..255 bytes for less than the
 * vectors' setup and reduction (an IPv6 segment of a 200-byte payload).
 */
static __rte_always_inline uint64_t
dp_rx_sum(const uint8_t *buf, size_t n, uint64_t acc)
{
	return n < CSUM_VEC_MIN ? csum_sum_short(buf, n, acc) : csum_sum_any(buf, n, acc);
}

/* The header checksum of an IPv4 header without options at ip. */
static inline bool
dp_rx_ip4_head_ok(const uint8_t *ip)
{
	uint64_t head, addrs;
	uint32_t ttl_proto_sum;

	memcpy(&head, ip, 8);
	memcpy(&ttl_proto_sum, ip + 8, 4);
	memcpy(&addrs, ip + 12, 8);
	return csum_ok(csum_add(csum_add(head, ttl_proto_sum), addrs));
}

/*
 * Both checksums of an IPv4 packet without options whose transport (proto) checksum covers
 * len bytes from its header's end, neither verified by the port: the addresses sit between
 * the header's first 12 bytes and the segment, so the segment's sum runs on from the
 * source address (its pseudo-header's addresses).
 */
static inline bool
dp_rx_csums4_len_ok(const uint8_t *ip, uint8_t proto, uint32_t len)
{
	return dp_rx_ip4_head_ok(ip) && csum_ok(csum_sum(ip + 12, 8 + len,
	    (uint64_t)htobe16((uint16_t)len) + htobe16(proto)));
}

/*
 * dp_rx_csums4_len_ok() for a TCP segment of at least 20 bytes (total, the IPv4 total
 * length as ip[2..3] holds it, at least 40), the lean path's (dp_lean.h) and that of every
 * other TCP segment pkt_decode_fast() takes over IPv4 (dp_rx_csums_plain_ok()): inline,
 * each sum tested without a fold (csum_ok()); csum_sum() was a call for a short segment.
 * The segment's sum runs from the source address: the 28 bytes to the end of the TCP
 * header's fixed part always (three words, csum_add4w(), and its last 4 bytes), then the
 * options and payload, total - 40 bytes: a short rest in a tail and at most two words,
 * the tail one load that ends at the packet's end (csum_tail(): 32 bytes come before it).
 * The tail first: its add then leads to this copy's own word tests, where after them GCC
 * merged the copies' tails (tagged, untagged) into one block reached and left by jumps.
 * A bare segment (an ACK, a FIN: half of a connection's frames) has no rest: one test
 * skips the rest's three (a short rest, 1..31 bytes, pays that test more).
 *
 * The pseudo-header's length, total - 20 in network order, is the total length field as
 * it lies less 20 in network order: a byte swap is a multiplication by 256 modulo 65535,
 * which the one's-complement sum is taken modulo, so it is linear there (0xffff - x is
 * -x there, kept positive). No swap of total for it.
 */
static __rte_always_inline bool
dp_rx_csums4_tcp_ok(const uint8_t *ip, uint32_t total)
{
	uint32_t tail_word, csum_urg, rest = total - 40;
	uint16_t total_field;
	uint64_t sum;

	memcpy(&tail_word, ip + 16, 4);
	if (!csum_ok(csum_add3(tail_word, csum_word(ip), csum_word(ip + 8))))
		return false;
	memcpy(&total_field, ip + 2, 2);
	memcpy(&csum_urg, ip + 36, 4);		/* the TCP checksum and urgent pointer */
	/* below 2^34: no carry to bring around */
	sum = (uint64_t)total_field + (0xffffu - htobe16(20)) + htobe16(PKT_PROTO_TCP) +
	    csum_urg;
	sum = csum_add4w(sum, csum_word(ip + 12), csum_word(ip + 20), csum_word(ip + 28));
	if (rest >= 32) {
		sum = csum_sum_any(ip + 40, rest, sum);	/* never a constant: no csum_sum() */
	} else if (rest != 0) {
		if (rest & 7)
			sum = csum_add(sum, csum_tail(ip + 32, total - 32));
		if (rest & 16)
			sum = csum_add3(sum, csum_word(ip + 40), csum_word(ip + 48));
		if (rest & 8)
			sum = csum_add(sum, csum_word(ip + 40 + (rest & 16)));
	}
	return csum_ok(sum);	/* one test for both ways: a branch on it, not a flag kept */
}

/*
 * Both checksums of an IPv4 TCP or UDP packet without options (st == PKT_OK), neither
 * verified by the port.
 */
static inline bool
dp_rx_csums4_ok(const uint8_t *ip, const struct pkt *p)
{
	const uint8_t *l4 = ip + 20;

	if (p->proto != PKT_PROTO_UDP)
		return dp_rx_csums4_len_ok(ip, p->proto, p->l4_len);
	if (l4[DP_RX_UDP_CSUM_OFF] == 0 && l4[DP_RX_UDP_CSUM_OFF + 1] == 0)
		return dp_rx_ip4_head_ok(ip);	/* the sender computed none: IPv4 allows it */
	return dp_rx_csums4_len_ok(ip, p->proto, (uint32_t)p->payload_len + 8);
}

/*
 * The transport checksum of an IPv6 TCP or UDP packet whose transport header follows its
 * fixed header (st == PKT_OK, no extension header), not verified by the port, in one pass:
 * its pseudo-header's addresses lie just before the segment, so the sum runs from them on.
 */
static inline bool
dp_rx_csum6_ok(const uint8_t *ip, const struct pkt *p)
{
	uint32_t len = p->l4_len;

	if (p->proto == PKT_PROTO_UDP) {
		if (ip[40 + DP_RX_UDP_CSUM_OFF] == 0 && ip[40 + DP_RX_UDP_CSUM_OFF + 1] == 0)
			return false;	/* no checksum: IPv6 does not allow it (RFC 8200 s8.1) */
		len = (uint32_t)p->payload_len + 8;
	}
	return csum_ok(dp_rx_sum(ip + 8, 32 + len,
	    (uint64_t)htobe16((uint16_t)len) + htobe16(p->proto)));
}

/* Would the receiver's stack take m's checksums? (decoded as p, with status st) */
static inline bool
dp_rx_csums_ok(const struct rte_mbuf *m, const struct pkt *p, enum pkt_status st)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l3_off);

	if (p->family == 4 && st == PKT_OK && ip[0] == 0x45 &&
	    (m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK)) == 0)
		return dp_rx_csums4_ok(ip, p);
	if (p->family == 6 && st == PKT_OK && p->l4_off == p->l3_off + 40 &&
	    (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == 0)
		return dp_rx_csum6_ok(ip, p);
	/*
	 * ICMP and other protocols are checked by the kernel on the slow path. A source-routed
	 * segment's checksum covers its final destination, not this one; it is blocked before
	 * it can change anything, so its sum is left unread.
	 */
	return (p->family != 4 || dp_rx_ip4_csum_ok(m, p)) &&
	    (st != PKT_OK || p->src_route || dp_rx_l4_csum_ok(m, p));
}

/*
 * The checksums of a frame pkt_decode_fast() took: IPv4 without options, or IPv6 without
 * extension headers, so what dp_rx_csums_ok() would ask of the headers is answered.
 */
static inline bool
dp_rx_csums_plain_ok(const struct rte_mbuf *m, const uint8_t *frame, const struct pkt *p)
{
	uint64_t fl = m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK);

	/* TCP: at least 20 bytes (pkt_fast_l4()), summed inline as the lean path does */
	if (p->family == 4 && fl == 0 && p->proto == PKT_PROTO_TCP)
		return dp_rx_csums4_tcp_ok(frame + p->l3_off, (uint32_t)p->l4_len + 20);
	if (p->family == 4 && fl == 0)
		return dp_rx_csums4_ok(frame + p->l3_off, p);
	if (p->family == 6 && (fl & RTE_MBUF_F_RX_L4_CKSUM_MASK) == 0)
		return dp_rx_csum6_ok(frame + p->l3_off, p);
	if (fl == (RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD))
		return true;	/* IPv6 has no header checksum: the port says so or nothing */
	return dp_rx_csums_ok(m, p, PKT_OK);
}

/* What dp_rx_decode() made of a frame */
enum dp_rx_got {
	DP_RX_DROPPED,		/* malformed, or a checksum the receiver would reject: counted */
	DP_RX_FRAME,		/* decoded, any status */
	DP_RX_PLAIN,		/* PKT_OK and no source route: dp_decide.h's shape */
};

/*
 * Decode m into *p (its port counted it received, a burst at a time: dp_burst.c), and say
 * what it is. The straight-through decoder of the common shape is inline here, the walk a
 * call.
 */
static __rte_always_inline enum dp_rx_got
dp_rx_decode(struct dp_worker *w, struct rte_mbuf *m, struct pkt *p, enum pkt_status *st)
{
	const uint8_t *frame;
	size_t len;

	if (unlikely(m->nb_segs != 1) && rte_pktmbuf_linearize(m) != 0) {
		dp_drop(w, m, DP_DROP_MALFORMED);
		return DP_RX_DROPPED;
	}
	frame = rte_pktmbuf_mtod(m, const uint8_t *);
	len = rte_pktmbuf_data_len(m);
	if (likely(pkt_decode_fast(frame, len, p))) {
		*st = PKT_OK;
		if (unlikely(p->tcp_flags & PKT_TCP_SYN))
			pkt_decode_syn(frame, p);
		if (likely(dp_rx_csums_plain_ok(m, frame, p)))
			return DP_RX_PLAIN;
	} else {
		if ((*st = pkt_decode_walk(frame, len, p)) == PKT_MALFORMED) {
			dp_drop(w, m, DP_DROP_MALFORMED);
			return DP_RX_DROPPED;
		}
		if (dp_rx_csums_ok(m, p, *st))
			return *st == PKT_OK && !p->src_route ? DP_RX_PLAIN : DP_RX_FRAME;
	}
	dp_drop(w, m, DP_DROP_BAD_CSUM);
	return DP_RX_DROPPED;
}

#endif
