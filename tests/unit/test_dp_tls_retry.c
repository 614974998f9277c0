/*
 * A TLS 1.3 HelloRetryRequest (RFC 8446 s4.1.4) through the burst and the real worker: a
 * server that sends one reads the client's second ClientHello and takes its server name,
 * so namegate must judge the second as it judged the first. After an allowed first hello
 * the VM's bytes past it wait (hello_wait) until the server's first bytes say whether a
 * second comes: a ServerHello settles the flow; a HelloRetryRequest, or bytes too few to
 * tell one, makes the VM's next bytes (after change_cipher_spec records) a hello, whole or
 * split, cut when its name is refused; and no first hello's segment may carry a second
 * behind it. Each case runs every way a frame can take: the lean path (the server's ACK
 * of judged bytes inline in the burst), the lean path with a flow log (the lean flow
 * stage), frames of another shape (decoded, the general plain stage) and with an HA peer
 * to tell (the general stage, all of it). Fails if the VM's bytes past a first hello go
 * before the answer, if an HRR opens no second hello, if a first hello's segment carries
 * a handshake record past it, or if the server's ACK lets go of where the hello ended.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_burst.h"
#include "dp_ctx_fixture.h"
#include "dp_flow.h"
#include "dp_flowlog.h"
#include "dp_hold.h"
#include "dp_out.h"
#include "dp_reason.h"
#include "sni/pkt.h"
#include "tls_fixture.h"

#define T_VM_ISN	1000	/* the client's first byte */
#define T_PEER_ISN	5000	/* the server's */
#define T_OUT_MAX	8	/* frames one burst of one frame may send a port */
#define T_RETRY_DECIDES	43	/* a ServerHello's bytes through its random */

static const char t_config[] =
	"dataplane:\n"
	"  {vm_port: net_null0, uplink_port: net_null1, max_bindings: 1024, max_flows: 4096,\n"
	"   max_flows_per_vm: 1024}\n"
	"slow_path: {enabled: false}\n"
	"flow_log: /dev/null\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"a.example:443\"]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web}]\n";

/* SHA-256("HelloRetryRequest"), RFC 8446 s4.1.3: written out here, not the parser's copy */
static const uint8_t t_hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65,
	0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2,
	0xc8, 0xa8, 0x33, 0x9c,
};
/* middlebox compatibility's change_cipher_spec record (RFC 8446 appendix D.4) */
static const uint8_t t_ccs[6] = { 0x14, 0x03, 0x03, 0x00, 0x01, 0x01 };

static const uint8_t t_vm_mac[6] = { 2, 0, 0, 0, 0, 1 }, t_gw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
static const uint8_t t_vm_ip[4] = { 10, 77, 0, 11 }, t_server[4] = { 203, 0, 113, 5 };
static struct dp_worker *w;
static struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
	RTE_MAX_ETHPORTS } };

/* The ways a frame can take through the burst (t_way_set()). */
enum t_way {
	T_LEAN,		/* lean frames: the server's ACK on dp_conn_uplink_judged() */
	T_LOGGED,	/* and a flow log: no flow steady, dp_conn_uplink_lean() */
	T_DECODED,	/* not of the lean shape: dp_conn_uplink_plain_judged(), dp_tls_client() */
	T_GENERAL,	/* an HA peer to tell: dp_conn_uplink_general(), dp_conn_vm_general() */
	T_WAYS,
};

static const char *const t_way_names[T_WAYS] = { "lean", "lean, flow log", "decoded",
	"general (HA)" };
static enum t_way t_way;
static struct rte_ring *t_recs;		/* the flow log's ring, while a way has none */

/* What one burst of one frame sent out of a port: each frame's flags, seq, data length. */
struct t_port {
	unsigned int n;
	uint8_t flags[T_OUT_MAX];
	uint32_t seq[T_OUT_MAX];
	size_t len[T_OUT_MAX];
};

struct t_sent {
	struct t_port vm, up;
};

/* One connection of agent1's to t_server:443, from port. */
struct t_conn {
	uint16_t port;
	struct dp_flow_key k;
	struct dp_flow *f;
};

