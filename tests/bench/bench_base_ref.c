/*
 * bench_base_ref: one of the baseline drivers (bench_base.h) alone on two ports that EAL
 * options name, looping as dpdk-testpmd's forwarding lcore does (a burst from each port
 * in turn, on the second lcore of -l, as testpmd --nb-cores=1 forwards), so that bench_base_ref.py can set its rate beside testpmd's on the
 * same kind of ports: the check that a driver does what the engine it stands for does, at
 * its cost. Usage:
 *
 *   bench_base_ref csum|l3fwd|io TRAFFIC_DIR WARMUP_S MEASURE_S EAL_ARGS...
 *
 * Ports 0 and 1 (0 the VM side: l3fwd's host routes point there) are set up as testpmd
 * sets them up by default: one queue each way, the driver's default ring sizes, a pool of
 * 262,144 mbufs of RTE_MBUF_DEFAULT_BUF_SIZE, promiscuous. After WARMUP_S seconds of
 * forwarding, the frames received in the next MEASURE_S (both ports) over that time:
 * RATE DRIVER mpps=N, the figure testpmd's Rx-pps lines sum to.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "bench_base.h"

#define REF_MBUFS	262144	/* testpmd --total-num-mbufs, as bench_dataplane.py runs it */
#define REF_CACHE	250	/* testpmd's default mempool cache */

static int
ref_port(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, 0, (unsigned int)rte_eth_dev_socket_id(port), NULL,
	    pool) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, 0, (unsigned int)rte_eth_dev_socket_id(port), NULL) != 0 ||
	    rte_eth_dev_start(port) != 0)
		return -1;
	rte_eth_promiscuous_enable(port);
	return 0;
}

/* The driver's poll: a burst from each port, as testpmd runs its two streams. */
static unsigned int
ref_poll(int drv, struct bench_csum *c, struct bench_l3fwd *l, const uint16_t ports[2])
{
	if (drv == 'c')
		return bench_csum_burst(c, 0) + bench_csum_burst(c, 1);
	if (drv == 'l')
		return bench_l3fwd_burst(l, 0) + bench_l3fwd_burst(l, 1);
	return bench_io_burst(ports[0], ports[1]) + bench_io_burst(ports[1], ports[0]);
}

/* A run of one driver: what it forwards with, how long, and what it measured. */
struct ref_run {
	int drv;
	struct bench_csum *csum;
	struct bench_l3fwd *l3fwd;
	const uint16_t *ports;
	double warm, measure;		/* seconds */
	uint64_t frames, cycles;
	bool done;
};

/* The forwarding lcore: warm up, then count what it receives for r->measure seconds. */
static int
ref_run(void *arg)
{
	struct ref_run *r = arg;
	uint64_t hz = rte_get_tsc_hz(), start = rte_get_tsc_cycles(), t0, t1;

	while (rte_get_tsc_cycles() - start < (uint64_t)(r->warm * (double)hz))
		ref_poll(r->drv, r->csum, r->l3fwd, r->ports);
	t0 = rte_get_tsc_cycles();
	while ((t1 = rte_get_tsc_cycles()) - t0 < (uint64_t)(r->measure * (double)hz))
		r->frames += ref_poll(r->drv, r->csum, r->l3fwd, r->ports);
	r->cycles = t1 - t0;
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return 0;
}

int
main(int argc, char **argv)
{
	static struct bench_csum csum;
	const uint16_t ports[2] = { 0, 1 };
	struct bench_l3fwd *l3fwd = NULL;
	struct bench_l3fwd_hosts hosts;
	struct rte_mempool *pool;
	struct ref_run r = { .csum = &csum, .ports = ports };
	unsigned int lcore;
	int drv;

	if (argc < 6 || (strcmp(argv[1], "csum") != 0 && strcmp(argv[1], "l3fwd") != 0 &&
	    strcmp(argv[1], "io") != 0)) {
		fprintf(stderr, "usage: bench_base_ref csum|l3fwd|io TRAFFIC_DIR WARMUP_S MEASURE_S "
		    "EAL_ARGS...\n");
		return 2;
	}
	drv = argv[1][0] == 'c' ? 'c' : argv[1][0] == 'l' ? 'l' : 'i';
	r.drv = drv;
	r.warm = atof(argv[3]);
	r.measure = atof(argv[4]);
	argv[4] = argv[0];	/* EAL's argv: the program's name, then its options */
	if (rte_eal_init(argc - 4, argv + 4) < 0) {
		fprintf(stderr, "bench_base_ref: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	pool = rte_pktmbuf_pool_create("ref_pool", REF_MBUFS, REF_CACHE, 0,
	    RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (rte_eth_dev_count_avail() < 2 || pool == NULL || ref_port(0, pool) != 0 ||
	    ref_port(1, pool) != 0) {
		fprintf(stderr, "bench_base_ref: two ports: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	bench_csum_init(&csum, ports);
	if (drv == 'l' && (bench_l3fwd_hosts_load(&hosts, argv[2]) != 0 ||
	    (l3fwd = bench_l3fwd_new(ports, &hosts, (int)rte_socket_id())) == NULL))
		return 1;
	r.l3fwd = l3fwd;
	lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	if (lcore >= RTE_MAX_LCORE || rte_eal_remote_launch(ref_run, &r, lcore) != 0) {
		fprintf(stderr, "bench_base_ref: no second lcore to forward on (-l 0-1)\n");
		return 1;
	}
	/* the main lcore sleeps, as testpmd's does between its stats: wait_lcore would spin */
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
		usleep(100000);
	rte_eal_wait_lcore(lcore);
	printf("RATE %s mpps=%.4f frames=%lu seconds=%.2f lcore=%u\n", argv[1],
	    (double)r.frames * (double)rte_get_tsc_hz() / (double)r.cycles / 1e6,
	    (unsigned long)r.frames, (double)r.cycles / (double)rte_get_tsc_hz(), lcore);
	if (drv == 'c')
		printf("INFO csum parsed ip4=%lu ip6=%lu tcp=%lu udp=%lu other=%lu "
		    "sums_differed=%lu\n", (unsigned long)csum.ip4, (unsigned long)csum.ip6,
		    (unsigned long)csum.tcp, (unsigned long)csum.udp, (unsigned long)csum.other,
		    (unsigned long)csum.differed);
	fflush(stdout);
	bench_l3fwd_free(l3fwd);
	for (int p = 0; p < 2; p++) {
		rte_eth_dev_stop(ports[p]);
		rte_eth_dev_close(ports[p]);
	}
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
	return 0;
}
