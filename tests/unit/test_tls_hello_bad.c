/*
 * tls_hello_parse on streams it must refuse: NOT_TLS for what is not a TLS handshake
 * record, MALFORMED for a handshake that breaks the rules. Most cases are one visible
 * change to a valid hello from the fixture builder (tls_fixture.h). Every stream is also
 * checked prefix by prefix: a status other than NEED_MORE, once reached, must not change
 * as bytes arrive. The extensions' rules: test_tls_hello_ext_bad.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sni/tls.h"
#include "tls_fixture.h"

/* ---- not TLS --------------------------------------------------------------------------- */

/* Not TLS from the first byte that shows it, on through the whole stream. */
static void
expect_not_tls(const char *hex)
{
	struct tf_msg s = { .n = 0 };

	tf_hex(&s, hex);
	tf_check_prefixes(s.b, s.n, SNI_NOT_TLS);
}

static void
test_not_tls_http(void **state)
{
	static const char get[] = "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n";
	struct tls_hello out;

	(void)state;
	tf_check_prefixes((const uint8_t *)get, sizeof(get) - 1, SNI_NOT_TLS);
	assert_int_equal(tf_parse((const uint8_t *)get, 1, &out), SNI_NOT_TLS);
}

static void
test_not_tls_ssh(void **state)
{
	static const char ssh[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
	struct tls_hello out;

	(void)state;
	tf_check_prefixes((const uint8_t *)ssh, sizeof(ssh) - 1, SNI_NOT_TLS);
	assert_int_equal(tf_parse((const uint8_t *)ssh, 1, &out), SNI_NOT_TLS);
}

static void
test_not_tls_application_data(void **state)
{
	(void)state;
	expect_not_tls("17 0303 0010 00112233445566778899aabbccddeeff");
	expect_not_tls("15 0303 0002 0228");			/* an alert */
	expect_not_tls("14 0303 0001 01");			/* change_cipher_spec */
}

/* A whole SSLv2-format CLIENT-HELLO: TLS without a server name (a TLS server takes it). */
#define T_SSLV2_HELLO	"80 1c 01 0301 0003 0000 0010 00002f 00112233445566778899aabbccddeeff"

static void
test_sslv2_hello_is_tls_without_sni(void **state)
{
	struct tf_msg s = { .n = 0 };
	struct tls_hello out;

	(void)state;
	tf_hex(&s, T_SSLV2_HELLO);
	tf_check_prefixes(s.b, s.n, SNI_ABSENT);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_ABSENT);
	assert_int_equal(out.stream_len, 30);
	/* a session id of 16 and a challenge of 32 */
	s.n = 0;
	tf_hex(&s, "80 3f 01 0002 0006 0010 0020 010080 0700c0"
	    "000102030405060708090a0b0c0d0e0f"
	    "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f");
	tf_check_prefixes(s.b, s.n, SNI_ABSENT);
}

static void
test_sslv2_shapes_that_are_not_hellos(void **state)
{
	struct tf_msg s = { .n = 0 };

	(void)state;
	expect_not_tls("80 1c 04 0301");			/* a SERVER-HELLO's type */
	tf_hex(&s, "80 1d 01 0301 0004 0000 0010 00002f00 00112233445566778899aabbccddeeff");
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);	/* a cipher spec of 4 bytes */
	s.n = 0;
	tf_hex(&s, "80 14 01 0301 0003 0000 0008 00002f 0011223344556677");
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);	/* an 8-byte challenge */
	s.n = 0;
	tf_hex(&s, "80 1d 01 0301 0003 0000 0010 00002f 00112233445566778899aabbccddeeff ff");
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);	/* a byte past the challenge */
}