static void
t_way_set(enum t_way way)
{
	t_way = way;
	w->ctx->ha = way == T_GENERAL;
	w->flow_recs = way == T_LOGGED ? t_recs : NULL;
}

/* What port's queue holds, decoded, into *o. */
static void
t_queued(struct t_port *o, unsigned int port)
{
	const struct dp_txbuf *q = &w->tx[port];
	struct pkt p;

	assert_true(q->n <= T_OUT_MAX);
	o->n = q->n;
	for (uint16_t i = 0; i < q->n; i++) {
		assert_int_equal(pkt_decode(rte_pktmbuf_mtod(q->pkts[i], const uint8_t *),
		    rte_pktmbuf_data_len(q->pkts[i]), &p), PKT_OK);
		o->flags[i] = p.tcp_flags;
		o->seq[i] = p.seq;
		o->len[i] = p.payload_len;
	}
}

/*
 * A segment of c's (from_vm: the VM's, else the server's) through the burst, as t_way
 * says: what it sent out of each port, those frames then sent and the flow log drained.
 */
static struct t_sent
t_seg(const struct t_conn *c, bool from_vm, uint32_t seq, uint32_t ack, uint8_t flags,
    const void *payload, size_t len)
{
	struct t_ends {
		const uint8_t *smac, *dmac, *sip, *dip;
	} e = from_vm ? (struct t_ends){ t_vm_mac, t_gw_mac, t_vm_ip, t_server } :
	    (struct t_ends){ t_gw_mac, t_vm_mac, t_server, t_vm_ip };
	struct dp_flow_rec recs[16];
	struct rte_mbuf *m;
	struct t_sent out;

	assert_int_equal(w->tx[DP_PORT_VM].n + w->tx[DP_PORT_UPLINK].n, 0);
	m = dpf_tcp4(&ctx, &(struct dpf_tcp){ .smac = e.smac, .dmac = e.dmac, .sip = e.sip,
	    .dip = e.dip, .sport = from_vm ? c->port : 443, .dport = from_vm ? 443 : c->port,
	    .seq = seq, .ack = ack, .flags = flags, .payload = payload, .len = len });
	/* the IP checksum marked good, the TCP one not: no lean frame, checked in software */
	if (t_way == T_DECODED)
		m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
	if (from_vm)
		dp_burst_vm(w, &m, 1);
	else
		dp_burst_uplink(w, &m, 1);
	t_queued(&out.vm, DP_PORT_VM);
	t_queued(&out.up, DP_PORT_UPLINK);
	dp_tx_flush(w);
	while (dp_flowlog_drain(w, recs, 16) != 0)
		;
	return out;
}

/* The VM's data segment at stream offset off (from its first byte), ACKing the server. */
static struct t_sent
t_vm(const struct t_conn *c, uint32_t off, const void *payload, size_t len)
{
	return t_seg(c, true, T_VM_ISN + off, T_PEER_ISN, PKT_TCP_ACK | PKT_TCP_PSH, payload,
	    len);
}

/* The server's segment at its stream offset off, acknowledging the VM's bytes to vm_off. */
static struct t_sent
t_server_seg(const struct t_conn *c, uint32_t off, uint32_t vm_off, const void *payload,
    size_t len)
{
	return t_seg(c, false, T_PEER_ISN + off, T_VM_ISN + vm_off,
	    len != 0 ? PKT_TCP_ACK | PKT_TCP_PSH : PKT_TCP_ACK, payload, len);
}

/* Did the burst send exactly one frame out of o, with len bytes of data? */
static void
t_one(const struct t_port *o, size_t len)
{
	assert_int_equal(o->n, 1);
	assert_int_equal(o->flags[0] & PKT_TCP_RST, 0);
	assert_int_equal(o->len[0], len);
}

/* Did the burst send nothing at all? */
static void
t_nothing(const struct t_sent *s)
{
	assert_int_equal(s->vm.n, 0);
	assert_int_equal(s->up.n, 0);
}

