/*
 * dns_msg_parse and dns_tcp_next (the text helpers: test_dns_text). Each case is a message
 * written as the records it holds (a small spec language, see mb_spec) or, where it needs
 * a loop, built by a function; every valid case is also replayed at every shorter length,
 * which must be DNS_MALFORMED.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dns_builder.h"
#include "dns_spec.h"
#include "sni/dns.h"
#include "sni/dns_edit.h"

/* ---- cases that need a loop ---- */

/* n0.example -> n1.example -> ... -> n17.example, each with an address. */
static void
b_long_chain(struct mb *m)
{
	char owner[32], target[32];

	mb_hdr(m, RESP, 1, 2 * (DNS_CHAIN_MAX + 1), 0, 0);
	mb_q(m, "n0.example", DNS_TYPE_A);
	for (int i = 0; i <= DNS_CHAIN_MAX; i++) {
		snprintf(owner, sizeof(owner), "n%d.example", i);
		snprintf(target, sizeof(target), "n%d.example", i + 1);
		mb_cname(m, owner, 600, target);
		mb_a(m, target, 600 - (uint32_t)i,
		    i == DNS_CHAIN_MAX ? "192.0.2.99" : "192.0.2.1");
	}
}

static void
b_many_answers_bad(struct mb *m)
{
	size_t at;

	b_many_answers(m);
	m->b[7]++;
	at = mb_rr(m, "@12", DNS_TYPE_A, DNS_CLASS_IN, 60);
	mb_hex(m, "c000020100");
	mb_rr_end(m, at);
}

/* An opaque record holding pointers P0 -> 12, P1 -> P0, ...; an owner reaches 12 in hops. */
static void
b_hops(struct mb *m, int hops)
{
	size_t at, p0;

	mb_resp(m, 2, 0, 0);
	at = mb_rr(m, "@12", 0xff00, DNS_CLASS_IN, 60);
	p0 = m->len;
	mb_u16(m, 0xc000 | 12);
	for (int i = 1; i <= hops - 2; i++)
		mb_u16(m, 0xc000 | (unsigned int)(p0 + 2 * (size_t)(i - 1)));
	mb_rr_end(m, at);
	mb_u16(m, 0xc000 | (unsigned int)(m->len - 2));
	mb_u16(m, DNS_TYPE_A);
	mb_u16(m, DNS_CLASS_IN);
	mb_u32(m, 60);
	mb_u16(m, 4);
	mb_hex(m, "c0000201");
}

static void
b_hops_max(struct mb *m)
{
	b_hops(m, DNS_PTR_HOPS_MAX);
}

static void
b_hops_over(struct mb *m)
{
	b_hops(m, DNS_PTR_HOPS_MAX + 1);
}

struct dns_case {
	const char *name;
	const char *spec;		/* the message, or NULL and: */
	void (*build)(struct mb *);
	enum dns_status st;
	const char *qname;	/* NULL: has_question false */
	uint8_t chain_len;
	const char *addrs;	/* "addr/ttl ..." in answer order */
	int edns;		/* the UDP size, or 0 for no OPT */
	int trailing;		/* len - msg_len */
};

#define OK(name, spec, q, chain, addrs, edns, trail) \
	{ name, spec, NULL, DNS_OK, q, chain, addrs, edns, trail }
#define OKB(name, fn, q, chain, addrs) \
	{ name, NULL, fn, DNS_OK, q, chain, addrs, 0, 0 }
#define BAD(name, spec)	{ name, spec, NULL, DNS_MALFORMED, NULL, 0, "", 0, 0 }
#define BADB(name, fn)	{ name, NULL, fn, DNS_MALFORMED, NULL, 0, "", 0, 0 }

