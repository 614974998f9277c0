/*
 * Receive-side decoding and checksum verification (RFC 1071 sums; RFC 768, 9293, 8200
 * pseudo-headers).
 */
#include <rte_byteorder.h>
#include <rte_ip.h>

#include "dp_pipeline.h"
#include "dp_rx.h"

#define UDP_CSUM_OFF	6

/*
 * The one's-complement sum of a whole header or segment, checksum field included, is
 * 0xffff exactly when the checksum is right. rte_raw_cksum sums in host order; the
 * pseudo-header's numbers are added as they stand on the wire, so the orders agree.
 */
static bool
dp_rx_ip4_csum_ok(const struct rte_mbuf *m, const struct pkt *p)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l3_off);
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (fl == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		return true;
	if (fl == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return rte_raw_cksum(ip, (size_t)(ip[0] & 0xf) * 4) == 0xffff;
}

bool
dp_rx_l4_csum_ok(const struct rte_mbuf *m, const struct pkt *p)
{
	const uint8_t *l4 = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l4_off);
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	size_t alen = p->family == 4 ? 4 : 16;
	uint32_t len = p->l4_len, sum;

	if (fl == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return true;
	if (fl == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	if (p->proto == PKT_PROTO_UDP) {
		/* zero: the sender computed none, which only IPv4 allows (RFC 8200 s8.1) */
		if (l4[UDP_CSUM_OFF] == 0 && l4[UDP_CSUM_OFF + 1] == 0)
			return p->family == 4;
		len = (uint32_t)p->payload_len + 8;	/* the UDP length: what it covers */
	}
	sum = __rte_raw_cksum(p->src, alen, 0);
	sum = __rte_raw_cksum(p->dst, alen, sum);
	sum += rte_cpu_to_be_16((uint16_t)len) + rte_cpu_to_be_16(p->proto);
	sum = __rte_raw_cksum(l4, len, sum);
	return __rte_raw_cksum_reduce(sum) == 0xffff;
}

bool
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
