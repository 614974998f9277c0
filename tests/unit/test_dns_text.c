/*
 * The DNS text helpers (sni/dns_text.c): names as presentation text, checked against
 * ldns, every byte escaped as ldns escapes it, the longest name and one past it; the
 * names of rcodes and types.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sni/dns.h"

struct text_case {
	const char *wire;
	size_t len;
	const char *text;	/* NULL: -1 */
};

#define W(s)	s, sizeof(s) - 1

/* Checked against ldns 1.8.3 (ldns_dname / ldns_rdf2str), trailing dot removed. */
static const struct text_case text_cases[] = {
	{ W("\0"), "." },
	{ W("\3abc\0"), "abc" },
	{ W("\4pypi\3org\0"), "pypi.org" },
	{ W("\5A_b-C\0"), "A_b-C" },
	{ W("\3a.b\1c\0"), "a\\.b.c" },
	{ W("\3a\\b\0"), "a\\\\b" },
	{ W("\5;()*@\0"), "\\;\\(\\)*@" },
	{ W("\4$\"~!\0"), "$\"~!" },
	{ W("\3a b\0"), "a\\032b" },
	{ W("\3\0\x7f\xff\0"), "\\000\\127\\255" },
	{ W("\1*\7example\0"), "*.example" },
	{ W(""), NULL },
	{ W("\3abc"), NULL },			/* no root */
	{ W("\3ab"), NULL },			/* label past the end */
	{ W("\3abc\0x"), NULL },		/* bytes after the root */
	{ W("\xc0\x0c"), NULL },		/* compressed */
	{ W("\x40"), NULL },
};

static void
test_name_to_text(void **state)
{
	char out[DNS_NAME_TEXT_MAX];
	uint8_t name[DNS_NAME_WIRE_MAX + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		const struct text_case *t = &text_cases[i];
		int n = dns_name_to_text((const uint8_t *)t->wire, t->len, out, sizeof(out));

		if (t->text == NULL) {
			assert_int_equal(n, -1);
			continue;
		}
		assert_string_equal(out, t->text);
		assert_int_equal(n, (int)strlen(t->text));
		/* Exactly n + 1 bytes fit; n do not. */
		assert_int_equal(dns_name_to_text((const uint8_t *)t->wire, t->len, out,
		    (size_t)n + 1), n);
		assert_int_equal(dns_name_to_text((const uint8_t *)t->wire, t->len, out,
		    (size_t)n), -1);
	}

	/* Every byte value, by ldns's rule. */
	for (unsigned int c = 0; c < 256; c++) {
		char want[8];
		const uint8_t w[] = { 1, (uint8_t)c, 0 };

		if (c <= 0x20 || c >= 0x7f)
			snprintf(want, sizeof(want), "\\%03u", c);
		else if (strchr(".;()\\", (int)c) != NULL)
			snprintf(want, sizeof(want), "\\%c", c);
		else
			snprintf(want, sizeof(want), "%c", c);
		assert_true(dns_name_to_text(w, sizeof(w), out, sizeof(out)) >= 0);
		assert_string_equal(out, want);
	}

	/* The longest name, every byte escaped, fits DNS_NAME_TEXT_MAX; 256 bytes do not. */
	memset(name, 0, sizeof(name));
	for (size_t at = 0; at + 64 < DNS_NAME_WIRE_MAX; at += 64)
		name[at] = 63;
	name[192] = 61;
	assert_true(dns_name_to_text(name, DNS_NAME_WIRE_MAX, out, sizeof(out)) > 900);
	name[192] = 62;
	assert_int_equal(dns_name_to_text(name, DNS_NAME_WIRE_MAX + 1, out, sizeof(out)), -1);
}

static void
test_strings(void **state)
{
	(void)state;
	assert_string_equal(dns_rcode_str(0), "NOERROR");
	assert_string_equal(dns_rcode_str(2), "SERVFAIL");
	assert_string_equal(dns_rcode_str(3), "NXDOMAIN");
	assert_string_equal(dns_rcode_str(4), "NOTIMP");
	assert_string_equal(dns_rcode_str(5), "REFUSED");
	assert_null(dns_rcode_str(15));
	assert_string_equal(dns_type_str(1), "A");
	assert_string_equal(dns_type_str(5), "CNAME");
	assert_string_equal(dns_type_str(28), "AAAA");
	assert_string_equal(dns_type_str(41), "OPT");
	assert_string_equal(dns_type_str(65), "HTTPS");
	assert_string_equal(dns_type_str(255), "ANY");
	assert_string_equal(dns_type_str(257), "CAA");
	assert_null(dns_type_str(0));
	assert_null(dns_type_str(0xff00));
	assert_string_equal(dns_status_str(DNS_OK), "ok");
	assert_string_equal(dns_status_str(DNS_NEED_MORE), "need_more");
	assert_string_equal(dns_status_str(DNS_MALFORMED), "malformed");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_to_text),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
