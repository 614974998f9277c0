/*
 * struct dns_msg's plain: what the answer editor's scan would find, found as the parser
 * reads the records. Every plain response, kept whole, is not written and is what
 * writing it anew gives; every other case is one that says why not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dns_builder.h"
#include "dns_spec.h"
#include "sni/dns.h"
#include "sni/dns_edit.h"

/* A response parsed as plain (struct dns_msg), or not: the case, and why. */
struct plain_case {
	const char *name;
	const char *spec;
	void (*build)(struct mb *);
	bool plain;
};

static const struct plain_case plain_cases[] = {
	{ "simple", SIMPLE, NULL, true },
	{ "real_938", REAL_938, NULL, true },
	{ "chain3", RQ(6, 0, 0) "C @12 300 b.example; C @39 60 c@14; A @39 1000 192.0.2.9; "
	    "C @62 120 d@14; A @94 200 192.0.2.1; A @94 30 192.0.2.2", NULL, true },
	{ "out_of_order", RQ(3, 0, 0) "A c.example 50 192.0.2.3; C b@29 70 @27; C @12 80 @52",
	    NULL, true },
	{ "trailing", SIMPLE "; B 6a756e6b21", NULL, true },
	{ "query", QQ "Q pypi.org 1", NULL, false },
	{ "two_questions", "H 8180 2 1 0 0; Q a.example 1; Q b.example 1; A @12 60 192.0.2.1",
	    NULL, false },
	/* a negative answer's SOA: its names point at labels written before them */
	{ "soa", "H 8183 1 0 1 0; Q nope.example 1; R @17 6 1 900 026e73c0110a686f73"
	    "746d6173746572c0110000000100000002000000030000000400000005", NULL, true },
	{ "soa_inline", RQ(0, 1, 1) "R @14 6 1 60 026e73076578616d706c65000a686f73746d6173"
	    "746572c02a0000000100000002000000030000000400000005; O 1232", NULL, true },
	{ "soa_after_cname", RQ(1, 1, 0) "C @12 60 b@14; R @14 6 1 60 c027c00e0000000100000002"
	    "000000030000000400000005", NULL, true },
	{ "soa_empty", RQ(0, 1, 0) "R @14 6 1 60 -", NULL, true },
	{ "soa_in_answer", RQ(1, 0, 0) "R @12 6 1 60 c00cc00c000000010000000200000003000000040000"
	    "0005", NULL, true },
	/* an SOA name pointing where no name's label starts (the A's RDATA): written anew */
	{ "soa_into_rdata", RQ(1, 1, 0) "A @12 60 1.98.0.0; R @14 6 1 60 c027c00e000000010000"
	    "00020000000300000004" "00000005", NULL, false },
	/* an SOA name pointing into a label, at no label length: the editor's scan refuses */
	{ "soa_into_label", RQ(0, 1, 0) "R @14 6 1 60 c00fc00e00000001000000020000000300000004"
	    "00000005", NULL, false },
	/* an SOA one u32 short, or one too long, or a name cut: the editor's scan refuses */
	{ "soa_short", RQ(0, 1, 0) "R @14 6 1 60 c00ec00e000000010000000200000003000000"
	    "04", NULL, false },
	{ "soa_long", RQ(0, 1, 0) "R @14 6 1 60 c00ec00e00000001000000020000000300000004"
	    "0000000500", NULL, false },
	{ "soa_name_cut", RQ(0, 1, 0) "R @14 6 1 60 c00e03", NULL, false },
	{ "soa_forward", RQ(0, 1, 0) "R @14 6 1 60 c03ac00e00000001000000020000000300000004"
	    "00000005", NULL, false },
	{ "https", RQ(1, 0, 0) "R @12 65 1 60 000100", NULL, false },
	{ "off_chain", RQ(2, 0, 0) "A @12 60 192.0.2.1; A b.example 60 192.0.2.2", NULL, false },
	{ "a_additional", RQ(1, 0, 1) "A @12 60 192.0.2.1; A @12 60 192.0.2.2", NULL, false },
	{ "a_class_ch", RQ(1, 0, 0) "R @12 1 3 60 c0000201", NULL, false },
	/* the CNAME's target points into the A's RDATA (39: "b", the root), no name's label */
	{ "pointer_into_rdata", RQ(2, 0, 0) "A @12 60 1.98.0.0; C @12 60 x@39", NULL, false },
	{ "addrs_more", NULL, b_many_addrs, false },
	{ "answers_max", NULL, b_many_answers, false },
};

