/*
 * What follows a hello (sni/tls_retry.c): the bytes a client may send after its first
 * ClientHello before the server answers, whether the server's first bytes are a
 * HelloRetryRequest, and the second hello behind change_cipher_spec records. The
 * dataplane cuts a flow on these answers, so each is held here byte by byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sni/tls.h"
#include "tls_fixture.h"

/* SHA-256("HelloRetryRequest"), RFC 8446 s4.1.3 */
#define HRR_RANDOM	"cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"

static void
test_tail_without_handshake_records(void **state)
{
	struct tf_msg m = { .n = 0 };

	(void)state;
	assert_true(tls_hello_tail_ok(m.b, 0));
	/* change_cipher_spec, an alert, early data whose record runs past the bytes */
	tf_hex(&m, "14 0303 0001 01  15 0303 0002 0100  17 0303 4000 aabbcc");
	assert_true(tls_hello_tail_ok(m.b, m.n));
	/* a header cut short: its type is all that is there, and it is not a handshake */
	assert_true(tls_hello_tail_ok(m.b, 3));
	assert_true(tls_hello_tail_ok(m.b + 6, 1));
}

static void
test_tail_with_a_handshake_record(void **state)
{
	struct tf_msg m = { .n = 0 }, hs = { .n = 0 };

	(void)state;
	/* a second hello pipelined after the first's change_cipher_spec */
	tf_hex(&m, "14 0303 0001 01");
	tf_stream_sni(&hs, "evil.test");
	tf_raw(&m, hs.b, hs.n);
	assert_false(tls_hello_tail_ok(m.b, m.n));
	/* only its type byte arrived: a handshake record all the same */
	assert_false(tls_hello_tail_ok(m.b, 7));
	assert_false(tls_hello_tail_ok(hs.b, 1));
	/* after early data whose record ends within the bytes */
	m.n = 0;
	tf_hex(&m, "17 0303 0002 aabb  16 0301 0004");
	assert_false(tls_hello_tail_ok(m.b, m.n));
	/* what no TLS client sends: any other record type is no tail either */
	m.n = 0;
	tf_hex(&m, "47 4554 20");
	assert_false(tls_hello_tail_ok(m.b, m.n));
}

/* A ServerHello record's first 43 bytes: a HelloRetryRequest's when random is HRR_RANDOM. */
static size_t
server_hello_head(struct tf_msg *m, const char *random)
{
	m->n = 0;
	tf_hex(m, "16 0303 0058  02 000054  0303");
	tf_hex(m, random);
	tf_hex(m, "20");		/* the legacy_session_id_echo's length: past what decides */
	return m->n;
}

static void
test_server_retry(void **state)
{
	struct tf_msg m;
	size_t n = server_hello_head(&m, HRR_RANDOM);

	(void)state;
	assert_true(tls_server_retry(m.b, n));
	/* every prefix could still be one: the client's next bytes are judged as a hello */
	for (size_t k = 1; k < n; k++)
		assert_true(tls_server_retry(m.b, k));
	/* a ServerHello with any other random is the answer that settles the hellos */
	n = server_hello_head(&m,
	    "0021ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c");
	assert_false(tls_server_retry(m.b, n));
	assert_false(tls_server_retry(m.b, 12));	/* the random's first byte decides */
	n = server_hello_head(&m,
	    "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339d");
	assert_false(tls_server_retry(m.b, n));
	assert_true(tls_server_retry(m.b, n - 2));	/* the differing byte not there yet */
	/* another record first (an alert), or another handshake message */
	m.b[0] = 21;
	assert_false(tls_server_retry(m.b, 1));
	server_hello_head(&m, HRR_RANDOM);
	m.b[5] = 11;
	assert_false(tls_server_retry(m.b, 6));
	assert_true(tls_server_retry(m.b, 5));
}

static void
test_retry_hello_behind_ccs(void **state)
{
	struct tf_msg m = { .n = 0 }, hs = { .n = 0 };
	struct tls_hello out;

	(void)state;
	tf_stream_sni(&hs, "pypi.org");
	/* none, one or two change_cipher_spec records (any minor version) before it */
	for (int ccs = 0; ccs <= 2; ccs++) {
		m.n = 0;
		for (int i = 0; i < ccs; i++)
			tf_hex(&m, i == 0 ? "14 0303 0001 01" : "14 0301 0001 01");
		tf_raw(&m, hs.b, hs.n);
		assert_int_equal(tls_hello_parse_retry(m.b, m.n, tf_scratch, sizeof(tf_scratch),
		    &out), SNI_FOUND);
		tf_assert_name(out.sni, "pypi.org");
		assert_int_equal(out.stream_len, m.n);
		/* every prefix asks for more: a cut change_cipher_spec too */
		for (size_t k = 0; k < m.n; k++)
			assert_int_equal(tls_hello_parse_retry(m.b, k, tf_scratch,
			    sizeof(tf_scratch), &out), SNI_NEED_MORE);
	}
}

static void
test_retry_hello_bad_ccs(void **state)
{
	static const char *const bad[] = {
		"14 0203 0001 01",	/* not version 3 */
		"14 0303 0002 0101",	/* a longer body */
		"14 0303 0001 02",	/* not 1 */
		"15 0303 0002 0100",	/* an alert is no hello */
	};
	struct tf_msg m, hs = { .n = 0 };
	struct tls_hello out;

	(void)state;
	tf_stream_sni(&hs, "pypi.org");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m.n = 0;
		tf_hex(&m, bad[i]);
		tf_raw(&m, hs.b, hs.n);
		assert_int_equal(tls_hello_parse_retry(m.b, m.n, tf_scratch, sizeof(tf_scratch),
		    &out), SNI_NOT_TLS);
	}
}

static void
test_parse_sni_stream_len(void **state)
{
	struct tf_msg m = { .n = 0 };
	struct tls_hello out;
	size_t n;

	(void)state;
	/* the dataplane's parse says where the hello's record ends, bytes after it or not */
	tf_stream_sni(&m, "pypi.org");
	n = m.n;
	tf_hex(&m, "14 0303 0001 01");
	assert_int_equal(tls_hello_parse_sni(m.b, m.n, tf_scratch, sizeof(tf_scratch), &out),
	    SNI_FOUND);
	assert_int_equal(out.stream_len, n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail_without_handshake_records),
		cmocka_unit_test(test_tail_with_a_handshake_record),
		cmocka_unit_test(test_server_retry),
		cmocka_unit_test(test_retry_hello_behind_ccs),
		cmocka_unit_test(test_retry_hello_bad_ccs),
		cmocka_unit_test(test_parse_sni_stream_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
