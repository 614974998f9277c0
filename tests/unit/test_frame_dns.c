/*
 * Unit tests for sni/frame_dns.c, the DNS refusals over UDP and TCP: every case on
 * IPv4 and IPv6, untagged, 802.1Q and QinQ; the output decoded again with pkt_decode() and
 * dns_msg_parse(), compared byte for byte with a refusal built by hand, and every checksum
 * verified by fc_check_frame() (frame_check.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sni/frame.h"
#include "frame_check.h"
#include "sni/dns.h"
#include "sni/pkt.h"

/* "blocked by namegate policy" under an OPT RR, as RFC 6891 s6.1.2 and RFC 8914 s2 lay out. */
static const uint8_t ede_rr[] = "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x20"
    "\x00\x0f\x00\x1c\x00\x0f" "blocked by namegate policy";
#define EDE_RR_LEN	(sizeof(ede_rr) - 1)

/* The refusal message, built by hand: header, the query's question bytes, the EDE RR. */
static size_t
dns_expect(uint8_t *b, const uint8_t *query, size_t question_end, uint16_t flags, bool ede)
{
	size_t n = 12;

	memcpy(b, query, 2);
	fc_w16(b + 2, flags);
	fc_w16(b + 4, question_end > 12);
	fc_w16(b + 6, 0);
	fc_w16(b + 8, 0);
	fc_w16(b + 10, ede);
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
		uint8_t query[600], out[FC_FRAME_MAX + FC_GUARD];
		struct fc_frame f;
		struct dns_msg q;
		struct pkt op;
		size_t qlen = fc_dns_query(query, dc->id, dc->qflags, dc->name, dc->qtype, dc->qd,
		    dc->edns);
		struct fc_call c = { .kind = FC_CALL_DNS, .f = &f, .q = &q, .rcode = dc->rcode,
			.ede = dc->edns };
		size_t l4;
		int n;

		print_message("dns case %s\n", dc->what);
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = dc->family, .tags = dc->tags,
		    .proto = PKT_PROTO_UDP, .sport = 40000 + (uint16_t)i, .dport = 53,
		    .payload = query, .payload_len = qlen, .ip_opts = dc->ip_opts });
		assert_int_equal(dns_msg_parse(f.p.payload, f.p.payload_len, &q), DNS_OK);
		n = fc_call_guarded(&c, out, FC_FRAME_MAX);
		assert_true(n > 0);
		l4 = fc_check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
		assert_int_equal(fc_r16(out + l4 + 4), (size_t)n - l4);
		assert_ptr_equal(op.payload, out + l4 + 8);
		check_dns_answer(dc, query, &q, op.payload, op.payload_len);
		fc_check_caps(&c, (size_t)n);
	}
}

/*
 * A refusal whose UDP checksum computes to 0 must carry 0xffff (RFC 768: 0 is "none"). The
 * VM's port is the one free input; over all 65536 of them the sum takes every value.
 */
static void
test_dns_refusal_udp_csum_zero(void **state)
{
	uint8_t query[64], out[FC_FRAME_MAX + FC_GUARD];
	struct fc_frame f;
	struct dns_msg q;
	size_t qlen = fc_dns_query(query, 0x0d0d, 0x0100, "example.org", DNS_TYPE_A, 1, true);
	unsigned int mapped = 0;
	(void)state;

	assert_int_equal(dns_msg_parse(query, qlen, &q), DNS_OK);
	for (uint8_t family = 4; family <= 6; family += 2) {
		for (uint32_t port = 0; port <= 0xffff; port++) {
			struct pkt op;
			size_t l4;
			int n;

			fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
			    .proto = PKT_PROTO_UDP, .sport = (uint16_t)port, .dport = 53,
			    .payload = query, .payload_len = qlen });
			n = frame_dns_refusal(f.b, f.len, &f.p, &q, DNS_RCODE_REFUSED, true,
			    out, sizeof(out));
			l4 = f.l2 + (family == 4 ? 20 : 40);
			assert_true(n > 0);
			assert_int_not_equal(fc_r16(out + l4 + 6), 0);
			if (fc_r16(out + l4 + 6) != 0xffff)
				continue;
			mapped++;
			fc_check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
		}
	}
	assert_true(mapped >= 2);
}