/* Was the connection cut: an RST alone each way, no data, the flow gone? */
static void
t_cut(const struct t_conn *c, const struct t_sent *s)
{
	assert_int_equal(s->up.n, 1);
	assert_int_equal(s->vm.n, 1);
	assert_true(s->up.flags[0] & PKT_TCP_RST);
	assert_true(s->vm.flags[0] & PKT_TCP_RST);
	assert_int_equal(s->up.len[0], 0);
	assert_int_equal(s->vm.len[0], 0);
	assert_null(dp_flow_lookup(w->flows, &c->k));
}

static uint64_t
t_blocked(enum dp_reason r)
{
	return w->vm_stats[0].blocked[r];
}

/*
 * c opened from port: the VM's SYN and the server's SYN-ACK, seen the way t_way says (a
 * flow left from a failed run ended first).
 */
static void
t_open(struct t_conn *c, uint16_t port)
{
	struct dp_flow *f;
	struct t_sent s;

	c->port = port;
	c->k = (struct dp_flow_key){ .vm = 0, .family = 4, .proto = PKT_PROTO_TCP,
		.vm_port = port, .peer_port = 443 };
	memcpy(c->k.peer, t_server, 4);
	if ((f = dp_flow_lookup(w->flows, &c->k)) != NULL)
		dp_flow_end(w, f);
	dpf_bind4(w, 0, t_server, "a.example");
	s = t_seg(c, true, T_VM_ISN - 1, 0, PKT_TCP_SYN, NULL, 0);
	t_one(&s.up, 0);
	assert_non_null(c->f = dp_flow_lookup(w->flows, &c->k));
	assert_int_equal(c->f->tls, DP_TLS_PENDING);
	assert_int_equal(c->f->hello_phase, DP_HELLO_NONE);
	s = t_seg(c, false, T_PEER_ISN - 1, T_VM_ISN, PKT_TCP_SYN | PKT_TCP_ACK, NULL, 0);
	t_one(&s.vm, 0);
	assert_true(c->f->peer_synced);
	assert_int_equal(c->f->peer_isn, T_PEER_ISN);
}

/* c's end, if a cut did not end it: what it holds let go of. */
static void
t_close(struct t_conn *c)
{
	struct dp_flow *f = dp_flow_lookup(w->flows, &c->k);

	if (f != NULL)
		dp_flow_end(w, f);
	dp_tx_flush(w);
}

/* A ClientHello naming sni, in one record, into *m. */
static void
t_hello(struct tf_msg *m, const char *sni)
{
	tf_stream_sni(m, sni);
}

/* What a client sends after a HelloRetryRequest: change_cipher_spec, a hello naming sni. */
static void
t_retry_hello(struct tf_msg *m, const char *sni)
{
	struct tf_msg h;

	t_hello(&h, sni);
	m->n = 0;
	tf_raw(m, t_ccs, sizeof(t_ccs));
	tf_raw(m, h.b, h.n);
}

/*
 * A TLS 1.3 ServerHello (RFC 8446 s4.1.3) in one record, its random rnd (the HRR value's:
 * a HelloRetryRequest, with the key_share it asks for), into *m.
 */
static void
t_server_hello(struct tf_msg *m, const uint8_t *rnd)
{
	size_t rec, hs, exts;

	m->n = 0;
	tf_u8(m, 22);			/* handshake */
	tf_u16(m, 0x0303);
	rec = tf_open(m, 2);
	tf_u8(m, 2);			/* server_hello */
	hs = tf_open(m, 3);
	tf_u16(m, 0x0303);		/* legacy_version */
	tf_raw(m, rnd, 32);
	tf_u8(m, 32);			/* legacy_session_id_echo */
	tf_fill(m, 0x5e, 32);
	tf_u16(m, 0x1301);		/* TLS_AES_128_GCM_SHA256 */
	tf_u8(m, 0);			/* legacy_compression_method */
	exts = tf_open(m, 2);
	tf_ext_hex(m, 43, "0304");	/* supported_versions: TLS 1.3 */
	tf_ext_hex(m, 51, "001d");	/* key_share: the group asked for, x25519 */
	tf_close(m, exts, 2);
	tf_close(m, hs, 3);
	tf_close(m, rec, 2);
}

/* A HelloRetryRequest, into *m. */
static void
t_hrr(struct tf_msg *m)
{
	t_server_hello(m, t_hrr_random);
}

