/*
 * A ClientHello judged through the real worker (dp_ctx_setup on net_null ports) on a flow
 * a binding admitted. The lookup that admits the flow keeps the name it found, and an SNI
 * that is that name is allowed on the binding's word (its policy and generation judged
 * it); any other SNI must still be judged in full, by policy and by strict binding. These
 * fail if the flow's name vouched for every SNI, or if a name bound for another port did.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_bind.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_out.h"
#include "dp_run.h"
#include "dp_tls.h"
#include "policy/load.h"
#include "sni/pkt.h"
#include "tls_fixture.h"

/* b.example is allowed on 8443 only; c.example on 443 but never resolved here. */
static const char t_config[] =
	"dataplane:\n"
	"  {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024, max_flows: 4096,\n"
	"   max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"a.example:443\", \"b.example:8443\", \"c.example:443\"]}}\n"
	"vms:\n"
	"  - {name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}\n";

static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };
static struct dp_worker *w;
static const uint8_t t_server[4] = { 203, 0, 113, 5 };

/* Bind t_server for agent1 to name, with the ports its policy gives the name. */
static void
t_bind(const char *name)
{
	dpf_bind4(w, 0, t_server, name);
}

/* A TCP segment from agent1's port sport to t_server:443 with payload, checksums right. */
static struct rte_mbuf *
t_tcp(uint16_t sport, uint32_t seq, uint8_t flags, const uint8_t *payload, size_t len)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 };

	return dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = vm, .dmac = gw, .sip = src,
	    .dip = t_server, .sport = sport, .dport = 443, .seq = seq, .ack = 1, .flags = flags,
	    .payload = payload, .len = len });
}

/* A ClientHello naming sni, in one TLS record: the stream's bytes (until the next call). */
static const struct tf_msg *
t_hello(const char *sni)
{
	static struct tf_msg stream;

	tf_stream_sni(&stream, sni);
	return &stream;
}

/*
 * A connection from sport to t_server:443 whose hello names sni: the SYN, then the hello
 * in one segment. Returns the flow, or NULL when the hello closed it.
 */
static struct dp_flow *
t_connect(uint16_t sport, const char *sni)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = sport,
		.peer_port = 443, .peer = { 203, 0, 113, 5 } };
	const struct tf_msg *stream = t_hello(sni);
	struct rte_mbuf *m;

	m = t_tcp(sport, 1000, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	assert_non_null(dp_flow_lookup(w->flows, &k));
	m = t_tcp(sport, 1001, PKT_TCP_ACK | PKT_TCP_PSH, stream->b, stream->n);
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	return dp_flow_lookup(w->flows, &k);
}

static uint64_t
t_denied(void)
{
	return w->vm_stats[0].blocked[DP_REASON_SNI_DENIED];
}

/* The SNI is the name the binding that admitted the flow was learned for: it passes. */
static void
test_bound_name_passes(void **state)
{
	uint64_t denied = t_denied();
	struct dp_flow *f;

	(void)state;
	t_bind("a.example");
	assert_non_null(f = t_connect(42000, "a.example"));
	assert_int_equal(f->how, DP_ADMIT_BINDING);
	assert_int_equal(f->name_hash, dp_name_hash("a.example", 9));
	assert_true(f->judged > 0);		/* judged, and let on */
	assert_int_equal(t_denied(), denied);
	/* the same in capitals: the SNI is compared as the canonical name */
	assert_non_null(t_connect(42001, "A.Example"));
	assert_int_equal(t_denied(), denied);
}

/*
 * b.example is bound to the address too, but its policy allows 8443 only: a flow to 443
 * admitted through a.example must not pass with b.example as its SNI. Strict binding
 * alone would let it (the name did resolve there); only policy stops it.
 */
static void
test_other_bound_name_judged_by_policy(void **state)
{
	uint64_t denied = t_denied();

	(void)state;
	t_bind("a.example");
	t_bind("b.example");
	assert_null(t_connect(42100, "b.example"));
	assert_int_equal(t_denied(), denied + 1);
	/* in capitals, folded before it is judged: the same verdict */
	assert_null(t_connect(42101, "B.EXAMPLE"));
	assert_int_equal(t_denied(), denied + 2);
}

