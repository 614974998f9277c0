/*
 * Unit tests for dataplane/dp_reply*.c and dp_csum.c: every frame builder on IPv4 and IPv6,
 * untagged, 802.1Q and QinQ; the output decoded again with pkt_decode() and dns_msg_parse()
 * and every checksum verified by ref_sum() below, which shares no code with dp_csum.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "dp_reply.h"
#include "sni/dns.h"
#include "sni/pkt.h"

#define GUARD		64
#define FRAME_MAX	2048
#define PROTO_ICMP	1
#define PROTO_ICMPV6	58

static const uint8_t vm_mac[6] = { 0x52, 0x54, 0x00, 0x10, 0x00, 0x01 };
static const uint8_t gw_mac[6] = { 0x02, 0x00, 0x00, 0xee, 0xee, 0x01 };
static const uint8_t vm4[4] = { 10, 10, 0, 11 };
static const uint8_t srv4[4] = { 192, 0, 2, 10 };
static const uint8_t vm6[16] = { 0xfd, 0, 0, 0x10, 0, 0x10, [15] = 0x11 };
static const uint8_t srv6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 };

/* "blocked by namegate policy" under an OPT RR, as RFC 6891 s6.1.2 and RFC 8914 s2 lay out. */
static const uint8_t ede_rr[] = "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x20"
    "\x00\x0f\x00\x1c\x00\x0f" "blocked by namegate policy";
#define EDE_RR_LEN	(sizeof(ede_rr) - 1)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

static void
w16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void
w32(uint8_t *b, uint32_t v)
{
	w16(b, (uint16_t)(v >> 16));
	w16(b + 2, (uint16_t)v);
}

static uint16_t
r16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t
r32(const uint8_t *b)
{
	return (uint32_t)r16(b) << 16 | r16(b + 2);
}

/*
 * Reference one's-complement sum: byte by byte, weighted by position, folded once at the
 * end. n must be even unless this is the last piece.
 */
static uint16_t
ref_sum(const uint8_t *b, size_t n, uint64_t acc)
{
	for (size_t i = 0; i < n; i++)
		acc += (i & 1) ? b[i] : (uint64_t)b[i] << 8;
	while (acc > 0xffff)
		acc = (acc >> 16) + (acc & 0xffff);
	return (uint16_t)acc;
}

/* Sum of the pseudo-header for l4_len bytes of proto behind the IP header at ip. */
static uint64_t
ref_pseudo(const uint8_t *ip, uint8_t family, uint8_t proto, size_t l4_len)
{
	if (family == 4)
		return ref_sum(ip + 12, 8, 0) + (uint64_t)proto + l4_len;
	return ref_sum(ip + 8, 32, 0) + (uint64_t)proto + (l4_len >> 16) + (l4_len & 0xffff);
}

/* The value a checksum field must hold for the message (its field zeroed). */
static uint16_t
ref_csum(const uint8_t *b, size_t n, uint64_t pseudo)
{
	return (uint16_t)~ref_sum(b, n, pseudo);
}

/* A frame to feed the builders. */
struct frame_spec {
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

struct frame {
	uint8_t b[FRAME_MAX];
	size_t len, l2, l4;
	struct pkt p;
	enum pkt_status st;
};

static void
frame_build(struct frame *f, const struct frame_spec *s)
{
	const uint8_t *src = s->src ? s->src : s->family == 4 ? vm4 : vm6;
	const uint8_t *dst = s->dst ? s->dst : s->family == 4 ? srv4 : srv6;
	uint8_t *b = f->b, *ip, *l4;
	size_t n, l4_hdr, l4_len, ext = 0, iphl;

	memset(f, 0, sizeof(*f));
	memcpy(b, gw_mac, 6);
	memcpy(b + 6, vm_mac, 6);
	n = 12;
	if (s->tags == 2) {
		w16(b + n, 0x88a8);
		w16(b + n + 2, 0x0064);		/* S-VLAN 100 */
		n += 4;
	}
	if (s->tags >= 1) {
		w16(b + n, 0x8100);
		w16(b + n + 2, 0xb00a);		/* PCP 5, DEI 1, VLAN 10 */
		n += 4;
	}
	w16(b + n, s->family == 4 ? 0x0800 : 0x86dd);
	f->l2 = n += 2;
	ip = b + n;
	l4_hdr = s->proto == PKT_PROTO_TCP ? 20 : s->proto == PKT_PROTO_UDP ? 8 : 0;
	l4_len = l4_hdr + s->payload_len;
	if (s->family == 4) {
		iphl = 20 + 4 * (size_t)s->ip_opts;
		ip[0] = (uint8_t)(0x40 | iphl / 4);
		w16(ip + 2, (uint16_t)(iphl + l4_len));
		w16(ip + 4, 0x1234);
		w16(ip + 6, s->mf ? 0x2000 : 0);
		ip[8] = 63;
		ip[9] = s->proto;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		memset(ip + 20, 1, iphl - 20);		/* NOPs */
		w16(ip + 10, ref_csum(ip, iphl, 0));
	} else {
		ext = s->ip_opts ? 8 : 0;
		iphl = 40 + ext;
		w32(ip, 0x6a012345);			/* traffic class and flow label set */
		w16(ip + 4, (uint16_t)(ext + l4_len));
		ip[6] = ext ? 0 : s->proto;
		ip[7] = 63;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
		if (ext) {				/* hop-by-hop, PadN */
			static const uint8_t hbh[6] = { 0, 0, 1, 4, 0, 0 };

			memcpy(ip + 40, hbh, 6);
			ip[40] = s->proto;
		}
	}
	n += iphl;
	l4 = b + n;
	f->l4 = n;
	if (s->proto == PKT_PROTO_TCP) {
		w16(l4, s->sport);
		w16(l4 + 2, s->dport);
		w32(l4 + 4, s->seq);
		w32(l4 + 8, s->ack);
		l4[12] = 0x50;
		l4[13] = s->flags;
		w16(l4 + 14, 0x7210);
	} else if (s->proto == PKT_PROTO_UDP) {
		w16(l4, s->sport);
		w16(l4 + 2, s->dport);
		w16(l4 + 4, (uint16_t)l4_len);
	}
	if (s->payload_len)
		memcpy(l4 + l4_hdr, s->payload, s->payload_len);
	if (s->proto == PKT_PROTO_TCP) {
		w16(l4 + 16, ref_csum(l4, l4_len, ref_pseudo(ip, s->family, s->proto, l4_len)));
	} else if (s->proto == PKT_PROTO_UDP) {
		uint16_t c = ref_csum(l4, l4_len, ref_pseudo(ip, s->family, s->proto, l4_len));

		w16(l4 + 6, c ? c : 0xffff);
	}
	n += l4_len + s->pad;
	assert_true(n <= FRAME_MAX);
	f->len = n;
	f->st = pkt_decode(f->b, f->len, &f->p);
	if ((s->proto == PKT_PROTO_TCP || s->proto == PKT_PROTO_UDP) && !s->mf)
		assert_int_equal(f->st, PKT_OK);
}

/*
 * Check a built frame against its input: L2 (MACs swapped for a reply, tags and ethertype
 * as received), IP header fields and checksum, the transport checksum, and pkt_decode() of
 * the output. Returns the offset of the transport header.
 */
static size_t
check_frame(const struct frame *in, const uint8_t *out, size_t n, bool reply, uint8_t proto,
    struct pkt *op)
{
	const uint8_t *ip = out + in->l2, *l4;
	const uint8_t *src = reply ? in->p.dst : in->p.src, *dst = reply ? in->p.src : in->p.dst;
	size_t hl, l4_len;

