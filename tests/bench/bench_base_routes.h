/*
 * The l3fwd baseline's state, shared by the file that forwards (bench_base_l3fwd.c) and
 * the one that builds its tables (bench_base_routes.c).
 */
#ifndef BENCH_BASE_ROUTES_H
#define BENCH_BASE_ROUTES_H

#include <stdint.h>

struct rte_lpm;
struct rte_lpm6;

struct bench_l3fwd {
	uint16_t port[2];
	uint8_t eth[2][12];	/* by port: the next hop's MAC, then the port's own */
	struct rte_lpm *lpm4;	/* next hop: the index into port[] */
	struct rte_lpm6 *lpm6;
};

#endif
