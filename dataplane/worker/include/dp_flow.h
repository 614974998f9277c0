/*
 * Flow table of one worker: the connections its VMs opened and the verdict each keeps
 * for its lifetime (SPEC s4.7). Symmetric RSS brings both directions of a flow to the same
 * worker, so nothing here is shared. Entries come from an array sized at start; no
 * allocation per packet.
 */
#ifndef DP_FLOW_H
#define DP_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE4_1__
#include <smmintrin.h>
#endif

#include "dp.h"
#include "dp_hash.h"
#include "sni/http.h"
#include "sni/pkt.h"

enum dp_flow_state {
	DP_FLOW_SYN_SENT,	/* TCP: the VM's SYN went out */
	DP_FLOW_ESTABLISHED,	/* TCP: the peer answered; UDP: any datagram */
	DP_FLOW_CLOSING,	/* TCP: FIN or RST seen */
};

/*
 * A flow seen from its VM: the VM's port and the peer's address and port. 32 bytes, the
 * zero tail included, so that the table compares keys in two vector compares and
 * dp_hash_crc hashes them in four words.
 */
struct dp_flow_key {
	uint16_t vm;
	uint8_t family;
	uint8_t proto;
	uint16_t vm_port;
	uint16_t peer_port;
	uint8_t peer[16];
	uint64_t zero;
};
_Static_assert(sizeof(struct dp_flow_key) == 32, "dp_flow_key is hashed in 8-byte words");

enum dp_flow_tls {
	DP_TLS_NONE,		/* not a TLS port, or the verdict is in and the server has it */
	DP_TLS_PENDING,		/* the client's first bytes are being held and judged */
	DP_TLS_VERIFY,		/* released; kept to compare until the server acknowledges */
	DP_TLS_DNS,		/* DNS over TCP: both streams framed and judged for life */
	DP_TLS_SNIFF,		/* not a TLS port: the first bytes held until they say what they are */
	DP_TLS_HTTP,		/* plaintext HTTP/1.x: every request head judged, for life */
	DP_TLS_QUIC,		/* QUIC, its hello allowed: each long-header datagram judged */
	DP_TLS_UDP,		/* UDP, not QUIC so far: a datagram that may be QUIC is judged */
};

/* Where an HTTP flow's reader is in the client's stream. */
enum dp_http_phase {
	DP_HTTP_HEAD,		/* the next bytes start a request head */
	DP_HTTP_BODY,		/* inside a request's body (struct dp_flow.http) */
	DP_HTTP_CONNECT,	/* past a CONNECT: what follows is held until the server answers */
	DP_HTTP_TUNNEL,		/* past a CONNECT the server took: the tunnel's, not judged */
};

/*
 * Where a TLS connection over TCP is in its hellos (RFC 8446 s4.1.4): a server that answers
 * the first with a HelloRetryRequest reads the client's second, and takes its server name.
 */
enum dp_hello_phase {
	DP_HELLO_NONE,		/* no hello allowed yet (or not a hello's flow) */
	DP_HELLO_OPEN,		/* the first allowed; the server's answer not seen yet */
	DP_HELLO_ACKED,		/* and the server has all its judged bytes (judged: their end) */
	DP_HELLO_RETRY,		/* that answer asked for a second: pending, judged as the first */
	DP_HELLO_SETTLED,	/* nothing the client sends now is read as a hello */
};