	if (reply) {
		assert_memory_equal(out, in->b + 6, 6);
		assert_memory_equal(out + 6, in->b, 6);
	} else {
		assert_memory_equal(out, in->b, 12);
	}
	assert_memory_equal(out + 12, in->b + 12, in->l2 - 12);
	if (in->p.family == 4) {
		hl = 20;
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[1], 0);
		assert_int_equal(r16(ip + 2), n - in->l2);
		assert_int_equal(r16(ip + 4), 0);
		assert_int_equal(r16(ip + 6), 0x4000);
		assert_int_equal(ip[8], 64);
		assert_int_equal(ip[9], proto);
		assert_int_equal(ref_sum(ip, 20, 0), 0xffff);
		assert_memory_equal(ip + 12, src, 4);
		assert_memory_equal(ip + 16, dst, 4);
	} else {
		hl = 40;
		assert_int_equal(r32(ip), 0x60000000);
		assert_int_equal(r16(ip + 4), n - in->l2 - 40);
		assert_int_equal(ip[6], proto);
		assert_int_equal(ip[7], 64);
		assert_memory_equal(ip + 8, src, 16);
		assert_memory_equal(ip + 24, dst, 16);
	}
	l4 = ip + hl;
	l4_len = n - in->l2 - hl;
	if (proto == PROTO_ICMP)
		assert_int_equal(ref_sum(l4, l4_len, 0), 0xffff);
	else
		assert_int_equal(ref_sum(l4, l4_len, ref_pseudo(ip, in->p.family, proto, l4_len)),
		    0xffff);
	if (proto == PKT_PROTO_UDP)
		assert_int_not_equal(r16(l4 + 6), 0);

	assert_int_equal(pkt_decode(out, n, op),
	    proto == PKT_PROTO_TCP || proto == PKT_PROTO_UDP ? PKT_OK : PKT_OTHER);
	assert_int_equal(op->vlan, in->p.vlan);
	assert_int_equal(op->family, in->p.family);
	assert_int_equal(op->proto, proto);
	assert_false(op->fragment);
	assert_memory_equal(op->src, src, 16);
	assert_memory_equal(op->dst, dst, 16);
	assert_memory_equal(op->src_mac, reply ? in->p.dst_mac : in->p.src_mac, 6);
	assert_memory_equal(op->dst_mac, reply ? in->p.src_mac : in->p.dst_mac, 6);
	if (proto == PKT_PROTO_TCP || proto == PKT_PROTO_UDP) {
		assert_int_equal(op->sport, reply ? in->p.dport : in->p.sport);
		assert_int_equal(op->dport, reply ? in->p.sport : in->p.dport);
	}
	return in->l2 + hl;
}

/* One builder call, so one sweep can test every builder's cap handling. */
enum call_kind { CALL_DNS, CALL_DNS_TCP, CALL_RST, CALL_RST_DST, CALL_ICMP };

struct call {
	enum call_kind kind;
	const struct frame *f;
	const struct dns_msg *q;
	const uint8_t *msg;
	size_t msg_len;
	uint8_t rcode;
	bool ede, fwd;
};

static int
call_build(const struct call *c, uint8_t *out, size_t cap)
{
	const struct frame *f = c->f;

	switch (c->kind) {
	case CALL_DNS:
		return dp_reply_dns_refusal(f->b, f->len, &f->p, c->q, c->rcode, c->ede, out, cap);
	case CALL_DNS_TCP:
		return dp_reply_dns_refusal_tcp(f->b, f->len, &f->p, c->msg, c->msg_len, c->q,
		    c->rcode, c->ede, out, cap);
	case CALL_RST:
		return dp_reply_tcp_rst(f->b, f->len, &f->p, out, cap);
	case CALL_RST_DST:
		return dp_reply_tcp_rst_to_dst(f->b, f->len, &f->p, c->fwd, out, cap);
	case CALL_ICMP:
		return dp_reply_icmp_unreach(f->b, f->len, &f->p, out, cap);
	}
	return -2;
}

/* Call into out[cap] followed by a guard; on -1 nothing at all may have been written. */
static int
call_guarded(const struct call *c, uint8_t *buf, size_t cap)
{
	int n;

	memset(buf, 0xa5, cap + GUARD);
	n = call_build(c, buf, cap);
	for (size_t i = n < 0 ? 0 : cap; i < cap + GUARD; i++)
		assert_int_equal(buf[i], 0xa5);
	return n;
}

/* Every cap below need fails untouched; need itself succeeds, also in an exact heap block. */
static void
check_caps(const struct call *c, size_t need)
{
	uint8_t buf[FRAME_MAX + GUARD], ref[FRAME_MAX];
	uint8_t *exact = malloc(need);

	assert_true(need <= FRAME_MAX && exact != NULL);
	for (size_t cap = 0; cap < need; cap++)
		assert_int_equal(call_guarded(c, buf, cap), -1);
	assert_int_equal(call_guarded(c, buf, need), need);
	memcpy(ref, buf, need);
	assert_int_equal(call_guarded(c, buf, FRAME_MAX), need);
	assert_memory_equal(buf, ref, need);
	assert_int_equal(call_build(c, exact, need), need);	/* valgrind sees any overrun */
	assert_memory_equal(exact, ref, need);
	free(exact);
}

static void
check_refused(const struct call *c)
{
	uint8_t buf[FRAME_MAX + GUARD];

	assert_int_equal(call_guarded(c, buf, FRAME_MAX), -1);
}

/* ---- checksums ---- */

