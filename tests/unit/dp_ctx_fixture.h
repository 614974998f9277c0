/*
 * The real dataplane for a unit test (test_dp_burst.c, test_dp_dns_room.c): EAL on two
 * net_null ports, the test's configuration loaded, dp_ctx_setup()'s context, and this
 * thread playing worker 0, around cmocka's run of the tests; and the frames they feed it.
 */
#ifndef DP_CTX_FIXTURE_H
#define DP_CTX_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "dp_run.h"

struct CMUnitTest;
struct ctl_names;
struct mb;
struct pol_config;
struct rte_mbuf;

/*
 * Ethernet from smac to dmac, then an IPv4 header from sip to dip (ID 0, DF, TTL 64, its
 * checksum right) for l4_len bytes of proto, appended to f.
 */
void dpf_eth_ipv4(struct mb *f, const uint8_t *smac, const uint8_t *dmac, uint8_t proto,
    const uint8_t *sip, const uint8_t *dip, size_t l4_len);

/* f's bytes as a frame in an mbuf of ctx's pool. */
struct rte_mbuf *dpf_mbuf(const struct dp_ctx *ctx, const struct mb *f);

/*
 * The frame of m (one segment, its buffer anywhere: a test's own) in an mbuf of ctx's
 * pool, its receive flags (the port's checksum marks) kept.
 */
struct rte_mbuf *dpf_mbuf_copy(const struct dp_ctx *ctx, const struct rte_mbuf *m);

/*
 * Ethernet, IPv4, UDP (no checksum: IPv4 allows it) from (smac, sip, sport) to (dmac, dip,
 * dport) around the payload d, as a frame in an mbuf of ctx's pool.
 */
struct rte_mbuf *dpf_udp4(const struct dp_ctx *ctx, const uint8_t *smac, const uint8_t *dmac,
    const uint8_t *sip, const uint8_t *dip, uint16_t sport, uint16_t dport, const struct mb *d);

/* A TCP segment without options over IPv4, checksums right. */
struct dpf_tcp {
	const uint8_t *smac, *dmac, *sip, *dip;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	const void *payload;
	size_t len;
};

/* t as a frame in an mbuf of ctx's pool. */
struct rte_mbuf *dpf_tcp4(const struct dp_ctx *ctx, const struct dpf_tcp *t);

/*
 * Bind IPv4 address ip4 for VM slot vm of w to name (for 300 s), with the ports its
 * policy gives the name: as a DNS answer naming it would.
 */
void dpf_bind4(struct dp_worker *w, uint16_t vm, const uint8_t *ip4, const char *name);

/*
 * Every hold's housekeeping (dp_tls_expire()) DP_VERIFY_SECONDS on: judged bytes kept that
 * long unacknowledged are let go of.
 */
void dpf_expire_holds(struct dp_worker *w);

/* A configuration from text, asserted to load (its errors on stderr when not). */
struct pol_config *dpf_load(const char *text);

/*
 * A reload to cfg judging names, this thread (worker w) off the RCU while the main lcore
 * waits for the workers, then on the new generation: dp_publish()'s result.
 */
int dpf_publish(struct dp_ctx *ctx, struct dp_worker *w, const struct pol_config *cfg,
    const struct ctl_names *names);

/*
 * Runs the n tests of program name on the dataplane config sets up in ctx, *w its worker 0;
 * cmocka's exit status, or 1 when the dataplane cannot start (why on stderr).
 */
int dpf_run(const char *name, const char *config, struct dp_ctx *ctx, struct dp_worker **w,
    const struct CMUnitTest *tests, size_t n);

#endif
