/*
 * The flow keys test_dp_flow and test_dp_flow_age open: VM vm's TCP connection from port
 * to 192.0.2.1:443, one key a (vm, port).
 */
#ifndef T_FLOW_KEY_H
#define T_FLOW_KEY_H

#include "dp_flow.h"

static inline struct dp_flow_key
key(uint16_t vm, uint16_t port)
{
	struct dp_flow_key k = { .vm = vm, .family = 4, .proto = 6, .vm_port = port,
		.peer_port = 443, .peer = { 192, 0, 2, 1 } };

	return k;
}

#endif
