/*
 * Fixtures shared by the tls_hello_parse tests: a builder that assembles ClientHellos from
 * parts, so each malformed case is one visible change to a valid hello, and the checks run
 * on every stream, prefix by prefix. Failures go through cmocka, so these may only be
 * called from inside a running test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tls_fixture.h"

#define GROUP_PQ	0x11ec		/* X25519MLKEM768 */

/* ---- fixture builder ------------------------------------------------------------------ */

void
tf_raw(struct tf_msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	if (n > 0)
		memcpy(m->b + m->n, p, n);
	m->n += n;
}

void
tf_fill(struct tf_msg *m, uint8_t c, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memset(m->b + m->n, c, n);
	m->n += n;
}

void
tf_u8(struct tf_msg *m, unsigned int v)
{
	uint8_t b = (uint8_t)v;

	tf_raw(m, &b, 1);
}

void
tf_u16(struct tf_msg *m, unsigned int v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	tf_raw(m, b, 2);
}

/* A hex digit's value, or -1. */
static int
hexval(char c)
{
	static const char digits[] = "0123456789abcdef";
	const char *d = c != '\0' ? strchr(digits, tolower((unsigned char)c)) : NULL;

	return d != NULL ? (int)(d - digits) : -1;
}

/* Append hex digits; spaces are ignored so fixtures can show their fields. */
void
tf_hex(struct tf_msg *m, const char *hex)
{
	int hi = -1;

	for (; *hex != '\0'; hex++) {
		int v = hexval(*hex);

		if (*hex == ' ')
			continue;
		assert_true(v >= 0);
		if (hi < 0) {
			hi = v;
			continue;
		}
		tf_u8(m, (unsigned int)(hi << 4 | v));
		hi = -1;
	}
	assert_true(hi < 0);
}

/* Reserve a width-byte length prefix; tf_close() fills in what was added after it. */
size_t
tf_open(struct tf_msg *m, size_t width)
{
	size_t at = m->n;

	tf_fill(m, 0, width);
	return at;
}

void
tf_close(struct tf_msg *m, size_t at, size_t width)
{
	size_t len = m->n - at - width;

	for (size_t i = width; i > 0; i--, len >>= 8)
		m->b[at + i - 1] = (uint8_t)len;
}

/* One extension whose body is given as hex. */
void
tf_ext_hex(struct tf_msg *m, uint16_t type, const char *body)
{
	size_t at;

	tf_u16(m, type);
	at = tf_open(m, 2);
	tf_hex(m, body);
	tf_close(m, at, 2);
}

/* server_name with one host_name entry (RFC 6066 s3). */
void
tf_ext_sni_n(struct tf_msg *m, const void *host, size_t len)
{
	size_t ext, list, name;

	tf_u16(m, 0x0000);
	ext = tf_open(m, 2);
	list = tf_open(m, 2);
	tf_u8(m, 0);
	name = tf_open(m, 2);
	tf_raw(m, host, len);
	tf_close(m, name, 2);
	tf_close(m, list, 2);
	tf_close(m, ext, 2);
}

void
tf_ext_sni(struct tf_msg *m, const char *host)
{
	tf_ext_sni_n(m, host, strlen(host));
}

/* ALPN (RFC 7301 s3.1) from a NULL-terminated list. */
void
tf_ext_alpn(struct tf_msg *m, const char *const *ids)
{
	size_t ext, list;

	tf_u16(m, 0x0010);
	ext = tf_open(m, 2);
	list = tf_open(m, 2);
	for (; *ids != NULL; ids++) {
		tf_u8(m, (unsigned int)strlen(*ids));
		tf_raw(m, *ids, strlen(*ids));
	}
	tf_close(m, list, 2);
	tf_close(m, ext, 2);
}

/* An outer encrypted_client_hello: type 0, HPKE suite, config id, enc, payload. */
void
tf_ext_ech(struct tf_msg *m)
{
	size_t ext, v;

	tf_u16(m, 0xfe0d);
	ext = tf_open(m, 2);
	tf_hex(m, "00 0001 0001 7f");
	v = tf_open(m, 2);
	tf_fill(m, 0xec, 32);
	tf_close(m, v, 2);
	v = tf_open(m, 2);
	tf_fill(m, 0xed, 176);
	tf_close(m, v, 2);
	tf_close(m, ext, 2);
}

/* key_share with an X25519 share, after a post-quantum one of pq bytes when pq > 0. */
void
tf_ext_key_share(struct tf_msg *m, size_t pq)
{
	size_t ext, list, v;

	tf_u16(m, 0x0033);
	ext = tf_open(m, 2);
	list = tf_open(m, 2);
	if (pq > 0) {
		tf_u16(m, GROUP_PQ);
		v = tf_open(m, 2);
		tf_fill(m, 0x9c, pq);
		tf_close(m, v, 2);
	}
	tf_u16(m, 0x001d);
	v = tf_open(m, 2);
	tf_fill(m, 0x25, 32);
	tf_close(m, v, 2);
	tf_close(m, list, 2);
	tf_close(m, ext, 2);
}