/* A ServerHello that is none: any random but the HRR value. */
static void
t_plain_server_hello(struct tf_msg *m)
{
	static const uint8_t rnd[32] = { 0x42, 0x42, 0x42 };

	t_server_hello(m, rnd);
}

/* c's first hello ch1 (an allowed name), whole in one segment: it goes on, the flow waits. */
static void
t_first_hello(struct t_conn *c, const struct tf_msg *ch1)
{
	struct t_sent s = t_vm(c, 0, ch1->b, ch1->n);

	t_one(&s.up, ch1->n);
	assert_int_equal(s.vm.n, 0);
	assert_int_equal(c->f->tls, DP_TLS_NONE);
	assert_int_equal(c->f->judged, ch1->n);
	assert_int_equal(c->f->hello_phase, DP_HELLO_OPEN);
}

/* A few bytes of application data (an early-data record) from the VM. */
static const uint8_t t_data[] = { 0x17, 0x03, 0x03, 0x00, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8, 9,
	10 };

/*
 * Every case once each way, its ports from base (ten a way): the case, the way its frames
 * take in t_way; the way's name printed with a failure.
 */
static void
t_each_way(uint16_t base, void (*run)(uint16_t port))
{
	for (int way = 0; way < T_WAYS; way++) {
		print_message("    way: %s\n", t_way_names[way]);
		t_way_set((enum t_way)way);
		run((uint16_t)(base + 10 * way));
		t_way_set(T_LEAN);
	}
}

/*
 * 1. After an allowed hello, before the server has said anything, the VM's bytes past it
 * are dropped (hello_wait), alone or behind the hello resent; the hello resent alone goes
 * on, compared with the digest of what was judged.
 */
static void
t_case_wait(uint16_t port)
{
	uint64_t wait = w->drops[DP_DROP_HELLO_WAIT];
	uint8_t both[TF_MSG_MAX];
	struct t_conn c;
	struct tf_msg ch1;
	struct t_sent s;

	t_hello(&ch1, "a.example");
	t_open(&c, port);
	t_first_hello(&c, &ch1);
	s = t_vm(&c, (uint32_t)ch1.n, t_data, sizeof(t_data));
	t_nothing(&s);
	assert_int_equal(w->drops[DP_DROP_HELLO_WAIT], wait + 1);
	/* the hello again with the same bytes behind it: they would go with it */
	memcpy(both, ch1.b, ch1.n);
	memcpy(both + ch1.n, t_data, sizeof(t_data));
	s = t_vm(&c, 0, both, ch1.n + sizeof(t_data));
	t_nothing(&s);
	assert_int_equal(w->drops[DP_DROP_HELLO_WAIT], wait + 2);
	/* the hello alone again: what the server has, or will */
	s = t_vm(&c, 0, ch1.b, ch1.n);
	t_one(&s.up, ch1.n);
	assert_int_equal(w->drops[DP_DROP_HELLO_WAIT], wait + 2);
	assert_int_equal(c.f->hello_phase, DP_HELLO_OPEN);
	assert_int_equal(c.f->judged, ch1.n);
	t_close(&c);
}

static void
test_past_hello_waits(void **state)
{
	(void)state;
	t_each_way(43000, t_case_wait);
}

/*
 * 2. The server's bare ACK of the hello lets its copy go but keeps where it ended
 * (ACKED): the VM's bytes past it are still dropped, the hello resent still goes. Then
 * the server's first bytes, a ServerHello: the flow settles (nothing judged, nothing
 * held) and the VM's data goes on. With an HA peer, the flow is reported final then, not
 * while its answer is awaited.
 */
