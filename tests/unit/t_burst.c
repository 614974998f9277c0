/*
 * The fixture of the dp_burst tests: see t_burst.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dp.h"
#include "dp_ctx_fixture.h"
#include "dp_out.h"
#include "t_burst.h"

const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024,\n"
	"  max_flows: 4096, max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies:\n"
	"  web: {allow: [\"198.51.100.0/24:8080\"]}\n"
	"  quic: {allow: [\"198.51.100.0/24:443\"]}\n"
	"vms:\n"
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n"
	"  - {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: quic,\n"
	"     mode: audit}\n";

struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
struct dp_worker *w;

/* A TCP segment from agent1's MAC and source address src, to 198.51.100.7:8080. */
struct rte_mbuf *
t_tcp_from(const uint8_t *src, uint16_t sport, uint32_t seq, uint8_t flags)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t dst[4] = { 198, 51, 100, 7 };

	return dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw, .sip = src,
	    .dip = dst, .sport = sport, .dport = 8080, .seq = seq, .flags = flags });
}

/* A TCP segment from agent1's port sport to 198.51.100.7:8080, checksums right. */
struct rte_mbuf *
t_tcp(uint16_t sport, uint32_t seq, uint8_t flags)
{
	return t_tcp_from((const uint8_t[4]){ 10, 77, 0, 11 }, sport, seq, flags);
}

/* The flow key of agent1's connection from port to 198.51.100.7:8080. */
struct dp_flow_key
t_key(uint16_t port)
{
	return (struct dp_flow_key){ .vm = 0, .family = 4, .proto = 6, .vm_port = port,
		.peer_port = 8080, .peer = { 198, 51, 100, 7 } };
}

/* What left by the uplink since the last call, and the queue emptied. */
unsigned int
t_sent(void)
{
	unsigned int n = w->tx[DP_PORT_UPLINK].n;

	dp_tx_flush(w);
	return n;
}