static const struct dns_case cases[] = {
	OK("query", QQ "Q pypi.org 1", "pypi.org", 0, "", 0, 0),
	OK("query_edns_upper", "H 0100 1 0 0 1; Q PyPI.ORG 28; O 1232", "pypi.org", 0, "", 1232,
	    0),
	OK("query_no_question", "H 0100 0 0 0 0", NULL, 0, "", 0, 0),
	OK("query_two_questions", "H 0100 2 0 0 0; Q pypi.org 1; Q evil.example 1", NULL, 0, "",
	    0, 0),
	OK("query_root", QQ "Q . 6", ".", 0, "", 0, 0),
	OK("query_answer_not_followed", "H 0100 1 1 0 0; Q a.example 1; A @12 60 192.0.2.1",
	    "a.example", 0, "", 0, 0),
	OK("simple", SIMPLE, "a.example", 0, "203.0.113.10/30 2001:db8::10/20", 4096, 0),
	/* a -300-> b -60-> c -120-> d; b's own A is on the path a->b only */
	OK("chain3", RQ(6, 0, 0) "C @12 300 b.example; C @39 60 c@14; A @39 1000 192.0.2.9; "
	    "C @62 120 d@14; A @94 200 192.0.2.1; A @94 30 192.0.2.2", "a.example", 3,
	    "192.0.2.9/300 192.0.2.1/60 192.0.2.2/30", 0, 0),
	/* a stranger, a CNAME *to* the chain, parent, child, authority glue, additional */
	OK("off_chain", RQ(5, 1, 1) "A evil.example 60 198.51.100.66; A @12 60 192.0.2.1; "
	    "C evil@14 60 a.example; A example 60 198.51.100.67; A x.a.example 60 198.51.100.68; "
	    "A ns@14 60 198.51.100.69; A @12 60 198.51.100.70", "a.example", 0, "192.0.2.1/60",
	    0, 0),
	/* the A for c (27) first, then b (52) -> c, then a -> b */
	OK("out_of_order", RQ(3, 0, 0) "A c.example 50 192.0.2.3; C b@29 70 @27; C @12 80 @52",
	    "a.example", 2, "192.0.2.3/50", 0, 0),
	/* one walk over the sections: each record read as its own section's */
	OK("sections", RQ(1, 2, 1) "A @12 60 192.0.2.1; A @12 60 192.0.2.2; O 512; "
	    "A @12 60 192.0.2.3", "a.example", 0, "192.0.2.1/60", 0, 0),
	/*
	 * types whose low bits are an address's or a CNAME's (A + 32, CNAME + 32, AAAA + 32,
	 * A + 256): opaque records, on the chain's names, neither addresses nor links
	 */
	OK("chain_types_shifted", RQ(6, 0, 0) "R @12 33 1 60 c0000201; R @12 37 1 60 c0000202; "
	    "R @12 60 1 60 20010db8000000000000000000000001; R @12 257 1 60 c0000203; "
	    "R @12 37 1 60 0162076578616d706c6500; A @12 60 192.0.2.4", "a.example", 0,
	    "192.0.2.4/60", 0, 0),
	OK("loop", RQ(3, 0, 0) "C @12 100 b.example; C @39 100 @12; A @39 40 192.0.2.4",
	    "a.example", 1, "192.0.2.4/40", 0, 0),
	/* back to the question by a name written out (same first label length), then not */
	OK("loop_in_place", RQ(4, 0, 0) "C @12 100 b.example; C @39 100 A.Example; "
	    "C @12 100 abc.example; A @39 40 192.0.2.4", "a.example", 1, "192.0.2.4/40", 0, 0),
	OKB("long_chain", b_long_chain, "n0.example", DNS_CHAIN_MAX,
	    "192.0.2.1/600 192.0.2.1/599 192.0.2.1/598 192.0.2.1/597 192.0.2.1/596 "
	    "192.0.2.1/595 192.0.2.1/594 192.0.2.1/593 192.0.2.1/592 192.0.2.1/591 "
	    "192.0.2.1/590 192.0.2.1/589 192.0.2.1/588 192.0.2.1/587 192.0.2.1/586 "
	    "192.0.2.1/585"),
	OK("case_insensitive", RQ(2, 0, 0) "C A.EXAMPLE 300 Dualstack.Fastly.NET; "
	    "A dualstack.fastly.Net 30 151.101.0.223", "a.example", 1, "151.101.0.223/30", 0, 0),
	/*
	 * b's A (its owner written out at 27) before a -> b, then a's own through a pointer
	 * to the question: answer order, a's not put before the one that waited for the chain
	 */
	OK("address_waits_for_chain", RQ(3, 0, 0) "A b.example 50 192.0.2.1; C @12 300 @27; "
	    "A @12 40 192.0.2.2", "a.example", 1, "192.0.2.1/50 192.0.2.2/40", 0, 0),
	OK("ttl_msb", RQ(3, 0, 0) "A @12 0x80000010 192.0.2.1; C @12 0xffffffff b.example; "
	    "A b.example 60 192.0.2.2", "a.example", 1, "192.0.2.1/0 192.0.2.2/0", 0, 0),
	OK("trailing", SIMPLE "; B 6a756e6b21", "a.example", 0,
	    "203.0.113.10/30 2001:db8::10/20", 4096, 5),
	OK("nxdomain_soa", "H 8183 1 0 1 0; Q nope.example 1; R @17 6 1 900 026e73c0110a686f73"
	    "746d6173746572c0110000000100000002000000030000000400000005", "nope.example", 0, "",
	    0, 0),
	OK("class_ch_ignored", RQ(1, 0, 0) "R @12 1 3 60 c0000201", "a.example", 0, "", 0, 0),
	OKB("many_answers", b_many_answers, "a.example", 0, ""),
	OKB("hops_max", b_hops_max, "a.example", 0, "192.0.2.1/60"),
	OK("label63", QQ "Q " L63 ".example 1", L63 ".example", 0, "", 0, 0),
	/* 3 * 64 + 62 + 1 */
	OK("name255", QQ "Q " L189 "." L61 " 1", L189 "." L61, 0, "", 0, 0),
	/*
	 * owners through a pointer to a name read before: a label of the question, a CNAME's
	 * target (the names the parser does not walk again), and the same pointer once more
	 */
	OK("owner_question_suffix", RQ(2, 0, 1) "A @14 60 192.0.2.1; A @14 60 192.0.2.2; "
	    "R @22 41 512 0 -", "a.example", 0, "", 512, 0),
	OK("owner_cname_target_twice", RQ(4, 0, 0) "C @12 300 b.example; A @39 60 192.0.2.1; "
	    "A @39 60 192.0.2.2; A @41 60 192.0.2.3", "a.example", 1,
	    "192.0.2.1/60 192.0.2.2/60", 0, 0),
	OK("real_938", REAL_938, "central.sonatype.com", 1,
	    "199.232.230.191/60 199.232.20.105/60 151.101.98.62/60 146.75.79.71/60", 1232, 0),
	BAD("short_header", "B 123401000001000000000000"),
	BAD("forward_pointer", RQ(1, 0, 0) "A @200 60 192.0.2.1"),
	BAD("self_pointer", RQ(1, 0, 0) "A @27 60 192.0.2.1"),
	BAD("pointer_into_own_name", RQ(1, 0, 0) "A b@27 60 192.0.2.1"),
	/* two owners pointing at each other: a loop needs a forward hop */
	BAD("pointer_loop", RQ(2, 0, 0) "A @43 60 192.0.2.1; A @27 60 192.0.2.2"),
	BAD("pointer_into_header", RQ(1, 0, 0) "A @4 60 192.0.2.1"),
	BAD("qname_pointer", QQ "Q @0 1"),
	/* into the text of the question's label: 'a' (97) read as a length */
	BAD("owner_into_question_label", RQ(1, 0, 0) "A @13 60 192.0.2.1"),
	/* into the text of a CNAME target's label: 'b' read as a length */
	BAD("owner_into_cname_label", RQ(2, 0, 0) "C @12 300 b.example; A @40 60 192.0.2.1"),
	/* 39: label of 2 that would swallow the owner's own pointer (40) and end at 42 */
	BAD("pointer_target_overlaps", RQ(2, 0, 0) "R @12 65280 1 60 02; R @39 1 1 60 c0000201"),
	BADB("hops_over", b_hops_over),
	/* a label "length" of 64 or more is label type 0b01 or 0b10, even with the bytes there */
	BAD("label64", QQ "Q " L63 "z.example 1"),
	BAD("label_type_0x80", QQ "Q " L63 L63 "zz.example 1"),
	BAD("name256", QQ "Q " L189 "." L60 ".a 1"),
	/* 254 bytes in the question, then "x" + a pointer to it */
	BAD("name256_via_pointer", "H 0100 1 1 0 0; Q " L189 "." L60 " 1; A x@12 60 192.0.2.1"),
	BAD("rdlength_past_end", SIMPLE "; S -1 01"),
	BAD("a_rdlength5", RQ(1, 0, 0) "R @12 1 1 60 c000020100"),
	BAD("aaaa_rdlength4", RQ(1, 0, 0) "R @12 28 1 60 c0000201"),
	BAD("a_rdlength5_additional", RQ(0, 0, 1) "R ns.example 1 1 60 c000020100"),
	BADB("a_bad_past_answers_max", b_many_answers_bad),
	BAD("cname_trailing_byte", RQ(1, 0, 0) "R @12 5 1 60 0162076578616d706c650000"),
	BAD("count_over", SIMPLE "; S 11 02"),
	BAD("two_opt", "H 0100 1 0 0 2; Q pypi.org 1; O 1232; O 1232"),
	BAD("opt_not_root", "H 0100 1 0 0 1; Q pypi.org 1; R @12 41 1232 0 -"),
};