static void
t_case_settled(uint16_t port)
{
	uint64_t wait = w->drops[DP_DROP_HELLO_WAIT];
	struct tf_msg ch1, sh;
	struct t_conn c;
	struct t_sent s;

	t_hello(&ch1, "a.example");
	t_plain_server_hello(&sh);
	t_open(&c, port);
	t_first_hello(&c, &ch1);
	s = t_server_seg(&c, 0, (uint32_t)ch1.n, NULL, 0);
	t_one(&s.vm, 0);
	assert_int_equal(c.f->hello_phase, DP_HELLO_ACKED);
	assert_int_equal(c.f->judged, ch1.n);
	assert_int_equal(c.f->hold, 0);
	assert_int_equal(c.f->isn, T_VM_ISN);
	assert_int_not_equal(c.f->ha, DP_FLOW_HA_SYNCED);
	s = t_vm(&c, (uint32_t)ch1.n, t_data, sizeof(t_data));
	t_nothing(&s);
	assert_int_equal(w->drops[DP_DROP_HELLO_WAIT], wait + 1);
	s = t_vm(&c, 0, ch1.b, ch1.n);
	t_one(&s.up, ch1.n);
	/* the answer: a ServerHello */
	s = t_server_seg(&c, 0, (uint32_t)ch1.n, sh.b, sh.n);
	t_one(&s.vm, sh.n);
	assert_int_equal(c.f->hello_phase, DP_HELLO_SETTLED);
	assert_int_equal(c.f->tls, DP_TLS_NONE);
	assert_int_equal(c.f->judged, 0);
	assert_int_equal(c.f->isn, T_VM_ISN);
	if (t_way == T_GENERAL)
		assert_int_equal(c.f->ha, DP_FLOW_HA_SYNCED);
	s = t_vm(&c, (uint32_t)ch1.n, t_data, sizeof(t_data));
	t_one(&s.up, sizeof(t_data));
	assert_int_equal(w->drops[DP_DROP_HELLO_WAIT], wait + 1);
	t_close(&c);
}

static void
test_server_hello_settles(void **state)
{
	(void)state;
	t_each_way(43100, t_case_settled);
}

/*
 * The answer to c's first hello (ch1, whole) a HelloRetryRequest, acknowledging the hello
 * in its own segment or after a bare ACK (acked_first): the flow's stream restarts past
 * the first hello, pending, judged as a second hello.
 */
static void
t_retried(struct t_conn *c, const struct tf_msg *ch1, bool acked_first)
{
	struct tf_msg hrr;
	struct t_sent s;

	t_hrr(&hrr);
	t_first_hello(c, ch1);
	if (acked_first) {
		s = t_server_seg(c, 0, (uint32_t)ch1->n, NULL, 0);
		t_one(&s.vm, 0);
		assert_int_equal(c->f->hello_phase, DP_HELLO_ACKED);
	}
	s = t_server_seg(c, 0, (uint32_t)ch1->n, hrr.b, hrr.n);
	t_one(&s.vm, hrr.n);
	assert_int_equal(c->f->hello_phase, DP_HELLO_RETRY);
	assert_int_equal(c->f->tls, DP_TLS_PENDING);
	assert_int_equal(c->f->judged, 0);
	assert_int_equal(c->f->isn, T_VM_ISN + ch1->n);
}

/*
 * The server's change_cipher_spec after its HelloRetryRequest (hrr_len bytes), in a
 * segment of its own acknowledging the first hello (ch1_len bytes): sent on to the VM while
 * the second hello is awaited, and taken into the server's stream as namegate follows it.
 */
static void
t_server_ccs(struct t_conn *c, size_t hrr_len, size_t ch1_len)
{
	struct t_sent s = t_server_seg(c, (uint32_t)hrr_len, (uint32_t)ch1_len, t_ccs,
	    sizeof(t_ccs));

	t_one(&s.vm, sizeof(t_ccs));
}

/*
 * The server's ServerHello sh after its HelloRetryRequest and change_cipher_spec (hrr_len
 * bytes and t_server_ccs()'s), acknowledging the VM's bytes to vm_off, a second hello judged
 * and sent: that ACK lets the hello's bytes (and its hold) go, as it counts only from a
 * segment in the server's stream followed in order past the HRR and the CCS.
 */
static void
t_server_answer(struct t_conn *c, size_t hrr_len, size_t vm_off, const struct tf_msg *sh)
{
	struct t_sent s = t_server_seg(c, (uint32_t)(hrr_len + sizeof(t_ccs)), (uint32_t)vm_off,
	    sh->b, sh->n);

	t_one(&s.vm, sh->n);
	assert_int_equal(c->f->tls, DP_TLS_NONE);
	assert_int_equal(c->f->judged, 0);
	assert_int_equal(c->f->hold, 0);
}