/* What every TLS 1.3 hello carries besides the extensions a test is about. */
void
tf_ext_common(struct tf_msg *m)
{
	tf_ext_hex(m, 0x000a, "0006 001d 0017 0018");			/* supported_groups */
	tf_ext_hex(m, 0x000d, "0008 0403 0804 0401 0503");	/* signature_algorithms */
	tf_ext_hex(m, 0x002b, "04 0304 0303");				/* supported_versions */
}

/*
 * The fixed part of a ClientHello: msg_type, u24 length, legacy_version, random,
 * session_id, cipher_suites, compression_methods; then the extensions' length is reserved.
 */
void
tf_hello_begin_with(struct tf_hello *h, size_t sid_len, size_t suites_len, size_t nb_comp)
{
	size_t at;

	h->m.n = 0;
	tf_u8(&h->m, 1);
	h->hs_at = tf_open(&h->m, 3);
	tf_u16(&h->m, 0x0303);
	tf_fill(&h->m, 0xa5, 32);
	tf_u8(&h->m, (unsigned int)sid_len);
	tf_fill(&h->m, 0x5a, sid_len);
	at = tf_open(&h->m, 2);
	for (size_t i = 0; i < suites_len; i++)
		tf_u8(&h->m, i % 2 == 0 ? 0x13 : (unsigned int)(1 + i / 2 % 3));
	tf_close(&h->m, at, 2);
	tf_u8(&h->m, (unsigned int)nb_comp);
	tf_fill(&h->m, 0, nb_comp);
	h->exts_at = tf_open(&h->m, 2);
}

void
tf_hello_begin(struct tf_hello *h)
{
	tf_hello_begin_with(h, 32, 6, 1);
}

void
tf_hello_end(struct tf_hello *h)
{
	tf_close(&h->m, h->exts_at, 2);
	tf_close(&h->m, h->hs_at, 3);
}

/* A TLS 1.2-style hello that stops after compression_methods. */
void
tf_hello_end_no_exts(struct tf_hello *h)
{
	h->m.n = h->exts_at;
	tf_close(&h->m, h->hs_at, 3);
}

static const char *const alpn_h2[] = { "h2", "http/1.1", NULL };

const struct tf_style tf_styles[] = {
	{ "minimal", "example.com", NULL, false, 0, 0, 1 },
	{ "alpn", "pypi.org", alpn_h2, false, 0, 0, 1 },
	{ "ech", "public.example.net", alpn_h2, true, 0, 0, 1 },
	{ "post-quantum", "files.pythonhosted.org", alpn_h2, true, 1216, 120, 1 },
	{ "three records", "github.com", alpn_h2, true, 1216, 0, 3 },
	{ "absent", NULL, alpn_h2, false, 0, 0, 1 },
};
const size_t tf_nb_styles = sizeof(tf_styles) / sizeof(tf_styles[0]);

void
tf_hello_style(struct tf_hello *h, const struct tf_style *s)
{
	tf_hello_begin(h);
	if (s->sni != NULL)
		tf_ext_sni(&h->m, s->sni);
	tf_ext_common(&h->m);
	if (s->alpn != NULL)
		tf_ext_alpn(&h->m, s->alpn);
	tf_ext_key_share(&h->m, s->pq);
	if (s->ech)
		tf_ext_ech(&h->m);
	if (s->pad > 0) {
		tf_u16(&h->m, 0x0015);
		tf_u16(&h->m, (unsigned int)s->pad);
		tf_fill(&h->m, 0, s->pad);
	}
	tf_hello_end(h);
}

/*
 * Put a handshake message into records (type 22, version 3.1) cut at the offsets cuts[]
 * (ascending, inside the message). Returns the stream length.
 */
size_t
tf_wrap_cuts(struct tf_msg *out, const struct tf_msg *hs, const size_t *cuts, size_t nb_cuts)
{
	size_t from = 0, at;

	out->n = 0;
	for (size_t i = 0; i <= nb_cuts; i++) {
		size_t to = i < nb_cuts ? cuts[i] : hs->n;

		tf_hex(out, "16 0301");
		at = tf_open(out, 2);
		tf_raw(out, hs->b + from, to - from);
		tf_close(out, at, 2);
		from = to;
	}
	return out->n;
}

/* Records of equal size (the last one shorter), at most nb_records of them. */
size_t
tf_wrap(struct tf_msg *out, const struct tf_msg *hs, size_t nb_records)
{
	size_t step = nb_records <= 1 ? hs->n : (hs->n + nb_records - 1) / nb_records, at;

	out->n = 0;
	for (size_t from = 0; from < hs->n; from += step) {
		size_t to = from + step < hs->n ? from + step : hs->n;

		tf_hex(out, "16 0301");
		at = tf_open(out, 2);
		tf_raw(out, hs->b + from, to - from);
		tf_close(out, at, 2);
	}
	return out->n;
}

