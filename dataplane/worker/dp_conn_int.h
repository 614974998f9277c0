/*
 * dp_conn.c's general path of a VM's frame, apart from the plain frames dp_conn_vm_any()
 * decides inline: for the test that holds the two to one answer.
 */
#ifndef DP_CONN_INT_H
#define DP_CONN_INT_H

#include <stdint.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/* dp_conn_vm_any() as it decides any frame, plain ones included. */
struct dp_fate dp_conn_vm_general(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp);

#endif
