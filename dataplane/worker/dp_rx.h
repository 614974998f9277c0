/*
 * Receiving a frame: counted, made contiguous, decoded, and its checksums verified, so
 * that nothing the receiver's stack would discard ever changes a flow, a held stream, a
 * pending query or a binding (an "insertion": a segment the filter reads and the server
 * never does). Every frame comes through here, so it is inline (RFC 1071 sums; RFC 768,
 * 9293, 8200 pseudo-headers).
 */
#ifndef DP_RX_H
#define DP_RX_H

#include <stdbool.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dp.h"
#include "dp_out.h"
#include "sni/pkt.h"

#define DP_RX_UDP_CSUM_OFF	6

/*
 * The one's-complement sum of a whole header or segment, checksum field included, is
 * 0xffff exactly when the checksum is right. The sum is of 16-bit words in host order (so
 * the pseudo-header's numbers are added as they stand on the wire); taking them 32 bits
 * at a time into 64 is the same sum once folded (RFC 1071 s2(B)), in a quarter of the
 * steps: every frame without checksum offload pays this.
 */
static inline uint64_t
dp_rx_sum(const uint8_t *p, size_t n, uint64_t acc)
{
	uint32_t w[4];
	uint16_t h = 0;
#ifdef __SSE2__
	/* 32 bytes a step: 32-bit words widened into two pairs of 64-bit lanes */
	__m128i zero = _mm_setzero_si128(), a0 = zero, a1 = zero;
	uint64_t lanes[2];

	for (; n >= 32; p += 32, n -= 32) {
		__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));

		a0 = _mm_add_epi64(a0, _mm_unpacklo_epi32(v0, zero));
		a1 = _mm_add_epi64(a1, _mm_unpackhi_epi32(v0, zero));
		a0 = _mm_add_epi64(a0, _mm_unpacklo_epi32(v1, zero));
		a1 = _mm_add_epi64(a1, _mm_unpackhi_epi32(v1, zero));
	}
	_mm_storeu_si128((__m128i *)(void *)lanes, _mm_add_epi64(a0, a1));
	acc += lanes[0] + lanes[1];
#endif
	for (; n >= sizeof(w); p += sizeof(w), n -= sizeof(w)) {
		memcpy(w, p, sizeof(w));
		acc += (uint64_t)w[0] + w[1] + w[2] + w[3];
	}
	for (; n >= 4; p += 4, n -= 4) {
		memcpy(w, p, 4);
		acc += w[0];
	}
	if (n >= 2) {
		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		n -= 2;
	}
	if (n == 1) {			/* the first byte of a word: where a load puts it */
		h = 0;
		memcpy(&h, p, 1);
		acc += h;
	}
	return acc;
}

static inline uint16_t
dp_rx_fold(uint64_t acc)
{
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)acc;
}
static inline bool
dp_rx_ip4_csum_ok(const struct rte_mbuf *m, const struct pkt *p)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l3_off);
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (fl == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		return true;
	if (fl == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return dp_rx_fold(dp_rx_sum(ip, (size_t)(ip[0] & 0xf) * 4, 0)) == 0xffff;
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
	sum = dp_rx_sum(p->src, alen, 0);
	sum = dp_rx_sum(p->dst, alen, sum);
	sum += rte_cpu_to_be_16((uint16_t)len) + rte_cpu_to_be_16(p->proto);
	sum = dp_rx_sum(l4, len, sum);
	return dp_rx_fold(sum) == 0xffff;
}

/*
 * Count m as received on port and decode it into *p. Returns false when m was dropped
 * (malformed, or a checksum the receiver would reject), counted.
 */
static inline bool
dp_rx_decode(struct dp_worker *w, struct rte_mbuf *m, unsigned int port, struct pkt *p,
    enum pkt_status *st)
{
	w->port_pkts[port][0]++;
	w->port_bytes[port][0] += rte_pktmbuf_pkt_len(m);
	if ((m->nb_segs != 1 && rte_pktmbuf_linearize(m) != 0) ||
	    (*st = pkt_decode(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m),
	    p)) == PKT_MALFORMED) {
		dp_drop(w, m, DP_DROP_MALFORMED);
		return false;
	}
	/*
	 * ICMP and other protocols are checked by the kernel on the slow path. A source-routed
	 * segment's checksum covers its final destination, not this one; it is blocked before
	 * it can change anything, so its sum is left unread.
	 */
	if ((p->family == 4 && !dp_rx_ip4_csum_ok(m, p)) ||
	    (*st == PKT_OK && !p->src_route && !dp_rx_l4_csum_ok(m, p))) {
		dp_drop(w, m, DP_DROP_BAD_CSUM);
		return false;
	}
	return true;
}

#endif
