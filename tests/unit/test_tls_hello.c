/*
 * tls_hello_parse on valid hellos: each style the fixture builder makes (SNI, ALPN, ECH, a
 * post-quantum key share, several records), one real captured hello (a fixed vector), and
 * fragmentation at every offset. Every stream is also
 * checked prefix by prefix: no prefix of a valid hello may be anything but NEED_MORE.
 * Hellos the parser must refuse are in test_tls_hello_bad.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "sni/tls.h"
#include "tls_fixture.h"

/* ---- valid hellos ---------------------------------------------------------------------- */

static void
test_status_str(void **state)
{
	(void)state;
	assert_string_equal(sni_status_str(SNI_NEED_MORE), "need_more");
	assert_string_equal(sni_status_str(SNI_FOUND), "found");
	assert_string_equal(sni_status_str(SNI_ABSENT), "absent");
	assert_string_equal(sni_status_str(SNI_NOT_TLS), "not_tls");
	assert_string_equal(sni_status_str(SNI_MALFORMED), "malformed");
	assert_string_equal(sni_status_str((enum sni_status)99), "unknown");
}

static void
test_host_valid(void **state)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
		{ "example.com", true },
		{ "Example.COM", true },
		{ "a", true },
		{ "xn--bcher-kva.example", true },
		{ "1.2.3.4", true },
		{ "-x-.example", true },
		{ "example.com.", true },
		{ "", false },
		{ ".", false },
		{ "..", false },
		{ ".example.com", false },
		{ "example..com", false },
		{ "example.com..", false },
		{ "ex_ample.com", false },
		{ "ex ample.com", false },
		{ "example.com/", false },
		{ "exa*mple.com", false },
		{ "example.com:443", false },
	};
	char big[300];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (sni_host_valid((const uint8_t *)cases[i].name, strlen(cases[i].name)) !=
		    cases[i].ok)
			fail_msg("\"%s\": want %d", cases[i].name, cases[i].ok);
	assert_false(sni_host_valid(NULL, 0));
	assert_false(sni_host_valid((const uint8_t *)"a\0b", 3));
	assert_false(sni_host_valid((const uint8_t *)"caf\xc3\xa9.example", 13));
	memset(big, 'a', sizeof(big));
	assert_true(sni_host_valid((const uint8_t *)big, 63));
	assert_false(sni_host_valid((const uint8_t *)big, 64));
	for (size_t i = 63; i < sizeof(big); i += 64)
		big[i] = '.';			/* 63-byte labels */
	assert_true(sni_host_valid((const uint8_t *)big, 253));
	assert_false(sni_host_valid((const uint8_t *)big, 254));
	big[253] = '.';
	assert_true(sni_host_valid((const uint8_t *)big, 254));	/* 253 + root dot */
}

/* Every style, whole and every prefix; extra records after the hello are not its business. */
static void
test_styles(void **state)
{
	(void)state;
	for (size_t i = 0; i < tf_nb_styles; i++) {
		const struct tf_style *sty = &tf_styles[i];
		struct tf_hello h;
		struct tf_msg s;
		struct tls_hello out;
		size_t n;

		tf_hello_style(&h, sty);
		n = tf_wrap(&s, &h.m, sty->records);
		print_message("%s: %zu-byte hello, %zu-byte stream\n", sty->name, h.m.n, n);
		tf_check_prefixes(s.b, n, sty->sni != NULL ? SNI_FOUND : SNI_ABSENT);

		tf_hex(&s, "14 0303 0001 01  17 0303 0003 aabbcc");	/* CCS, early data */
		assert_int_equal(tf_parse(s.b, s.n, &out), sty->sni ? SNI_FOUND : SNI_ABSENT);
		assert_int_equal(out.stream_len, n);
		if (sty->sni != NULL)
			tf_assert_name(out.sni, sty->sni);
		assert_int_equal(out.ech, sty->ech);
		assert_int_equal(out.nb_alpn, sty->alpn != NULL ? 2 : 0);
		assert_false(out.alpn_more);
		if (sty->alpn != NULL) {
			tf_assert_name(out.alpn[0], "h2");
			tf_assert_name(out.alpn[1], "http/1.1");
		}
	}
}

static void
test_post_quantum_size(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	tf_hello_style(&h, &tf_styles[3]);
	tf_wrap(&s, &h.m, 1);
	assert_in_range(s.n, 1750, 1900);		/* two segments at a 1448-byte MSS */
	assert_int_equal(tf_parse(s.b, 1448, &out), SNI_NEED_MORE);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	tf_assert_name(out.sni, "files.pythonhosted.org");
	/* One record: the name aliases buf, scratch is not used. */
	assert_true(out.sni.p > s.b && out.sni.p < s.b + s.n);
}