struct dp_flow {
	struct dp_flow_key key;
	uint64_t last_seen;		/* seconds, dp_now() */
	/*
	 * gen, tls and budgets side by side, in this order, at an 8-byte boundary: the flow
	 * stage tells a steady flow by one 64-bit compare of them (dp_conn_steady()).
	 */
	uint32_t gen;			/* the generation that last judged it */
	uint8_t tls;			/* enum dp_flow_tls */
	uint8_t budgets;		/* the egress budgets its bytes count in (dp_budget.h) */
	bool in_use;
	bool would_block;		/* audit: the verdict was "block", counted as such */
	uint8_t state;			/* enum dp_flow_state */
	uint8_t how;			/* enum dp_admission: what let it open */
	uint8_t vm_wscale;		/* the SYN's window scale, PKT_WSCALE_NONE */
	uint8_t peer_wscale;		/* what the peer's windows are shifted by */
	uint32_t isn;			/* TCP: sequence number of the client's first byte */
	uint32_t hold;			/* 1 + the client stream's hold buffer, or 0 */
	bool peer_synced;		/* TCP: the peer's SYN-ACK was seen */
	bool quic_judged;		/* QUIC: a hello was allowed on it, short headers pass */
	/*
	 * name_hash is a name bound to the peer's address for the VM when the flow opened,
	 * allowed on its port by generation gen's policy (the binding lookup's find, or an
	 * SNI judged in full under sni_binding: strict): an SNI with that hash is judged.
	 */
	bool name_bound;
	uint8_t ha;			/* enum dp_flow_ha: what the HA peer was told of it */
	uint64_t name_hash;		/* DP_ADMIT_BINDING: the name (the SNI, once judged) */
	/*
	 * TCP, what the receiver of the client's stream will accept: RCV.NXT as its last
	 * ACK said, and the window from there. judged: stream bytes [0, judged) were judged
	 * and sent; a later segment must repeat them, never rewrite them.
	 */
	uint32_t peer_ack, peer_wnd;
	uint32_t vm_nxt;		/* one past the highest sequence number the VM sent */
	uint32_t judged;
	union {
		struct dp_digest judged_digest;	/* a hello judged whole in one segment, no copy */
		struct http_body_rd http;	/* DP_TLS_HTTP: the body being read */
		uint32_t status_read;		/* DP_HTTP_CONNECT: bytes of the status line read */
		struct {
			/*
			 * DNS over TCP: the resolver's ACK as a segment in its stream said
			 * it, not f->peer_ack, which any segment with the flow's addresses
			 * moves
			 */
			uint32_t dns_acked;
			/*
			 * what the VM's sequence numbers are shifted by on the wire, drawn
			 * at its SYN (dp_dns_tcp_mod.h), and where its SYN's data ended
			 */
			uint32_t dns_delta;
			uint32_t dns_syn_end;
		};
	};
	uint32_t peer_isn;		/* TCP: the server's first byte, its SYN-ACK's seq + 1 */
	uint32_t peer_hold;		/* and 1 + its stream's hold buffer, or 0 */
	union {
		uint32_t vm_ack;	/* DNS over TCP: what the VM has of the resolver's stream */
		/*
		 * DP_TLS_HTTP: the server's ACK of the client's stream as a segment in its
		 * stream said it (dp_flow_peer_in_order()), not f->peer_ack, which any segment
		 * with the flow's addresses moves: how far judged requests need no copy
		 */
		uint32_t http_acked;
	};
	/*
	 * peer_nxt, TCP but DNS over TCP: one past the server's bytes seen in order from
	 * peer_isn, while judged bytes wait for its ACK (dp_flow_peer_in_order()), and for
	 * an HTTP flow's life (dp_http_peer() takes every server segment). DNS over
	 * TCP's peer_fin_seq shares its word: set at the SYN-ACK as peer_nxt, it is written at
	 * the resolver's FIN before anything reads it.
	 */
	union {
		uint32_t peer_nxt;
		uint32_t peer_fin_seq;	/* DNS over TCP: where its stream ends, once peer_fin */
	};
	bool vm_fin, peer_fin;		/* DNS over TCP: that side's FIN was seen */
	uint8_t http_phase;		/* DP_TLS_HTTP: enum dp_http_phase */
	uint8_t hello_phase;		/* a TLS hello over TCP: enum dp_hello_phase */
	uint32_t ha_at;			/* when the HA peer was last told of it (dp_now()) */
};

/*
 * A flow in the HA pair's sync (namegate(8), HA PAIR): reported to the peer once its
 * verdict is final, and its end once, so the peer's copy goes when it does.
 */
enum dp_flow_ha {
	DP_FLOW_HA_NONE,	/* not reported (not final yet, or never: no ha:) */
	DP_FLOW_HA_SYNCED,	/* reported, or adopted from the peer's report */
	DP_FLOW_HA_ENDED,	/* its end reported */
};

/* Two to a 128-byte pair of cache lines: a field added must fit a hole. */
_Static_assert(sizeof(struct dp_flow) == 128, "struct dp_flow is 128 bytes");
_Static_assert(offsetof(struct dp_flow, gen) % 8 == 0 &&
    offsetof(struct dp_flow, tls) == offsetof(struct dp_flow, gen) + 4 &&
    offsetof(struct dp_flow, budgets) == offsetof(struct dp_flow, gen) + 5,
    "gen, tls and budgets are one word's low six bytes");

/*
 * What the flow log reports of a flow (dp_flowlog.h), kept beside it rather than in it:
 * the fast path reads these only to add to them, and struct dp_flow stays two lines.
 */
struct dp_flow_acct {
	uint64_t start_tsc, last_tsc;	/* its first frame's burst, its last one's */
	uint64_t bytes[2];		/* IP bytes: [0] from the VM, [1] toward it */
	uint64_t packets[2];
	uint64_t reported_tsc;		/* its last interim record, or its start */
	uint8_t end;			/* enum dp_flow_end once known (api/dp_api.h) */
	uint8_t end_reason;		/* why cut, or would be blocked; DP_REASON_ALLOWED: none */
	uint8_t name_kind;		/* enum dp_flow_name_kind of name_hash */
	uint8_t vm_addr[16];		/* the VM's source address, as its first frame had it */
};