/* c.example is allowed on 443, but never resolved to the address: strict denies it. */
static void
test_other_unbound_name_judged_by_binding(void **state)
{
	uint64_t denied = t_denied();

	(void)state;
	t_bind("a.example");
	assert_null(t_connect(42200, "c.example"));
	assert_int_equal(t_denied(), denied + 1);
	/* a name the policy does not know at all */
	assert_null(t_connect(42201, "evil.example"));
	assert_int_equal(t_denied(), denied + 2);
}

/*
 * A connection from sport whose hello (naming sni) comes in segments cut at cuts[0 .. n)
 * (ascending), the first with flags1, the last through last (NULL: dp_burst_vm() alone)
 * when it is to be made otherwise: what the uplink sent for it, in frames.
 */
static uint64_t
t_pieces_sent(uint16_t sport, const char *sni, const size_t *cuts, size_t n, uint8_t flags1,
    struct rte_mbuf *(*last)(struct rte_mbuf *))
{
	uint64_t before = w->port_pkts[DP_PORT_UPLINK][1];
	const struct tf_msg *stream = t_hello(sni);
	struct rte_mbuf *m;
	size_t from = 0;

	m = t_tcp(sport, 1000, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	for (size_t i = 0; i <= n; i++) {
		size_t to = i < n ? cuts[i] : stream->n;

		assert_true(from < to && to <= stream->n);
		m = t_tcp(sport, 1001 + (uint32_t)from, i == 0 ? flags1 : PKT_TCP_ACK | PKT_TCP_PSH,
		    stream->b + from, to - from);
		if (i == n && last != NULL)
			m = last(m);
		dp_burst_vm(w, &m, 1);
		from = to;
	}
	dp_tx_flush(w);
	return w->port_pkts[DP_PORT_UPLINK][1] - before;
}

/* The same for a hello in two segments, the first cut bytes. */
static uint64_t
t_split_sent(uint16_t sport, const char *sni, size_t cut, uint8_t flags1)
{
	return t_pieces_sent(sport, sni, &cut, 1, flags1, NULL);
}

/*
 * A hello's first segment, which cannot complete it, goes on at once as a copy (a slow
 * writer waits for its ACK); once the hello is allowed, the release sends the rest, not
 * that segment again: the SYN, the copy and the second segment. A first segment with a
 * FIN goes again (its copy carries no FIN, and the FIN must reach the server).
 */
static void
test_split_hello_first_segment_sent_once(void **state)
{
	(void)state;
	t_bind("a.example");
	assert_int_equal(t_split_sent(42300, "a.example", 60, PKT_TCP_ACK), 3);
	assert_int_equal(t_split_sent(42301, "a.example", 60, PKT_TCP_ACK | PKT_TCP_FIN), 4);
}

/*
 * The first segment of a split hello goes on itself, the hold keeping a second reference
 * to it: every buffer comes back to the pool, none twice. Refused, at once (the cut's);
 * allowed, the first segment, in whose buffer the judged bytes lie, once they are let go
 * of (here when they expire; the server's ACK of them does it too), the port's transmit
 * freeing the other reference.
 */
static void
test_split_hello_buffers_come_back(void **state)
{
	struct rte_mbuf *taken[8];	/* in use throughout: a buffer freed twice shows */
	unsigned int before;
	uint64_t denied;

	(void)state;
	t_bind("a.example");
	dp_tx_flush(w);
	dpf_expire_holds(w);	/* what earlier tests' hellos keep */
	assert_int_equal(rte_pktmbuf_alloc_bulk(ctx.pool, taken, 8), 0);
	before = rte_mempool_in_use_count(ctx.pool);
	assert_int_equal(t_split_sent(42310, "a.example", 60, PKT_TCP_ACK), 3);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before + 1);
	assert_int_equal(t_split_sent(42311, "a.example", 7, PKT_TCP_ACK | PKT_TCP_PSH), 3);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before + 2);
	/* refused: the cut reads the held first segment for its RST, then frees it */
	denied = t_denied();
	t_split_sent(42312, "c.example", 60, PKT_TCP_ACK);
	assert_int_equal(t_denied(), denied + 2);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before + 2);
	dpf_expire_holds(w);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before);
	rte_pktmbuf_free_bulk(taken, 8);
}

/*
 * A refused split hello: the server had the first segment (its trickle, cut bytes), so its
 * RST is at the first byte it did not get, 1001 + cut, not at the held segment's 1001.
 */