/* What a retried handshake's cases send: both hellos (one allowed, one not), the answers. */
struct t_retry_msgs {
	struct tf_msg ch1;		/* the first hello, allowed */
	struct tf_msg bad, good;	/* CCS and a second hello naming a denied, an allowed name */
	struct tf_msg hrr, sh;		/* a HelloRetryRequest, then a ServerHello */
};

static void
t_retry_msgs(struct t_retry_msgs *m)
{
	t_hello(&m->ch1, "a.example");
	t_retry_hello(&m->bad, "evil.example");
	t_retry_hello(&m->good, "a.example");
	t_hrr(&m->hrr);
	t_plain_server_hello(&m->sh);
}

/*
 * 3. After a HelloRetryRequest, the VM's change_cipher_spec and a second hello naming a
 * name the policy refuses, in one segment: the connection is cut (an RST each way, none
 * of its bytes sent up), counted sni_denied. The control, the second hello naming the
 * allowed name, after the server's change_cipher_spec in a segment of its own: it goes on
 * whole, and the flow is settled (no third hello is read); the server's ServerHello
 * acknowledging it lets its bytes go (tls NONE, judged 0): the server's stream was
 * followed in order past the HelloRetryRequest and the CCS.
 */
static void
t_case_retry(uint16_t port)
{
	struct t_retry_msgs m;
	uint64_t denied;
	struct t_conn c;
	struct t_sent s;

	t_retry_msgs(&m);
	for (int acked_first = 0; acked_first <= 1; acked_first++) {
		denied = t_blocked(DP_REASON_SNI_DENIED);
		t_open(&c, (uint16_t)(port + 2 * acked_first));
		t_retried(&c, &m.ch1, acked_first);
		s = t_vm(&c, (uint32_t)m.ch1.n, m.bad.b, m.bad.n);
		t_cut(&c, &s);
		assert_int_equal(t_blocked(DP_REASON_SNI_DENIED), denied + 1);
		t_close(&c);

		t_open(&c, (uint16_t)(port + 2 * acked_first + 1));
		t_retried(&c, &m.ch1, acked_first);
		t_server_ccs(&c, m.hrr.n, m.ch1.n);
		s = t_vm(&c, (uint32_t)m.ch1.n, m.good.b, m.good.n);
		t_one(&s.up, m.good.n);
		assert_int_equal(s.vm.n, 0);
		assert_int_equal(t_blocked(DP_REASON_SNI_DENIED), denied + 1);
		assert_int_equal(c.f->hello_phase, DP_HELLO_SETTLED);
		assert_int_equal(c.f->tls, DP_TLS_NONE);
		assert_int_equal(c.f->judged, m.good.n);
		t_server_answer(&c, m.hrr.n, m.ch1.n + m.good.n, &m.sh);
		t_close(&c);
	}
}

static void
test_retry_hello_judged(void **state)
{
	(void)state;
	t_each_way(43200, t_case_retry);
}

/*
 * 4. The second hello split across segments (cut at cuts[0 .. n)), the first of them
 * inside the change_cipher_spec record, just past it, or past part of the hello: judged
 * once whole. Refused, the cut comes at its last segment, whose bytes never go up (the
 * pieces before it went, as a split first hello's do: they cannot complete it); the
 * control goes on whole, piece by piece.
 */