/*
 * The first members of struct dp_flows: public so that a flow's account is found inline.
 */
struct dp_flows_head {
	struct dp_flow *e;
	struct dp_flow_acct *acct;
	uint64_t opened;		/* dp_flow_opened_bit() of each key opened since the
					 * last dp_flow_lookup_start() */
};

/*
 * The bit of dp_flows_head.opened that a key of hash h sets as it opens: a key whose bit
 * is clear has not opened since (two keys may share one, 64 of them).
 */
static inline uint64_t
dp_flow_opened_bit(uint32_t h)
{
	return UINT64_C(1) << (h >> 26);
}

/*
 * A key of hash h that dp_flow_lookup_start() found in neither of its buckets (a NULL):
 * is it absent still? Yes unless a key with its bit opened since (a close, or another
 * key's open and the moves it made, cannot make a key present). A burst's flowless frames
 * (a SYN, a stray segment) are told so without their key looked up again.
 */
static inline bool
dp_flow_still_absent(const struct dp_flows *t, uint32_t h)
{
	const struct dp_flows_head *head = (const struct dp_flows_head *)(const void *)t;

	return (head->opened & dp_flow_opened_bit(h)) == 0;
}

static inline struct dp_flow_acct *
dp_flow_acct(struct dp_flows *t, const struct dp_flow *f)
{
	const struct dp_flows_head *h = (const struct dp_flows_head *)(const void *)t;

	return &h->acct[f - h->e];
}

/* The IP bytes of p, a whole datagram: what a budget and the flow log count. */
static inline uint32_t
dp_ip_bytes(const struct pkt *p)
{
	return (uint32_t)(p->l4_off + p->l4_len - p->l3_off);
}

/* Count a frame of len IP bytes on f's account, each way (from_vm) as it went. */
static inline void
dp_flow_count(struct dp_flow_acct *a, bool from_vm, uint32_t len, uint64_t tsc)
{
	a->bytes[!from_vm] += len;
	a->packets[!from_vm]++;
	a->last_tsc = tsc;
}

