/*
 * The flow stage of the per-frame decision: a whole datagram's connection, opened,
 * tracked, or refused. Returns the frame's fate; *fp is set to the flow for fates that
 * need it (DP_FATE_STREAM).
 */
#ifndef DP_CONN_H
#define DP_CONN_H

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/* A TCP or UDP datagram from VM vm that no earlier stage decided. */
struct dp_fate dp_conn_vm(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    struct dp_flow **fp);

/* A TCP or UDP datagram from the uplink toward VM vm. */
struct dp_fate dp_conn_uplink(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    struct dp_flow **fp);

#endif