static void
addrs_text(const struct dns_msg *msg, char *out, size_t outlen)
{
	size_t pos = 0;

	out[0] = '\0';
	for (unsigned int i = 0; i < msg->nb_addrs; i++) {
		char a[INET6_ADDRSTRLEN];

		assert_non_null(inet_ntop(msg->addrs[i].family == 4 ? AF_INET : AF_INET6,
		    msg->addrs[i].addr, a, sizeof(a)));
		pos += (size_t)snprintf(out + pos, outlen - pos, "%s%s/%u", i ? " " : "", a,
		    msg->addrs[i].ttl);
		assert_true(pos < outlen);
	}
}

static void
test_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct dns_case *t = &cases[c];
		struct dns_msg msg;
		struct mb m = { .len = 0 };
		char text[DNS_NAME_TEXT_MAX], addrs[1024];

		if (t->spec != NULL)
			mb_spec(&m, t->spec);
		else
			t->build(&m);
		print_message("case %s (%zu bytes)\n", t->name, m.len);
		assert_int_equal(dns_msg_parse(m.b, m.len, &msg), t->st);
		if (t->st != DNS_OK)
			continue;
		assert_int_equal(msg.has_question, t->qname != NULL);
		if (t->qname != NULL) {
			assert_true(dns_name_to_text(msg.qname, msg.qname_len, text,
			    sizeof(text)) >= 0);
			assert_string_equal(text, t->qname);
		}
		assert_int_equal(msg.chain_len, t->chain_len);
		addrs_text(&msg, addrs, sizeof(addrs));
		assert_string_equal(addrs, t->addrs);
		assert_int_equal(msg.edns, t->edns != 0);
		if (t->edns)
			assert_int_equal(msg.edns_udp_size, t->edns);
		assert_int_equal(m.len - msg.msg_len, t->trailing);
		/* Every prefix that cuts into the records is malformed, never a crash. */
		for (size_t k = 0; k < msg.msg_len; k++) {
			struct dns_msg cut;

			assert_int_equal(dns_msg_parse(m.b, k, &cut), DNS_MALFORMED);
		}
	}
}