static void
test_split_hello_cut_where_the_server_stands(void **state)
{
	const struct tf_msg *stream;
	struct dp_txbuf *up = &w->tx[DP_PORT_UPLINK];
	struct rte_mbuf *m;
	unsigned int rsts = 0;
	const size_t cut = 60;
	struct pkt p;

	(void)state;
	t_bind("a.example");
	stream = t_hello("c.example");		/* allowed on 443, never resolved: denied */
	m = t_tcp(42320, 1000, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	m = t_tcp(42320, 1001, PKT_TCP_ACK, stream->b, cut);
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	m = t_tcp(42320, 1001 + (uint32_t)cut, PKT_TCP_ACK | PKT_TCP_PSH, stream->b + cut,
	    stream->n - cut);
	dp_burst_vm(w, &m, 1);
	for (uint16_t i = 0; i < up->n; i++) {
		assert_int_equal(pkt_decode(rte_pktmbuf_mtod(up->pkts[i], const uint8_t *),
		    rte_pktmbuf_data_len(up->pkts[i]), &p), PKT_OK);
		if (p.tcp_flags & PKT_TCP_RST) {
			assert_int_equal(p.seq, 1001 + cut);
			rsts++;
		}
	}
	assert_int_equal(rsts, 1);
	dp_tx_flush(w);
}

static struct rte_mempool *t_other;	/* a pool not the worker's (t_in_other()) */

/* m, copied into a buffer of another pool (as a datagram namegate reassembled is). */
static struct rte_mbuf *
t_in_other(struct rte_mbuf *m)
{
	struct rte_mbuf *o = rte_pktmbuf_alloc(t_other);

	assert_non_null(o);
	memcpy(rte_pktmbuf_append(o, rte_pktmbuf_data_len(m)), rte_pktmbuf_mtod(m, void *),
	    rte_pktmbuf_data_len(m));
	rte_pktmbuf_free(m);
	return o;
}

/*
 * The segment that completes a split hello after a first one that went on whole is sent,
 * not held, once the hello is allowed; the first is let go of (dp_tls.c's
 * dp_tls_after_passed()). Only then: with two held before it (a hello in three segments),
 * the release lets go of both, every buffer back; with a FIN on the first, the release
 * sends that one again (test_split_hello_first_segment_sent_once), and one wholly behind
 * the stream's first byte (no bytes of it held) too; a completing segment that may not be
 * held (a reassembled datagram's buffer) is refused as not TLS, as ever.
 */
static void
test_split_hello_completed_after_passed(void **state)
{
	static const size_t cuts[2] = { 30, 70 };
	struct rte_mbuf *taken[8];	/* in use throughout: a buffer freed twice shows */
	uint64_t not_tls = w->vm_stats[0].blocked[DP_REASON_NOT_TLS], sent;
	const struct tf_msg *stream;
	unsigned int before;
	struct rte_mbuf *m;

	(void)state;
	t_bind("a.example");
	dp_tx_flush(w);
	assert_int_equal(rte_pktmbuf_alloc_bulk(ctx.pool, taken, 8), 0);
	before = rte_mempool_in_use_count(ctx.pool);
	assert_int_equal(t_pieces_sent(42330, "a.example", cuts, 2, PKT_TCP_ACK, NULL), 4);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before);
	t_other = rte_pktmbuf_pool_create("t_other", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	    SOCKET_ID_ANY);
	assert_non_null(t_other);
	/* the SYN, the first segment and the cut's RST; the second neither held nor sent */
	assert_int_equal(t_pieces_sent(42331, "a.example", cuts, 1, PKT_TCP_ACK, t_in_other), 3);
	assert_int_equal(w->vm_stats[0].blocked[DP_REASON_NOT_TLS], not_tls + 1);
	assert_int_equal(rte_mempool_in_use_count(ctx.pool), before);
	assert_int_equal(rte_mempool_in_use_count(t_other), 0);
	rte_mempool_free(t_other);
	stream = t_hello("a.example");
	sent = w->port_pkts[DP_PORT_UPLINK][1];
	/* held first, a segment wholly behind the stream's first byte goes at the release */
	m = t_tcp(42332, 1000, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	m = t_tcp(42332, 990, PKT_TCP_ACK, stream->b, 11);
	dp_burst_vm(w, &m, 1);
	m = t_tcp(42332, 1001, PKT_TCP_ACK | PKT_TCP_PSH, stream->b, stream->n);
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	assert_int_equal(w->port_pkts[DP_PORT_UPLINK][1] - sent, 3);
	rte_pktmbuf_free_bulk(taken, 8);
}

/*
 * A split hello is judged by its name as a whole one is, whichever way its end takes: after
 * a first segment that went on whole (dp_tls_stream_more_lean()), or after two held
 * (dp_tls_hold_as()). A bound name in capitals passes (lowered first); a name the policy
 * refuses is refused. Fails if either parse of the held bytes leaves the name's case
 * wrong (taken as lower case, "A.Example" is refused).
 */
static void
test_split_hello_judged_by_name(void **state)
{
	static const size_t cuts[2] = { 30, 70 };
	uint64_t denied;

	(void)state;
	t_bind("a.example");
	for (size_t n = 1; n <= 2; n++) {
		denied = t_denied();
		assert_int_equal(t_pieces_sent((uint16_t)(42340 + n), "A.Example", cuts, n,
		    PKT_TCP_ACK, NULL), 2 + n);
		assert_int_equal(t_denied(), denied);
		t_pieces_sent((uint16_t)(42350 + n), "x.example", cuts, n, PKT_TCP_ACK, NULL);
		assert_true(t_denied() > denied);
	}
}

/*
 * A hello whole in its segment goes on counted as the flow's verdict says: allowed, or,
 * for an audited VM whose SNI is refused, would_block (the verdict the segment's fate
 * carries, dp_tls.c's dp_tls_pass()).
 */
static void
test_whole_hello_counted_by_verdict(void **state)
{
	struct dp_vm *vm = (struct dp_vm *)(uintptr_t)&w->gen->vms[0];
	const uint64_t *pkts = w->vm_stats[0].egress_pkts;
	uint64_t allowed = pkts[DP_ALLOWED], would = pkts[DP_WOULD_BLOCK];

	(void)state;
	t_bind("a.example");
	assert_non_null(t_connect(42400, "a.example"));
	assert_int_equal(pkts[DP_ALLOWED], allowed + 2);	/* the SYN, the hello */
	assert_int_equal(pkts[DP_WOULD_BLOCK], would);
	vm->audit = true;
	assert_non_null(t_connect(42401, "c.example"));
	vm->audit = false;
	assert_int_equal(pkts[DP_ALLOWED], allowed + 3);
	assert_int_equal(pkts[DP_WOULD_BLOCK], would + 1);
}

/*
 * Urgent data is delivered out of band and could skip what was judged: a first segment
 * with URG is cut, never let on, though its hello is whole and its name bound: by the
 * flow stage (dp_conn_vm_urgent()), before dp_tls_client() would read it. Fails with
 * that check removed.
 */
static void
test_urgent_first_segment_refused(void **state)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = 42500,
		.peer_port = 443, .peer = { 203, 0, 113, 5 } };
	const uint64_t *pkts = w->vm_stats[0].egress_pkts;
	uint64_t allowed = pkts[DP_ALLOWED];
	const struct tf_msg *stream;
	struct rte_mbuf *m;
	struct dp_flow *f;

	(void)state;
	t_bind("a.example");
	stream = t_hello("a.example");
	m = t_tcp(42500, 1000, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	m = t_tcp(42500, 1001, PKT_TCP_ACK | PKT_TCP_PSH | PKT_TCP_URG, stream->b, stream->n);
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	assert_int_equal(pkts[DP_ALLOWED], allowed + 1);	/* the SYN alone */
	f = dp_flow_lookup(w->flows, &k);
	assert_true(f == NULL || f->judged == 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_name_passes),
		cmocka_unit_test(test_other_bound_name_judged_by_policy),
		cmocka_unit_test(test_other_unbound_name_judged_by_binding),
		cmocka_unit_test(test_split_hello_first_segment_sent_once),
		cmocka_unit_test(test_split_hello_buffers_come_back),
		cmocka_unit_test(test_split_hello_cut_where_the_server_stands),
		cmocka_unit_test(test_split_hello_completed_after_passed),
		cmocka_unit_test(test_split_hello_judged_by_name),
		cmocka_unit_test(test_whole_hello_counted_by_verdict),
		cmocka_unit_test(test_urgent_first_segment_refused),
	};

	return dpf_run("test_dp_tls_bind", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