/* The question the answer carries is the query's, byte for byte, not q's lower-cased copy. */
static void
test_dns_refusal_case_kept(void **state)
{
	uint8_t query[64], out[FC_FRAME_MAX + FC_GUARD];
	struct fc_frame f;
	struct dns_msg q;
	struct pkt op;
	size_t qlen = fc_dns_query(query, 7, 0x0100, "MiXeD.CaSe", DNS_TYPE_A, 1, false);
	int n;
	(void)state;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen });
	assert_int_equal(dns_msg_parse(f.p.payload, f.p.payload_len, &q), DNS_OK);
	assert_memory_equal(q.qname, "\x05mixed\x04" "case", 11);
	n = frame_dns_refusal(f.b, f.len, &f.p, &q, DNS_RCODE_REFUSED, false, out, sizeof(out));
	assert_true(n > 0);
	fc_check_frame(&f, out, (size_t)n, true, PKT_PROTO_UDP, &op);
	assert_memory_equal(op.payload + 12, "\x05MiXeD\x04" "CaSe\x00\x00\x01\x00\x01", 16);
}

static void
test_dns_refusal_rejects(void **state)
{
	uint8_t query[64], resp[64], out[FC_FRAME_MAX + FC_GUARD];
	struct fc_frame f, tcp, frag, lie;
	struct dns_msg q, r, bad;
	size_t qlen = fc_dns_query(query, 7, 0x0100, "example.com", DNS_TYPE_A, 1, true);
	size_t rlen = fc_dns_query(resp, 7, 0x8180, "example.com", DNS_TYPE_A, 1, false);
	(void)state;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen });
	fc_frame_build(&tcp, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP,
	    .sport = 5353, .dport = 53, .flags = PKT_TCP_ACK, .payload = query,
	    .payload_len = qlen });
	fc_frame_build(&frag, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 5353, .dport = 53, .payload = query, .payload_len = qlen, .mf = true });
	assert_int_equal(dns_msg_parse(query, qlen, &q), DNS_OK);
	assert_int_equal(dns_msg_parse(resp, rlen, &r), DNS_OK);
	bad = q;
	bad.question_end = qlen + 1;	/* not parsed from this payload */

	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &f, .q = &q, .rcode = 16 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &f, .q = &r, .rcode = 5 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &f, .q = &bad, .rcode = 5 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &tcp, .q = &q, .rcode = 5 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &frag, .q = &q, .rcode = 5 });
	/* a pkt that does not describe the frame (IPv6 over an IPv4 ethertype) */
	lie = f;
	lie.p.family = 6;
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &lie, .q = &q, .rcode = 5 });
	/* the highest 4-bit rcode is still accepted */
	assert_true(fc_call_guarded(&(struct fc_call){ .kind = FC_CALL_DNS, .f = &f, .q = &q,
	    .rcode = 15 }, out, FC_FRAME_MAX) > 0);
}

/* DNS over TCP: one framed message per case, then two messages in a segment. */
static void
test_dns_refusal_tcp(void **state)
{
	(void)state;

	for (size_t i = 0; i < sizeof(dns_cases) / sizeof(dns_cases[0]); i++) {
		const struct dns_case *dc = &dns_cases[i];
		uint8_t seg[700], out[FC_FRAME_MAX + FC_GUARD];
		struct fc_frame f;
		struct dns_msg q;
		struct pkt op;
		size_t qlen = fc_dns_query(seg + 2, dc->id, dc->qflags, dc->name, dc->qtype, dc->qd,
		    dc->edns);
		uint8_t flags = PKT_TCP_ACK | PKT_TCP_PSH | (i % 3 == 2 ? PKT_TCP_FIN : 0);
		uint32_t seq = i == 0 ? 0xfffffff0u : 1000u * (uint32_t)i;
		uint32_t ack = i == 1 ? 0xffffffffu : 77777u + (uint32_t)i;
		struct fc_call c = { .kind = FC_CALL_DNS_TCP, .f = &f, .q = &q, .msg_len = qlen,
			.rcode = dc->rcode, .ede = dc->edns };
		size_t l4;
		int n;

		print_message("dns/tcp case %s\n", dc->what);
		fc_w16(seg, (uint16_t)qlen);
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = dc->family, .tags = dc->tags,
		    .proto = PKT_PROTO_TCP, .sport = 40000, .dport = 53, .flags = flags,
		    .seq = seq, .ack = ack, .payload = seg, .payload_len = qlen + 2,
		    .ip_opts = dc->ip_opts });
		assert_int_equal(dns_msg_parse(f.p.payload + 2, qlen, &q), DNS_OK);
		c.msg = f.p.payload + 2;
		n = fc_call_guarded(&c, out, FC_FRAME_MAX);
		assert_true(n > 0);
		l4 = fc_check_frame(&f, out, (size_t)n, true, PKT_PROTO_TCP, &op);
		assert_int_equal(op.tcp_flags, PKT_TCP_PSH | PKT_TCP_ACK);
		assert_int_equal(op.seq, ack);
		assert_int_equal(op.ack, (uint32_t)(seq + qlen + 2 + !!(flags & PKT_TCP_FIN)));
		assert_int_equal(out[l4 + 12], 0x50);
		assert_int_equal(fc_r16(out + l4 + 14), 65535);
		assert_int_equal(fc_r16(out + l4 + 18), 0);
		assert_int_equal(fc_r16(op.payload), op.payload_len - 2);
		check_dns_answer(dc, seg + 2, &q, op.payload + 2, op.payload_len - 2);
		fc_check_caps(&c, (size_t)n);
	}
}

