/*
 * libFuzzer target for the whole fast path: frames from either port through the worker's
 * burst pipeline, alone or several at once, with a prepared policy and the state earlier frames leave behind
 * (pending DNS queries, bindings, flows).
 *
 * Input: up to DP_FUZZ_FRAMES records of  u8 ctl | u16 len (big endian) | len bytes.
 *   ctl bit 0: 0 = from the VM port, 1 = from the uplink; bits 1-3: seconds to let pass
 *   before the frame, so TTLs, idle timeouts and pending queries expire; bit 4: give the
 *   frame's DNS message the ID of the last query namegate forwarded, since that ID is
 *   namegate's own random choice and no fixed input could know it; bit 5: keep the
 *   frame's checksums as they are (otherwise they are made right, so that inputs reach
 *   past the checksum check rather than being dropped there); bit 6: the frame joins the
 *   previous frame's burst when both came from the same port (the worker takes a burst
 *   whole: dp_burst.c).
 * After each input two days pass and everything is aged out (held ClientHellos are cut),
 * so inputs do not depend on one another.
 *
 * Invariant: every mbuf the pipeline is given, or allocates for a reply, is either sent or
 * freed: the pool is whole again after each input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "dp_bind.h"
#include "dp_burst.h"
#include "dp_dns.h"
#include "dp_dns_pending.h"
#include "dp_flow.h"
#include "dp_frag.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "sni/frame.h"
#include "frame_int.h"
#include "dp_run.h"
#include "dp_stats.h"
#include "dp_tls.h"
#include "policy/load.h"
#include "sni/pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the small tables this target is built with (tests/fuzz/meson.build), to sweep them whole */
#ifndef DP_PENDING_CAP
#error "build with -DDP_PENDING_CAP and -DDP_HOLD_SLOTS"
#endif

#define DP_FUZZ_FRAMES	16

static const char dp_fuzz_config[] =
	"dataplane:\n"
	"  vm_port: net_null0\n"
	"  uplink_port: net_null1\n"
	"  max_flows: 128\n"
	"  max_flows_per_vm: 64\n"
	"  max_bindings: 128\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1, fd77::1]\n"
	"dns: {min_ttl: 2, max_ttl: 10}\n"
	"on_block: reset\n"
	"policies:\n"
	"  python:\n"
	"    allow: [pypi.org, \"*.githubusercontent.com\", \"github.com:22\", "
	"\"198.51.100.0/24:443\", \"2001:db8::/32\"]\n"
	"    deny: [upload.pypi.org]\n"
	"  offline:\n"
	"    allow: []\n"
	"vms:\n"
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, ipv6: \"fd77::11\", "
	"policy: python}\n"
	"  - {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: python, "
	"vlan: 7, mode: audit}\n"
	"  - {name: agent3, mac: \"02:00:00:00:00:03\", ipv4: 10.77.0.13, policy: offline}\n";

static struct dp_ctx dp_fuzz_ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS } };
static struct pol_config *dp_fuzz_cfg;	/* lives as long as the process */
static unsigned int dp_fuzz_pool_full;
static uint8_t dp_fuzz_last_id[2];

static void
dp_fuzz_fini(void)
{
	if (getenv("DP_FUZZ_STATS") != NULL)	/* to see what a corpus exercises */
		dp_stats_print(&dp_fuzz_ctx, stderr);
	dp_ctx_teardown(&dp_fuzz_ctx);
	pol_config_free(dp_fuzz_cfg);
	rte_eal_cleanup();
	rmdir(rte_eal_get_runtime_dir());	/* left empty: no shconf, no telemetry */
}

/* Note the ID of a DNS query about to leave by the uplink. */
static void
dp_fuzz_note_query(struct dp_worker *w)
{
	struct dp_txbuf *t = &w->tx[DP_PORT_UPLINK];
	struct pkt p;

	for (uint16_t i = 0; i < t->n; i++)
		if (pkt_decode(rte_pktmbuf_mtod(t->pkts[i], const uint8_t *),
		    rte_pktmbuf_data_len(t->pkts[i]), &p) == PKT_OK && p.dport == 53 &&
		    p.payload_len >= 2)
			memcpy(dp_fuzz_last_id, p.payload, 2);
}

/* Give the DNS message in m the last forwarded query's ID. */
static void
dp_fuzz_answer_last(struct rte_mbuf *m)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct pkt p;

	if (pkt_decode(d, rte_pktmbuf_data_len(m), &p) == PKT_OK && p.payload_len >= 2)
		memcpy(d + (p.payload - d), dp_fuzz_last_id, 2);
}

/* IPv4 header and TCP/UDP checksums made right, as a sender's stack would write them. */
static void
dp_fuzz_fix_csums(struct rte_mbuf *m)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *), *ip, *l4;
	unsigned int off;
	struct pkt p;

	if (pkt_decode(d, rte_pktmbuf_data_len(m), &p) == PKT_MALFORMED || p.family == 0)
		return;
	ip = d + p.l3_off;
	if (p.family == 4) {
		wr16(ip + 10, 0);
		wr16(ip + 10, frame_csum_fold(frame_csum_add(0, ip, (size_t)(ip[0] & 0xf) * 4)));
	}
	if (pkt_decode(d, rte_pktmbuf_data_len(m), &p) != PKT_OK)
		return;
	l4 = d + p.l4_off;
	off = p.proto == PKT_PROTO_TCP ? 16 : 6;
	wr16(l4 + off, 0);
	wr16(l4 + off, frame_l4_csum(ip, p.family, p.proto, l4, p.proto == PKT_PROTO_TCP ?
	    p.l4_len : p.payload_len + 8));
}