static void
test_not_tls_record_header(void **state)
{
	struct tls_hello out;

	(void)state;
	expect_not_tls("16 0203 0010 01");			/* major 2 */
	expect_not_tls("16 0303 0000 01");			/* empty first record */
	expect_not_tls("16 0303 4001 01");			/* 2^14 + 1 */
	/* empty, what follows read as the hello's header that its length less 4 would wrap to */
	expect_not_tls("16 0303 0000 ffff fffc");
	/* Known too long from its length's high byte alone. */
	assert_int_equal(tf_parse((const uint8_t *)"\x16\x03\x01\x41", 4, &out), SNI_NOT_TLS);
}

/* ---- malformed ------------------------------------------------------------------------- */

static void
test_malformed_handshake_type(void **state)
{
	struct tls_hello out;

	(void)state;
	/* A server_hello, and early: the type byte is enough. */
	assert_int_equal(tf_parse((const uint8_t *)"\x16\x03\x01\x01\x00\x02", 6, &out),
	    SNI_MALFORMED);
	tf_check_prefixes((const uint8_t *)"\x16\x03\x03\x00\x05\x02\x00\x00\x01\x00", 10,
	    SNI_MALFORMED);
	/* records of 1..3 bytes, each followed by what its length less 4 wraps to */
	tf_check_prefixes((const uint8_t *)"\x16\x03\x03\x00\x01\xff\xff\xff\xfd", 9,
	    SNI_MALFORMED);
	tf_check_prefixes((const uint8_t *)"\x16\x03\x03\x00\x03\xff\xff\xff\xff", 9,
	    SNI_MALFORMED);
}

/* An alert or change_cipher_spec record before the hello is whole. */
static void
test_malformed_non_handshake_record(void **state)
{
	struct tf_hello h;
	struct tf_msg s, t;
	size_t cut;

	(void)state;
	tf_hello_style(&h, &tf_styles[0]);
	cut = h.m.n / 2;
	tf_wrap_cuts(&s, &h.m, &cut, 1);
	t.n = 0;
	tf_raw(&t, s.b, 5 + cut);
	tf_hex(&t, "14 0303 0001 01");
	tf_raw(&t, s.b + 5 + cut, s.n - 5 - cut);
	tf_check_prefixes(t.b, t.n, SNI_MALFORMED);

	t.n = 5 + cut;				/* later records follow the same header rules */
	tf_hex(&t, "16 0303 0000");
	tf_check_prefixes(t.b, t.n, SNI_MALFORMED);
	t.n = 5 + cut;
	tf_hex(&t, "16 0403 0010");
	tf_check_prefixes(t.b, t.n, SNI_MALFORMED);
}

/* Bytes after the hello in the record that completes it. */
static void
test_malformed_bytes_after_hello(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	size_t cut;

	(void)state;
	tf_hello_style(&h, &tf_styles[0]);
	tf_hex(&h.m, "00");
	tf_wrap(&s, &h.m, 1);
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);
	cut = 10;
	tf_wrap_cuts(&s, &h.m, &cut, 1);
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);
	cut = 2;				/* the length arrives in the second record */
	tf_wrap_cuts(&s, &h.m, &cut, 1);
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);
}

/* A hello of msg_len bytes: server_name and a padding extension (RFC 7685) to fill. */
static void
hello_padded(struct tf_hello *h, size_t msg_len)
{
	size_t at;

	tf_hello_begin(h);
	tf_ext_sni(&h->m, "example.com");
	tf_u16(&h->m, 0x0015);
	at = tf_open(&h->m, 2);
	assert_true(msg_len >= h->m.n);
	tf_fill(&h->m, 0, msg_len - h->m.n);
	tf_close(&h->m, at, 2);
	tf_hello_end(h);
	assert_int_equal(h->m.n, msg_len);
}

