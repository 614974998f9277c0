/*
 * frame_check: what the frame unit tests share. Builds Ethernet frames (IPv4 and IPv6,
 * untagged, 802.1Q and QinQ) to feed the dataplane's frame builders, checks what they return,
 * and recomputes every checksum with fc_ref_sum(), which shares no code with frame_csum.c, so
 * a bug there cannot cancel itself out. Failures are cmocka assertions in the calling test.
 */
#ifndef FRAME_CHECK_H
#define FRAME_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"
#include "sni/pkt.h"

#define FC_GUARD	64	/* bytes past the cap that a builder must leave alone */
#define FC_FRAME_MAX	2048
#define FC_PROTO_ICMP	1
#define FC_PROTO_ICMPV6	58

/* A frame to feed the builders. */
struct fc_frame_spec {
	uint8_t family;
	unsigned int tags;		/* 0, 1 (802.1Q) or 2 (802.1ad + 802.1Q) */
	uint8_t proto;
	uint16_t sport, dport;
	uint8_t flags;
	uint32_t seq, ack;
	const uint8_t *payload;
	size_t payload_len;
	unsigned int ip_opts;		/* IPv4: option words; IPv6: 1 = a hop-by-hop header */
	size_t pad;			/* link padding past the IP packet */
	bool mf;			/* IPv4 more-fragments */
	const uint8_t *src, *dst;	/* NULL: the VM and the server */
};

struct fc_frame {
	uint8_t b[FC_FRAME_MAX];
	size_t len, l2, l4;
	struct pkt p;
	enum pkt_status st;
};

/* One builder call, so one sweep can test every builder's cap handling. */
enum fc_call_kind { FC_CALL_DNS, FC_CALL_DNS_TCP, FC_CALL_RST, FC_CALL_RST_DST, FC_CALL_ICMP };

struct fc_call {
	enum fc_call_kind kind;
	const struct fc_frame *f;
	const struct dns_msg *q;
	const uint8_t *msg;
	size_t msg_len;
	uint8_t rcode;
	bool ede, fwd;
};

/* Big-endian stores and loads; b must hold 2 or 4 bytes. */
void fc_w16(uint8_t *b, uint16_t v);
void fc_w32(uint8_t *b, uint32_t v);
uint16_t fc_r16(const uint8_t *b);
uint32_t fc_r32(const uint8_t *b);

/* xorshift64*: the next number from *rng, a fixed seed the caller keeps (failures replay). */
uint32_t fc_rnd(uint64_t *rng);

/*
 * Reference one's-complement sum of b[n] added to acc, folded to 16 bits (not inverted).
 * n must be even unless this is the last piece.
 */
uint16_t fc_ref_sum(const uint8_t *b, size_t n, uint64_t acc);

/* Sum of the pseudo-header for l4_len bytes of proto behind the IP header at ip. */
uint64_t fc_ref_pseudo(const uint8_t *ip, uint8_t family, uint8_t proto, size_t l4_len);

/* The value a checksum field must hold for the message (its field zeroed). */
uint16_t fc_ref_csum(const uint8_t *b, size_t n, uint64_t pseudo);

/*
 * Build f from s, VM to server, with every checksum right, and pkt_decode() it into f->p.
 * A TCP or UDP frame that is not a fragment must decode as PKT_OK.
 */
void fc_frame_build(struct fc_frame *f, const struct fc_frame_spec *s);

/*
 * Check a built frame against its input: L2 (MACs swapped for a reply, tags and ethertype
 * as received), IP header fields and checksum, the transport checksum, and pkt_decode() of
 * the output into *op. Returns the offset of the transport header.
 */
size_t fc_check_frame(const struct fc_frame *in, const uint8_t *out, size_t n, bool reply,
    uint8_t proto, struct pkt *op);

/* Run the builder c names into out[cap]; returns what the builder returns. */
int fc_call_build(const struct fc_call *c, uint8_t *out, size_t cap);

/*
 * fc_call_build() into buf[cap], which must hold cap + FC_GUARD bytes; on -1 nothing at all
 * may have been written, otherwise nothing past cap.
 */
int fc_call_guarded(const struct fc_call *c, uint8_t *buf, size_t cap);

/* Every cap below need fails untouched; need itself succeeds, also in an exact heap block. */
void fc_check_caps(const struct fc_call *c, size_t need);

/* The call must fail (-1) with all of FC_FRAME_MAX to write into, and write nothing. */
void fc_check_refused(const struct fc_call *c);

/*
 * Write a DNS query into b: qd copies of the question (name in dotted form, class IN), then
 * an OPT (UDP 4096, DO set) when edns. Returns its length.
 */
size_t fc_dns_query(uint8_t *b, uint16_t id, uint16_t flags, const char *name, uint16_t qtype,
    unsigned int qd, bool edns);

#endif
