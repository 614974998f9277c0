/*
 * tls_hello_parse on hellos whose extensions break the rules (RFC 8446 s4.2): the
 * extensions block against the message, an extension against the block, a type twice,
 * and the server_name (RFC 6066 s3) and ALPN (RFC 7301 s3.1) data they carry. Each is
 * one visible change to a valid hello from the fixture builder (tls_fixture.h), checked
 * prefix by prefix as test_tls_hello_bad.c's are.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sni/tls.h"
#include "tls_fixture.h"

/* The extensions' length disagrees with the message, both ways. */
static void
test_malformed_extensions_length(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_style(&h, &tf_styles[1]);
	h.m.b[h.exts_at + 1]++;
	tf_expect_hello(&h, SNI_MALFORMED);
	tf_hello_style(&h, &tf_styles[1]);
	h.m.b[h.exts_at + 1]--;
	tf_expect_hello(&h, SNI_MALFORMED);
	tf_hello_begin_with(&h, 0, 2, 1);	/* one byte where a length should be */
	tf_hello_end_no_exts(&h);
	tf_u8(&h.m, 0);
	tf_close(&h.m, h.hs_at, 3);
	tf_expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_trailing_after_extensions(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_style(&h, &tf_styles[0]);
	tf_hex(&h.m, "0000");
	tf_close(&h.m, h.hs_at, 3);
	tf_expect_hello(&h, SNI_MALFORMED);
}

/* One extension's length runs past the extensions block. */
static void
test_malformed_extension_length(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_sni(&h.m, "example.com");
	tf_hex(&h.m, "0017 0004 00");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
}

/*
 * The last extension's length runs past the block by 1 to 65535 bytes: a valid server_name
 * (whose place the walk notes), a type past 63 and an ALPN. The walk leaves its cursor past
 * the end and must fail there, never judge what it noted.
 */
static void
test_malformed_extension_overrun(void **state)
{
	static const unsigned int over[] = { 1, 2, 3, 4, 5, 8, 255, 256, 4096 };
	static const uint16_t types[] = { 0x0000, 0x0010, 0x0a0a, 0xfe0d };

	(void)state;
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
			struct tf_hello h;
			unsigned int len;
			size_t at;

			tf_hello_begin(&h);
			tf_ext_common(&h.m);
			at = h.m.n;
			if (types[t] == 0x0000)
				tf_ext_sni(&h.m, "allowed.example");
			else if (types[t] == 0x0010)
				tf_ext_hex(&h.m, 0x0010, "0003 02 6832");
			else
				tf_ext_hex(&h.m, types[t], "00");
			/* its length, as written, and over more */
			len = (unsigned int)(h.m.b[at + 2] << 8 | h.m.b[at + 3]) +
			    over[i];

			h.m.b[at + 2] = (uint8_t)(len >> 8);
			h.m.b[at + 3] = (uint8_t)len;
			tf_hello_end(&h);
			tf_expect_hello(&h, SNI_MALFORMED);
		}
}

static void
test_malformed_duplicate_server_name(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin(&h);
	tf_ext_sni(&h.m, "allowed.example");
	tf_ext_common(&h.m);
	tf_ext_sni(&h.m, "allowed.example");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_duplicate_extension(void **state)
{
	static const uint16_t types[] = { 0x0010, 0xfe0d, 0x0017, 0x0a0a, 0xffff, 0x0001 };
	struct tf_hello h;

	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		tf_hello_begin(&h);
		tf_ext_sni(&h.m, "example.com");
		tf_ext_hex(&h.m, types[i], "0003 02 6832");
		tf_ext_common(&h.m);
		tf_ext_hex(&h.m, types[i], "0003 02 6832");
		tf_hello_end(&h);
		tf_expect_hello(&h, SNI_MALFORMED);
	}
}

/*
 * Types past 63 are listed by the walk and checked after it: a few through a word of
 * hashed bits (two types may share a bit: 0x1ef6 and ECH do), many through a set.
 */
static void
test_rare_extension_duplicates(void **state)
{
	static const uint16_t few[] = { 0x1ef6, 0x0a0a, 0xff01, 0x4469 };
	struct tf_hello h;

	(void)state;
	for (int dup = 0; dup < 2; dup++) {		/* sharing a bit is no duplicate */
		tf_hello_begin(&h);
		tf_ext_sni(&h.m, "example.com");
		for (size_t i = 0; i < sizeof(few) / sizeof(few[0]); i++)
			tf_ext_hex(&h.m, few[i], "");
		tf_ext_hex(&h.m, dup ? few[0] : 0xfe0d, "");
		tf_hello_end(&h);
		tf_expect_hello(&h, dup ? SNI_MALFORMED : SNI_FOUND);
	}
	for (int dup = 0; dup < 2; dup++) {		/* past the pairwise few */
		tf_hello_begin(&h);
		tf_ext_sni(&h.m, "example.com");
		for (uint16_t t = 0; t < 40; t++)
			tf_ext_hex(&h.m, (uint16_t)(0x1000 + 97 * t), "");
		tf_ext_hex(&h.m, dup ? 0x1000 + 97 * 39 : 0xfe0d, "");
		tf_hello_end(&h);
		tf_expect_hello(&h, dup ? SNI_MALFORMED : SNI_FOUND);
	}
}

