/*
 * The l3fwd baseline: what DPDK's l3fwd example does to a frame on its LPM path, written
 * here around the same library calls: the frame's type read from its Ethernet header (the
 * --parse-ptype callback a port without packet types needs), the destinations of the burst
 * looked up in rte_lpm (IPv4) and rte_lpm6 (IPv6), the RFC 1812 checks, the TTL taken down
 * and the header checksum patched to match, both MACs rewritten for the port found, and
 * the burst sent grouped by port. The tables are built in bench_base_routes.c.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_mbuf.h>

#include "bench_base.h"
#include "bench_base_routes.h"

/*
 * RFC 1812 5.2.2's checks on an IPv4 header of a frame with len bytes from it on, as
 * l3fwd makes them (the header checksum is the NIC's to check), then the TTL down by one
 * and the header checksum patched to match (RFC 1624). False: the frame is dropped.
 */
static bool
bench_l3fwd_rfc1812(struct rte_ipv4_hdr *ip, uint32_t len)
{
	uint32_t sum;

	if (len < sizeof(*ip) || (ip->version_ihl >> 4) != 4 || (ip->version_ihl & 0xf) < 5 ||
	    rte_be_to_cpu_16(ip->total_length) < rte_ipv4_hdr_len(ip))
		return false;
	ip->time_to_live--;
	sum = (uint32_t)rte_be_to_cpu_16(ip->hdr_checksum) + 0x0100;
	ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)(sum + (sum >> 16)));
	return true;
}

unsigned int
bench_l3fwd_burst(struct bench_l3fwd *l, unsigned int side)
{
	struct rte_mbuf *pkts[BENCH_BASE_BURST], *out[2][BENCH_BASE_BURST];
	uint32_t ip4[BENCH_BASE_BURST], hop4[BENCH_BASE_BURST], hop[BENCH_BASE_BURST];
	uint8_t ip6[BENCH_BASE_BURST][RTE_LPM6_IPV6_ADDR_SIZE];
	int32_t hop6[BENCH_BASE_BURST];
	uint8_t at4[BENCH_BASE_BURST], at6[BENCH_BASE_BURST];
	unsigned int n4 = 0, n6 = 0, nout[2] = { 0, 0 };
	uint16_t n = rte_eth_rx_burst(l->port[side], 0, pkts, BENCH_BASE_BURST);

	/* the frame types, and the destinations to look up */
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *eth = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
		uint16_t type;

		hop[i] = side;		/* neither IPv4 nor IPv6: back where it came from */
		pkts[i]->packet_type = RTE_PTYPE_L2_ETHER;
		if (rte_pktmbuf_data_len(pkts[i]) < sizeof(struct rte_ether_hdr) +
		    sizeof(struct rte_ipv4_hdr))
			continue;
		type = ((const struct rte_ether_hdr *)eth)->ether_type;
		if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
			const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth +
			    sizeof(struct rte_ether_hdr));

			pkts[i]->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4_EXT_UNKNOWN;
			ip4[n4] = rte_be_to_cpu_32(ip->dst_addr);
			at4[n4++] = (uint8_t)i;
		} else if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) &&
		    rte_pktmbuf_data_len(pkts[i]) >= sizeof(struct rte_ether_hdr) +
		    sizeof(struct rte_ipv6_hdr)) {
			const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(eth +
			    sizeof(struct rte_ether_hdr));

			pkts[i]->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV6_EXT_UNKNOWN;
			memcpy(ip6[n6], ip->dst_addr, sizeof(ip6[0]));
			at6[n6++] = (uint8_t)i;
		}
	}
	rte_lpm_lookup_bulk(l->lpm4, ip4, hop4, n4);
	rte_lpm6_lookup_bulk_func(l->lpm6, ip6, hop6, n6);
	for (unsigned int k = 0; k < n4; k++)
		hop[at4[k]] = hop4[k] & RTE_LPM_LOOKUP_SUCCESS ? hop4[k] & 1 : side;
	for (unsigned int k = 0; k < n6; k++)
		hop[at6[k]] = hop6[k] >= 0 ? (uint32_t)hop6[k] & 1 : side;

	/* RFC 1812 for IPv4, then the MACs of the way out */
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *eth = rte_pktmbuf_mtod(pkts[i], uint8_t *);

		if (RTE_ETH_IS_IPV4_HDR(pkts[i]->packet_type)) {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth +
			    sizeof(struct rte_ether_hdr));

			if (!bench_l3fwd_rfc1812(ip, rte_pktmbuf_pkt_len(pkts[i]) -
			    (uint32_t)sizeof(struct rte_ether_hdr))) {
				rte_pktmbuf_free(pkts[i]);
				continue;
			}
		}
		memcpy(eth, l->eth[hop[i]], sizeof(l->eth[0]));
		out[hop[i]][nout[hop[i]]++] = pkts[i];
	}
	for (unsigned int p = 0; p < 2; p++) {
		uint16_t sent = rte_eth_tx_burst(l->port[p], 0, out[p], (uint16_t)nout[p]);

		if (sent < nout[p])
			rte_pktmbuf_free_bulk(out[p] + sent, nout[p] - sent);
	}
	return n;
}