/* What an idle flow holds goes back to the pool, as the worker's aging does. */
static void
dp_fuzz_unhold(struct dp_flow *f, void *arg)
{
	struct dp_worker *w = arg;

	dp_hold_put(w, &f->hold);
	dp_hold_put(w, &f->peer_hold);
}

static void
dp_fuzz_init(void)
{
	char prefix[64];
	char *argv[] = {
		(char *)"fuzz_dp_frame", (char *)"--no-huge", (char *)"-m", (char *)"256",
		(char *)"--no-pci", (char *)"--no-shconf", (char *)"--no-telemetry",	/* no files */
		(char *)"--file-prefix", prefix, (char *)"-l", (char *)"0-1",
		(char *)"--vdev", (char *)"net_null0", (char *)"--vdev", (char *)"net_null1",
		(char *)"--log-level", (char *)"*:error", NULL,
	};
	struct pol_errs errs = { 0 };

	snprintf(prefix, sizeof(prefix), "ngfuzz%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0)
		abort();
	dp_fuzz_cfg = pol_load_buffer(dp_fuzz_config, sizeof(dp_fuzz_config) - 1, "fuzz.yaml",
	    &errs);
	if (dp_fuzz_cfg == NULL) {
		pol_errs_print(stderr, &errs);
		abort();
	}
	if (dp_ctx_setup(&dp_fuzz_ctx, dp_fuzz_cfg) != 0)
		abort();
	atexit(dp_fuzz_fini);
	/* this thread plays worker 0, so the binding table's RCU reclaim can progress */
	rte_rcu_qsbr_thread_register(dp_fuzz_ctx.qsbr, 0);
	rte_rcu_qsbr_thread_online(dp_fuzz_ctx.qsbr, 0);
	dp_fuzz_pool_full = rte_mempool_avail_count(dp_fuzz_ctx.pool);
}

/* Let every table forget everything: two days pass, then full aging passes. */
static void
dp_fuzz_forget(struct dp_worker *w)
{
	uint32_t cursor = 0;

	dp_fuzz_ctx.tsc_start -= 2 * 86400 * dp_fuzz_ctx.tsc_hz;
	w->now = dp_now(&dp_fuzz_ctx);
	for (int i = 0; i < (DP_HOLD_SLOTS + 63) / 64; i++)	/* every hold slot, 64 a call */
		dp_tls_expire(w);
	dp_tx_flush(w);
	dp_flows_age(w->flows, w->now, 128, NULL, w->gen, dp_fuzz_unhold, w);
	dp_pending_age(w->pending, w->now, DP_PENDING_CAP);
	dp_frag_age(w->frags, w->now, DP_FRAG_SLOTS, NULL, NULL);
	dp_binds_sweep(dp_fuzz_ctx.binds, w->now, w->gen, 128, &cursor);
	rte_rcu_qsbr_quiescent(dp_fuzz_ctx.qsbr, 0);
}

/*
 * The frames gathered so far, from one port, through the burst pipeline together (bit 0x40
 * of a frame's control byte joins it to the previous one's burst): a burst must decide as
 * its frames one at a time would, with lookups an earlier frame made stale done again.
 */
static void
dp_fuzz_burst_run(struct dp_worker *w, struct rte_mbuf **burst, unsigned int *n,
    unsigned int uplink)
{
	if (*n == 0)
		return;
	if (uplink)
		dp_burst_uplink(w, burst, (uint16_t)*n);
	else
		dp_burst_vm(w, burst, (uint16_t)*n);
	*n = 0;
	dp_fuzz_note_query(w);
	dp_tx_flush(w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_mbuf *burst[DP_FUZZ_FRAMES];
	unsigned int nburst = 0, burst_port = 0;
	struct dp_worker *w;

	if (dp_fuzz_pool_full == 0)
		dp_fuzz_init();
	w = dp_fuzz_ctx.workers[0];
	dp_fuzz_forget(w);
	for (int n = 0; n < DP_FUZZ_FRAMES && size >= 3; n++) {
		uint8_t ctl = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		struct rte_mbuf *m;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		/* a frame that does not join the burst being gathered ends it first */
		if (!(ctl & 0x40) || (ctl & 1) != burst_port)
			dp_fuzz_burst_run(w, burst, &nburst, burst_port);
		dp_fuzz_ctx.tsc_start -= (uint64_t)(ctl >> 1 & 7) * dp_fuzz_ctx.tsc_hz;
		w->now = dp_now(&dp_fuzz_ctx);
		if ((m = rte_pktmbuf_alloc(dp_fuzz_ctx.pool)) == NULL)
			abort();
		if (len > rte_pktmbuf_tailroom(m))
			len = rte_pktmbuf_tailroom(m);
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), data, len);
		m->data_len = (uint16_t)len;
		m->pkt_len = (uint32_t)len;
		if (ctl & 0x10)
			dp_fuzz_answer_last(m);
		if (!(ctl & 0x20))
			dp_fuzz_fix_csums(m);
		burst_port = ctl & 1;
		burst[nburst++] = m;
		data += len;
		size -= len;
	}
	dp_fuzz_burst_run(w, burst, &nburst, burst_port);
	dp_tx_flush(w);
	dp_fuzz_forget(w);		/* held ClientHello segments go back too */
	if (rte_mempool_avail_count(dp_fuzz_ctx.pool) != dp_fuzz_pool_full) {
		fprintf(stderr, "fuzz_dp_frame: %u mbufs missing\n",
		    dp_fuzz_pool_full - rte_mempool_avail_count(dp_fuzz_ctx.pool));
		abort();
	}
	return 0;
}