/*
 * plain is what the answer editor would find: every plain response, kept whole, is not
 * written, and is what writing it anew gives; every other case is one that says why not.
 */
static bool
plain_keep_all(void *arg, const struct dns_addr *a)
{
	(void)arg;
	(void)a;
	return true;
}

static void
test_plain(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(plain_cases) / sizeof(plain_cases[0]); c++) {
		const struct plain_case *t = &plain_cases[c];
		static uint8_t scratch[sizeof(((struct mb *)0)->b)], again[sizeof(scratch)];
		struct dns_msg msg;
		struct mb m = { .len = 0 };
		size_t n, n2;

		if (t->spec != NULL)
			mb_spec(&m, t->spec);
		else
			t->build(&m);
		print_message("plain case %s\n", t->name);
		assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
		assert_int_equal(msg.plain, t->plain);
		if (!t->plain)
			continue;
		memcpy(again, m.b, m.len);
		assert_int_equal(dns_edit_parsed(m.b, m.len, &msg, m.len, 0, plain_keep_all, NULL,
		    scratch, sizeof(scratch), &n, NULL), DNS_EDIT_OK);
		assert_int_equal(n, msg.msg_len);
		assert_memory_equal(m.b, again, m.len);
		assert_int_equal(dns_edit(again, m.len, m.len, DNS_EDIT_REBUILD, plain_keep_all,
		    NULL, scratch, sizeof(scratch), &n2, NULL), DNS_EDIT_OK);
		assert_int_equal(n2, n);
		assert_memory_equal(again, m.b, n);
	}
}

/* keep() by the bits of *arg: the i-th address asked is kept when bit i is set */
static bool
plain_keep_mask(void *arg, const struct dns_addr *a)
{
	uint64_t *mask = arg;
	bool yes = (*mask & 1) != 0;

	(void)a;
	*mask >>= 1;
	return yes;
}

/*
 * dns_edit_asked(), keep()'s answers asked by its caller, edits a plain response as
 * dns_edit_parsed() does asking keep() itself: the same bytes, length and counts, for every
 * address kept, none, and every other one; a response that is not plain it refuses.
 */
static void
test_asked(void **state)
{
	static const uint64_t masks[] = {
		UINT64_MAX, 0, 0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull,
	};

	(void)state;
	for (size_t c = 0; c < sizeof(plain_cases) / sizeof(plain_cases[0]); c++) {
		const struct plain_case *t = &plain_cases[c];
		static uint8_t scratch[sizeof(((struct mb *)0)->b)], mine[sizeof(scratch)];
		static uint8_t theirs[sizeof(scratch)];
		struct dns_edit_stats st, st2;
		struct dns_msg msg;
		struct mb m = { .len = 0 };

		if (t->spec != NULL)
			mb_spec(&m, t->spec);
		else
			t->build(&m);
		assert_int_equal(dns_msg_parse(m.b, m.len, &msg), DNS_OK);
		assert_int_equal(dns_edit_plain(&msg, m.len, m.len, 0, scratch, sizeof(scratch)),
		    t->plain);
		for (size_t k = 0; k < sizeof(masks) / sizeof(masks[0]); k++) {
			uint64_t mask = masks[k], kept = masks[k] & ((1ull << msg.nb_addrs) - 1);
			enum dns_edit_status rc;
			size_t n = 0, n2 = 0;

			print_message("asked case %s mask %zu\n", t->name, k);
			memcpy(mine, m.b, m.len);
			rc = dns_edit_asked(mine, m.len, &msg, m.len, 0, kept, scratch,
			    sizeof(scratch), &n2, &st2);
			if (!t->plain) {
				assert_int_equal(rc, DNS_EDIT_NO_ROOM);
				assert_memory_equal(mine, m.b, m.len);
				continue;
			}
			memcpy(theirs, m.b, m.len);
			assert_int_equal(dns_edit_parsed(theirs, m.len, &msg, m.len, 0,
			    plain_keep_mask, &mask, scratch, sizeof(scratch), &n, &st), rc);
			assert_int_equal(rc, DNS_EDIT_OK);
			assert_int_equal(n2, n);
			assert_memory_equal(mine, theirs, n);
			assert_int_equal(st2.addrs_kept, st.addrs_kept);
			assert_int_equal(st2.addrs_removed, st.addrs_removed);
			assert_int_equal(st2.rewritten, st.rewritten);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