static void
test_csum_vectors(void **state)
{
	/* RFC 1071 s3 */
	static const uint8_t rfc1071[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	/* an IPv4 header whose checksum is 0xb861 */
	static const uint8_t ip[20] = { 0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0,
		0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7 };
	static const uint8_t odd[3] = { 0xab, 0xcd, 0xef };
	static const uint8_t ones[4] = { 0xff, 0xff, 0xff, 0xff };
	(void)state;

	assert_int_equal(dp_csum_add(0, rfc1071, 8), 0xddf2);
	assert_int_equal(dp_csum_fold(dp_csum_add(0, rfc1071, 8)), 0x220d);
	assert_int_equal(dp_csum_add(dp_csum_add(0, rfc1071, 4), rfc1071 + 4, 4), 0xddf2);
	assert_int_equal(dp_csum_fold(dp_csum_add(0, ip, 20)), 0xb861);
	assert_int_equal(dp_csum_add(0, odd, 3), 0xabcd + 0xef00 - 0xffff);
	assert_int_equal(dp_csum_add(0, odd, 0), 0);
	assert_int_equal(dp_csum_add(0, ones, 4), 0xffff);
	assert_int_equal(dp_csum_fold(0), 0xffff);
	assert_int_equal(dp_csum_fold(0xffff), 0);
	assert_int_equal(dp_csum_fold(0x1fffe), 0);
	assert_int_equal(dp_csum_fold(0xffffffff), 0);
	assert_int_equal(dp_csum_add(0xffff, ones, 2), 0xffff);
}

static void
test_csum_random(void **state)
{
	static uint8_t buf[1600];
	(void)state;

	for (unsigned int it = 0; it < 20000; it++) {
		size_t len = rnd() % sizeof(buf), cut = (rnd() % (len + 1)) & ~(size_t)1;
		uint32_t start = rnd() & 0xffff;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(it % 7 == 0 ? 0xff : rnd());
		assert_int_equal(dp_csum_add(start, buf, len), ref_sum(buf, len, start));
		assert_int_equal(dp_csum_add(dp_csum_add(start, buf, cut), buf + cut, len - cut),
		    ref_sum(buf, len, start));
		assert_int_equal(dp_csum_fold(dp_csum_add(0, buf, len)),
		    (uint16_t)~ref_sum(buf, len, 0));
	}
}

static void
test_csum_update16_rfc1624(void **state)
{
	(void)state;
	/* RFC 1624 s3: eqn 3 gives 0x0000 where RFC 1141's form gave 0xffff */
	assert_int_equal(dp_csum_update16(0xdd2f, 0x5555, 0x3285), 0x0000);
	assert_int_equal(dp_csum_update16(0x1234, 0xabcd, 0xabcd), 0x1234);
}

/*
 * Against full recomputation. The last word stays 0x0001 so the data is never all zero,
 * the one case where eqn 3 may give the other zero; old and new lean on 0, 0xffff and the
 * value that makes the new checksum 0.
 */
static void
test_csum_update16_random(void **state)
{
	uint8_t buf[128];
	unsigned int zero_results = 0, ffff_results = 0;
	(void)state;

	for (unsigned int it = 0; it < 300000; it++) {
		size_t words = 2 + rnd() % 63, w = rnd() % (words - 1);
		uint16_t old, new, full_old, full_new, rest;

		for (size_t i = 0; i < words - 1; i++) {
			uint16_t v = (uint16_t)rnd();

			if (it % 5 == 0)	/* runs of 0 and 0xffff words */
				v = rnd() & 1 ? 0xffff : 0;
			w16(buf + 2 * i, v);
		}
		w16(buf + 2 * (words - 1), 1);
		switch (rnd() % 8) {
		case 0:
			w16(buf + 2 * w, 0);
			break;
		case 1:
			w16(buf + 2 * w, 0xffff);
			break;
		default:
			break;
		}
		old = r16(buf + 2 * w);
		full_old = (uint16_t)~ref_sum(buf, 2 * words, 0);
		w16(buf + 2 * w, 0);
		rest = ref_sum(buf, 2 * words, 0);
		switch (rnd() % 6) {
		case 0:
			new = 0;
			break;
		case 1:
			new = 0xffff;
			break;
		case 2:
			new = (uint16_t)(0xffff - rest);	/* the sum becomes 0xffff */
			break;
		default:
			new = (uint16_t)rnd();
			break;
		}
		w16(buf + 2 * w, new);
		full_new = (uint16_t)~ref_sum(buf, 2 * words, 0);
		assert_int_equal(dp_csum_update16(full_old, old, new), full_new);
		zero_results += full_new == 0;
		ffff_results += full_new == 0xffff;
	}
	assert_true(zero_results > 1000);
	/* 0xffff needs a sum of 0, i.e. all-zero data, which the anchor rules out */
	assert_int_equal(ffff_results, 0);

	/* All-zero data: the two zeroes differ in bits and are equal in one's complement. */
	assert_int_equal(dp_csum_update16(0xfffe, 0x0001, 0x0000), 0x0000);
	assert_int_equal((uint16_t)~ref_sum((const uint8_t *)"\0\0", 2, 0), 0xffff);
}

/* ---- DNS ---- */

static size_t
name_wire(uint8_t *b, const char *name)
{
	size_t n = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		b[n++] = (uint8_t)l;
		memcpy(b + n, name, l);
		n += l;
		name += l + (dot != NULL);
	}
	b[n++] = 0;
	return n;
}

/* A query: qd copies of the question, then an OPT (UDP 4096, DO set) when edns. */
static size_t
dns_query(uint8_t *b, uint16_t id, uint16_t flags, const char *name, uint16_t qtype,
    unsigned int qd, bool edns)
{
	static const uint8_t opt[11] = { 0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0 };
	size_t n = 12;

	memset(b, 0, 12);
	w16(b, id);
	w16(b + 2, flags);
	w16(b + 4, (uint16_t)qd);
	w16(b + 10, edns);
	for (unsigned int i = 0; i < qd; i++) {
		n += name_wire(b + n, name);
		w16(b + n, qtype);
		w16(b + n + 2, DNS_CLASS_IN);
		n += 4;
	}
	if (edns) {
		memcpy(b + n, opt, sizeof(opt));
		n += sizeof(opt);
	}
	return n;
}

/* The refusal message, built by hand: header, the query's question bytes, the EDE RR. */
static size_t
dns_expect(uint8_t *b, const uint8_t *query, size_t question_end, uint16_t flags, bool ede)
{
	size_t n = 12;

	memcpy(b, query, 2);
	w16(b + 2, flags);
	w16(b + 4, question_end > 12);
	w16(b + 6, 0);
	w16(b + 8, 0);
	w16(b + 10, ede);
	memcpy(b + n, query + 12, question_end - 12);
	n = question_end;
	if (ede) {
		memcpy(b + n, ede_rr, EDE_RR_LEN);
		n += EDE_RR_LEN;
	}
	return n;
}

struct dns_case {
	const char *what;
	uint8_t family;
	unsigned int tags;
	unsigned int ip_opts;
	uint16_t id, qflags;
	const char *name;
	uint16_t qtype;
	unsigned int qd;
	bool edns;
	uint8_t rcode;
	uint16_t rflags;	/* expected header flags of the answer */
};

static const struct dns_case dns_cases[] = {
	/* QR | RD | RA | REFUSED; the name's case as sent (DNS 0x20) */
	{ "v4 edns", 4, 0, 0, 0xbeef, 0x0100, "wWw.ExAmple.COM", DNS_TYPE_A, 1, true,
	  DNS_RCODE_REFUSED, 0x8185 },
	/* RD clear stays clear; AD and CD in the query are not copied */
	{ "v6 vlan nxdomain", 6, 1, 0, 0x0001, 0x0030, "exfil.attacker.example",
	  DNS_TYPE_AAAA, 1, false, DNS_RCODE_NXDOMAIN, 0x8083 },
	{ "v4 qinq options", 4, 2, 3, 0xffff, 0x0110, "a.b", 16, 1, true,
	  DNS_RCODE_REFUSED, 0x8185 },
	{ "v6 hbh qinq", 6, 2, 1, 0x0000, 0x0100, "x.example", DNS_TYPE_AAAA, 1, true,
	  DNS_RCODE_NXDOMAIN, 0x8183 },
	/* two questions (SPEC: refused) and none: the answer has no question */
	{ "two questions", 4, 1, 0, 0x4242, 0x0100, "a.example", DNS_TYPE_A, 2, true,
	  DNS_RCODE_REFUSED, 0x8185 },
	{ "no question", 6, 0, 0, 0x4243, 0x0100, "", DNS_TYPE_A, 0, false,
	  DNS_RCODE_REFUSED, 0x8185 },
	/* opcode 2 (STATUS) and 4 (NOTIFY) are copied; AA in the query is not */
	{ "opcode status", 4, 0, 0, 0x1111, 0x1500, "example", DNS_TYPE_A, 1, false,
	  DNS_RCODE_REFUSED, 0x9185 },
	{ "opcode notify", 6, 1, 0, 0x2222, 0x2400, "example", 6, 1, true,
	  DNS_RCODE_REFUSED, 0xa085 },
	{ "root name", 4, 0, 0, 0x3333, 0x0100, "", 2, 1, false, DNS_RCODE_REFUSED, 0x8185 },
	/* a longest (255-byte) name */
	{ "long name", 6, 0, 0, 0x4444, 0x0100,
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
	  "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb."
	  "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc."
	  "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
	  DNS_TYPE_A, 1, true, DNS_RCODE_REFUSED, 0x8185 },
};

