/*
 * The csum baseline: what dpdk-testpmd's `csum` forwarding engine does to a frame when the
 * port offloads nothing (its default, and all a ring or pcap port can do), written here
 * around the same DPDK calls: the MACs set, the headers parsed as testpmd parses them
 * (Ethernet, up to two VLAN tags, IPv4 or IPv6 without extension headers, TCP or UDP),
 * the IPv4 header checksum (rte_ipv4_cksum) and the TCP or UDP one
 * (rte_ipv4/6_udptcp_cksum) computed again over every byte, the mbuf's offsets set,
 * rte_eth_tx_prepare and rte_eth_tx_burst. It reads every byte of every TCP and UDP frame,
 * which the io baseline never does.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "bench_base.h"

/* What the parse found: offsets as testpmd's testpmd_offload_info holds them. */
struct bench_csum_info {
	uint16_t ethertype;	/* network order */
	uint16_t l2_len, l3_len, l4_len;
	uint8_t l4_proto;
};

void
bench_csum_init(struct bench_csum *c, const uint16_t ports[2])
{
	memset(c, 0, sizeof(*c));
	for (int s = 0; s < 2; s++) {
		c->port[s] = ports[s];
		rte_eth_macaddr_get(ports[s], &c->own[s]);
		/* testpmd's peer address when none is given: 02:00:00:00:00:<port> */
		c->peer[s] = (struct rte_ether_addr){ { 0x02, 0, 0, 0, 0, (uint8_t)ports[s] } };
	}
}

/*
 * L2 then L3 of the len bytes at eth: *in filled; false when they do not hold the headers
 * the frame claims (such a frame is forwarded untouched).
 */
static bool
bench_csum_parse(const uint8_t *eth, uint32_t len, struct bench_csum_info *in)
{
	const struct rte_ether_hdr *e = (const struct rte_ether_hdr *)eth;
	uint16_t type = e->ether_type;

	memset(in, 0, sizeof(*in));
	in->l2_len = sizeof(*e);
	for (int tags = 0; tags < 2 && (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN) ||
	    type == rte_cpu_to_be_16(RTE_ETHER_TYPE_QINQ)); tags++) {
		const struct rte_vlan_hdr *v = (const struct rte_vlan_hdr *)(eth + in->l2_len);

		if (len < in->l2_len + sizeof(*v))
			return false;
		type = v->eth_proto;
		in->l2_len += sizeof(*v);
	}
	in->ethertype = type;
	if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + in->l2_len);

		if (len < in->l2_len + sizeof(*ip))
			return false;
		in->l3_len = rte_ipv4_hdr_len(ip);
		in->l4_proto = ip->next_proto_id;
		if (in->l3_len < sizeof(*ip) ||
		    len < in->l2_len + (uint32_t)rte_be_to_cpu_16(ip->total_length))
			return false;
	} else if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(eth + in->l2_len);

		if (len < in->l2_len + sizeof(*ip))
			return false;
		in->l3_len = sizeof(*ip);
		in->l4_proto = ip->proto;
		if (len < in->l2_len + in->l3_len + (uint32_t)rte_be_to_cpu_16(ip->payload_len))
			return false;
	} else {
		return true;	/* not IP: testpmd leaves it as it is */
	}
	if (in->l4_proto == IPPROTO_TCP) {
		const struct rte_tcp_hdr *t = (const struct rte_tcp_hdr *)(eth + in->l2_len +
		    in->l3_len);

		if (len < (uint32_t)in->l2_len + in->l3_len + sizeof(*t))
			return false;
		in->l4_len = (uint16_t)((t->data_off & 0xf0) >> 2);
	} else if (in->l4_proto == IPPROTO_UDP) {
		if (len < (uint32_t)in->l2_len + in->l3_len + sizeof(struct rte_udp_hdr))
			return false;
		in->l4_len = sizeof(struct rte_udp_hdr);
	}
	return true;
}

/*
 * The TCP or UDP checksum over the pseudo-header and every byte of the segment, its own
 * field zeroed. The frame is one segment here (the parse checked it holds the IP length),
 * so the contiguous forms serve, as testpmd's _mbuf forms would.
 */
static uint16_t
bench_csum_l4(const uint8_t *l3, const uint8_t *l4, bool v4)
{
	return v4 ? rte_ipv4_udptcp_cksum((const struct rte_ipv4_hdr *)l3, l4) :
	    rte_ipv6_udptcp_cksum((const struct rte_ipv6_hdr *)l3, l4);
}

/* The checksums computed again in software, as testpmd's process_inner_cksums does. */
static void
bench_csum_sums(struct bench_csum *c, struct rte_mbuf *m, uint8_t *eth,
    const struct bench_csum_info *in)
{
	uint8_t *l3 = eth + in->l2_len, *l4 = l3 + in->l3_len;
	bool v4 = in->ethertype == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);

	if (v4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		uint16_t was = ip->hdr_checksum;

		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		c->differed += ip->hdr_checksum != was;
		m->ol_flags |= RTE_MBUF_F_TX_IPV4;
		c->ip4++;
	} else if (in->ethertype == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		m->ol_flags |= RTE_MBUF_F_TX_IPV6;
		c->ip6++;
	} else {
		c->other++;
		return;
	}
	if (in->l4_proto == IPPROTO_UDP) {
		struct rte_udp_hdr *u = (struct rte_udp_hdr *)l4;

		uint16_t was = u->dgram_cksum;

		c->udp++;
		if (was == 0)
			return;		/* testpmd leaves a UDP datagram without a sum without */
		u->dgram_cksum = 0;
		u->dgram_cksum = bench_csum_l4(l3, l4, v4);
		c->differed += u->dgram_cksum != was;
	} else if (in->l4_proto == IPPROTO_TCP) {
		struct rte_tcp_hdr *t = (struct rte_tcp_hdr *)l4;

		uint16_t was = t->cksum;

		c->tcp++;
		t->cksum = 0;
		t->cksum = bench_csum_l4(l3, l4, v4);
		c->differed += t->cksum != was;
	}
}

unsigned int
bench_csum_burst(struct bench_csum *c, unsigned int side)
{
	struct rte_mbuf *pkts[BENCH_BASE_BURST];
	unsigned int to = !side;
	uint16_t n = rte_eth_rx_burst(c->port[side], 0, pkts, BENCH_BASE_BURST), prep, sent;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);
		struct rte_ether_hdr *e = (struct rte_ether_hdr *)eth;
		uint64_t rx_flags = m->ol_flags;
		struct bench_csum_info in;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		c->rx_bad_ip += (rx_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) ==
		    RTE_MBUF_F_RX_IP_CKSUM_BAD;
		c->rx_bad_l4 += (rx_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) ==
		    RTE_MBUF_F_RX_L4_CKSUM_BAD;
		/* testpmd keeps only these of the receive flags */
		m->ol_flags &= RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL;
		if (rte_pktmbuf_data_len(m) < sizeof(*e))
			continue;
		rte_ether_addr_copy(&c->peer[to], &e->dst_addr);
		rte_ether_addr_copy(&c->own[to], &e->src_addr);
		if (!bench_csum_parse(eth, rte_pktmbuf_data_len(m), &in)) {
			c->other++;
			continue;
		}
		m->l2_len = in.l2_len;
		m->l3_len = in.l3_len;
		m->l4_len = in.l4_len;
		bench_csum_sums(c, m, eth, &in);
	}
	prep = rte_eth_tx_prepare(c->port[to], 0, pkts, n);
	sent = rte_eth_tx_burst(c->port[to], 0, pkts, prep);
	if (sent < n)
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	return n;
}