static void
test_dns_refusal_tcp_second_msg(void **state)
{
	const struct dns_case dc = { "second", 6, 1, 0, 0x5150, 0x0100, "BLOCKED.example",
		DNS_TYPE_AAAA, 1, true, DNS_RCODE_REFUSED, 0x8185 };
	uint8_t seg[300], out[FC_FRAME_MAX + FC_GUARD];
	struct fc_frame f;
	struct dns_msg q;
	struct pkt op;
	struct rd stream, msg;
	size_t l1, l2;
	int n;
	(void)state;

	l1 = fc_dns_query(seg + 2, 0x0101, 0x0100, "ok.example", DNS_TYPE_A, 1, false);
	fc_w16(seg, (uint16_t)l1);
	l2 = fc_dns_query(seg + 4 + l1, dc.id, dc.qflags, dc.name, dc.qtype, 1, true);
	fc_w16(seg + 2 + l1, (uint16_t)l2);
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 6, .tags = 1, .proto = PKT_PROTO_TCP,
	    .sport = 40001, .dport = 53, .flags = PKT_TCP_ACK | PKT_TCP_PSH, .seq = 5000,
	    .ack = 9000, .payload = seg, .payload_len = l1 + l2 + 4 });
	stream = rd_make(f.p.payload, f.p.payload_len);
	assert_int_equal(dns_tcp_next(&stream, &msg), DNS_OK);
	assert_int_equal(dns_tcp_next(&stream, &msg), DNS_OK);
	assert_int_equal(dns_msg_parse(msg.p, msg.len, &q), DNS_OK);
	n = frame_dns_refusal_tcp(f.b, f.len, &f.p, msg.p, msg.len, &q, DNS_RCODE_REFUSED, true,
	    out, sizeof(out));
	assert_true(n > 0);
	fc_check_frame(&f, out, (size_t)n, true, PKT_PROTO_TCP, &op);
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
	struct fc_frame f, udp;
	struct dns_msg q;
	size_t qlen = fc_dns_query(seg + 2, 7, 0x0100, "example.com", DNS_TYPE_A, 1, false);
	(void)state;

	fc_w16(seg, (uint16_t)qlen);
	assert_int_equal(dns_msg_parse(seg + 2, qlen, &q), DNS_OK);
	for (size_t i = 0; i < sizeof(bad_flags); i++) {
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP,
		    .sport = 1, .dport = 53, .flags = bad_flags[i], .payload = seg,
		    .payload_len = qlen + 2 });
		fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS_TCP, .f = &f, .q = &q,
		    .msg = f.p.payload + 2, .msg_len = qlen, .rcode = 5 });
	}
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP, .sport = 1,
	    .dport = 53, .flags = PKT_TCP_ACK, .payload = seg, .payload_len = qlen + 2 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS_TCP, .f = &f, .q = &q,
	    .msg = f.p.payload + 2, .msg_len = qlen - 1, .rcode = 5 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS_TCP, .f = &f, .q = &q, .msg = NULL,
	    .msg_len = 0, .rcode = 5 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS_TCP, .f = &f, .q = &q,
	    .msg = f.p.payload + 2, .msg_len = qlen, .rcode = 0x10 });
	fc_frame_build(&udp, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 53, .payload = seg + 2, .payload_len = qlen });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_DNS_TCP, .f = &udp, .q = &q,
	    .msg = udp.p.payload, .msg_len = qlen, .rcode = 5 });
}

