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

void dp_port_close(uint16_t port);

/* The port's IP MTU (1500 when the device cannot say). */
uint16_t dp_port_mtu(uint16_t port);

#endif
