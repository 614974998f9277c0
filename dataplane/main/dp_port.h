/*
 * Ports: a DPDK device named by devargs ("net_af_packet0,iface=ng-vm", a PCI address),
 * probed if EAL has not, configured with one queue pair per worker.
 */
#ifndef DP_PORT_H
#define DP_PORT_H

#include <stdint.h>

#include <rte_mempool.h>

/*
 * Find or probe the device of devargs and start it with nq queue pairs; with nq > 1,
 * symmetric RSS so both directions of a flow reach the same queue. Returns 0 with *port
 * set, or -errno after printing why.
 */
int dp_port_open(const char *devargs, uint16_t nq, struct rte_mempool *pool, uint16_t *port);

/*
 * The same with one queue pair, for the main lcore alone (the exception path's TAPs), and
 * rx interrupts when the device has them: *rx_fd is then a descriptor poll(2) reports
 * readable while frames wait on the queue, else -1.
 */
int dp_port_open_main(const char *devargs, struct rte_mempool *pool, uint16_t *port,
    int *rx_fd);

void dp_port_close(uint16_t port);

/* The port's IP MTU (1500 when the device cannot say). */
uint16_t dp_port_mtu(uint16_t port);

#endif