static inline bool
dp_flow_key_eq(const struct dp_flow_key *a, const struct dp_flow_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* Whether f is still k's flow: open, its entry not reused for another key since. */
static inline bool
dp_flow_is(const struct dp_flow *f, const struct dp_flow_key *k)
{
	return f->in_use && dp_flow_key_eq(&f->key, k);
}

/*
 * A closed entry's key's tail (dp_flow_close()): no key has it (their tail is zero), so a
 * closed entry matches none and its key alone says whether it is open under a key.
 */
#define DP_FLOW_KEY_CLOSED	1

/*
 * dp_flow_is() for f, an entry of the table's array (which is cache-line aligned, its
 * 128-byte entries too), so that its key's halves are read as the operands of the XORs;
 * k's tail zero. Open is not asked apart: a closed entry's tail is DP_FLOW_KEY_CLOSED.
 */
static inline bool
dp_flow_entry_is(const struct dp_flow *f, const struct dp_flow_key *k)
{
#ifdef __SSE4_1__
	const __m128i *x = (const __m128i *)(const void *)&f->key;
	const __m128i *y = (const __m128i *)(const void *)k;
	__m128i d = _mm_or_si128(_mm_xor_si128(_mm_load_si128(x), _mm_loadu_si128(y)),
	    _mm_xor_si128(_mm_load_si128(x + 1), _mm_loadu_si128(y + 1)));

	return _mm_testz_si128(d, d) != 0;
#else
	return dp_flow_is(f, k);
#endif
}

/* What let a flow open; a reload judges it again on the same grounds. */
enum dp_admission { DP_ADMIT_NO, DP_ADMIT_DNS, DP_ADMIT_ADDR, DP_ADMIT_BINDING };

struct dp_flows;

/* A table for cap flows and nvms VMs; NULL and rte_errno on failure. */
struct dp_flows *dp_flows_create(const char *name, uint32_t cap, uint16_t nvms, int socket);
void dp_flows_free(struct dp_flows *t);
/* The EAL memory dp_flows_create() takes for cap flows and nvms VMs (dp_mem.h). */
uint64_t dp_flows_mem(uint32_t cap, uint16_t nvms);

struct dp_flow *dp_flow_lookup(struct dp_flows *t, const struct dp_flow_key *k);

/*
 * Look n keys (n <= DP_BURST) up at once, their buckets prefetched together: out[i] is
 * keys[i]'s flow or NULL. What it returns holds until the table next changes: a flow
 * opened or closed since may make an answer stale, an open only its own key's (a NULL),
 * a close only its own flow's (dp_flow_is() then false).
 */
void dp_flow_lookup_burst(struct dp_flows *t, const struct dp_flow_key *keys, unsigned int n,
    struct dp_flow **out);

struct dp_ft_bucket;

/*
 * A key a burst looks up, and what dp_flow_lookup_start() (dp_flow_look.h, the burst's
 * lookup but for the keys' compare) made of it: one array of these, so that one pointer
 * finds a frame's key, entry and hash, where three arrays took an index and an address
 * made of it for each.
 */
struct dp_flow_lookup {
	struct dp_flow_key key;
	union {
		struct dp_flow *found;		/* its answer, unconfirmed */
		const struct dp_ft_bucket *bucket;	/* while looking: the next bucket */
	};
	uint32_t hash;
};

/* dp_flow_lookup() of k, whose hash dp_flow_lookup_start() gave as h. */
struct dp_flow *dp_flow_lookup_hashed(struct dp_flows *t, const struct dp_flow_key *k,
    uint32_t h);

/*
 * What frees an idle flow's other resources (its held bytes: called only for a flow whose
 * hold or peer_hold is set) before the flow goes: used when dp_flow_open() reclaims idle
 * flows to make room.
 */
void dp_flows_on_release(struct dp_flows *t, void (*release)(struct dp_flow *, void *),
    void *arg);

/*
 * What reports a flow as it closes (its account says how it ended: dp_flowlog.h), and an
 * open one as aging passes it (interim records). NULL: nothing. closed is called for every
 * flow when closed_every (a flow log), else only for one the HA peer was told of
 * (DP_FLOW_HA_SYNCED): the others have nothing to report, and most flows close so. The
 * accounts are the flow log's (dp_flowlog_opened()): without one they are neither kept
 * nor read (the one closed is given is then stale).
 */
void dp_flows_on_report(struct dp_flows *t,
    void (*closed)(const struct dp_flow *, struct dp_flow_acct *, void *),
    void (*passed)(struct dp_flow *, struct dp_flow_acct *, void *), void *arg,
    bool closed_every);

/*
 * Open a flow for k, counted against its VM. NULL when the VM has max_per_vm flows open
 * on this worker, or the table is full and no idle flow could be reclaimed within the
 * reclaim budget (dp_flows_age refills it): the caller blocks with reason flow_limit.
 */
struct dp_flow *dp_flow_open(struct dp_flows *t, const struct dp_flow_key *k,
    uint32_t max_per_vm, uint64_t now);

/*
 * dp_flow_open() of k, whose hash h is dp_flow_hash()'s (a burst's, from
 * dp_flow_lookup_start()): a connection's opening hashes its key once.
 */
struct dp_flow *dp_flow_open_hashed(struct dp_flows *t, const struct dp_flow_key *k, uint32_t h,
    uint32_t max_per_vm, uint64_t now);

/* k's hash in t, as dp_flow_lookup_start() gives it. */
uint32_t dp_flow_hash(const struct dp_flows *t, const struct dp_flow_key *k);

/* Close f now (an RST). */
void dp_flow_close(struct dp_flows *t, struct dp_flow *f);

/*
 * Close up to budget idle flows, and flows of VMs generation g (may be NULL) no longer
 * has, scanning from where the last call stopped. Returns how many were closed;
 * *closed_per_vm (nvms entries, may be NULL) counts them by VM. A flow whose hello is
 * pending is left to its judge; release (may be NULL) frees what another idle flow holds
 * before it closes (called only for one whose hold or peer_hold is set).
 */
unsigned int dp_flows_age(struct dp_flows *t, uint64_t now, unsigned int budget,
    uint64_t *closed_per_vm, const struct dp_gen *g, void (*release)(struct dp_flow *, void *),
    void *arg);

/* fn for each open flow of vm (main lcore, for listings: entries may be changing). */
void dp_flows_walk(struct dp_flows *t, uint16_t vm, void (*fn)(const struct dp_flow *, void *),
    void *arg);

/* Entry i (< dp_flows_cap()) of the table, open or not: for a walk once workers stopped. */
const struct dp_flow *dp_flows_entry(const struct dp_flows *t, uint32_t i);

/* The flows the table has room for. */
uint32_t dp_flows_cap(const struct dp_flows *t);

/* Open flows of vm on this worker. */
uint32_t dp_flows_count(const struct dp_flows *t, uint16_t vm);

#endif