static void
test_header_fields(void **state)
{
	struct mb m;
	struct dns_msg msg;

	(void)state;
	mb_spec(&m, "H a983 1 0 1 0; Q nope.example 1; R @17 6 1 900 -");	/* opcode 5 */
	assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
	assert_true(msg.qr);
	assert_int_equal(msg.opcode, 5);
	assert_int_equal(msg.rcode, DNS_RCODE_NXDOMAIN);
	assert_int_equal(msg.flags, 0xa983);
	assert_int_equal(msg.qtype, DNS_TYPE_A);
	assert_int_equal(msg.qclass, DNS_CLASS_IN);
	assert_int_equal(msg.question_end, 12 + 14 + 4);
	assert_int_equal(msg.nscount, 1);

	assert_int_equal(msg.id, 0x1234);

	mb_spec(&m, "H 0100 2 0 0 0; Q pypi.org 1; Q evil.example 1");
	assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
	assert_int_equal(msg.qdcount, 2);
	assert_int_equal(msg.question_end, m.len);

	mb_spec(&m, QQ "Q " L189 "." L61 " 1");
	assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
	assert_int_equal(msg.qname_len, DNS_NAME_WIRE_MAX);
	assert_int_equal(msg.qname[0], 63);
	assert_int_equal(msg.qname[DNS_NAME_WIRE_MAX - 1], 0);
}

