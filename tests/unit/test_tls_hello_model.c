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
#include "tls_hello_model.h"

#define MSG_MAX		4096
#define ROUNDS		60000

static uint8_t scratch[TLS_HELLO_MAX];

/* xorshift64*: the next number from *rng. */
static uint32_t
rnd(uint64_t *rng)
{
	*rng ^= *rng >> 12;
	*rng ^= *rng << 25;
	*rng ^= *rng >> 27;
	return (uint32_t)((*rng * UINT64_C(0x2545f4914f6cdd1d)) >> 32);
}

static uint32_t
rnd_below(uint64_t *rng, uint32_t n)
{
	return rnd(rng) % n;
}

static unsigned int
be16_at(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* ---- random hellos ---------------------------------------------------------------------- */

static void
put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A host name: labels of letters (some capitals), digits and '-', now and then a flaw. */
static size_t
gen_host(uint64_t *rng, uint8_t *h)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEZ0123456789-";
	size_t n = 0, labels = 1 + rnd_below(rng, 4);

	for (size_t l = 0; l < labels; l++) {
		size_t len = 1 + rnd_below(rng, rnd_below(rng, 8) == 0 ? 70 : 12);

		if (l > 0)
			h[n++] = '.';
		for (size_t i = 0; i < len; i++)
			h[n++] = (uint8_t)chars[rnd_below(rng, sizeof(chars) - 1)];
	}
	if (rnd_below(rng, 8) == 0)
		h[n++] = '.';
	if (rnd_below(rng, 16) == 0)	/* a byte no host name has, or a dot too many */
		h[rnd_below(rng, (uint32_t)n)] = (uint8_t)(rnd_below(rng, 2) ? '.' : rnd(rng));
	if (rnd_below(rng, 64) == 0)
		n = 0;
	return n;
}

static size_t
gen_sni(uint64_t *rng, uint8_t *d)
{
	size_t host = gen_host(rng, d + 5);

	put16(d, host + 3);
	d[2] = rnd_below(rng, 32) == 0 ? 1 : 0;
	put16(d + 3, host);
	if (rnd_below(rng, 32) == 0)		/* a list or a name of the wrong length */
		put16(rnd_below(rng, 2) ? d : d + 3, host + rnd_below(rng, 5) - 2);
	return host + 5;
}

static size_t
gen_alpn(uint64_t *rng, uint8_t *d)
{
	size_t n = 2, ids = rnd_below(rng, 12);

	for (size_t i = 0; i < ids; i++) {
		size_t len = rnd_below(rng, 24) == 0 ? 0 : 1 + rnd_below(rng, 8);

		d[n++] = (uint8_t)len;
		for (size_t j = 0; j < len; j++)
			d[n++] = (uint8_t)('a' + rnd_below(rng, 26));
	}
	put16(d, n - 2);
	if (rnd_below(rng, 32) == 0)
		put16(d, n - 2 + rnd_below(rng, 3) - 1);
	return n;
}

/* A type a client sends: the low ones, GREASE, renegotiation_info, ECH, ALPS, or any. */
static unsigned int
gen_type(uint64_t *rng)
{
	static const unsigned int common[] = { 5, 10, 11, 13, 18, 21, 23, 27, 35, 41, 43, 45,
	    51, 57, 63, 0xff01, 0xfe0d, 0x4469, 0x44cd, 64, 65535 };

	switch (rnd_below(rng, 16)) {
	case 0:
		return rnd_below(rng, 64);
	case 1:
	case 2:
		return rnd(rng) & 0xffff;
	case 3:
	case 4:
	case 5:
		return 0x0a0a + 0x1010 * rnd_below(rng, 16);	/* GREASE (RFC 8701) */
	default:
		return common[rnd_below(rng, sizeof(common) / sizeof(common[0]))];
	}
}

/* A type not among the k in types (no client repeats one; a test does on purpose). */
static unsigned int
gen_fresh_type(uint64_t *rng, const unsigned int *types, size_t k)
{
	for (;;) {
		unsigned int type = gen_type(rng);
		size_t i = 0;

		if (type == 0 || type == 16)
			continue;
		while (i < k && types[i] != type)
			i++;
		if (i == k)
			return type;
	}
}

