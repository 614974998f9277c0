/*
 * The lean stage of a hello from the VM (dp_burst_lean_hello(), dp_tls_client_lean())
 * held to the general way it stands for, through the real worker: on a flow whose hello
 * is pending, given many states (another generation, a budget, would_block, an audited
 * VM, the peer's SYN-ACK seen or not, where the window stands, the stream's first byte
 * or another, a split hello's first part held, no hold left to take), with and without a
 * flow log or an HA peer, segments of the lean shape
 * (every mix of the TCP flags: SYN, RST, FIN with data, URG; at times in a buffer of
 * another pool, which no hold takes) carrying a whole hello naming a bound name, one in
 * capitals, a name the policy refuses, a hello's start only, or no TLS at all. When the lean stage takes one, dp_conn_vm_any(), dp_tls_client() and
 * dp_out_flow_apply() on its decoding must leave the flow, its account, the VM's counters,
 * the drops and the frames sent each way alike; when not, nothing is touched. And
 * through the burst, a split hello on a pending flow, and a hello or SSH on a sniffed port.
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
#include "dp_burst_int.h"
#include "dp_conn.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_flowlog.h"
#include "dp_hold.h"
#include "dp_lean.h"
#include "dp_out.h"
#include "dp_out_flow.h"
#include "dp_tls.h"
#include "frame_check.h"
#include "sni/pkt.h"
#include "tls_fixture.h"

#define ROUNDS	20000
#define T_PORT	41000

static const char t_config[] =
	"dataplane:\n"
	"  {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024, max_flows: 4096,\n"
	"   max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"flow_log: /dev/null\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"a.example:443\", \"a.example:8080\", \"c.example:443\"]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}]\n";

static const uint8_t t_server[4] = { 203, 0, 113, 5 };
static struct dp_worker *w;
static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };

/* agent1's segment from T_PORT to t_server's port dport: the frame's fields, then those. */
static struct rte_mbuf *
t_tcp(uint16_t dport, uint32_t seq, uint8_t flags, const uint8_t *payload, size_t len)
{
	static const uint8_t gw[6] = { 2, 0, 0, 0, 0, 0xfe }, vm[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t src[4] = { 10, 77, 0, 11 };
	struct dpf_tcp t = { .smac = vm, .dmac = gw, .sip = src, .dip = t_server,
		.sport = T_PORT, .ack = 1 };

	t.dport = dport;
	t.seq = seq;
	t.flags = flags;
	t.payload = payload;
	t.len = len;
	return dpf_tcp4(&ctx, &t);
}

/*
 * m copied into a buffer of another pool than the port's (a reassembled datagram's, say),
 * which no hold may take (dp_hold_pushable()); m freed.
 */
static struct rte_mbuf *
t_foreign(struct rte_mbuf *m)
{
	static struct dp_ctx other;
	struct rte_mbuf *out;

	if (other.pool == NULL)
		other.pool = rte_pktmbuf_pool_create("t_foreign", 63, 0, 0,
		    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(other.pool);
	out = dpf_mbuf_copy(&other, m);
	rte_pktmbuf_free(m);
	return out;
}

/* A ClientHello naming sni, in one TLS record, into *out. */
static void
t_hello(struct tf_msg *out, const char *sni)
{
	tf_stream_sni(out, sni);
}

/* What a run leaves that the two ways must leave alike. */
struct t_after {
	bool present;
	struct dp_flow f;
	struct dp_flow_acct acct;
	uint64_t egress[DP_VERDICT_MAX], egress_bytes[DP_VERDICT_MAX], blocked[DP_REASON_MAX];
	uint64_t drops[DP_DROP_MAX];
	uint16_t tx_up, tx_vm;
};

/* Flow k set to base (opened again if a run ended it), its account acct, nothing queued. */
static struct dp_flow *
t_set(const struct dp_flow_key *k, const struct dp_flow *base, const struct dp_flow_acct *acct)
{
	struct dp_flow *f = dp_flow_lookup(w->flows, k);

	if (f == NULL)
		f = dp_flow_open_hashed(w->flows, k, dp_flow_hash(w->flows, k), 1024, w->now);
	assert_non_null(f);
	*f = *base;
	*dp_flow_acct(w->flows, f) = *acct;
	return f;
}

/* The counters and queues as they are after a run: the differences from before. */
static void
t_snap(struct t_after *a, const struct dp_flow_key *k, const struct t_after *before)
{
	struct dp_flow *f = dp_flow_lookup(w->flows, k);
	const struct dp_vm_stats *s = &w->vm_stats[0];

	memset(a, 0, sizeof(*a));
	if ((a->present = f != NULL)) {
		a->f = *f;
		a->acct = *dp_flow_acct(w->flows, f);
	}
	for (int i = 0; i < DP_VERDICT_MAX; i++) {
		a->egress[i] = s->egress_pkts[i] - (before ? before->egress[i] : 0);
		a->egress_bytes[i] = s->egress_bytes[i] - (before ? before->egress_bytes[i] : 0);
	}
	for (int i = 0; i < DP_REASON_MAX; i++)
		a->blocked[i] = s->blocked[i] - (before ? before->blocked[i] : 0);
	for (int i = 0; i < DP_DROP_MAX; i++)
		a->drops[i] = w->drops[i] - (before ? before->drops[i] : 0);
	a->tx_up = w->tx[DP_PORT_UPLINK].n;
	a->tx_vm = w->tx[DP_PORT_VM].n;
}

/* After a run: what was queued sent, what the flow holds let go, flow records drained. */
static void
t_clean(const struct dp_flow_key *k)
{
	struct dp_flow *f = dp_flow_lookup(w->flows, k);
	struct dp_flow_rec recs[16];

	dp_tx_flush(w);
	if (f != NULL) {
		dp_hold_put(w, &f->hold);
		dp_hold_put(w, &f->peer_hold);
	}
	while (dp_flowlog_drain(w, recs, 16) != 0)
		;
}

/* The general way of decoded frame m on flow f: dp_burst.c's for a lean frame not taken. */
static void
t_general(struct rte_mbuf *m, const struct dp_flow_key *k, struct dp_flow *f)
{
	struct dp_flow *fp = NULL;
	struct dp_fate fate;
	struct pkt p;

	assert_int_equal(pkt_decode(rte_pktmbuf_mtod(m, const uint8_t *),
	    rte_pktmbuf_data_len(m), &p), PKT_OK);
	fate = dp_conn_vm_any(w, &p, k, dp_flow_hash(w->flows, k), f, &fp);
	assert_int_equal(fate.act, DP_FATE_STREAM);	/* a hello: the TLS stage's */
	assert_ptr_equal(fp, f);
	fate = dp_tls_client(w, m, &p, 0, f);
	dp_out_flow_apply(w, m, &p, 0, true, fate, f);
}

/*
 * A split hello's first n bytes (at f's ISN, through the general TLS stage) into f's hold
 * ahead of a round's segment, the hold's trickle sent: what the second segment finds.
 */
static void
t_prefix(struct dp_flow *f, const struct tf_msg *h, size_t n)
{
	struct rte_mbuf *m = t_tcp(443, f->isn, PKT_TCP_ACK, h->b, n);
	struct pkt p;

	assert_int_equal(pkt_decode(rte_pktmbuf_mtod(m, const uint8_t *),
	    rte_pktmbuf_data_len(m), &p), PKT_OK);
	dp_out_flow_apply(w, m, &p, 0, true, dp_tls_client(w, m, &p, 0, f), f);
	dp_tx_flush(w);
}

struct t_took {
	unsigned int taken, passed, held, cut, decoded_first;
};

/* One frame's payload drawn: a whole hello (bound, capitals, refused), its start, junk. */
static size_t
t_payload(uint64_t *rng, uint8_t *out, const struct tf_msg *hellos, size_t nb)
{
	const struct tf_msg *h = &hellos[fc_rnd(rng) % nb];

	switch (fc_rnd(rng) % 6) {
	case 0:		/* a hello's start */
		memcpy(out, h->b, 40);
		return 10 + fc_rnd(rng) % 30;
	case 1:		/* not TLS */
		for (size_t i = 0; i < 64; i++)
			out[i] = (uint8_t)fc_rnd(rng);
		return 1 + fc_rnd(rng) % 64;
	default:
		memcpy(out, h->b, h->n);
		return h->n;
	}
}

/* How a round's flow stands before its segment, the same for both ways. */
struct t_shape {
	bool held;			/* a hold taken before: not the first */
	bool full;			/* every hold the VM may take taken */
	const struct tf_msg *sh;	/* a split hello whose first split bytes are held */
	size_t split;
};

/* Flow k set to base and acct, then as s says; the VM's hold count before in *holds. */
static struct dp_flow *
t_ready(const struct dp_flow_key *k, const struct dp_flow *base,
    const struct dp_flow_acct *acct, const struct t_shape *s, uint32_t *holds)
{
	struct dp_flow *f = t_set(k, base, acct);

	if (s->held)
		assert_non_null(dp_hold_take(w, f, &f->hold, f->isn, false));
	if (s->split != 0)
		t_prefix(f, s->sh, s->split);
	*holds = w->holds->per_vm[0];
	if (s->full)		/* no hold to take: the VM has all its own */
		w->holds->per_vm[0] = w->gen->max_holds_per_vm;
	return f;
}

/* The VM's hold count after a run from t_ready(), less what it put there for s->full. */
static void
t_unfill(const struct t_shape *s, uint32_t holds)
{
	if (s->full)
		w->holds->per_vm[0] -= w->gen->max_holds_per_vm - holds;
}

static void
test_lean_hello_is_general(void **state)
{
	static const char *names[] = { "a.example", "A.Example", "c.example", "x.example" };
	uint64_t rng = UINT64_C(0x9b05688c2b3e6c1f);
	struct rte_ring *recs = w->flow_recs;
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = T_PORT,
		.peer_port = 443, .peer = { 203, 0, 113, 5 } };
	struct tf_msg hellos[4];
	struct dp_flow base, *f;
	struct dp_flow_acct acct;
	struct t_took took = { 0 };
	struct dp_vm *vm = (struct dp_vm *)&w->gen->vms[0];
	struct rte_mbuf *m;

	(void)state;
	assert_non_null(recs);
	for (size_t i = 0; i < 4; i++)
		t_hello(&hellos[i], names[i]);
	dpf_bind4(w, 0, t_server, "a.example");
	m = t_tcp(443, 999, PKT_TCP_SYN, NULL, 0);
	dp_burst_vm(w, &m, 1);
	dp_tx_flush(w);
	assert_non_null(f = dp_flow_lookup(w->flows, &k));
	assert_int_equal(f->tls, DP_TLS_PENDING);
	base = *f;
	acct = *dp_flow_acct(w->flows, f);
	for (int r = 0; r < ROUNDS; r++) {
		static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_FIN, PKT_TCP_RST,
			PKT_TCP_PSH, PKT_TCP_URG, PKT_TCP_ACK };
		struct dp_flow b = base;
		struct t_after before, lean, general;
		struct dp_burst_frame fr;
		struct dp_flow_key lk;
		uint8_t payload[1500], fl = PKT_TCP_ACK;
		size_t len = t_payload(&rng, payload, hellos, 4);
		bool held = fc_rnd(&rng) % 8 == 0;	/* a hold taken before: not the first */
		/* or a split hello's first part held: the round's segment is its rest, or not */
		const struct tf_msg *sh = &hellos[fc_rnd(&rng) % 4];
		size_t split = fc_rnd(&rng) % 3 == 0 ? 10 + fc_rnd(&rng) % 60 : 0;
		bool full = fc_rnd(&rng) % 16 == 0;
		bool foreign = fc_rnd(&rng) % 16 == 0;	/* a buffer no hold may take */
		const struct t_shape shape = { held, full, sh, split };
		uint32_t holds;
		uint32_t seq;
		bool taken;

		for (size_t i = 0; i < sizeof(flags); i++)
			if (fc_rnd(&rng) % 6 == 0)
				fl ^= flags[i];
		if (fc_rnd(&rng) % 16 == 0)
			b.gen++;
		if (fc_rnd(&rng) % 16 == 0)
			b.budgets = 1;
		b.would_block = fc_rnd(&rng) % 4 == 0;
		b.peer_synced = fc_rnd(&rng) % 2 == 0;
		b.peer_ack = b.isn + fc_rnd(&rng) % 8;
		b.peer_wnd = fc_rnd(&rng) % 2 == 0 ? 65535 : fc_rnd(&rng) % 600;
		b.vm_nxt = b.isn + fc_rnd(&rng) % 3;
		b.last_seen = fc_rnd(&rng);
		seq = fc_rnd(&rng) % 4 == 0 ? b.isn + fc_rnd(&rng) % 100 - 50 : b.isn;
		if (split != 0 && fc_rnd(&rng) % 4 != 0) {
			memcpy(payload, sh->b + split, sh->n - split);
			len = fc_rnd(&rng) % 4 == 0 ? 1 + fc_rnd(&rng) % (sh->n - split) :
			    sh->n - split;
			seq = fc_rnd(&rng) % 4 == 0 ? seq + (uint32_t)split :
			    b.isn + (uint32_t)split;
		}
		vm->audit = fc_rnd(&rng) % 4 == 0;
		w->ctx->ha = fc_rnd(&rng) % 16 == 0;
		w->flow_recs = fc_rnd(&rng) % 4 == 0 ? recs : NULL;

		/* the lean way */
		f = t_ready(&k, &b, &acct, &shape, &holds);
		t_snap(&before, &k, NULL);
		fr.m = t_tcp(443, seq, fl, payload, len);
		if (foreign)
			fr.m = t_foreign(fr.m);
		fr.vm = 0;
		assert_int_equal(dp_lean(w->gen, fr.m, &lk, &fr.ln, true), 0);
		assert_memory_equal(&lk, &k, sizeof(k));
		memset(&fr.p, 0xa5, sizeof(fr.p));	/* nothing read of it unless decoded */
		taken = dp_burst_lean_hello(w, &fr, f);
		t_snap(&lean, &k, &before);
		t_unfill(&shape, holds);
		if (!taken) {
			assert_true(lean.present);
			b.hold = lean.f.hold;	/* (the one taken before) */
			if (split == 0)
				assert_memory_equal(&lean.f, &b, sizeof(b));
			assert_int_equal(lean.tx_up + lean.tx_vm, 0);
			rte_pktmbuf_free(fr.m);
			t_clean(&k);
			continue;
		}
		assert_false(b.gen != w->gen->id || b.budgets != 0 || w->ctx->ha ||
		    (fl & (PKT_TCP_SYN | PKT_TCP_RST | PKT_TCP_URG)));
		took.taken++;
		took.passed += lean.egress[DP_ALLOWED] + lean.egress[DP_WOULD_BLOCK] != 0;
		took.cut += !lean.present;
		took.held += lean.present && lean.f.hold != 0;
		t_clean(&k);

		/* the general way, from the same state */
		f = t_ready(&k, &b, &acct, &shape, &holds);
		t_snap(&before, &k, NULL);
		m = t_tcp(443, seq, fl, payload, len);
		if (foreign)
			m = t_foreign(m);
		t_general(m, &k, f);
		t_snap(&general, &k, &before);
		t_unfill(&shape, holds);
		t_clean(&k);
		assert_memory_equal(&lean, &general, sizeof(lean));
	}
	vm->audit = false;
	w->ctx->ha = false;
	w->flow_recs = recs;
	if ((f = dp_flow_lookup(w->flows, &k)) != NULL)	/* (unless the last round cut it) */
		dp_flow_close(w->flows, f);
	print_message("%d hellos: %u taken, %u passed, %u held, %u cut\n", ROUNDS, took.taken,
	    took.passed, took.held, took.cut);
	assert_true(took.taken > ROUNDS / 4 && took.passed > ROUNDS / 16);
	assert_true(took.held > ROUNDS / 64 && took.cut > ROUNDS / 64);
}