/* A real Chrome-style hello with GREASE and ECH, kept as a fixed vector. */
static const char *const real_hello_hex[] = {
	"1603010200010001fc03032978a771c930855b631ad1948f0299eb4e16a59a4f11f7d67128c282e0",
	"af8d3e20c7798196ba10db8810acb3704ee6711cd31d68d3d7860195af91feb68f9f826600207a7a",
	"130113021303c02bc02fc02cc030cca9cca8c013c014009c009d002f003501000193eaea000044cd",
	"00050003026832fe0d00ba00000100019a00209f9acdc2a6d3800b8c72a4c82ec3117482336667c8",
	"45fd35c2426c4f62c4c6f00090ccfeb387221738e5ed06d5349fcd89e90d958dce292bf7fb3cd7d9",
	"3a89658d9af79679a9c5c2c5e6fa8ced3805ecf2dde7e58c19759a6cba343e89be0eae8d53036613",
	"31acfaaf1402ad64d80450ac77e2e2d76477ef615103f0377098e1995a43e3d5eaa4ee5398a4c97f",
	"84ea7224e387f26d583b27e42f08b0b9ffe30bd5dc67d07208316b94de643fd237ba892571ff0100",
	"010000230000001700000005000501000000000000001600140000116170692e6269746275636b65",
	"742e6f7267000a000a0008dada001d00170018002b0007069a9a03040303000d0012001004030804",
	"0401050308050501080606010010000e000c02683208687474702f312e310033002b0029dada0001",
	"00001d0020287a63270b6a5b98b7194e234062e2a6d2142e070aee17da53f63d1661dd4c73002d00",
	"020101000b00020100001b0003020002001200000015000800000000000000006a6a000100",
	NULL,
};

static void
real_hello(struct tf_msg *s)
{
	s->n = 0;
	for (size_t i = 0; real_hello_hex[i] != NULL; i++)
		tf_hex(s, real_hello_hex[i]);
}

static void
test_real_hello(void **state)
{
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	real_hello(&s);
	assert_int_equal(s.n, 517);
	tf_check_prefixes(s.b, s.n, SNI_FOUND);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	tf_assert_name(out.sni, "api.bitbucket.org");
	assert_int_equal(out.nb_alpn, 2);
	tf_assert_name(out.alpn[0], "h2");
	tf_assert_name(out.alpn[1], "http/1.1");
	assert_true(out.ech);
	assert_int_equal(out.stream_len, 517);
}

/* The captured hello re-cut into two records at every byte of its handshake message. */
static void
test_real_hello_split_everywhere(void **state)
{
	struct tf_msg s, hs, rec;
	struct tls_hello out;

	(void)state;
	real_hello(&s);
	hs.n = 0;
	tf_raw(&hs, s.b + 5, s.n - 5);
	for (size_t cut = 1; cut < hs.n; cut++) {
		tf_wrap_cuts(&rec, &hs, &cut, 1);
		assert_int_equal(tf_parse_exact(rec.b, rec.n - 1), SNI_NEED_MORE);
		assert_int_equal(tf_parse(rec.b, rec.n, &out), SNI_FOUND);
		tf_assert_name(out.sni, "api.bitbucket.org");
		assert_int_equal(out.stream_len, rec.n);
		assert_true(out.ech);
		/* Gathered: the name now aliases scratch. */
		assert_true(out.sni.p >= tf_scratch && out.sni.p < tf_scratch + sizeof(tf_scratch));
	}
}

/* Three records, both cuts at every pair of offsets (every 7th byte for speed). */
static void
test_fragmented_two_cuts(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;
	size_t cuts[2];

	(void)state;
	tf_hello_style(&h, &tf_styles[1]);
	for (cuts[0] = 1; cuts[0] < h.m.n; cuts[0] += 7) {
		for (cuts[1] = cuts[0] + 1; cuts[1] < h.m.n; cuts[1] += 3) {
			tf_wrap_cuts(&s, &h.m, cuts, 2);
			assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
			tf_assert_name(out.sni, "pypi.org");
			assert_int_equal(out.nb_alpn, 2);
			assert_int_equal(out.stream_len, s.n);
		}
	}
}

/* The 4-byte handshake header itself split over records, and one byte per record. */
static void
test_fragmented_header_and_bytes(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	size_t cuts[3] = { 1, 2, 3 };

	(void)state;
	tf_hello_style(&h, &tf_styles[0]);
	tf_wrap_cuts(&s, &h.m, cuts, 3);
	tf_check_prefixes(s.b, s.n, SNI_FOUND);
	tf_wrap(&s, &h.m, h.m.n);
	assert_int_equal(s.n, 6 * h.m.n);
	tf_check_prefixes(s.b, s.n, SNI_FOUND);
}

static void
test_trailing_dot(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_sni(&h.m, "pypi.org.");
	tf_hello_end(&h);
	tf_wrap(&s, &h.m, 1);
	tf_check_prefixes(s.b, s.n, SNI_FOUND);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	tf_assert_name(out.sni, "pypi.org");
}