static void
t_case_split(uint16_t port)
{
	static const size_t cuts[][2] = { { 3, 0 }, { 6, 0 }, { 6 + 30, 0 }, { 6, 6 + 30 } };
	static const size_t nb[] = { 1, 1, 1, 2 };
	struct t_retry_msgs m;
	uint64_t denied;
	struct t_conn c;
	struct t_sent s;

	t_retry_msgs(&m);
	for (size_t i = 0; i < sizeof(nb) / sizeof(nb[0]); i++) {
		for (int allowed = 0; allowed <= 1; allowed++) {
			const struct tf_msg *ch2 = allowed ? &m.good : &m.bad;
			size_t from = 0;

			denied = t_blocked(DP_REASON_SNI_DENIED);
			t_open(&c, (uint16_t)(port + 2 * i + (size_t)allowed));
			t_retried(&c, &m.ch1, false);
			t_server_ccs(&c, m.hrr.n, m.ch1.n);
			for (size_t j = 0; j <= nb[i]; j++) {
				size_t to = j < nb[i] ? cuts[i][j] : ch2->n;

				s = t_vm(&c, (uint32_t)(m.ch1.n + from), ch2->b + from, to - from);
				from = to;
				if (j < nb[i]) {	/* a piece that cannot complete it */
					t_one(&s.up, cuts[i][j] - (j == 0 ? 0 : cuts[i][j - 1]));
					assert_int_equal(c.f->tls, DP_TLS_PENDING);
					continue;
				}
				if (allowed) {
					t_one(&s.up, ch2->n - cuts[i][nb[i] - 1]);
					assert_int_equal(c.f->hello_phase, DP_HELLO_SETTLED);
					assert_int_equal(c.f->judged, ch2->n);
					assert_int_equal(t_blocked(DP_REASON_SNI_DENIED), denied);
					t_server_answer(&c, m.hrr.n, m.ch1.n + ch2->n, &m.sh);
				} else {
					t_cut(&c, &s);
					assert_true(t_blocked(DP_REASON_SNI_DENIED) > denied);
				}
			}
			t_close(&c);
		}
	}
}

static void
test_split_retry_hello_judged_whole(void **state)
{
	(void)state;
	t_each_way(43300, t_case_split);
}

/*
 * 5. A first hello's segment that carries a second hello behind it (change_cipher_spec
 * between), whole or as the end of a split first hello: refused not_tls, nothing of it
 * sent up but the RST (a split hello's first piece went before). The control, the hello
 * and change_cipher_spec alone (no handshake record past it): it goes on.
 */
static void
t_case_pipelined(uint16_t port)
{
	static uint8_t seg[TF_MSG_MAX];
	const size_t cut = 40;
	struct tf_msg ch1, ch2;
	uint64_t not_tls;
	struct t_conn c;
	struct t_sent s;
	size_t n;

	t_hello(&ch1, "a.example");
	t_retry_hello(&ch2, "evil.example");
	memcpy(seg, ch1.b, ch1.n);
	memcpy(seg + ch1.n, ch2.b, ch2.n);
	n = ch1.n + ch2.n;

	/* whole: the first segment of the stream */
	not_tls = t_blocked(DP_REASON_NOT_TLS);
	t_open(&c, port);
	s = t_vm(&c, 0, seg, n);
	t_cut(&c, &s);
	assert_int_equal(t_blocked(DP_REASON_NOT_TLS), not_tls + 1);
	t_close(&c);

	/* split: the first hello's end, and the second behind it, judged held */
	not_tls = t_blocked(DP_REASON_NOT_TLS);
	t_open(&c, (uint16_t)(port + 1));
	s = t_vm(&c, 0, seg, cut);
	t_one(&s.up, cut);
	assert_int_equal(c.f->tls, DP_TLS_PENDING);
	s = t_vm(&c, (uint32_t)cut, seg + cut, n - cut);
	t_cut(&c, &s);
	assert_true(t_blocked(DP_REASON_NOT_TLS) > not_tls);
	t_close(&c);

	/* the control: change_cipher_spec alone behind the hello */
	not_tls = t_blocked(DP_REASON_NOT_TLS);
	t_open(&c, (uint16_t)(port + 2));
	s = t_vm(&c, 0, seg, ch1.n + sizeof(t_ccs));
	t_one(&s.up, ch1.n + sizeof(t_ccs));
	assert_int_equal(c.f->judged, ch1.n + sizeof(t_ccs));
	assert_int_equal(c.f->hello_phase, DP_HELLO_OPEN);
	assert_int_equal(t_blocked(DP_REASON_NOT_TLS), not_tls);
	t_close(&c);
}

static void
test_pipelined_second_hello_refused(void **state)
{
	(void)state;
	t_each_way(43400, t_case_pipelined);
}