/* Check a refusal message against its query: header by field and the whole by bytes. */
static void
check_dns_answer(const struct dns_case *dc, const uint8_t *query, const struct dns_msg *q,
    const uint8_t *d, size_t dlen)
{
	uint8_t expect[600];
	struct dns_msg a;
	size_t qend = dc->qd == 1 ? q->question_end : 12;
	size_t elen = dns_expect(expect, query, qend, dc->rflags, dc->edns);

	assert_int_equal(dlen, elen);
	assert_memory_equal(d, expect, elen);
	assert_int_equal(dns_msg_parse(d, dlen, &a), DNS_OK);
	assert_int_equal(a.msg_len, dlen);
	assert_int_equal(a.id, dc->id);
	assert_true(a.qr);
	assert_int_equal(a.opcode, dc->qflags >> 11 & 0xf);
	assert_int_equal(a.rcode, dc->rcode);
	assert_int_equal(a.flags & 0x0400, 0);			/* AA */
	assert_int_equal(a.flags & 0x0200, 0);			/* TC */
	assert_int_equal(a.flags & 0x0100, dc->qflags & 0x0100);	/* RD */
	assert_int_equal(a.flags & 0x0080, 0x0080);		/* RA */
	assert_int_equal(a.ancount, 0);
	assert_int_equal(a.nscount, 0);
	assert_int_equal(a.arcount, dc->edns);
	assert_int_equal(a.has_question, dc->qd == 1);
	assert_int_equal(a.qdcount, dc->qd == 1);
	if (dc->qd == 1) {
		assert_int_equal(a.qname_len, q->qname_len);
		assert_memory_equal(a.qname, q->qname, q->qname_len);
		assert_int_equal(a.qtype, dc->qtype);
		assert_int_equal(a.qclass, DNS_CLASS_IN);
		assert_memory_equal(d + 12, query + 12, q->question_end - 12);
	}
	assert_int_equal(a.edns, dc->edns);
	if (dc->edns) {
		assert_int_equal(a.edns_udp_size, 1232);
		assert_memory_equal(d + dlen - EDE_RR_LEN, ede_rr, EDE_RR_LEN);
	}
	assert_int_equal(a.nb_addrs, 0);
}

static void
test_dns_refusal_udp(void **state)
{
	(void)state;

	for (size_t i = 0; i < sizeof(dns_cases) / sizeof(dns_cases[0]); i++) {
		const struct dns_case *dc = &dns_cases[i];
		uint8_t query[600], out[FRAME_MAX + GUARD];
		struct frame f;
		struct dns_msg q;
		struct pkt op;
		size_t qlen = dns_query(query, dc->id, dc->qflags, dc->name, dc->qtype, dc->qd,
		    dc->edns);
		struct call c = { .kind = CALL_DNS, .f = &f, .q = &q, .rcode = dc->rcode,
			.ede = dc->edns };
		size_t l4;
		int n;

		print_message("dns case %s\n", dc->what);
		frame_build(&f, &(struct frame_spec){ .family = dc->family, .tags = dc->tags,
		    .proto = PKT_PROTO_UDP, .sport = 40000 + (uint16_t)i, .dport = 53,
		    .payload = query, .payload_len = qlen, .ip_opts = dc->ip_opts });
		assert_int_equal(dns_msg_parse(f.p.payload, f.p.payload_len, &q), DNS_OK);
		n = call_guarded(&c, out, FRAME_MAX);
		assert_true(n > 0);
		l4 = check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
		assert_int_equal(r16(out + l4 + 4), (size_t)n - l4);
		assert_ptr_equal(op.payload, out + l4 + 8);
		check_dns_answer(dc, query, &q, op.payload, op.payload_len);
		check_caps(&c, (size_t)n);
	}
}

/*
 * A refusal whose UDP checksum computes to 0 must carry 0xffff (RFC 768: 0 is "none"). The
 * VM's port is the one free input; over all 65536 of them the sum takes every value.
 */
static void
test_dns_refusal_udp_csum_zero(void **state)
{
	uint8_t query[64], out[FRAME_MAX + GUARD];
	struct frame f;
	struct dns_msg q;
	size_t qlen = dns_query(query, 0x0d0d, 0x0100, "example.org", DNS_TYPE_A, 1, true);
	unsigned int mapped = 0;
	(void)state;

	assert_int_equal(dns_msg_parse(query, qlen, &q), DNS_OK);
	for (uint8_t family = 4; family <= 6; family += 2) {
		for (uint32_t port = 0; port <= 0xffff; port++) {
			struct pkt op;
			size_t l4;
			int n;

			frame_build(&f, &(struct frame_spec){ .family = family,
			    .proto = PKT_PROTO_UDP, .sport = (uint16_t)port, .dport = 53,
			    .payload = query, .payload_len = qlen });
			n = dp_reply_dns_refusal(f.b, f.len, &f.p, &q, DNS_RCODE_REFUSED, true,
			    out, sizeof(out));
			l4 = f.l2 + (family == 4 ? 20 : 40);
			assert_true(n > 0);
			assert_int_not_equal(r16(out + l4 + 6), 0);
			if (r16(out + l4 + 6) != 0xffff)
				continue;
			mapped++;
			check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
		}
	}
	assert_true(mapped >= 2);
}

/* The question the answer carries is the query's, byte for byte, not q's lower-cased copy. */
static void
test_dns_refusal_case_kept(void **state)
{
	uint8_t query[64], out[FRAME_MAX + GUARD];
	struct frame f;
	struct dns_msg q;
	struct pkt op;
	size_t qlen = dns_query(query, 7, 0x0100, "MiXeD.CaSe", DNS_TYPE_A, 1, false);
	int n;
	(void)state;

	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen });
	assert_int_equal(dns_msg_parse(f.p.payload, f.p.payload_len, &q), DNS_OK);
	assert_memory_equal(q.qname, "\x05mixed\x04" "case", 11);
	n = dp_reply_dns_refusal(f.b, f.len, &f.p, &q, DNS_RCODE_REFUSED, false, out, sizeof(out));
	assert_true(n > 0);
	check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
	assert_memory_equal(op.payload + 12, "\x05MiXeD\x04" "CaSe\x00\x00\x01\x00\x01", 16);
}

static void
test_dns_refusal_rejects(void **state)
{
	uint8_t query[64], resp[64], out[FRAME_MAX + GUARD];
	struct frame f, tcp, frag, lie;
	struct dns_msg q, r, bad;
	size_t qlen = dns_query(query, 7, 0x0100, "example.com", DNS_TYPE_A, 1, true);
	size_t rlen = dns_query(resp, 7, 0x8180, "example.com", DNS_TYPE_A, 1, false);
	(void)state;

	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen });
	frame_build(&tcp, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_TCP,
	    .sport = 5353, .dport = 53, .flags = PKT_TCP_ACK, .payload = query,
	    .payload_len = qlen });
	frame_build(&frag, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen, .mf = true });
	assert_int_equal(dns_msg_parse(query, qlen, &q), DNS_OK);
	assert_int_equal(dns_msg_parse(resp, rlen, &r), DNS_OK);
	bad = q;
	bad.question_end = qlen + 1;	/* not parsed from this payload */

	check_refused(&(struct call){ .kind = CALL_DNS, .f = &f, .q = &q, .rcode = 16 });
	check_refused(&(struct call){ .kind = CALL_DNS, .f = &f, .q = &r, .rcode = 5 });
	check_refused(&(struct call){ .kind = CALL_DNS, .f = &f, .q = &bad, .rcode = 5 });
	check_refused(&(struct call){ .kind = CALL_DNS, .f = &tcp, .q = &q, .rcode = 5 });
	check_refused(&(struct call){ .kind = CALL_DNS, .f = &frag, .q = &q, .rcode = 5 });
	/* a pkt that does not describe the frame (IPv6 over an IPv4 ethertype) */
	lie = f;
	lie.p.family = 6;
	check_refused(&(struct call){ .kind = CALL_DNS, .f = &lie, .q = &q, .rcode = 5 });
	/* the highest 4-bit rcode is still accepted */
	assert_true(call_guarded(&(struct call){ .kind = CALL_DNS, .f = &f, .q = &q,
	    .rcode = 15 }, out, FRAME_MAX) > 0);
}