/*
 * qname_upper: a capital anywhere in the question's name as it came, in a name shorter
 * than a word (byte by byte), in a whole word or only in the tail word; '[' and '`' next
 * to the capitals are none, and the copy is lower case whatever it says.
 */
static void
test_qname_upper(void **state)
{
	static const struct {
		const char *name;
		bool upper;
	} names[] = {
		{ "a.b", false }, { "a.B", true }, { "[.`{", false }, { "pypi.org", false },
		{ "Pypi.org", true }, { "pypi.orG", true }, { "abcdefgh.example", false },
		{ "abcdefgh.examplE", true }, { "abcdefGh.example", true }, { "[`[`[`[`.x[`", false },
	};
	struct mb m;
	struct dns_msg msg;
	char spec[128], text[DNS_NAME_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(spec, sizeof(spec), "H 8180 1 0 0 0; Q %s 1", names[i].name);
		mb_spec(&m, spec);
		assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
		assert_int_equal(msg.qname_upper, names[i].upper);
		assert_true(dns_name_to_text(msg.qname, msg.qname_len, text, sizeof(text)) >= 0);
		for (size_t k = 0; text[k] != '\0'; k++)
			assert_false(text[k] >= 'A' && text[k] <= 'Z');
	}
}

static void
test_addrs_max(void **state)
{
	struct mb m;
	struct dns_msg msg;

	(void)state;
	b_many_addrs(&m);
	assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
	assert_int_equal(msg.nb_addrs, DNS_ADDRS_MAX);
	assert_true(msg.addrs_more);
	assert_int_equal(msg.addrs[DNS_ADDRS_MAX - 1].addr[3], DNS_ADDRS_MAX - 1);

	mb_spec(&m, SIMPLE);
	assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
	assert_false(msg.addrs_more);
	assert_int_equal(msg.addrs[0].family, 4);
	assert_int_equal(msg.addrs[1].family, 6);
}

static void
test_tcp(void **state)
{
	struct mb a, b, seg = { .len = 0 };
	uint8_t *buf = seg.b;
	struct rd s, msg;
	struct dns_msg dm;

	(void)state;
	mb_spec(&a, QQ "Q pypi.org 1");
	mb_spec(&b, SIMPLE);
	mb_u16(&seg, (unsigned int)a.len);
	mb_bytes(&seg, a.b, a.len);
	mb_u16(&seg, (unsigned int)b.len);
	mb_bytes(&seg, b.b, b.len);

	/* Two messages in one segment. */
	s = rd_make(buf, seg.len);
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_OK);
	assert_true(msg.p == buf + 2 && msg.len == a.len);
	assert_int_equal(dns_msg_parse(msg.p, msg.len, &dm), DNS_OK);
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_OK);
	assert_true(msg.len == b.len);
	assert_int_equal(dns_msg_parse(msg.p, msg.len, &dm), DNS_OK);
	assert_int_equal(dm.nb_addrs, 2);
	assert_int_equal(s.len, 0);
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_NEED_MORE);

	/* One message arriving a byte at a time: NEED_MORE until it is whole. */
	for (size_t k = 0; k < a.len + 2; k++) {
		s = rd_make(buf, k);
		assert_int_equal(dns_tcp_next(&s, &msg), DNS_NEED_MORE);
		assert_true(s.p == buf && s.len == k);
	}
	s = rd_make(buf, a.len + 2);
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_OK);

	/* A length that cannot hold a header. */
	buf[0] = 0;
	buf[1] = DNS_HDR_LEN - 1;
	s = rd_make(buf, 2);
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_MALFORMED);
	assert_true(s.p == buf && s.len == 2);
	buf[1] = 0;
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_MALFORMED);
	buf[1] = DNS_HDR_LEN;
	assert_int_equal(dns_tcp_next(&s, &msg), DNS_NEED_MORE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_header_fields),
		cmocka_unit_test(test_qname_upper),
		cmocka_unit_test(test_addrs_max),
		cmocka_unit_test(test_tcp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