/*
 * 6. The server's first segment shorter than a ServerHello through its random (43 bytes):
 * when every byte of it is a HelloRetryRequest's, the VM's next bytes are a second hello
 * (fail closed): a refused one is cut, though the rest of the HRR came between. When any
 * is not (the first byte an alert's or application data's, another handshake type, the
 * random's last byte there another), the flow settles, and what the VM sends next, a
 * ClientHello naming a refused name too, goes on unread.
 */
static void
t_case_short(uint16_t port)
{
	static const size_t prefixes[] = { 1, 5, 6, 11, 20, T_RETRY_DECIDES - 1 };
	static const uint8_t alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28 };
	struct tf_msg ch1, hrr, bad, other;
	uint64_t denied;
	struct t_conn c;
	struct t_sent s;
	uint16_t p = port;

	t_hello(&ch1, "a.example");
	t_hrr(&hrr);
	t_retry_hello(&bad, "evil.example");
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = prefixes[i];

		denied = t_blocked(DP_REASON_SNI_DENIED);
		t_open(&c, p++);
		t_first_hello(&c, &ch1);
		s = t_server_seg(&c, 0, (uint32_t)ch1.n, hrr.b, n);
		t_one(&s.vm, n);
		assert_int_equal(c.f->hello_phase, DP_HELLO_RETRY);
		assert_int_equal(c.f->isn, T_VM_ISN + ch1.n);
		s = t_server_seg(&c, (uint32_t)n, (uint32_t)ch1.n, hrr.b + n, hrr.n - n);
		t_one(&s.vm, hrr.n - n);
		assert_int_equal(c.f->hello_phase, DP_HELLO_RETRY);
		s = t_vm(&c, (uint32_t)ch1.n, bad.b, bad.n);
		t_cut(&c, &s);
		assert_int_equal(t_blocked(DP_REASON_SNI_DENIED), denied + 1);
		t_close(&c);
	}
	for (int i = 0; i < 4; i++) {
		size_t n;

		switch (i) {
		case 0:		/* an alert */
			other.n = 0;
			tf_raw(&other, alert, sizeof(alert));
			break;
		case 1:		/* application data */
			other.n = 0;
			tf_raw(&other, t_data, sizeof(t_data));
			break;
		case 2:		/* a handshake record, not a ServerHello (a Certificate's type) */
			other = hrr;
			other.b[5] = 11;
			other.n = 20;
			break;
		default:	/* all but the random's last byte, and that one wrong */
			other = hrr;
			other.b[T_RETRY_DECIDES - 2] ^= 1;
			other.n = T_RETRY_DECIDES - 1;
			break;
		}
		n = other.n;
		denied = t_blocked(DP_REASON_SNI_DENIED);
		t_open(&c, p++);
		t_first_hello(&c, &ch1);
		s = t_server_seg(&c, 0, (uint32_t)ch1.n, other.b, n);
		t_one(&s.vm, n);
		assert_int_equal(c.f->hello_phase, DP_HELLO_SETTLED);
		assert_int_equal(c.f->tls, DP_TLS_NONE);
		assert_int_equal(c.f->judged, 0);
		s = t_vm(&c, (uint32_t)ch1.n, bad.b, bad.n);
		t_one(&s.up, bad.n);
		assert_int_equal(t_blocked(DP_REASON_SNI_DENIED), denied);
		t_close(&c);
	}
}

static void
test_short_answer(void **state)
{
	(void)state;
	t_each_way(43500, t_case_short);
}

/* The flow log's ring kept for the way that has one; the ways set each test. */
static int
t_setup(void **state)
{
	(void)state;
	if (t_recs == NULL)
		t_recs = w->flow_recs;
	assert_non_null(t_recs);
	return 0;
}

static int
t_teardown(void **state)
{
	(void)state;
	w->ctx->ha = false;
	w->flow_recs = t_recs;
	dp_tx_flush(w);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_past_hello_waits, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_server_hello_settles, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_retry_hello_judged, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_split_retry_hello_judged_whole, t_setup,
		    t_teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_second_hello_refused, t_setup,
		    t_teardown),
		cmocka_unit_test_setup_teardown(test_short_answer, t_setup, t_teardown),
	};

	return dpf_run("test_dp_tls_retry", t_config, &ctx, &w, tests,
	    sizeof(tests) / sizeof(tests[0]));
}
