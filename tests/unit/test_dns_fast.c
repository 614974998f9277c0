/*
 * dns_msg_parse()'s short way for the usual response (sni/dns_fast.h) against the full
 * reader alone (dns_msg_parse_full()): the same status and every field the same, for
 * responses of the usual shape and for each way one can leave it, each also cut at every
 * shorter length. The fuzz target holds the two to one result on its corpus too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dns_builder.h"
#include "dns_int.h"
#include "dns_spec.h"
#include "sni/dns.h"

/* n CNAMEs in chain order, each owned by a pointer to the last target, then an A of it. */
static void
b_chain(struct mb *m, int n)
{
	char owner[16], label[16];
	size_t last = DNS_HDR_LEN, at;

	mb_resp(m, (unsigned int)n + 1, 0, 0);
	for (int i = 0; i < n; i++) {
		snprintf(owner, sizeof(owner), "@%zu", last);
		at = mb_rr(m, owner, DNS_TYPE_CNAME, DNS_CLASS_IN, 600 - (uint32_t)i);
		snprintf(label, sizeof(label), "n%d", i);
		mb_u8(m, (unsigned int)strlen(label));
		mb_bytes(m, label, strlen(label));
		mb_u16(m, 0xc000 | 14);		/* "example" of the question */
		mb_rr_end(m, at);
		last = at;
	}
	snprintf(owner, sizeof(owner), "@%zu", last);
	mb_a(m, owner, 900, "192.0.2.1");
}

static void
b_chain_max(struct mb *m)
{
	b_chain(m, DNS_CHAIN_MAX);
}

static void
b_chain_over(struct mb *m)
{
	b_chain(m, DNS_CHAIN_MAX + 1);
}

struct fast_case {
	const char *name;
	const char *spec;
	void (*build)(struct mb *);
};

static const struct fast_case fast_cases[] = {
	{ "simple", SIMPLE, NULL },
	{ "real_938", REAL_938, NULL },
	{ "trailing", SIMPLE "; B 6a756e6b21", NULL },
	{ "question_upper", "H 8180 1 1 0 0; Q A.Example 1; A @12 60 192.0.2.1", NULL },
	/* a's own, a -> b, b's, b -> c (c@14), c's AAAA: its TTL the chain's least */
	{ "in_order", RQ(5, 0, 1) "A @12 60 192.0.2.7; C @12 300 b.example; "
	    "A @55 100 192.0.2.1; C @55 60 c@14; A @94 500 2001:db8::1; O 1232", NULL },
	{ "ttl_msb", RQ(2, 0, 0) "C @12 4294967295 b.example; A @39 60 192.0.2.1", NULL },
	{ "nxdomain_cname", "H 8183 1 1 0 0; Q a.example 1; C @12 60 b.example", NULL },
	{ "nodata_bare", "H 8180 1 0 0 0; Q a.example 1", NULL },
	{ "chain_max", NULL, b_chain_max },
	{ "chain_over", NULL, b_chain_over },
	{ "addrs_over", NULL, b_many_addrs },
	{ "answers_over", NULL, b_many_answers },
	/* a target the same name as a link, spelled out: the chain ends there */
	{ "loop_spelled", RQ(3, 0, 0) "C @12 60 b.example; C @39 60 A.EXAMPLE; "
	    "A @62 60 192.0.2.1", NULL },
	/* a target that is a lone pointer: an owner pointing at it points at no label */
	{ "target_pointer", RQ(2, 0, 0) "C @12 60 @14; A @39 60 192.0.2.1", NULL },
	/* a target pointing into an A's RDATA ("b", the root): written anew by the editor */
	{ "target_unmarked", RQ(3, 0, 0) "A @12 60 1.98.0.0; C @12 60 x@39; "
	    "A @55 60 192.0.2.1", NULL },
	{ "target_junk", RQ(1, 0, 0) "R @12 5 1 60 0162c00e00", NULL },
	{ "target_empty", RQ(1, 0, 0) "R @12 5 1 60 -", NULL },
	{ "class_ch", RQ(1, 0, 0) "R @12 1 3 60 c0000201", NULL },
	{ "cname_class_ch", RQ(2, 0, 0) "R @12 5 3 60 0162c00e; A @39 60 192.0.2.1", NULL },
	{ "a_len5", RQ(1, 0, 0) "R @12 1 1 60 c000020101", NULL },
	{ "aaaa_len4", RQ(1, 0, 0) "R @12 28 1 60 c0000201", NULL },
	{ "https", RQ(2, 0, 0) "R @12 65 1 60 000100; A @12 60 192.0.2.1", NULL },
	{ "owner_earlier_link", RQ(3, 0, 0) "C @12 60 b.example; A @12 60 192.0.2.1; "
	    "A @39 50 192.0.2.2", NULL },
	{ "second_cname", RQ(3, 0, 0) "C @12 60 b.example; C @12 60 c.example; "
	    "A @39 60 192.0.2.1", NULL },
	{ "owner_spelled", RQ(1, 0, 0) "A a.example 60 192.0.2.1", NULL },
	{ "opt_owner", RQ(1, 0, 1) "A @12 60 192.0.2.1; R @12 41 512 0 -", NULL },
	/* an owner of one label, "\0", whose next length byte would read as OPT's type */
	{ "opt_owner_label", RQ(1, 0, 1) "A @12 60 192.0.2.1; B 0100291000000000000000", NULL },
	{ "a_additional", RQ(1, 0, 1) "A @12 60 192.0.2.1; A @12 60 192.0.2.2", NULL },
	{ "a_additional_root", RQ(1, 0, 1) "A @12 60 192.0.2.1; R . 1 1 60 c0000201", NULL },
	{ "two_opt", RQ(1, 0, 2) "A @12 60 192.0.2.1; O 512; O 512", NULL },
	{ "soa", "H 8183 1 0 1 0; Q nope.example 1; R @17 6 1 900 026e73c0110a686f73"
	    "746d6173746572c0110000000100000002000000030000000400000005", NULL },
	{ "soa_inline", RQ(0, 1, 1) "R @14 6 1 60 026e73076578616d706c65000a686f73746d6173"
	    "746572c02a0000000100000002000000030000000400000005; O 1232", NULL },
	{ "soa_after_cname", RQ(1, 1, 0) "C @12 60 b@14; R @14 6 1 60 c027c00e0000000100000002"
	    "000000030000000400000005", NULL },
	{ "soa_empty", RQ(0, 1, 0) "R @14 6 1 60 -", NULL },
	{ "soa_short", RQ(0, 1, 0) "R @14 6 1 60 c00ec00e000000010000000200000003000000"
	    "04", NULL },
	{ "soa_into_rdata", RQ(1, 1, 0) "A @12 60 1.98.0.0; R @14 6 1 60 c027c00e000000010000"
	    "00020000000300000004" "00000005", NULL },
	/* an owner pointing at a name in an A's RDATA: well formed, no label written before */
	{ "soa_owner_unmarked", RQ(1, 1, 0) "A @12 60 1.98.0.0; R @39 6 1 60 -", NULL },
	{ "soa_owner_forward", RQ(0, 1, 0) "R @40 6 1 60 -", NULL },
	/* an NS shaped like an SOA: a name the parser does not read */
	{ "ns_authority", RQ(0, 1, 0) "R @14 2 1 60 c00ec00e0000000100000002000000030000000400"
	    "000005", NULL },
	{ "two_authority", RQ(0, 2, 0) "R @14 6 1 60 -; R @14 6 1 60 -", NULL },
	{ "https_cname", RQ(3, 0, 0) "C @12 60 b.example; R @39 65 1 60 000100; "
	    "A @39 60 192.0.2.1", NULL },
	{ "txt_class_ch", RQ(2, 0, 0) "R @12 16 3 60 00; A @12 60 192.0.2.1", NULL },
	{ "soa_in_answer", RQ(1, 0, 0) "R @12 6 1 60 c00cc00c00000001000000020000000300000004"
	    "00000005", NULL },
	{ "opt_in_answer", RQ(1, 0, 0) "R @12 41 512 0 -", NULL },
	{ "query", QQ "Q pypi.org 1", NULL },
	{ "two_questions", "H 8180 2 1 0 0; Q a.example 1; Q b.example 1; A @12 60 192.0.2.1",
	    NULL },
};