static void
test_malformed_sni_second_entry(void **state)
{
	(void)state;
	tf_expect_ext(0x0000, "001c 00 000b 6578616d706c652e636f6d 00 000b 6578616d706c652e6f7267",
	    SNI_MALFORMED);
	/* Same name twice is no better. */
	tf_expect_ext(0x0000, "001c 00 000b 6578616d706c652e636f6d 00 000b 6578616d706c652e636f6d",
	    SNI_MALFORMED);
	/* A second entry of another type. */
	tf_expect_ext(0x0000, "0014 00 000b 6578616d706c652e636f6d 01 0003 616263", SNI_MALFORMED);
}

static void
test_malformed_sni_name_type(void **state)
{
	(void)state;
	tf_expect_ext(0x0000, "000e 01 000b 6578616d706c652e636f6d", SNI_MALFORMED);
}

static void
test_malformed_sni_empty_name(void **state)
{
	(void)state;
	tf_expect_host("", 0, SNI_MALFORMED);
}

static void
test_malformed_sni_empty_ext(void **state)
{
	(void)state;
	tf_expect_ext(0x0000, "", SNI_MALFORMED);		/* the server's form */
	tf_expect_ext(0x0000, "0000", SNI_MALFORMED);		/* an empty list */
}

static void
test_malformed_sni_nul(void **state)
{
	(void)state;
	tf_expect_host("example.com\0.evil", 17, SNI_MALFORMED);
	tf_expect_host("\0", 1, SNI_MALFORMED);
	tf_expect_host("example.com\0", 12, SNI_MALFORMED);
}

static void
test_malformed_sni_bad_byte(void **state)
{
	static const char bad[] = "_ /:*@%\\\"'`!?#\t\r\n\x7f\x80\xc3\xff";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) - 1; i++) {
		char name[] = "ex?mple.com";

		name[2] = bad[i];
		tf_expect_host(name, sizeof(name) - 1, SNI_MALFORMED);
	}
}

static void
test_malformed_sni_label_too_long(void **state)
{
	char name[80];

	(void)state;
	memset(name, 'a', 64);
	memcpy(name + 64, ".com", 4);
	tf_expect_host(name, 68, SNI_MALFORMED);
}

static void
test_malformed_sni_empty_label(void **state)
{
	(void)state;
	tf_expect_host("example..com", 12, SNI_MALFORMED);
	tf_expect_host("example.com..", 13, SNI_MALFORMED);	/* only one trailing dot */
	tf_expect_host(".", 1, SNI_MALFORMED);
}

static void
test_malformed_sni_leading_dot(void **state)
{
	(void)state;
	tf_expect_host(".example.com", 12, SNI_MALFORMED);
}

static void
test_malformed_sni_name_too_long(void **state)
{
	char name[256];

	(void)state;
	memset(name, 'a', sizeof(name));
	for (size_t i = 63; i < sizeof(name); i += 64)
		name[i] = '.';
	name[253] = 'a';
	tf_expect_host(name, 254, SNI_MALFORMED);
	name[254] = '.';
	tf_expect_host(name, 255, SNI_MALFORMED);
}

/* Each length inside server_name off by one against its container, both ways. */
static void
test_malformed_sni_lengths(void **state)
{
	static const char *const bodies[] = {
		"000f 00 000b 6578616d706c652e636f6d",		/* list longer than ext */
		"000d 00 000b 6578616d706c652e636f6d",		/* list shorter than its entry */
		"000e 00 000c 6578616d706c652e636f6d",		/* host longer than list */
		"000e 00 000a 6578616d706c652e636f6d",		/* host shorter than list */
		"000e 00 000b 6578616d706c652e636f6d 00",	/* ext longer than list */
		"00",						/* a truncated length */
	};

	(void)state;
	tf_expect_ext(0x0000, "000e 00 000b 6578616d706c652e636f6d", SNI_FOUND);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		tf_expect_ext(0x0000, bodies[i], SNI_MALFORMED);
}

static void
test_malformed_alpn(void **state)
{
	static const char *const bodies[] = {
		"",				/* no list */
		"0000",				/* an empty list */
		"0003 00 0168",			/* an empty protocol id */
		"0004 02 6832",			/* list longer than ext */
		"0002 02 6832",			/* list shorter than its id */
		"0003 03 6832",			/* id longer than list */
		"0003 02 6832 00",		/* ext longer than list */
	};

	(void)state;
	tf_expect_ext(0x0010, "0003 02 6832", SNI_ABSENT);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		tf_expect_ext(0x0010, bodies[i], SNI_MALFORMED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_extensions_length),
		cmocka_unit_test(test_malformed_trailing_after_extensions),
		cmocka_unit_test(test_malformed_extension_length),
		cmocka_unit_test(test_malformed_extension_overrun),
		cmocka_unit_test(test_malformed_duplicate_server_name),
		cmocka_unit_test(test_malformed_duplicate_extension),
		cmocka_unit_test(test_rare_extension_duplicates),
		cmocka_unit_test(test_malformed_sni_second_entry),
		cmocka_unit_test(test_malformed_sni_name_type),
		cmocka_unit_test(test_malformed_sni_empty_name),
		cmocka_unit_test(test_malformed_sni_empty_ext),
		cmocka_unit_test(test_malformed_sni_nul),
		cmocka_unit_test(test_malformed_sni_bad_byte),
		cmocka_unit_test(test_malformed_sni_label_too_long),
		cmocka_unit_test(test_malformed_sni_empty_label),
		cmocka_unit_test(test_malformed_sni_leading_dot),
		cmocka_unit_test(test_malformed_sni_name_too_long),
		cmocka_unit_test(test_malformed_sni_lengths),
		cmocka_unit_test(test_malformed_alpn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
