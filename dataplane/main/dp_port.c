/*
 * Port setup.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "dp_port.h"

#define DP_RX_DESC	1024
#define DP_TX_DESC	1024

/*
 * A symmetric Toeplitz key: the same 16-bit pattern repeated makes the hash of (a, b)
 * equal that of (b, a), so a flow's two directions land on one worker (Woo and Park,
 * "Scalable TCP Session Monitoring with Symmetric Receive-side Scaling").
 */
static uint8_t dp_rss_key[40] = {
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

/* The device name is devargs up to its first comma. */
static int
dp_port_find(const char *devargs, uint16_t *port)
{
	char name[RTE_DEV_NAME_MAX_LEN];
	size_t n = strcspn(devargs, ",");

	if (n == 0 || n >= sizeof(name))
		return -EINVAL;
	memcpy(name, devargs, n);
	name[n] = '\0';
	return rte_eth_dev_get_port_by_name(name, port) == 0 ? 0 : -ENODEV;
}

static int
dp_port_setup(const char *devargs, uint16_t nq, struct rte_mempool *pool, bool rx_intr,
    uint16_t *port)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t nrx = DP_RX_DESC, ntx = DP_TX_DESC;
	int rc;

	if (dp_port_find(devargs, port) != 0) {
		if ((rc = rte_dev_probe(devargs)) < 0 || dp_port_find(devargs, port) != 0) {
			fprintf(stderr, "namegate: port %s: cannot probe: %s\n", devargs,
			    rte_strerror(rc < 0 ? -rc : ENODEV));
			return rc < 0 ? rc : -ENODEV;
		}
	}
	if ((rc = rte_eth_dev_info_get(*port, &info)) != 0)
		goto fail;
	if (info.max_rx_queues < nq || info.max_tx_queues < nq) {
		fprintf(stderr, "namegate: port %s: %u workers need %u queues, it has %u\n",
		    devargs, nq, nq, info.max_rx_queues);
		return -EINVAL;
	}
	if (nq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = dp_rss_key;
		conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(dp_rss_key);
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
		    (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	}
	/* checksums the device verifies save the worker from summing every byte (dp_rx.h) */
	conf.rxmode.offloads = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_CHECKSUM;
	conf.intr_conf.rxq = rx_intr;
	if ((rc = rte_eth_dev_configure(*port, nq, nq, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(*port, &nrx, &ntx)) != 0)
		goto fail;
	for (uint16_t q = 0; q < nq; q++) {
		int socket = rte_eth_dev_socket_id(*port);

		if ((rc = rte_eth_rx_queue_setup(*port, q, nrx, socket, NULL, pool)) != 0 ||
		    (rc = rte_eth_tx_queue_setup(*port, q, ntx, socket, NULL)) != 0)
			goto fail;
	}
	if ((rc = rte_eth_dev_start(*port)) != 0)
		goto fail;
	/* a bump in the wire forwards every frame, whoever it is addressed to */
	rte_eth_promiscuous_enable(*port);
	return 0;
fail:
	fprintf(stderr, "namegate: port %s: %s\n", devargs, rte_strerror(rc < 0 ? -rc : rc));
	return rc < 0 ? rc : -rc;
}

int
dp_port_open(const char *devargs, uint16_t nq, struct rte_mempool *pool, uint16_t *port)
{
	return dp_port_setup(devargs, nq, pool, false, port);
}

int
dp_port_open_main(const char *devargs, struct rte_mempool *pool, uint16_t *port, int *rx_fd)
{
	int rc;

	*rx_fd = -1;
	/* a device without rx interrupts refuses the configuration: then without them */
	if (dp_port_setup(devargs, 1, pool, true, port) != 0 &&
	    (rc = dp_port_setup(devargs, 1, pool, false, port)) != 0)
		return rc;
	/*
	 * net_tap has no enable op (ENOTSUP) but its queue's fd is the TAP's own, readable
	 * while frames wait: the descriptor is what matters, whatever enable says.
	 */
	(void)rte_eth_dev_rx_intr_enable(*port, 0);
	*rx_fd = rte_eth_dev_rx_intr_ctl_q_get_fd(*port, 0);
	return 0;
}

uint16_t
dp_port_mtu(uint16_t port)
{
	uint16_t mtu;

	return rte_eth_dev_get_mtu(port, &mtu) == 0 && mtu >= 1280 ? mtu : 1500;
}

void
dp_port_close(uint16_t port)
{
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
}
