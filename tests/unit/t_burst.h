/*
 * The fixture test_dp_burst.c and test_dp_burst_fate.c share: their configuration (agent1
 * on policy web, agent2 audited on quic), the real worker dpf_run() sets up in ctx and w,
 * and agent1's TCP segments to 198.51.100.7:8080.
 */
#ifndef T_BURST_H
#define T_BURST_H

#include <stdint.h>

#include "dp_flow.h"
#include "dp_run.h"

struct rte_mbuf;

extern const char t_config[];
extern struct dp_ctx ctx;
extern struct dp_worker *w;

/* A TCP segment from agent1's MAC and source address src, to 198.51.100.7:8080. */
struct rte_mbuf *t_tcp_from(const uint8_t *src, uint16_t sport, uint32_t seq, uint8_t flags);

/* A TCP segment from agent1's port sport to 198.51.100.7:8080, checksums right. */
struct rte_mbuf *t_tcp(uint16_t sport, uint32_t seq, uint8_t flags);

/* The flow key of agent1's connection from port to 198.51.100.7:8080. */
struct dp_flow_key t_key(uint16_t port);

/* What left by the uplink since the last call, and the queue emptied. */
unsigned int t_sent(void);

#endif