/* DNS over TCP: one framed message per case, then two messages in a segment. */
static void
test_dns_refusal_tcp(void **state)
{
	(void)state;

	for (size_t i = 0; i < sizeof(dns_cases) / sizeof(dns_cases[0]); i++) {
		const struct dns_case *dc = &dns_cases[i];
		uint8_t seg[700], out[FRAME_MAX + GUARD];
		struct frame f;
		struct dns_msg q;
		struct pkt op;
		size_t qlen = dns_query(seg + 2, dc->id, dc->qflags, dc->name, dc->qtype, dc->qd,
		    dc->edns);
		uint8_t flags = PKT_TCP_ACK | PKT_TCP_PSH | (i % 3 == 2 ? PKT_TCP_FIN : 0);
		uint32_t seq = i == 0 ? 0xfffffff0u : 1000u * (uint32_t)i;
		uint32_t ack = i == 1 ? 0xffffffffu : 77777u + (uint32_t)i;
		struct call c = { .kind = CALL_DNS_TCP, .f = &f, .q = &q, .msg_len = qlen,
			.rcode = dc->rcode, .ede = dc->edns };
		size_t l4;
		int n;

		print_message("dns/tcp case %s\n", dc->what);
		w16(seg, (uint16_t)qlen);
		frame_build(&f, &(struct frame_spec){ .family = dc->family, .tags = dc->tags,
		    .proto = PKT_PROTO_TCP, .sport = 40000, .dport = 53, .flags = flags,
		    .seq = seq, .ack = ack, .payload = seg, .payload_len = qlen + 2,
		    .ip_opts = dc->ip_opts });
		assert_int_equal(dns_msg_parse(f.p.payload + 2, qlen, &q), DNS_OK);
		c.msg = f.p.payload + 2;
		n = call_guarded(&c, out, FRAME_MAX);
		assert_true(n > 0);
		l4 = check_frame(&f, out, (size_t)n, true, PKT_PROTO_TCP, &op);
		assert_int_equal(op.tcp_flags, PKT_TCP_PSH | PKT_TCP_ACK);
		assert_int_equal(op.seq, ack);
		assert_int_equal(op.ack, (uint32_t)(seq + qlen + 2 + !!(flags & PKT_TCP_FIN)));
		assert_int_equal(out[l4 + 12], 0x50);
		assert_int_equal(r16(out + l4 + 14), 65535);
		assert_int_equal(r16(out + l4 + 18), 0);
		assert_int_equal(r16(op.payload), op.payload_len - 2);
		check_dns_answer(dc, seg + 2, &q, op.payload + 2, op.payload_len - 2);
		check_caps(&c, (size_t)n);
	}
}

static void
test_dns_refusal_tcp_second_msg(void **state)
{
	const struct dns_case dc = { "second", 6, 1, 0, 0x5150, 0x0100, "BLOCKED.example",
		DNS_TYPE_AAAA, 1, true, DNS_RCODE_REFUSED, 0x8185 };
	uint8_t seg[300], out[FRAME_MAX + GUARD];
	struct frame f;
	struct dns_msg q;
	struct pkt op;
	struct rd stream, msg;
	size_t l1, l2;
	int n;
	(void)state;

	l1 = dns_query(seg + 2, 0x0101, 0x0100, "ok.example", DNS_TYPE_A, 1, false);
	w16(seg, (uint16_t)l1);
	l2 = dns_query(seg + 4 + l1, dc.id, dc.qflags, dc.name, dc.qtype, 1, true);
	w16(seg + 2 + l1, (uint16_t)l2);
	frame_build(&f, &(struct frame_spec){ .family = 6, .tags = 1, .proto = PKT_PROTO_TCP,
	    .sport = 40001, .dport = 53, .flags = PKT_TCP_ACK | PKT_TCP_PSH, .seq = 5000,
	    .ack = 9000, .payload = seg, .payload_len = l1 + l2 + 4 });
	stream = rd_make(f.p.payload, f.p.payload_len);
	assert_int_equal(dns_tcp_next(&stream, &msg), DNS_OK);
	assert_int_equal(dns_tcp_next(&stream, &msg), DNS_OK);
	assert_int_equal(dns_msg_parse(msg.p, msg.len, &q), DNS_OK);
	n = dp_reply_dns_refusal_tcp(f.b, f.len, &f.p, msg.p, msg.len, &q, DNS_RCODE_REFUSED, true,
	    out, sizeof(out));
	assert_true(n > 0);
	check_frame(&f, out, (size_t)n, true, PKT_PROTO_TCP, &op);
	assert_int_equal(op.seq, 9000);
	assert_int_equal(op.ack, 5000 + l1 + l2 + 4);	/* both messages acknowledged */
	check_dns_answer(&dc, seg + 4 + l1, &q, op.payload + 2, op.payload_len - 2);
}

static void
test_dns_refusal_tcp_rejects(void **state)
{
	static const uint8_t bad_flags[] = { 0, PKT_TCP_PSH, PKT_TCP_SYN, PKT_TCP_SYN | PKT_TCP_ACK,
		PKT_TCP_RST | PKT_TCP_ACK, PKT_TCP_RST };
	uint8_t seg[64];
	struct frame f, udp;
	struct dns_msg q;
	size_t qlen = dns_query(seg + 2, 7, 0x0100, "example.com", DNS_TYPE_A, 1, false);
	(void)state;

	w16(seg, (uint16_t)qlen);
	assert_int_equal(dns_msg_parse(seg + 2, qlen, &q), DNS_OK);
	for (size_t i = 0; i < sizeof(bad_flags); i++) {
		frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_TCP,
		    .sport = 1, .dport = 53, .flags = bad_flags[i], .payload = seg,
		    .payload_len = qlen + 2 });
		check_refused(&(struct call){ .kind = CALL_DNS_TCP, .f = &f, .q = &q,
		    .msg = f.p.payload + 2, .msg_len = qlen, .rcode = 5 });
	}
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_TCP, .sport = 1,
	    .dport = 53, .flags = PKT_TCP_ACK, .payload = seg, .payload_len = qlen + 2 });
	check_refused(&(struct call){ .kind = CALL_DNS_TCP, .f = &f, .q = &q,
	    .msg = f.p.payload + 2, .msg_len = qlen - 1, .rcode = 5 });
	check_refused(&(struct call){ .kind = CALL_DNS_TCP, .f = &f, .q = &q, .msg = NULL,
	    .msg_len = 0, .rcode = 5 });
	check_refused(&(struct call){ .kind = CALL_DNS_TCP, .f = &f, .q = &q,
	    .msg = f.p.payload + 2, .msg_len = qlen, .rcode = 0x10 });
	frame_build(&udp, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 53, .payload = seg + 2, .payload_len = qlen });
	check_refused(&(struct call){ .kind = CALL_DNS_TCP, .f = &udp, .q = &q,
	    .msg = udp.p.payload, .msg_len = qlen, .rcode = 5 });
}

/* ---- TCP RST ---- */

struct rst_case {
	const char *what;
	uint8_t flags;
	size_t plen;
	uint32_t seq, ack;
	/* to the sender (RFC 9293 s3.10.7.1) */
	uint32_t r_seq, r_ack;
	uint8_t r_flags;
	/* to the receiver: seq when p was dropped, when it was forwarded; ack; flags */
	uint32_t d_seq_drop, d_seq_fwd, d_ack;
	uint8_t d_flags;
};

#define RST	PKT_TCP_RST
#define RA	(PKT_TCP_RST | PKT_TCP_ACK)