/* A hello that cannot fit in TLS_HELLO_MAX stream bytes, or in the caller's scratch. */
static void
test_malformed_too_big(void **state)
{
	struct tf_hello h;
	struct tf_msg s;
	struct tls_hello out;
	uint8_t small[256];

	(void)state;
	/* Known from the first record's header and the hello's length. */
	assert_int_equal(tf_parse((const uint8_t *)"\x16\x03\x01\x40\x00\x01\x00\x40\x00", 9,
	    &out), SNI_MALFORMED);
	hello_padded(&h, TLS_HELLO_MAX - 5);		/* exactly fits in one record */
	tf_wrap(&s, &h.m, 1);
	assert_int_equal(s.n, TLS_HELLO_MAX);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);
	assert_int_equal(out.stream_len, TLS_HELLO_MAX);
	hello_padded(&h, TLS_HELLO_MAX - 4);		/* one byte too many */
	tf_wrap(&s, &h.m, 1);
	tf_check_prefixes(s.b, s.n, SNI_MALFORMED);
	assert_int_equal(tf_parse(s.b, 9, &out), SNI_MALFORMED);
	hello_padded(&h, TLS_HELLO_MAX - 19);		/* fits, but not in 4 records */
	tf_wrap(&s, &h.m, 4);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_MALFORMED);
	tf_wrap(&s, &h.m, 3);
	assert_int_equal(tf_parse(s.b, s.n, &out), SNI_FOUND);

	tf_hello_style(&h, &tf_styles[0]);
	tf_wrap(&s, &h.m, 2);
	assert_int_equal(tls_hello_parse(s.b, s.n, small, 64, &out), SNI_MALFORMED);
	assert_int_equal(tls_hello_parse(s.b, 9, small, 64, &out), SNI_MALFORMED);
	assert_int_equal(tls_hello_parse(s.b, s.n, small, sizeof(small), &out), SNI_FOUND);
	tf_wrap(&s, &h.m, 1);			/* one record: no scratch needed */
	assert_int_equal(tls_hello_parse(s.b, s.n, NULL, 0, &out), SNI_FOUND);
	assert_int_equal(tls_hello_parse(s.b, s.n - 1, NULL, 0, &out), SNI_NEED_MORE);
}

static void
test_malformed_legacy_version(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_style(&h, &tf_styles[0]);
	h.m.b[4] = 0x02;
	tf_expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_session_id(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin_with(&h, 33, 2, 1);
	tf_ext_sni(&h.m, "example.com");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_cipher_suites(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin_with(&h, 32, 5, 1);	/* odd length */
	tf_ext_sni(&h.m, "example.com");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
	tf_hello_begin_with(&h, 32, 0, 1);	/* none */
	tf_ext_sni(&h.m, "example.com");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_compression(void **state)
{
	struct tf_hello h;

	(void)state;
	tf_hello_begin_with(&h, 32, 2, 0);
	tf_ext_sni(&h.m, "example.com");
	tf_hello_end(&h);
	tf_expect_hello(&h, SNI_MALFORMED);
	/* the methods end where the message does, then one byte past it */
	tf_hello_begin_with(&h, 32, 2, 2);
	tf_hello_end_no_exts(&h);
	tf_expect_hello(&h, SNI_ABSENT);
	h.m.b[h.exts_at - 3]++;
	tf_expect_hello(&h, SNI_MALFORMED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_tls_http),
		cmocka_unit_test(test_not_tls_ssh),
		cmocka_unit_test(test_not_tls_application_data),
		cmocka_unit_test(test_sslv2_hello_is_tls_without_sni),
		cmocka_unit_test(test_sslv2_shapes_that_are_not_hellos),
		cmocka_unit_test(test_not_tls_record_header),
		cmocka_unit_test(test_malformed_handshake_type),
		cmocka_unit_test(test_malformed_non_handshake_record),
		cmocka_unit_test(test_malformed_bytes_after_hello),
		cmocka_unit_test(test_malformed_too_big),
		cmocka_unit_test(test_malformed_legacy_version),
		cmocka_unit_test(test_malformed_session_id),
		cmocka_unit_test(test_malformed_cipher_suites),
		cmocka_unit_test(test_malformed_compression),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
