/*
 * The baseline forwarding drivers issue 25 judges namegate against: code of our own around
 * the DPDK calls that testpmd's csum engine and l3fwd's LPM path make per frame, on any two
 * ethdev ports. bench_full runs them on its ring ports between namegate's passes;
 * bench_base_ref runs them alone on net_pcap ports, beside dpdk-testpmd on the same kind.
 */
#ifndef BENCH_BASE_H
#define BENCH_BASE_H

#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#define BENCH_BASE_BURST	32	/* what one rx_burst takes, as testpmd's default */

/* The io baseline's burst: rx's frames to tx untouched, no byte read. Frames received. */
static inline unsigned int
bench_io_burst(uint16_t rx, uint16_t tx)
{
	struct rte_mbuf *m[BENCH_BASE_BURST];
	uint16_t n = rte_eth_rx_burst(rx, 0, m, BENCH_BASE_BURST);
	uint16_t sent = rte_eth_tx_burst(tx, 0, m, n);

	if (sent < n)
		rte_pktmbuf_free_bulk(m + sent, n - sent);
	return n;
}

/* The csum driver's two ports, and what it counted. */
struct bench_csum {
	uint16_t port[2];
	struct rte_ether_addr own[2];	/* each port's MAC: a frame's source as it leaves */
	struct rte_ether_addr peer[2];	/* testpmd's default peer of each: 02:00:00:00:00:id */
	uint64_t rx_bad_ip, rx_bad_l4;	/* what a NIC flagged bad on receive, as testpmd counts */
	uint64_t ip4, ip6, tcp, udp, other;	/* frames by what the parse found */
	uint64_t differed;		/* sums computed unlike the frame's: what proves they are
					 * computed (0 on frames that came with good sums) */
};

void bench_csum_init(struct bench_csum *c, const uint16_t ports[2]);

/*
 * One burst of testpmd's `csum` forwarding from ports[side] to the other: each frame's
 * MACs set (the tx port's peer, then its own), its L2/L3/L4 headers parsed, the IPv4
 * header checksum and the TCP or UDP checksum computed again in software (no port here
 * offloads them), and the burst prepared and sent, what the port refuses freed. Returns
 * the frames received.
 */
unsigned int bench_csum_burst(struct bench_csum *c, unsigned int side);

/* l3fwd's LPM forwarding over ports[2]: its tables, built once. */
struct bench_l3fwd;

/* The addresses routed to ports[0]: the VMs', each a host route. */
struct bench_l3fwd_hosts {
	uint32_t ip4[64];		/* host order */
	uint8_t ip6[64][16];
	unsigned int n4, n6;
};

/*
 * Tables of the size a border router holds: BENCH_L3FWD_ROUTES4 IPv4 prefixes and
 * BENCH_L3FWD_ROUTES6 IPv6 ones drawn as an Internet table's lengths are spread, and a
 * default route, all to ports[1]; the hosts' routes to ports[0]. NULL after a line on stderr.
 */
struct bench_l3fwd *bench_l3fwd_new(const uint16_t ports[2], const struct bench_l3fwd_hosts *h,
    int socket);
void bench_l3fwd_free(struct bench_l3fwd *l);

/*
 * One burst of l3fwd's LPM path from ports[side]: the frame type read (what l3fwd's
 * --parse-ptype does), the destination looked up, the RFC 1812 checks, TTL and header
 * checksum updated, both MACs rewritten for the port found, the burst sent grouped by
 * port. Frames that are neither IPv4 nor IPv6 go back out the port they came in on, as
 * l3fwd sends them. Returns the frames received.
 */
unsigned int bench_l3fwd_burst(struct bench_l3fwd *l, unsigned int side);

/* The VMs of TRAFFIC/manifest.json as host routes; 0, or -1 after a line on stderr. */
int bench_l3fwd_hosts_load(struct bench_l3fwd_hosts *h, const char *traffic);

#endif