/* The flow of agent1's SYN from T_PORT to t_server's port (key k, its port set). */
static struct dp_flow *
t_syn(struct dp_flow_key *k, uint16_t port)
{
	struct rte_mbuf *m = t_tcp(port, 999, PKT_TCP_SYN, NULL, 0);
	struct dp_flow *f;

	k->peer_port = port;
	dp_burst_vm(w, &m, 1);
	assert_non_null(f = dp_flow_lookup(w->flows, k));
	return f;
}

/*
 * A flow to port 8080 (sniffed) whose first segment brings n bytes at b: they go on,
 * judged, nothing judging the flow after them; the VM's allowed frames then count sent.
 */
static void
t_sniffed(struct dp_flow_key *k, const uint8_t *b, size_t n, uint64_t sent)
{
	struct dp_flow *f = t_syn(k, 8080);
	struct rte_mbuf *m = t_tcp(8080, 1000, PKT_TCP_ACK | PKT_TCP_PSH, b, n);

	assert_int_equal(f->tls, DP_TLS_SNIFF);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(f->tls, DP_TLS_NONE);
	assert_int_equal(f->judged, n);
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], sent);
	dp_tx_flush(w);
	dp_flow_close(w->flows, f);
}

/*
 * Through the burst: a hello split in two on a pending flow is judged whole and both
 * segments go on; on a port that is not TLS's (sniffed) a hello is judged too, and SSH
 * goes on as itself.
 */