static const struct rst_case rst_cases[] = {
	{ "syn", PKT_TCP_SYN, 0, 1000, 0, 0, 1001, RA, 1000, 1001, 0, RST },
	{ "syn+data (tfo)", PKT_TCP_SYN, 10, 1000, 0, 0, 1011, RA, 1000, 1011, 0, RST },
	{ "syn, ack field set but no ACK flag", PKT_TCP_SYN, 0, 1000, 12345, 0, 1001, RA,
	  1000, 1001, 0, RST },
	{ "syn wraps", PKT_TCP_SYN, 0, 0xffffffff, 0, 0, 0, RA, 0xffffffff, 0, 0, RST },
	{ "syn|fin", PKT_TCP_SYN | PKT_TCP_FIN, 3, 50, 0, 0, 55, RA, 50, 55, 0, RST },
	{ "fin+data no ack", PKT_TCP_FIN, 5, 1000, 0, 0, 1006, RA, 1000, 1006, 0, RST },
	{ "syn|ack", PKT_TCP_SYN | PKT_TCP_ACK, 0, 4000, 1001, 1001, 0, RST, 4000, 4001, 1001,
	  RA },
	{ "ack", PKT_TCP_ACK, 0, 1001, 7000, 7000, 0, RST, 1001, 1001, 7000, RA },
	{ "ack+data", PKT_TCP_ACK, 100, 1001, 7000, 7000, 0, RST, 1001, 1101, 7000, RA },
	{ "client hello", PKT_TCP_ACK | PKT_TCP_PSH, 517, 1001, 7001, 7001, 0, RST, 1001, 1518,
	  7001, RA },
	{ "fin|ack", PKT_TCP_FIN | PKT_TCP_ACK, 0, 2000, 8000, 8000, 0, RST, 2000, 2001, 8000,
	  RA },
	{ "fin|ack+data", PKT_TCP_FIN | PKT_TCP_ACK | PKT_TCP_PSH, 20, 2000, 8000, 8000, 0, RST,
	  2000, 2021, 8000, RA },
	{ "ack+data wraps", PKT_TCP_ACK, 0x20, 0xfffffff0, 0, 0, 0, RST, 0xfffffff0, 0x10, 0,
	  RA },
	{ "urg ignored", PKT_TCP_ACK | PKT_TCP_URG, 1, 10, 20, 20, 0, RST, 10, 11, 20, RA },
};

static void
check_rst(const struct frame *f, const uint8_t *out, int n, bool reply, uint32_t seq,
    uint32_t ack, uint8_t flags)
{
	struct pkt op;
	size_t l4;

	assert_int_equal(n, f->l2 + (f->p.family == 4 ? 20 : 40) + 20);
	l4 = check_frame(f, out, (size_t)n, reply, PKT_PROTO_TCP, &op);
	assert_int_equal(op.tcp_flags, flags);
	assert_int_equal(op.seq, seq);
	assert_int_equal(op.ack, ack);
	assert_int_equal(op.payload_len, 0);
	assert_int_equal(out[l4 + 12], 0x50);
	assert_int_equal(r16(out + l4 + 14), 0);	/* window */
	assert_int_equal(r16(out + l4 + 18), 0);	/* urgent pointer */
}

static void
test_tcp_rst(void **state)
{
	static uint8_t data[600];
	(void)state;

	memset(data, 'x', sizeof(data));
	for (size_t i = 0; i < sizeof(rst_cases) / sizeof(rst_cases[0]); i++) {
		for (unsigned int v = 0; v < 6; v++) {
			const struct rst_case *rc = &rst_cases[i];
			uint8_t out[FRAME_MAX + GUARD];
			struct frame f;
			struct call c = { .kind = CALL_RST, .f = &f };
			int n;

			print_message("rst case %s v%u\n", rc->what, v);
			frame_build(&f, &(struct frame_spec){ .family = v < 3 ? 4 : 6,
			    .tags = v % 3, .proto = PKT_PROTO_TCP, .sport = 51000, .dport = 443,
			    .flags = rc->flags, .seq = rc->seq, .ack = rc->ack, .payload = data,
			    .payload_len = rc->plen, .ip_opts = v % 2 });
			n = call_guarded(&c, out, FRAME_MAX);
			check_rst(&f, out, n, true, rc->r_seq, rc->r_ack, rc->r_flags);
			/* no ACK flag: the ack field is zero, not SEG.ACK leaked through */
			if (!(rc->r_flags & PKT_TCP_ACK))
				assert_int_equal(r32(out + n - 12), 0);
			check_caps(&c, (size_t)n);

			c.kind = CALL_RST_DST;
			n = call_guarded(&c, out, FRAME_MAX);
			check_rst(&f, out, n, false, rc->d_seq_drop, rc->d_ack, rc->d_flags);
			c.fwd = true;
			n = call_guarded(&c, out, FRAME_MAX);
			check_rst(&f, out, n, false, rc->d_seq_fwd, rc->d_ack, rc->d_flags);
			check_caps(&c, (size_t)n);
		}
	}
}

static void
test_tcp_rst_rejects(void **state)
{
	static const uint8_t rst_flags[] = { PKT_TCP_RST, PKT_TCP_RST | PKT_TCP_ACK,
		PKT_TCP_RST | PKT_TCP_SYN };
	struct frame f;
	(void)state;

	for (size_t i = 0; i < sizeof(rst_flags); i++) {
		frame_build(&f, &(struct frame_spec){ .family = 6, .proto = PKT_PROTO_TCP,
		    .sport = 1, .dport = 2, .flags = rst_flags[i], .seq = 1, .ack = 2 });
		check_refused(&(struct call){ .kind = CALL_RST, .f = &f });
		check_refused(&(struct call){ .kind = CALL_RST_DST, .f = &f });
		check_refused(&(struct call){ .kind = CALL_RST_DST, .f = &f, .fwd = true });
	}
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 2 });
	check_refused(&(struct call){ .kind = CALL_RST, .f = &f });
	check_refused(&(struct call){ .kind = CALL_RST_DST, .f = &f });
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_TCP, .sport = 1,
	    .dport = 2, .flags = PKT_TCP_ACK, .mf = true });
	check_refused(&(struct call){ .kind = CALL_RST, .f = &f });
	/* a frame shorter than its own L2 header, whatever p claims */
	frame_build(&f, &(struct frame_spec){ .family = 4, .tags = 2, .proto = PKT_PROTO_TCP,
	    .sport = 1, .dport = 2, .flags = PKT_TCP_ACK });
	f.len = 20;
	check_refused(&(struct call){ .kind = CALL_RST, .f = &f });
}

/* ---- ICMP ---- */

struct icmp_case {
	const char *what;
	uint8_t family;
	unsigned int tags;
	uint8_t proto;
	size_t plen;
	unsigned int ip_opts;
	size_t pad;
	size_t quote;		/* expected quoted bytes */
};

static const struct icmp_case icmp_cases[] = {
	{ "v4 quic", 4, 0, PKT_PROTO_UDP, 100, 0, 0, 128 },
	{ "v4 tcp", 4, 1, PKT_PROTO_TCP, 0, 0, 0, 40 },
	{ "v4 empty udp, padded frame", 4, 0, PKT_PROTO_UDP, 2, 0, 16, 30 },
	{ "v4 options", 4, 2, PKT_PROTO_UDP, 4, 10, 0, 72 },
	{ "v4 one below 576", 4, 0, PKT_PROTO_UDP, 519, 0, 0, 547 },
	{ "v4 exactly 576", 4, 1, PKT_PROTO_UDP, 520, 0, 0, 548 },
	{ "v4 one above 576", 4, 0, PKT_PROTO_UDP, 521, 0, 0, 548 },
	{ "v4 quic initial 1200", 4, 2, PKT_PROTO_UDP, 1200, 0, 0, 548 },
	{ "v6 quic", 6, 0, PKT_PROTO_UDP, 100, 0, 0, 148 },
	{ "v6 tcp padded", 6, 1, PKT_PROTO_TCP, 0, 0, 4, 60 },
	{ "v6 hop-by-hop", 6, 2, PKT_PROTO_UDP, 10, 1, 0, 66 },
	{ "v6 one below 1280", 6, 0, PKT_PROTO_UDP, 1183, 0, 0, 1231 },
	{ "v6 exactly 1280", 6, 1, PKT_PROTO_UDP, 1184, 0, 0, 1232 },
	{ "v6 one above 1280", 6, 0, PKT_PROTO_UDP, 1185, 0, 0, 1232 },
	{ "v6 quic initial 1350", 6, 2, PKT_PROTO_UDP, 1350, 1, 0, 1232 },
};