static size_t
gen_exts(uint64_t *rng, uint8_t *e, size_t room)
{
	unsigned int types[64];
	size_t n = 0, count = rnd_below(rng, rnd_below(rng, 4) == 0 ? 40 : 20);
	size_t sni_at = rnd_below(rng, 8) == 0 ? SIZE_MAX : rnd_below(rng, (uint32_t)count + 1);
	size_t alpn_at = rnd_below(rng, (uint32_t)count * 2 + 1);

	for (size_t k = 0; k < count && n + 600 < room; k++) {
		size_t len;
		unsigned int type;

		if (k == sni_at)
			type = 0;
		else if (k == alpn_at)
			type = 16;
		else if (k > 0 && rnd_below(rng, 48) == 0)
			type = types[rnd_below(rng, (uint32_t)k)];	/* a duplicate */
		else
			type = gen_fresh_type(rng, types, k);
		types[k] = type;
		put16(e + n, type);
		if (type == 0 && rnd_below(rng, 16) != 0) {
			len = gen_sni(rng, e + n + 4);
		} else if (type == 16 && rnd_below(rng, 16) != 0) {
			len = gen_alpn(rng, e + n + 4);
		} else {
			len = rnd_below(rng, 40);
			for (size_t i = 0; i < len; i++)
				e[n + 4 + i] = (uint8_t)rnd(rng);
		}
		put16(e + n + 2, len);
		n += 4 + len;
	}
	if (rnd_below(rng, 24) == 0 && n < room)	/* a stray byte or three */
		for (size_t k = 1 + rnd_below(rng, 3); k > 0 && n < room; k--)
			e[n++] = (uint8_t)rnd(rng);
	if (rnd_below(rng, 24) == 0 && n >= 4) {	/* one length no longer fits */
		size_t at = rnd_below(rng, (uint32_t)(n - 3));

		put16(e + at + 2, be16_at(e + at + 2) + 1 + rnd_below(rng, 3));
	}
	return n;
}

/* A ClientHello handshake message, header included; its fields now and then wrong. */
static size_t
gen_msg(uint64_t *rng, uint8_t *m)
{
	size_t n = 4, sid = rnd_below(rng, 8) == 0 ? rnd_below(rng, 40) : 32;
	size_t suites = rnd_below(rng, 32) == 0 ? rnd_below(rng, 5) : 2 + 2 * rnd_below(rng, 20);
	size_t comp = rnd_below(rng, 32) == 0 ? 0 : 1, exts;

	m[0] = rnd_below(rng, 64) == 0 ? 2 : 1;
	m[n++] = rnd_below(rng, 64) == 0 ? 2 : 3;
	m[n++] = (uint8_t)rnd(rng);
	for (size_t i = 0; i < 32; i++)
		m[n++] = (uint8_t)rnd(rng);
	m[n++] = (uint8_t)sid;
	for (size_t i = 0; i < sid; i++)
		m[n++] = (uint8_t)rnd(rng);
	put16(m + n, suites);
	n += 2;
	for (size_t i = 0; i < suites; i++)
		m[n++] = (uint8_t)rnd(rng);
	m[n++] = (uint8_t)comp;
	for (size_t i = 0; i < comp; i++)
		m[n++] = 0;
	if (rnd_below(rng, 20) != 0) {
		size_t off_by = rnd_below(rng, 48) == 0 ? rnd_below(rng, 3) : 1;	/* 1: none */

		exts = gen_exts(rng, m + n + 2, MSG_MAX - n - 8);
		put16(m + n, exts + off_by - 1);
		n += 2 + exts;
	}
	if (rnd_below(rng, 48) == 0)
		n -= rnd_below(rng, (uint32_t)(n - 4));	/* cut short */
	m[1] = (uint8_t)((n - 4) >> 16);
	m[2] = (uint8_t)((n - 4) >> 8);
	m[3] = (uint8_t)(n - 4);
	return n;
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
	struct tls_hello a, b;
	enum sni_status st = tls_hello_parse(s, len, scratch, sizeof(scratch), &a);
	enum sni_status st_b = tls_hello_parse_general(s, len, scratch, sizeof(scratch), &b);

	assert_same(st, &a, st_b, &b);
	if (st == SNI_FOUND || st == SNI_ABSENT)
		assert_int_equal(a.stream_len, b.stream_len);
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
