/*
 * tls_hello_parse held to two references over many random and edge-case hellos:
 *
 *  - a model of the ClientHello message (RFC 8446 s4.1.2, RFC 6066 s3, RFC 7301 s3.1)
 *    written the plain way, index by index (tls_hello_model.c), which the extension walk must match
 *    (every duplicate refused, server_name and ALPN read, ECH flagged, past the short list
 *    of rare types too);
 *  - tls_hello_parse_general(), the path without the shortcut for one record holding the
 *    whole hello, on streams whose headers, lengths and ends are mutated.
 *
 * The same message cut into several records must read as in one. Seeds are fixed, so a
 * failure replays.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "sni/tls.h"
#include "tls_int.h"
#include "tls_hello_gen.h"
#include "tls_hello_model.h"

#define ROUNDS		60000

static uint8_t scratch[TLS_HELLO_MAX];

static unsigned int
be16_at(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* ---- comparisons ------------------------------------------------------------------------ */

static bool
name_eq(struct sni_name a, struct sni_name b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* The same status and, when a hello was read, the same values (by content: copies differ). */
static void
assert_same(enum sni_status st, const struct tls_hello *a, enum sni_status st_b,
    const struct tls_hello *b)
{
	assert_int_equal(st, st_b);
	if (st != SNI_FOUND && st != SNI_ABSENT)
		return;
	if (st == SNI_FOUND) {
		assert_true(name_eq(a->sni, b->sni));
		assert_int_equal(a->sni_lower, b->sni_lower);
	}
	assert_int_equal(a->nb_alpn, b->nb_alpn);
	assert_int_equal(a->alpn_more, b->alpn_more);
	assert_int_equal(a->ech, b->ech);
	for (unsigned int i = 0; i < a->nb_alpn; i++)
		assert_true(name_eq(a->alpn[i], b->alpn[i]));
}

/* msg in records of at most rec bytes, each behind its header. */
static size_t
in_records(const uint8_t *msg, size_t n, size_t rec, uint8_t *out)
{
	size_t len = 0;

	for (size_t at = 0; at < n; at += rec) {
		size_t part = n - at < rec ? n - at : rec;

		out[len++] = 0x16;
		out[len++] = 0x03;
		out[len++] = 0x01;
		put16(out + len, part);
		len += 2;
		memcpy(out + len, msg + at, part);
		len += part;
	}
	return len;
}

/* The shortcut and the general path on one stream: the same answer. */
static void
assert_paths_agree(const uint8_t *s, size_t len)
{
	struct tls_hello a, b, c;
	enum sni_status st = tls_hello_parse(s, len, scratch, sizeof(scratch), &a);
	enum sni_status st_b = tls_hello_parse_general(s, len, scratch, sizeof(scratch), &b);

	assert_same(st, &a, st_b, &b);
	if (st == SNI_FOUND || st == SNI_ABSENT)
		assert_int_equal(a.stream_len, b.stream_len);
	/* the dataplane's parse: the same status and name */
	assert_int_equal(tls_hello_parse_sni(s, len, scratch, sizeof(scratch), &c), st);
	if (st == SNI_FOUND) {
		assert_ptr_equal(c.sni.p, a.sni.p);
		assert_int_equal(c.sni.len, a.sni.len);
		assert_int_equal(c.sni_lower, a.sni_lower);
	}
}

static void
test_model(void **state)
{
	static uint8_t msg[MSG_MAX], s[MSG_MAX * 2];
	uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
	unsigned int found = 0, absent = 0;

	(void)state;
	for (int r = 0; r < ROUNDS; r++) {
		size_t n = gen_msg(&rng, msg), len = in_records(msg, n, n, s);
		struct tls_hello want, got;
		enum sni_status st = model_msg(msg, n, &want);

		/* one record: the shortcut's stream when the message is whole */
		assert_same(tls_hello_parse(s, len, scratch, sizeof(scratch), &got), &got, st,
		    &want);
		if (st == SNI_FOUND || st == SNI_ABSENT)
			assert_int_equal(got.stream_len, len);
		found += st == SNI_FOUND;
		absent += st == SNI_ABSENT;
		/* records of another size: the general path's gathering */
		if (n > 1) {
			len = in_records(msg, n, 1 + rnd_below(&rng, (uint32_t)n - 1), s);
			assert_same(tls_hello_parse(s, len, scratch, sizeof(scratch), &got), &got,
			    st, &want);
		}
	}
	/* the generator must reach both outcomes often, not only the malformed ones */
	assert_true(found > ROUNDS / 5 && absent > ROUNDS / 50);
}

static void
test_shortcut_vs_general(void **state)
{
	static uint8_t msg[MSG_MAX], s[MSG_MAX * 2];
	uint64_t rng = UINT64_C(0x243f6a8885a308d3);

	(void)state;
	for (int r = 0; r < ROUNDS; r++) {
		size_t n = gen_msg(&rng, msg), len = in_records(msg, n, n, s);
		uint32_t how = rnd_below(&rng, 8);

		if (how == 0) {		/* one header byte anything */
			s[rnd_below(&rng, 9)] = (uint8_t)rnd(&rng);
		} else if (how == 1) {	/* the record's or the message's length off a little */
			size_t at = rnd_below(&rng, 2) ? 3 : 7;

			put16(s + at, be16_at(s + at) + rnd_below(&rng, 7) - 3);
		} else if (how == 2) {	/* lengths near the bounds */
			static const unsigned int near[] = { 0, 1, 3, 4, 5, 16374, 16379, 16380,
			    16384, 16385, 65535 };

			put16(s + 3, near[rnd_below(&rng, sizeof(near) / sizeof(near[0]))]);
		}
		if (rnd_below(&rng, 3) == 0)	/* arrived in part, or with more after it */
			len = rnd_below(&rng, 2) ? rnd_below(&rng, (uint32_t)len + 1) :
			    len + rnd_below(&rng, 64);
		assert_paths_agree(s, len);
	}
}

/* Every prefix of one long stream, and every header byte's every value on a short one. */
static void
test_shortcut_edges(void **state)
{
	static uint8_t msg[MSG_MAX], s[MSG_MAX * 2];
	uint64_t rng = UINT64_C(0x13198a2e03707344);
	size_t n, len;

	(void)state;
	do
		n = gen_msg(&rng, msg);
	while (model_msg(msg, n, &(struct tls_hello){ 0 }) != SNI_FOUND);
	len = in_records(msg, n, n, s);
	for (size_t k = 0; k <= len + 4; k++)
		assert_paths_agree(s, k);
	for (size_t at = 0; at < 9; at++) {
		uint8_t keep = s[at];

		for (unsigned int v = 0; v < 256; v++) {
			s[at] = (uint8_t)v;
			assert_paths_agree(s, len);
		}
		s[at] = keep;
	}
}

/* Hellos about as long as TLS_HELLO_MAX lets a stream be, in one record: either side of it. */
static void
test_shortcut_size_limit(void **state)
{
	static uint8_t msg[TLS_HELLO_MAX + 64], s[TLS_HELLO_MAX + 128];
	static const char host[] = "www.example.com";
	struct tls_hello want;

	(void)state;
	for (size_t n = TLS_HELLO_MAX - 12; n <= TLS_HELLO_MAX + 4; n++) {
		/* header, version, random, no session id, one suite, null compression */
		size_t at = 4 + 2 + 32 + 1 + 4 + 2, ext, pad;

		memset(msg, 0, sizeof(msg));
		msg[0] = 1;
		msg[4] = 3;
		msg[4 + 2 + 32 + 1 + 1] = 2;	/* the suites' length */
		msg[at - 2] = 1;		/* one compression method */
		ext = at + 2;
		put16(msg + ext, 0);		/* server_name */
		put16(msg + ext + 2, 5 + sizeof(host) - 1);
		put16(msg + ext + 4, 3 + sizeof(host) - 1);
		put16(msg + ext + 7, sizeof(host) - 1);
		memcpy(msg + ext + 9, host, sizeof(host) - 1);
		ext += 9 + sizeof(host) - 1;
		pad = n - ext - 4;		/* padding (RFC 7685) fills the rest */
		put16(msg + ext, 21);
		put16(msg + ext + 2, pad);
		put16(msg + at, n - at - 2);
		msg[1] = (uint8_t)((n - 4) >> 16);
		msg[2] = (uint8_t)((n - 4) >> 8);
		msg[3] = (uint8_t)(n - 4);
		assert_int_equal(model_msg(msg, n, &want), SNI_FOUND);
		s[0] = 0x16;
		s[1] = 0x03;
		s[2] = 0x01;
		put16(s + 3, n);
		memcpy(s + 5, msg, n);
		assert_paths_agree(s, 5 + n);
		assert_paths_agree(s, 5 + n + 7);
		assert_paths_agree(s, 5 + n - 1);
	}
}

/* msg (n bytes, header included) as the message's first k bytes, its length saying so. */
static enum sni_status
parse_cut(const uint8_t *msg, size_t k, uint8_t *cut, uint8_t *s, struct tls_hello *got,
    struct tls_hello *want, enum sni_status *st_want)
{
	memcpy(cut, msg, k);
	cut[1] = (uint8_t)((k - 4) >> 16);
	cut[2] = (uint8_t)((k - 4) >> 8);
	cut[3] = (uint8_t)(k - 4);
	*st_want = model_msg(cut, k, want);
	return tls_hello_parse(s, in_records(cut, k, k, s), scratch, sizeof(scratch), got);
}

/*
 * The fields before the extensions, read by offsets: every cut of whole hellos (the
 * message's length saying where it ends, so that each length field in turn counts past
 * it), and the bytes of those fields set to the values at their bounds.
 */
static void
test_fields_cut(void **state)
{
	static uint8_t msg[MSG_MAX], cut[MSG_MAX], s[MSG_MAX * 2];
	static const uint8_t vals[] = { 0, 1, 2, 3, 4, 31, 32, 33, 0x80, 0xff };
	uint64_t rng = UINT64_C(0xa4093822299f31d0);
	struct tls_hello want, got;
	enum sni_status st;

	(void)state;
	for (int r = 0; r < 64; r++) {
		size_t n;

		do
			n = gen_msg(&rng, msg);
		while (model_msg(msg, n, &want) != SNI_FOUND);
		for (size_t k = 4; k <= n && k < 4 + 200; k++) {
			enum sni_status st_got = parse_cut(msg, k, cut, s, &got, &want, &st);

			assert_same(st_got, &got, st, &want);
		}
		for (size_t at = 4; at < 4 + 120 && at < n; at++) {
			for (size_t v = 0; v < sizeof(vals); v++) {
				uint8_t keep = msg[at];
				enum sni_status st_got;

				msg[at] = vals[v];
				st_got = parse_cut(msg, n, cut, s, &got, &want, &st);
				assert_same(st_got, &got, st, &want);
				msg[at] = keep;
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_shortcut_vs_general),
		cmocka_unit_test(test_shortcut_edges),
		cmocka_unit_test(test_shortcut_size_limit),
		cmocka_unit_test(test_fields_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