static void
test_burst_split_and_sniffed(void **state)
{
	struct dp_flow_key k = { .vm = 0, .family = 4, .proto = 6, .vm_port = T_PORT,
		.peer_port = 443, .peer = { 203, 0, 113, 5 } };
	static const uint8_t ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
	struct rte_ring *recs = w->flow_recs;
	uint64_t sent = w->vm_stats[0].egress_pkts[DP_ALLOWED];
	struct tf_msg h;
	struct dp_flow *f;
	struct rte_mbuf *m;

	(void)state;
	w->flow_recs = NULL;		/* (the SYN's lean stage too) */
	dpf_bind4(w, 0, t_server, "a.example");
	t_hello(&h, "a.example");
	f = t_syn(&k, 443);
	m = t_tcp(443, 1000, PKT_TCP_ACK, h.b, 30);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(f->tls, DP_TLS_PENDING);
	assert_int_not_equal(f->hold, 0);
	m = t_tcp(443, 1030, PKT_TCP_ACK | PKT_TCP_PSH, h.b + 30, h.n - 30);
	dp_burst_vm(w, &m, 1);
	assert_int_equal(f->tls, DP_TLS_VERIFY);
	assert_int_equal(f->judged, h.n);
	/* the SYN and the hello's end counted; its first segment went on uncounted, a trickle */
	assert_int_equal(w->vm_stats[0].egress_pkts[DP_ALLOWED], sent + 2);
	dp_tx_flush(w);
	dp_flow_close(w->flows, f);
	/* port 8080: the first bytes say what comes; SSH, shown, goes on as itself */
	t_sniffed(&k, h.b, h.n, sent + 4);
	t_sniffed(&k, ssh, sizeof(ssh) - 1, sent + 6);
	w->flow_recs = recs;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lean_hello_is_general),
		cmocka_unit_test(test_burst_split_and_sniffed),
	};

	return dpf_run("test_dp_burst_hello", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