static void
test_icmp_unreach(void **state)
{
	static uint8_t data[1400];
	(void)state;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < sizeof(icmp_cases) / sizeof(icmp_cases[0]); i++) {
		const struct icmp_case *ic = &icmp_cases[i];
		uint8_t out[FRAME_MAX + GUARD];
		uint8_t proto = ic->family == 4 ? PROTO_ICMP : PROTO_ICMPV6;
		struct frame f;
		struct pkt op;
		struct call c = { .kind = CALL_ICMP, .f = &f };
		size_t l4;
		int n;

		print_message("icmp case %s\n", ic->what);
		frame_build(&f, &(struct frame_spec){ .family = ic->family, .tags = ic->tags,
		    .proto = ic->proto, .sport = 50000, .dport = 443, .flags = PKT_TCP_SYN,
		    .payload = data, .payload_len = ic->plen, .ip_opts = ic->ip_opts,
		    .pad = ic->pad });
		n = call_guarded(&c, out, FRAME_MAX);
		assert_int_equal(n, f.l2 + (ic->family == 4 ? 20 : 40) + 8 + ic->quote);
		l4 = check_frame(&f, out, (size_t)n, true, proto, &op);
		assert_int_equal(out[l4], ic->family == 4 ? 3 : 1);
		assert_int_equal(out[l4 + 1], ic->family == 4 ? 3 : 4);
		assert_int_equal(r32(out + l4 + 4), 0);
		assert_memory_equal(out + l4 + 8, f.b + f.l2, ic->quote);
		if (ic->family == 4)
			assert_true(n - f.l2 <= 576 && ic->quote >= 20 + 4 * ic->ip_opts + 8u);
		else
			assert_true(n - f.l2 <= 1280);
		check_caps(&c, (size_t)n);
	}
}

static void
test_icmp_unreach_rejects(void **state)
{
	static const struct {
		uint8_t family;
		const char *src, *dst;
	} bad[] = {
		{ 4, "10.10.0.11", "224.0.0.251" },
		{ 4, "10.10.0.11", "239.255.255.250" },
		{ 4, "10.10.0.11", "240.0.0.1" },
		{ 4, "10.10.0.11", "255.255.255.255" },
		{ 4, "0.0.0.0", "192.0.2.10" },
		{ 4, "127.0.0.1", "192.0.2.10" },
		{ 4, "224.0.0.1", "192.0.2.10" },
		{ 4, "255.255.255.255", "192.0.2.10" },
		{ 6, "fd00:10:10::11", "ff02::fb" },
		{ 6, "fd00:10:10::11", "ff0e::1" },
		{ 6, "::", "2001:db8::10" },
		{ 6, "::1", "2001:db8::10" },
		{ 6, "ff02::1", "2001:db8::10" },
	};
	static const struct {
		uint8_t family;
		const char *src, *dst;
	} good[] = {
		{ 4, "10.10.0.11", "223.255.255.255" },
		{ 4, "1.0.0.0", "192.0.2.10" },
		{ 4, "126.255.255.255", "192.0.2.10" },
		{ 4, "128.0.0.0", "192.0.2.10" },
		{ 4, "223.255.255.255", "192.0.2.10" },
		{ 6, "fe80::1", "2001:db8::10" },
		{ 6, "::2", "feff::1" },
	};
	uint8_t src[16], dst[16], out[FRAME_MAX + GUARD];
	struct frame f;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int af = bad[i].family == 4 ? AF_INET : AF_INET6;

		assert_int_equal(inet_pton(af, bad[i].src, src), 1);
		assert_int_equal(inet_pton(af, bad[i].dst, dst), 1);
		frame_build(&f, &(struct frame_spec){ .family = bad[i].family,
		    .proto = PKT_PROTO_UDP, .sport = 1, .dport = 443, .src = src, .dst = dst });
		check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int af = good[i].family == 4 ? AF_INET : AF_INET6;
		struct pkt op;
		int n;

		assert_int_equal(inet_pton(af, good[i].src, src), 1);
		assert_int_equal(inet_pton(af, good[i].dst, dst), 1);
		frame_build(&f, &(struct frame_spec){ .family = good[i].family,
		    .proto = PKT_PROTO_UDP, .sport = 1, .dport = 443, .src = src, .dst = dst });
		n = call_guarded(&(struct call){ .kind = CALL_ICMP, .f = &f }, out, FRAME_MAX);
		assert_true(n > 0);
		check_frame(&f, out, (size_t)n, true, good[i].family == 4 ? PROTO_ICMP :
		    PROTO_ICMPV6, &op);
	}
	/* a fragment, and an ICMP message itself (never an error about an error) */
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 443, .mf = true });
	check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PROTO_ICMP,
	    .payload = (const uint8_t *)"\x03\x03\0\0\0\0\0\0", .payload_len = 8 });
	assert_int_equal(f.st, PKT_OTHER);
	check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
	frame_build(&f, &(struct frame_spec){ .family = 6, .proto = PROTO_ICMPV6,
	    .payload = (const uint8_t *)"\x01\x04\0\0\0\0\0\0", .payload_len = 8 });
	check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
	/* p from a longer frame than in: the IP length runs past len */
	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 443, .payload = src, .payload_len = 16 });
	f.len--;
	check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
	frame_build(&f, &(struct frame_spec){ .family = 6, .tags = 1, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 443, .payload = src, .payload_len = 16 });
	f.len--;
	check_refused(&(struct call){ .kind = CALL_ICMP, .f = &f });
}

/* ---- DNS ID rewrite ---- */

/* Every ID in turn on one datagram, the checksum compared with a recomputation each time. */
static void
check_rewrite_all(uint8_t family)
{
	uint8_t query[64];
	struct frame f;
	size_t qlen = dns_query(query, 0x1234, 0x0100, "www.example.com", DNS_TYPE_A, 1, true);
	uint8_t *ip, *udp;
	size_t l4_len;
	unsigned int mapped = 0;
	uint16_t prev = 0x1234;

	frame_build(&f, &(struct frame_spec){ .family = family, .tags = 1,
	    .proto = PKT_PROTO_UDP, .sport = 33333, .dport = 53, .payload = query,
	    .payload_len = qlen });
	ip = f.b + f.l2;
	udp = f.b + f.l4;
	l4_len = 8 + qlen;
	for (uint32_t k = 0; k <= 0xffff; k++) {
		uint16_t id = (uint16_t)(k * 40503u + 1), expect;
		uint8_t copy[FRAME_MAX];

		assert_int_equal(dp_dns_rewrite_id(udp, udp + 8, id), prev);
		prev = id;
		assert_int_equal(r16(udp + 8), id);
		memcpy(copy, udp, l4_len);
		w16(copy + 6, 0);
		expect = ref_csum(copy, l4_len, ref_pseudo(ip, family, PKT_PROTO_UDP, l4_len));
		if (expect == 0) {
			expect = 0xffff;
			mapped++;
		}
		assert_int_equal(r16(udp + 6), expect);
		assert_int_equal(ref_sum(udp, l4_len,
		    ref_pseudo(ip, family, PKT_PROTO_UDP, l4_len)), 0xffff);
	}
	assert_true(mapped >= 1);	/* the computed-0 case was met, and sent as 0xffff */
}