/* ---- frame_udp_resize ---- */

static void
check_udp(const uint8_t *ip, uint8_t family, size_t iphl, size_t dns_len)
{
	uint8_t copy[FC_FRAME_MAX];
	const uint8_t *udp = ip + iphl;
	size_t udp_len = 8 + dns_len;
	uint16_t csum;

	assert_int_equal(fc_r16(udp + 4), udp_len);
	if (family == 4) {
		assert_int_equal(fc_r16(ip + 2), iphl + udp_len);
		memcpy(copy, ip, iphl);
		fc_w16(copy + 10, 0);
		assert_int_equal(fc_r16(ip + 10), fc_ref_csum(copy, iphl, 0));
	} else {
		assert_int_equal(fc_r16(ip + 4), iphl - 40 + udp_len);
	}
	memcpy(copy, udp, udp_len);
	fc_w16(copy + 6, 0);
	csum = fc_ref_csum(copy, udp_len, fc_ref_pseudo(ip, family, PKT_PROTO_UDP, udp_len));
	assert_int_equal(fc_r16(udp + 6), csum == 0 ? 0xffff : csum);
}

static void
test_udp_resize(void **state)
{
	uint8_t payload[300];

	(void)state;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	for (uint8_t family = 4; family <= 6; family += 2) {
		for (unsigned int opts = 0; opts <= 1; opts++) {
			for (size_t n = 1; n <= sizeof(payload); n += 37) {
				struct fc_frame f;
				struct pkt p;
				uint8_t *ip, *udp;
				size_t iphl, ret;

				fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
				    .tags = opts, .proto = PKT_PROTO_UDP, .sport = 5353,
				    .dport = 53, .payload = payload, .payload_len = sizeof(payload),
				    .ip_opts = opts });
				ip = f.b + f.l2;
				udp = f.b + f.l4;
				iphl = f.l4 - f.l2;
				if (n == 1 && family == 4)
					fc_w16(udp + 6, 0);	/* "none": computed all the same */
				udp[8] ^= 0x5a;			/* the payload changed too */
				ret = frame_udp_resize(ip, family, udp, n);
				assert_int_equal(ret, iphl + 8 + n);
				check_udp(ip, family, iphl, n);
				assert_int_equal(pkt_decode(f.b, f.l4 + 8 + n, &p), PKT_OK);
				assert_int_equal(p.payload_len, n);
			}
		}
	}
}

/* A datagram whose checksum computes to 0 is sent with 0xffff (RFC 768). */
static void
test_udp_resize_zero(void **state)
{
	uint8_t payload[64] = { 1, 2, 3, 4 };

	(void)state;
	for (uint8_t family = 4; family <= 6; family += 2) {
		struct fc_frame f;
		uint8_t *ip, *udp;
		size_t n = 40, udp_len = 8 + n;
		uint16_t s;

		fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
		    .proto = PKT_PROTO_UDP, .sport = 5353, .dport = 53, .payload = payload,
		    .payload_len = sizeof(payload) });
		ip = f.b + f.l2;
		udp = f.b + f.l4;
		/* Sum with the last word 0, then make it the word that brings the sum to 0xffff. */
		fc_w16(udp + 4, (uint16_t)udp_len);
		fc_w16(udp + 6, 0);
		fc_w16(udp + udp_len - 2, 0);
		s = fc_ref_sum(udp, udp_len, fc_ref_pseudo(ip, family, PKT_PROTO_UDP, udp_len));
		fc_w16(udp + udp_len - 2, (uint16_t)(0xffff - s));
		frame_udp_resize(ip, family, udp, n);
		assert_int_equal(fc_r16(udp + 6), 0xffff);
		check_udp(ip, family, f.l4 - f.l2, n);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dns_refusal_udp),
		cmocka_unit_test(test_dns_refusal_udp_csum_zero),
		cmocka_unit_test(test_dns_refusal_case_kept),
		cmocka_unit_test(test_dns_refusal_rejects),
		cmocka_unit_test(test_dns_refusal_tcp),
		cmocka_unit_test(test_dns_refusal_tcp_second_msg),
		cmocka_unit_test(test_dns_refusal_tcp_rejects),
		cmocka_unit_test(test_udp_resize),
		cmocka_unit_test(test_udp_resize_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