/*
 * sni_lower says the name has no capitals, so the dataplane hashes it as it is: a name
 * with one must say it may have some, whichever byte it is.
 */
static void
test_sni_lower(void **state)
{
	static const struct {
		const char *name;
		bool lower;
	} cases[] = {
		{ "pypi.org", true }, { "a-1.example.", true }, { "Pypi.org", false },
		{ "pypi.orG", false }, { "pypi.Org.", false }, { "A", false }, { "Z9.z", false },
	};
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tf_hello_begin(&h);
		tf_ext_sni(&h.m, cases[i].name);
		tf_hello_end(&h);
		tf_wrap(&s, &h.m, 1);
		assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
		if (out.sni_lower != cases[i].lower)
			fail_msg("%s: sni_lower %d", cases[i].name, out.sni_lower);
	}
}

static void
test_host_limits(void **state)
{
	char name[256];

	(void)state;
	memset(name, 'a', sizeof(name));
	tf_expect_host(name, 63, SNI_FOUND);
	for (size_t i = 63; i < sizeof(name); i += 64)
		name[i] = '.';
	tf_expect_host(name, 253, SNI_FOUND);
	name[253] = '.';
	tf_expect_host(name, 254, SNI_FOUND);		/* 253 and the root dot */
	tf_expect_host("A-1.Example.COM", 15, SNI_FOUND);
}

static void
test_absent(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_common(&h.m);
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_ABSENT);

	tf_hello_begin(&h);			/* an empty extensions block */
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_ABSENT);

	tf_hello_begin_with(&h, 0, 2, 1);	/* no extensions block at all (RFC 5246) */
	tf_hello_end_no_exts(&h);
	tf_expect_hello(&h, SNI_ABSENT);
}

static void
test_alpn_values(void **state)
{
	static const char *const three[] = { "h3", "h2", "http/1.1", NULL };
	static const char *const many[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
		NULL };
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_alpn(&h.m, three);
	tf_ext_sni(&h.m, "example.org");
	tf_hello_end(&h);
	tf_wrap(&s, &h.m, 1);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	assert_int_equal(out.nb_alpn, 3);
	assert_false(out.alpn_more);
	for (size_t i = 0; i < 3; i++)
		tf_assert_name(out.alpn[i], three[i]);

	tf_hello_begin(&h);
	tf_ext_alpn(&h.m, many);
	tf_hello_end(&h);
	tf_wrap(&s, &h.m, 1);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_ABSENT);
	assert_int_equal(out.nb_alpn, TLS_ALPN_MAX);
	assert_true(out.alpn_more);
	tf_assert_name(out.alpn[TLS_ALPN_MAX - 1], "h");
}

static void
test_ech_flag(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_sni(&h.m, "cover.example");
	tf_ext_ech(&h.m);
	tf_hello_end(&h);
	tf_wrap(&s, &h.m, 1);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	assert_true(out.ech);
	tf_assert_name(out.sni, "cover.example");	/* judged on the outer SNI */

	tf_hello_begin(&h);
	tf_ext_sni(&h.m, "cover.example");
	tf_ext_hex(&h.m, 0xfe0c, "00");			/* a draft's code point is not ECH */
	tf_hello_end(&h);
	tf_wrap(&s, &h.m, 1);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	assert_false(out.ech);
}

/* A record bigger than a segment is just bytes that have not all arrived yet. */
static void
test_need_more(void **state)
{
	struct tls_hello out;

	(void)state;
	assert_int_equal(tf_parse((const uint8_t *)"", 0, &out), SNI_NEED_MORE);
	assert_int_equal(tf_parse((const uint8_t *)"\x16", 1, &out), SNI_NEED_MORE);
	assert_int_equal(tf_parse((const uint8_t *)"\x16\x03\x01\x3f\xfb\x01", 6, &out),
	    SNI_NEED_MORE);
	/* A 2^14-byte first record is legal TLS but ends past TLS_HELLO_MAX. */
	assert_int_equal(tf_parse((const uint8_t *)"\x16\x03\x01\x40\x00", 5, &out),
	    SNI_MALFORMED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_str),
		cmocka_unit_test(test_host_valid),
		cmocka_unit_test(test_styles),
		cmocka_unit_test(test_post_quantum_size),
		cmocka_unit_test(test_real_hello),
		cmocka_unit_test(test_real_hello_split_everywhere),
		cmocka_unit_test(test_fragmented_two_cuts),
		cmocka_unit_test(test_fragmented_header_and_bytes),
		cmocka_unit_test(test_trailing_dot),
		cmocka_unit_test(test_sni_lower),
		cmocka_unit_test(test_host_limits),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_alpn_values),
		cmocka_unit_test(test_ech_flag),
		cmocka_unit_test(test_need_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