static void
test_dns_rewrite_id_udp(void **state)
{
	(void)state;
	check_rewrite_all(4);
	check_rewrite_all(6);
}

static void
test_dns_rewrite_id_udp_nocsum(void **state)
{
	uint8_t query[64];
	struct frame f;
	size_t qlen = dns_query(query, 0xaaaa, 0x0100, "example.com", DNS_TYPE_A, 1, false);
	uint8_t *udp;
	(void)state;

	frame_build(&f, &(struct frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 53, .payload = query, .payload_len = qlen });
	udp = f.b + f.l4;
	w16(udp + 6, 0);	/* RFC 768: none */
	for (unsigned int i = 0; i < 1000; i++) {
		uint16_t id = (uint16_t)rnd(), old = r16(udp + 8);

		assert_int_equal(dp_dns_rewrite_id(udp, udp + 8, id), old);
		assert_int_equal(r16(udp + 8), id);
		assert_int_equal(r16(udp + 6), 0);
	}
}

/* DNS over TCP: the second message of a segment sits at an odd offset after a 13-byte one. */
static void
test_dns_rewrite_id_tcp(void **state)
{
	uint8_t seg[128];
	struct frame f;
	size_t l1 = 13, l2;
	uint8_t *ip, *th, *m1, *m2;
	size_t l4_len;
	(void)state;

	memset(seg + 2, 0, l1);
	w16(seg, (uint16_t)l1);
	l2 = dns_query(seg + 4 + l1, 0x7777, 0x0100, "odd.example", DNS_TYPE_A, 1, false);
	w16(seg + 2 + l1, (uint16_t)l2);
	for (uint8_t family = 4; family <= 6; family += 2) {
		frame_build(&f, &(struct frame_spec){ .family = family, .tags = 2,
		    .proto = PKT_PROTO_TCP, .sport = 1, .dport = 53, .flags = PKT_TCP_ACK,
		    .payload = seg, .payload_len = l1 + l2 + 4 });
		ip = f.b + f.l2;
		th = f.b + f.l4;
		m1 = th + 20 + 2;
		m2 = th + 20 + 4 + l1;
		l4_len = 20 + l1 + l2 + 4;
		assert_true(((m2 - th) & 1) == 1 && ((m1 - th) & 1) == 0);
		for (unsigned int i = 0; i < 20000; i++) {
			uint8_t *m = i & 1 ? m2 : m1;
			uint16_t id = (uint16_t)rnd();
			uint16_t old = r16(m);

			if (i % 97 == 0)
				id = i & 2 ? 0 : 0xffff;
			assert_int_equal(dp_dns_rewrite_id_tcp(th, m, id), old);
			assert_int_equal(r16(m), id);
			assert_int_equal(ref_sum(th, l4_len,
			    ref_pseudo(ip, family, PKT_PROTO_TCP, l4_len)), 0xffff);
		}
	}
}

/* ---- rebinding ---- */

static void
test_addr_rebind(void **state)
{
	static const struct {
		const char *addr;
		bool rebind;
	} rows[] = {
		/* 0/8 */
		{ "0.0.0.0", true }, { "0.255.255.255", true }, { "1.0.0.0", false },
		/* 127/8 */
		{ "126.255.255.255", false }, { "127.0.0.0", true }, { "127.0.0.1", true },
		{ "127.255.255.255", true }, { "128.0.0.0", false },
		/* 169.254/16 */
		{ "169.253.255.255", false }, { "169.254.0.0", true },
		{ "169.254.169.254", true }, { "169.254.255.255", true },
		{ "169.255.0.0", false }, { "168.254.0.1", false },
		/* 224/4 */
		{ "223.255.255.255", false }, { "224.0.0.0", true }, { "239.255.255.255", true },
		{ "240.0.0.0", false },
		/* 255.255.255.255 */
		{ "255.255.255.254", false }, { "255.255.255.255", true },
		/* the VM and private-address checks are the caller's */
		{ "8.8.8.8", false }, { "10.0.0.1", false }, { "192.168.1.1", false },
		{ "100.64.0.1", false },
		/* :: and ::1 */
		{ "::", true }, { "::1", true }, { "::2", false }, { "::100", false },
		{ "1::", false }, { "1::1", false },
		/* fe80::/10 */
		{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false }, { "fe80::", true },
		{ "fe80::1", true }, { "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
		{ "fec0::", false },
		/* ff00::/8 */
		{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false }, { "ff00::", true },
		{ "ff02::1", true }, { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
		{ "2001:db8::1", false }, { "fd00::1", false },
		/* ::ffff:0:0/96 follows IPv4 */
		{ "::ffff:0.0.0.0", true }, { "::ffff:0.255.255.255", true },
		{ "::ffff:1.0.0.0", false }, { "::ffff:127.0.0.1", true },
		{ "::ffff:128.0.0.0", false }, { "::ffff:169.254.0.0", true },
		{ "::ffff:169.255.0.0", false }, { "::ffff:223.255.255.255", false },
		{ "::ffff:224.0.0.0", true }, { "::ffff:239.255.255.255", true },
		{ "::ffff:240.0.0.0", false }, { "::ffff:255.255.255.254", false },
		{ "::ffff:255.255.255.255", true }, { "::ffff:8.8.8.8", false },
		/* neighbours of the mapped prefix are plain IPv6 */
		{ "::fffe:127.0.0.1", false }, { "::1:ffff:127.0.0.1", false },
		{ "0:0:0:1:0:ffff:7f00:1", false }, { "1::ffff:7f00:1", false },
		/* not in SPEC's list: IPv4-compatible (deprecated), NAT64 */
		{ "::127.0.0.1", false }, { "64:ff9b::127.0.0.1", false },
	};
	uint8_t a[16];
	(void)state;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool v6 = strchr(rows[i].addr, ':') != NULL;

		memset(a, 0xee, sizeof(a));
		assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, rows[i].addr, a), 1);
		print_message("%s\n", rows[i].addr);
		assert_int_equal(dp_addr_rebind(v6 ? 6 : 4, a), rows[i].rebind);
	}
	memset(a, 0, sizeof(a));
	a[0] = 8;
	assert_true(dp_addr_rebind(0, a));
	assert_true(dp_addr_rebind(5, a));
	assert_false(dp_addr_rebind(4, a));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_vectors),
		cmocka_unit_test(test_csum_random),
		cmocka_unit_test(test_csum_update16_rfc1624),
		cmocka_unit_test(test_csum_update16_random),
		cmocka_unit_test(test_dns_refusal_udp),
		cmocka_unit_test(test_dns_refusal_udp_csum_zero),
		cmocka_unit_test(test_dns_refusal_case_kept),
		cmocka_unit_test(test_dns_refusal_rejects),
		cmocka_unit_test(test_dns_refusal_tcp),
		cmocka_unit_test(test_dns_refusal_tcp_second_msg),
		cmocka_unit_test(test_dns_refusal_tcp_rejects),
		cmocka_unit_test(test_tcp_rst),
		cmocka_unit_test(test_tcp_rst_rejects),
		cmocka_unit_test(test_icmp_unreach),
		cmocka_unit_test(test_icmp_unreach_rejects),
		cmocka_unit_test(test_dns_rewrite_id_udp),
		cmocka_unit_test(test_dns_rewrite_id_udp_nocsum),
		cmocka_unit_test(test_dns_rewrite_id_tcp),
		cmocka_unit_test(test_addr_rebind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