static void
same_msg(const char *name, size_t len, const struct dns_msg *a, const struct dns_msg *b)
{
	bool same = a->id == b->id && a->flags == b->flags && a->qr == b->qr &&
	    a->opcode == b->opcode && a->rcode == b->rcode && a->qdcount == b->qdcount &&
	    a->ancount == b->ancount && a->nscount == b->nscount && a->arcount == b->arcount &&
	    a->has_question == b->has_question && a->qname_len == b->qname_len &&
	    memcmp(a->qname, b->qname, a->qname_len) == 0 && a->qname_upper == b->qname_upper &&
	    a->qtype == b->qtype && a->qclass == b->qclass &&
	    a->question_end == b->question_end && a->edns == b->edns &&
	    a->edns_udp_size == b->edns_udp_size && a->nb_addrs == b->nb_addrs &&
	    a->addrs_more == b->addrs_more && a->chain_len == b->chain_len &&
	    a->an_owners_inline == b->an_owners_inline && a->plain == b->plain &&
	    a->msg_len == b->msg_len;

	for (unsigned int i = 0; same && i < a->nb_addrs; i++)
		same = a->addrs[i].family == b->addrs[i].family &&
		    a->addrs[i].ttl == b->addrs[i].ttl &&
		    memcmp(a->addrs[i].addr, b->addrs[i].addr, 16) == 0;
	if (!same)
		fail_msg("%s at %zu bytes: the short way's result is not the full reader's", name,
		    len);
}

static void
test_same(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(fast_cases) / sizeof(fast_cases[0]); c++) {
		const struct fast_case *fc = &fast_cases[c];
		struct dns_msg a, b;
		struct mb m;

		if (fc->spec != NULL)
			mb_spec(&m, fc->spec);
		else
			fc->build(&m);
		for (size_t len = m.len + 1; len-- > 0;) {
			enum dns_status st = dns_msg_parse(m.b, len, &a);

			if (dns_msg_parse_full(m.b, len, &b) != st)
				fail_msg("%s at %zu bytes: not the full reader's status", fc->name,
				    len);
			if (st == DNS_OK)
				same_msg(fc->name, len, &a, &b);
		}
	}
}

/* The usual shape's result itself: the chain's TTLs and the answer order. */
static void
test_in_order(void **state)
{
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	struct dns_msg a;
	struct mb m;

	(void)state;
	mb_spec(&m, fast_cases[4].spec);
	assert_int_equal(dns_msg_parse(m.b, m.len, &a), DNS_OK);
	assert_true(a.plain && a.edns && a.edns_udp_size == 1232);
	assert_int_equal(a.chain_len, 2);
	assert_int_equal(a.nb_addrs, 3);
	assert_int_equal(a.addrs[0].ttl, 60);
	assert_int_equal(a.addrs[1].ttl, 100);
	assert_int_equal(a.addrs[2].ttl, 60);
	assert_int_equal(a.addrs[2].family, 6);
	assert_memory_equal(a.addrs[2].addr, v6, 16);
	assert_int_equal(a.msg_len, m.len);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