void
tf_stream_sni(struct tf_msg *out, const char *sni)
{
	struct tf_hello h;

	tf_hello_begin(&h);
	tf_ext_sni(&h.m, sni);
	tf_ext_common(&h.m);
	tf_hello_end(&h);
	tf_wrap(out, &h.m, 1);
}

/* ---- checking helpers ----------------------------------------------------------------- */

uint8_t tf_scratch[TLS_HELLO_MAX];

/*
 * tls_hello_parse_sni() of the same bytes against st and a (tls_hello_parse()'s): the same
 * status, and on SNI_FOUND the same name, capitals told alike.
 */
static void
tf_same_sni(const uint8_t *b, size_t n, uint8_t *scratch, size_t scratch_len,
    enum sni_status st, const struct tls_hello *a)
{
	struct tls_hello h;
	enum sni_status st_sni = tls_hello_parse_sni(b, n, scratch, scratch_len, &h);

	if (st_sni != st)
		fail_msg("%zu bytes: tls_hello_parse_sni %s, tls_hello_parse %s", n,
		    sni_status_str(st_sni), sni_status_str(st));
	if (st == SNI_FOUND && (h.sni.p != a->sni.p || h.sni.len != a->sni.len ||
	    h.sni_lower != a->sni_lower))
		fail_msg("%zu bytes: tls_hello_parse_sni's name is not tls_hello_parse's", n);
}

enum sni_status
tf_parse(const uint8_t *b, size_t n, struct tls_hello *out)
{
	enum sni_status st = tls_hello_parse(b, n, tf_scratch, sizeof(tf_scratch), out);
	struct tls_hello a = *out;

	tf_same_sni(b, n, tf_scratch, sizeof(tf_scratch), st, &a);
	return st;
}

/* Parse an exact-size heap copy, so valgrind sees a read one byte past the input. */
enum sni_status
tf_parse_exact(const uint8_t *b, size_t n)
{
	uint8_t *copy = malloc(n > 0 ? n : 1), *s = malloc(TLS_HELLO_MAX);
	struct tls_hello h;
	enum sni_status st;

	assert_non_null(copy);
	assert_non_null(s);
	if (n > 0)
		memcpy(copy, b, n);
	st = tls_hello_parse(copy, n, s, TLS_HELLO_MAX, &h);
	tf_same_sni(copy, n, s, TLS_HELLO_MAX, st, &h);
	free(s);
	free(copy);
	return st;
}

/*
 * Feed every prefix of b: each is NEED_MORE or want, the first definite answer never
 * changes, and the whole stream is want. A valid hello (FOUND/ABSENT) is NEED_MORE on
 * every proper prefix.
 */
void
tf_check_prefixes(const uint8_t *b, size_t n, enum sni_status want)
{
	enum sni_status prev = SNI_NEED_MORE, st;

	for (size_t k = 0; k <= n; k++) {
		st = tf_parse_exact(b, k);
		if (st != SNI_NEED_MORE && st != want)
			fail_msg("prefix %zu of %zu: %s, want need_more or %s", k, n,
			    sni_status_str(st), sni_status_str(want));
		if (prev != SNI_NEED_MORE && st != prev)
			fail_msg("prefix %zu: %s after %s", k, sni_status_str(st),
			    sni_status_str(prev));
		if ((want == SNI_FOUND || want == SNI_ABSENT) && k < n && st != SNI_NEED_MORE)
			fail_msg("prefix %zu of a valid hello: %s", k, sni_status_str(st));
		prev = st;
	}
	assert_int_equal(prev, want);
}

void
tf_assert_name(struct sni_name nm, const char *want)
{
	if (nm.len != strlen(want) || memcmp(nm.p, want, nm.len) != 0)
		fail_msg("name \"%.*s\", want \"%s\"", (int)nm.len, (const char *)nm.p, want);
}

/* A single-record stream holding h, expected to give st. */
void
tf_expect_hello(const struct tf_hello *h, enum sni_status st)
{
	struct tf_msg s;

	tf_wrap(&s, &h->m, 1);
	tf_check_prefixes(s.b, s.n, st);
}

/* A hello with the common extensions plus one extension given as hex. */
void
tf_expect_ext(uint16_t type, const char *body, enum sni_status st)
{
	struct tf_hello h;

	tf_hello_begin(&h);
	tf_ext_common(&h.m);
	tf_ext_hex(&h.m, type, body);
	tf_hello_end(&h);
	tf_expect_hello(&h, st);
}

/* A hello whose only server_name carries host (len bytes). */
void
tf_expect_host(const void *host, size_t len, enum sni_status st)
{
	struct tf_hello h;

	tf_hello_begin(&h);
	tf_ext_sni_n(&h.m, host, len);
	tf_ext_common(&h.m);
	tf_hello_end(&h);
	tf_expect_hello(&h, st);
}
