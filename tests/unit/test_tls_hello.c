/*
 * tls_hello_parse: a fixture builder assembles ClientHellos from parts (so each malformed
 * case is one visible change to a valid hello), plus one hello captured from
 * ../shared/traffic/hello.pcap. Every stream is also checked prefix by prefix: a status
 * other than NEED_MORE, once reached, must not change as bytes arrive, and no prefix of a
 * valid hello may be anything but NEED_MORE.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sni/tls.h"

#define MSG_MAX		20000
#define GROUP_PQ	0x11ec		/* X25519MLKEM768 */

/* ---- fixture builder ------------------------------------------------------------------ */

struct msg {
	uint8_t b[MSG_MAX];
	size_t n;
};

static void
m_raw(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	if (n > 0)
		memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
m_fill(struct msg *m, uint8_t c, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memset(m->b + m->n, c, n);
	m->n += n;
}

static void
m_u8(struct msg *m, unsigned int v)
{
	uint8_t b = (uint8_t)v;

	m_raw(m, &b, 1);
}

static void
m_u16(struct msg *m, unsigned int v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	m_raw(m, b, 2);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Append hex digits; spaces are ignored so fixtures can show their fields. */
static void
m_hex(struct msg *m, const char *hex)
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
		m_u8(m, (unsigned int)(hi << 4 | v));
		hi = -1;
	}
	assert_true(hi < 0);
}

/* Reserve a width-byte length prefix; m_close() fills in what was added after it. */
static size_t
m_open(struct msg *m, size_t width)
{
	size_t at = m->n;

	m_fill(m, 0, width);
	return at;
}

static void
m_close(struct msg *m, size_t at, size_t width)
{
	size_t len = m->n - at - width;

	for (size_t i = width; i > 0; i--, len >>= 8)
		m->b[at + i - 1] = (uint8_t)len;
}

/* One extension whose body is given as hex. */
static void
ext_hex(struct msg *m, uint16_t type, const char *body)
{
	size_t at;

	m_u16(m, type);
	at = m_open(m, 2);
	m_hex(m, body);
	m_close(m, at, 2);
}

/* server_name with one host_name entry (RFC 6066 s3). */
static void
ext_sni_n(struct msg *m, const void *host, size_t len)
{
	size_t ext, list, name;

	m_u16(m, 0x0000);
	ext = m_open(m, 2);
	list = m_open(m, 2);
	m_u8(m, 0);
	name = m_open(m, 2);
	m_raw(m, host, len);
	m_close(m, name, 2);
	m_close(m, list, 2);
	m_close(m, ext, 2);
}

static void
ext_sni(struct msg *m, const char *host)
{
	ext_sni_n(m, host, strlen(host));
}

/* ALPN (RFC 7301 s3.1) from a NULL-terminated list. */
static void
ext_alpn(struct msg *m, const char *const *ids)
{
	size_t ext, list;

	m_u16(m, 0x0010);
	ext = m_open(m, 2);
	list = m_open(m, 2);
	for (; *ids != NULL; ids++) {
		m_u8(m, (unsigned int)strlen(*ids));
		m_raw(m, *ids, strlen(*ids));
	}
	m_close(m, list, 2);
	m_close(m, ext, 2);
}

/* An outer encrypted_client_hello: type 0, HPKE suite, config id, enc, payload. */
static void
ext_ech(struct msg *m)
{
	size_t ext, v;

	m_u16(m, 0xfe0d);
	ext = m_open(m, 2);
	m_hex(m, "00 0001 0001 7f");
	v = m_open(m, 2);
	m_fill(m, 0xec, 32);
	m_close(m, v, 2);
	v = m_open(m, 2);
	m_fill(m, 0xed, 176);
	m_close(m, v, 2);
	m_close(m, ext, 2);
}

/* key_share with an X25519 share, after a post-quantum one of pq bytes when pq > 0. */
static void
ext_key_share(struct msg *m, size_t pq)
{
	size_t ext, list, v;

	m_u16(m, 0x0033);
	ext = m_open(m, 2);
	list = m_open(m, 2);
	if (pq > 0) {
		m_u16(m, GROUP_PQ);
		v = m_open(m, 2);
		m_fill(m, 0x9c, pq);
		m_close(m, v, 2);
	}
	m_u16(m, 0x001d);
	v = m_open(m, 2);
	m_fill(m, 0x25, 32);
	m_close(m, v, 2);
	m_close(m, list, 2);
	m_close(m, ext, 2);
}

/* What every TLS 1.3 hello carries besides the extensions a test is about. */
static void
ext_common(struct msg *m)
{
	ext_hex(m, 0x000a, "0006 001d 0017 0018");			/* supported_groups */
	ext_hex(m, 0x000d, "0008 0403 0804 0401 0503");		/* signature_algorithms */
	ext_hex(m, 0x002b, "04 0304 0303");				/* supported_versions */
}

struct hello {
	struct msg m;
	size_t hs_at;
	size_t exts_at;
};

/*
 * The fixed part of a ClientHello: msg_type, u24 length, legacy_version, random,
 * session_id, cipher_suites, compression_methods; then the extensions' length is reserved.
 */
static void
hello_begin_with(struct hello *h, size_t sid_len, size_t suites_len, size_t nb_comp)
{
	size_t at;

	h->m.n = 0;
	m_u8(&h->m, 1);
	h->hs_at = m_open(&h->m, 3);
	m_u16(&h->m, 0x0303);
	m_fill(&h->m, 0xa5, 32);
	m_u8(&h->m, (unsigned int)sid_len);
	m_fill(&h->m, 0x5a, sid_len);
	at = m_open(&h->m, 2);
	for (size_t i = 0; i < suites_len; i++)
		m_u8(&h->m, i % 2 == 0 ? 0x13 : (unsigned int)(1 + i / 2 % 3));
	m_close(&h->m, at, 2);
	m_u8(&h->m, (unsigned int)nb_comp);
	m_fill(&h->m, 0, nb_comp);
	h->exts_at = m_open(&h->m, 2);
}

static void
hello_begin(struct hello *h)
{
	hello_begin_with(h, 32, 6, 1);
}

static void
hello_end(struct hello *h)
{
	m_close(&h->m, h->exts_at, 2);
	m_close(&h->m, h->hs_at, 3);
}

/* A TLS 1.2-style hello that stops after compression_methods. */
static void
hello_end_no_exts(struct hello *h)
{
	h->m.n = h->exts_at;
	m_close(&h->m, h->hs_at, 3);
}

struct style {
	const char *name;
	const char *sni;		/* NULL: no server_name */
	const char *const *alpn;	/* NULL: no ALPN */
	bool ech;
	size_t pq;			/* bytes of a post-quantum key share */
	size_t pad;			/* bytes of a padding extension (RFC 7685) */
	size_t records;			/* records the hello is spread over; 0 means 1 */
};

static const char *const alpn_h2[] = { "h2", "http/1.1", NULL };

static const struct style styles[] = {
	{ "minimal", "example.com", NULL, false, 0, 0, 1 },
	{ "alpn", "pypi.org", alpn_h2, false, 0, 0, 1 },
	{ "ech", "public.example.net", alpn_h2, true, 0, 0, 1 },
	{ "post-quantum", "files.pythonhosted.org", alpn_h2, true, 1216, 120, 1 },
	{ "three records", "github.com", alpn_h2, true, 1216, 0, 3 },
	{ "absent", NULL, alpn_h2, false, 0, 0, 1 },
};

static void
hello_style(struct hello *h, const struct style *s)
{
	hello_begin(h);
	if (s->sni != NULL)
		ext_sni(&h->m, s->sni);
	ext_common(&h->m);
	if (s->alpn != NULL)
		ext_alpn(&h->m, s->alpn);
	ext_key_share(&h->m, s->pq);
	if (s->ech)
		ext_ech(&h->m);
	if (s->pad > 0) {
		m_u16(&h->m, 0x0015);
		m_u16(&h->m, (unsigned int)s->pad);
		m_fill(&h->m, 0, s->pad);
	}
	hello_end(h);
}

/*
 * Put a handshake message into records (type 22, version 3.1) cut at the offsets cuts[]
 * (ascending, inside the message). Returns the stream length.
 */
static size_t
wrap_cuts(struct msg *out, const struct msg *hs, const size_t *cuts, size_t nb_cuts)
{
	size_t from = 0, at;

	out->n = 0;
	for (size_t i = 0; i <= nb_cuts; i++) {
		size_t to = i < nb_cuts ? cuts[i] : hs->n;

		m_hex(out, "16 0301");
		at = m_open(out, 2);
		m_raw(out, hs->b + from, to - from);
		m_close(out, at, 2);
		from = to;
	}
	return out->n;
}

/* Records of equal size (the last one shorter), at most nb_records of them. */
static size_t
wrap(struct msg *out, const struct msg *hs, size_t nb_records)
{
	size_t step = nb_records <= 1 ? hs->n : (hs->n + nb_records - 1) / nb_records, at;

	out->n = 0;
	for (size_t from = 0; from < hs->n; from += step) {
		size_t to = from + step < hs->n ? from + step : hs->n;

		m_hex(out, "16 0301");
		at = m_open(out, 2);
		m_raw(out, hs->b + from, to - from);
		m_close(out, at, 2);
	}
	return out->n;
}

/* ---- checking helpers ----------------------------------------------------------------- */

static uint8_t scratch[TLS_HELLO_MAX];

static enum sni_status
parse(const uint8_t *b, size_t n, struct tls_hello *out)
{
	return tls_hello_parse(b, n, scratch, sizeof(scratch), out);
}

/* Parse an exact-size heap copy, so valgrind sees a read one byte past the input. */
static enum sni_status
parse_exact(const uint8_t *b, size_t n)
{
	uint8_t *copy = malloc(n > 0 ? n : 1), *s = malloc(TLS_HELLO_MAX);
	struct tls_hello h;
	enum sni_status st;

	assert_non_null(copy);
	assert_non_null(s);
	if (n > 0)
		memcpy(copy, b, n);
	st = tls_hello_parse(copy, n, s, TLS_HELLO_MAX, &h);
	free(s);
	free(copy);
	return st;
}

/*
 * Feed every prefix of b: each is NEED_MORE or want, the first definite answer never
 * changes, and the whole stream is want. A valid hello (FOUND/ABSENT) is NEED_MORE on
 * every proper prefix.
 */
static void
check_prefixes(const uint8_t *b, size_t n, enum sni_status want)
{
	enum sni_status prev = SNI_NEED_MORE, st;

	for (size_t k = 0; k <= n; k++) {
		st = parse_exact(b, k);
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

static void
assert_name(struct sni_name nm, const char *want)
{
	if (nm.len != strlen(want) || memcmp(nm.p, want, nm.len) != 0)
		fail_msg("name \"%.*s\", want \"%s\"", (int)nm.len, (const char *)nm.p, want);
}

/* A single-record stream holding h, expected to give st. */
static void
expect_hello(const struct hello *h, enum sni_status st)
{
	struct msg s;

	wrap(&s, &h->m, 1);
	check_prefixes(s.b, s.n, st);
}

/* A hello with the common extensions plus one extension given as hex. */
static void
expect_ext(uint16_t type, const char *body, enum sni_status st)
{
	struct hello h;

	hello_begin(&h);
	ext_common(&h.m);
	ext_hex(&h.m, type, body);
	hello_end(&h);
	expect_hello(&h, st);
}

/* A hello whose only server_name carries host (len bytes). */
static void
expect_host(const void *host, size_t len, enum sni_status st)
{
	struct hello h;

	hello_begin(&h);
	ext_sni_n(&h.m, host, len);
	ext_common(&h.m);
	hello_end(&h);
	expect_hello(&h, st);
}

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
	for (size_t i = 0; i < sizeof(styles) / sizeof(styles[0]); i++) {
		const struct style *sty = &styles[i];
		struct hello h;
		struct msg s;
		struct tls_hello out;
		size_t n;

		hello_style(&h, sty);
		n = wrap(&s, &h.m, sty->records);
		print_message("%s: %zu-byte hello, %zu-byte stream\n", sty->name, h.m.n, n);
		check_prefixes(s.b, n, sty->sni != NULL ? SNI_FOUND : SNI_ABSENT);

		m_hex(&s, "14 0303 0001 01  17 0303 0003 aabbcc");	/* CCS, early data */
		assert_int_equal(parse(s.b, s.n, &out), sty->sni ? SNI_FOUND : SNI_ABSENT);
		assert_int_equal(out.stream_len, n);
		if (sty->sni != NULL)
			assert_name(out.sni, sty->sni);
		assert_int_equal(out.ech, sty->ech);
		assert_int_equal(out.nb_alpn, sty->alpn != NULL ? 2 : 0);
		assert_false(out.alpn_more);
		if (sty->alpn != NULL) {
			assert_name(out.alpn[0], "h2");
			assert_name(out.alpn[1], "http/1.1");
		}
	}
}

static void
test_post_quantum_size(void **state)
{
	struct hello h;
	struct msg s;
	struct tls_hello out;

	(void)state;
	hello_style(&h, &styles[3]);
	wrap(&s, &h.m, 1);
	assert_in_range(s.n, 1750, 1900);		/* two segments at a 1448-byte MSS */
	assert_int_equal(parse(s.b, 1448, &out), SNI_NEED_MORE);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_name(out.sni, "files.pythonhosted.org");
	/* One record: the name aliases buf, scratch is not used. */
	assert_true(out.sni.p > s.b && out.sni.p < s.b + s.n);
}

/* Captured from ../shared/traffic/hello.pcap: a Chrome-style hello with GREASE and ECH. */
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
real_hello(struct msg *s)
{
	s->n = 0;
	for (size_t i = 0; real_hello_hex[i] != NULL; i++)
		m_hex(s, real_hello_hex[i]);
}

static void
test_real_hello(void **state)
{
	struct msg s;
	struct tls_hello out;

	(void)state;
	real_hello(&s);
	assert_int_equal(s.n, 517);
	check_prefixes(s.b, s.n, SNI_FOUND);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_name(out.sni, "api.bitbucket.org");
	assert_int_equal(out.nb_alpn, 2);
	assert_name(out.alpn[0], "h2");
	assert_name(out.alpn[1], "http/1.1");
	assert_true(out.ech);
	assert_int_equal(out.stream_len, 517);
}

/* The captured hello re-cut into two records at every byte of its handshake message. */
static void
test_real_hello_split_everywhere(void **state)
{
	struct msg s, hs, rec;
	struct tls_hello out;

	(void)state;
	real_hello(&s);
	hs.n = 0;
	m_raw(&hs, s.b + 5, s.n - 5);
	for (size_t cut = 1; cut < hs.n; cut++) {
		wrap_cuts(&rec, &hs, &cut, 1);
		assert_int_equal(parse_exact(rec.b, rec.n - 1), SNI_NEED_MORE);
		assert_int_equal(parse(rec.b, rec.n, &out), SNI_FOUND);
		assert_name(out.sni, "api.bitbucket.org");
		assert_int_equal(out.stream_len, rec.n);
		assert_true(out.ech);
		/* Gathered: the name now aliases scratch. */
		assert_true(out.sni.p >= scratch && out.sni.p < scratch + sizeof(scratch));
	}
}

/* Three records, both cuts at every pair of offsets (every 7th byte for speed). */
static void
test_fragmented_two_cuts(void **state)
{
	struct hello h;
	struct msg s;
	struct tls_hello out;
	size_t cuts[2];

	(void)state;
	hello_style(&h, &styles[1]);
	for (cuts[0] = 1; cuts[0] < h.m.n; cuts[0] += 7) {
		for (cuts[1] = cuts[0] + 1; cuts[1] < h.m.n; cuts[1] += 3) {
			wrap_cuts(&s, &h.m, cuts, 2);
			assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
			assert_name(out.sni, "pypi.org");
			assert_int_equal(out.nb_alpn, 2);
			assert_int_equal(out.stream_len, s.n);
		}
	}
}

/* The 4-byte handshake header itself split over records, and one byte per record. */
static void
test_fragmented_header_and_bytes(void **state)
{
	struct hello h;
	struct msg s;
	size_t cuts[3] = { 1, 2, 3 };

	(void)state;
	hello_style(&h, &styles[0]);
	wrap_cuts(&s, &h.m, cuts, 3);
	check_prefixes(s.b, s.n, SNI_FOUND);
	wrap(&s, &h.m, h.m.n);
	assert_int_equal(s.n, 6 * h.m.n);
	check_prefixes(s.b, s.n, SNI_FOUND);
}

static void
test_trailing_dot(void **state)
{
	struct hello h;
	struct msg s;
	struct tls_hello out;

	(void)state;
	hello_begin(&h);
	ext_sni(&h.m, "pypi.org.");
	hello_end(&h);
	wrap(&s, &h.m, 1);
	check_prefixes(s.b, s.n, SNI_FOUND);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_name(out.sni, "pypi.org");
}

static void
test_host_limits(void **state)
{
	char name[256];

	(void)state;
	memset(name, 'a', sizeof(name));
	expect_host(name, 63, SNI_FOUND);
	for (size_t i = 63; i < sizeof(name); i += 64)
		name[i] = '.';
	expect_host(name, 253, SNI_FOUND);
	name[253] = '.';
	expect_host(name, 254, SNI_FOUND);		/* 253 and the root dot */
	expect_host("A-1.Example.COM", 15, SNI_FOUND);
}

static void
test_absent(void **state)
{
	struct hello h;

	(void)state;
	hello_begin(&h);
	ext_common(&h.m);
	hello_end(&h);
	expect_hello(&h, SNI_ABSENT);

	hello_begin(&h);		/* an empty extensions block */
	hello_end(&h);
	expect_hello(&h, SNI_ABSENT);

	hello_begin_with(&h, 0, 2, 1);	/* no extensions block at all (RFC 5246) */
	hello_end_no_exts(&h);
	expect_hello(&h, SNI_ABSENT);
}

static void
test_alpn_values(void **state)
{
	static const char *const three[] = { "h3", "h2", "http/1.1", NULL };
	static const char *const many[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
		NULL };
	struct hello h;
	struct msg s;
	struct tls_hello out;

	(void)state;
	hello_begin(&h);
	ext_alpn(&h.m, three);
	ext_sni(&h.m, "example.org");
	hello_end(&h);
	wrap(&s, &h.m, 1);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_int_equal(out.nb_alpn, 3);
	assert_false(out.alpn_more);
	for (size_t i = 0; i < 3; i++)
		assert_name(out.alpn[i], three[i]);

	hello_begin(&h);
	ext_alpn(&h.m, many);
	hello_end(&h);
	wrap(&s, &h.m, 1);
	assert_int_equal(parse(s.b, s.n, &out), SNI_ABSENT);
	assert_int_equal(out.nb_alpn, TLS_ALPN_MAX);
	assert_true(out.alpn_more);
	assert_name(out.alpn[TLS_ALPN_MAX - 1], "h");
}

static void
test_ech_flag(void **state)
{
	struct hello h;
	struct msg s;
	struct tls_hello out;

	(void)state;
	hello_begin(&h);
	ext_sni(&h.m, "cover.example");
	ext_ech(&h.m);
	hello_end(&h);
	wrap(&s, &h.m, 1);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_true(out.ech);
	assert_name(out.sni, "cover.example");		/* judged on the outer SNI */

	hello_begin(&h);
	ext_sni(&h.m, "cover.example");
	ext_hex(&h.m, 0xfe0c, "00");			/* a draft's code point is not ECH */
	hello_end(&h);
	wrap(&s, &h.m, 1);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_false(out.ech);
}

/* A record bigger than a segment is just bytes that have not all arrived yet. */
static void
test_need_more(void **state)
{
	struct tls_hello out;

	(void)state;
	assert_int_equal(parse((const uint8_t *)"", 0, &out), SNI_NEED_MORE);
	assert_int_equal(parse((const uint8_t *)"\x16", 1, &out), SNI_NEED_MORE);
	assert_int_equal(parse((const uint8_t *)"\x16\x03\x01\x3f\xfb\x01", 6, &out),
	    SNI_NEED_MORE);
	/* A 2^14-byte first record is legal TLS but ends past TLS_HELLO_MAX. */
	assert_int_equal(parse((const uint8_t *)"\x16\x03\x01\x40\x00", 5, &out),
	    SNI_MALFORMED);
}

/* ---- not TLS --------------------------------------------------------------------------- */

/* Not TLS from the first byte that shows it, on through the whole stream. */
static void
expect_not_tls(const char *hex)
{
	struct msg s = { .n = 0 };

	m_hex(&s, hex);
	check_prefixes(s.b, s.n, SNI_NOT_TLS);
}

static void
test_not_tls_http(void **state)
{
	static const char get[] = "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n";
	struct tls_hello out;

	(void)state;
	check_prefixes((const uint8_t *)get, sizeof(get) - 1, SNI_NOT_TLS);
	assert_int_equal(parse((const uint8_t *)get, 1, &out), SNI_NOT_TLS);
}

static void
test_not_tls_ssh(void **state)
{
	static const char ssh[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
	struct tls_hello out;

	(void)state;
	check_prefixes((const uint8_t *)ssh, sizeof(ssh) - 1, SNI_NOT_TLS);
	assert_int_equal(parse((const uint8_t *)ssh, 1, &out), SNI_NOT_TLS);
}

static void
test_not_tls_application_data(void **state)
{
	(void)state;
	expect_not_tls("17 0303 0010 00112233445566778899aabbccddeeff");
	expect_not_tls("15 0303 0002 0228");			/* an alert */
	expect_not_tls("14 0303 0001 01");			/* change_cipher_spec */
}

static void
test_not_tls_sslv2(void **state)
{
	(void)state;
	expect_not_tls("80 2e 01 0002 0015 0000 0010 010080 0700c0 030080");
}

static void
test_not_tls_record_header(void **state)
{
	struct tls_hello out;

	(void)state;
	expect_not_tls("16 0203 0010 01");			/* major 2 */
	expect_not_tls("16 0303 0000 01");			/* empty first record */
	expect_not_tls("16 0303 4001 01");			/* 2^14 + 1 */
	/* Known too long from its length's high byte alone. */
	assert_int_equal(parse((const uint8_t *)"\x16\x03\x01\x41", 4, &out), SNI_NOT_TLS);
}

/* ---- malformed ------------------------------------------------------------------------- */

static void
test_malformed_handshake_type(void **state)
{
	struct tls_hello out;

	(void)state;
	/* A server_hello, and early: the type byte is enough. */
	assert_int_equal(parse((const uint8_t *)"\x16\x03\x01\x01\x00\x02", 6, &out),
	    SNI_MALFORMED);
	check_prefixes((const uint8_t *)"\x16\x03\x03\x00\x05\x02\x00\x00\x01\x00", 10,
	    SNI_MALFORMED);
}

/* An alert or change_cipher_spec record before the hello is whole. */
static void
test_malformed_non_handshake_record(void **state)
{
	struct hello h;
	struct msg s, t;
	size_t cut;

	(void)state;
	hello_style(&h, &styles[0]);
	cut = h.m.n / 2;
	wrap_cuts(&s, &h.m, &cut, 1);
	t.n = 0;
	m_raw(&t, s.b, 5 + cut);
	m_hex(&t, "14 0303 0001 01");
	m_raw(&t, s.b + 5 + cut, s.n - 5 - cut);
	check_prefixes(t.b, t.n, SNI_MALFORMED);

	t.n = 5 + cut;				/* later records follow the same header rules */
	m_hex(&t, "16 0303 0000");
	check_prefixes(t.b, t.n, SNI_MALFORMED);
	t.n = 5 + cut;
	m_hex(&t, "16 0403 0010");
	check_prefixes(t.b, t.n, SNI_MALFORMED);
}

/* Bytes after the hello in the record that completes it. */
static void
test_malformed_bytes_after_hello(void **state)
{
	struct hello h;
	struct msg s;
	size_t cut;

	(void)state;
	hello_style(&h, &styles[0]);
	m_hex(&h.m, "00");
	wrap(&s, &h.m, 1);
	check_prefixes(s.b, s.n, SNI_MALFORMED);
	cut = 10;
	wrap_cuts(&s, &h.m, &cut, 1);
	check_prefixes(s.b, s.n, SNI_MALFORMED);
	cut = 2;				/* the length arrives in the second record */
	wrap_cuts(&s, &h.m, &cut, 1);
	check_prefixes(s.b, s.n, SNI_MALFORMED);
}

/* A hello of msg_len bytes: server_name and a padding extension (RFC 7685) to fill. */
static void
hello_padded(struct hello *h, size_t msg_len)
{
	size_t at;

	hello_begin(h);
	ext_sni(&h->m, "example.com");
	m_u16(&h->m, 0x0015);
	at = m_open(&h->m, 2);
	assert_true(msg_len >= h->m.n);
	m_fill(&h->m, 0, msg_len - h->m.n);
	m_close(&h->m, at, 2);
	hello_end(h);
	assert_int_equal(h->m.n, msg_len);
}

/* A hello that cannot fit in TLS_HELLO_MAX stream bytes, or in the caller's scratch. */
static void
test_malformed_too_big(void **state)
{
	struct hello h;
	struct msg s;
	struct tls_hello out;
	uint8_t small[256];

	(void)state;
	/* Known from the first record's header and the hello's length. */
	assert_int_equal(parse((const uint8_t *)"\x16\x03\x01\x40\x00\x01\x00\x40\x00", 9,
	    &out), SNI_MALFORMED);
	hello_padded(&h, TLS_HELLO_MAX - 5);		/* exactly fits in one record */
	wrap(&s, &h.m, 1);
	assert_int_equal(s.n, TLS_HELLO_MAX);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);
	assert_int_equal(out.stream_len, TLS_HELLO_MAX);
	hello_padded(&h, TLS_HELLO_MAX - 4);		/* one byte too many */
	wrap(&s, &h.m, 1);
	check_prefixes(s.b, s.n, SNI_MALFORMED);
	assert_int_equal(parse(s.b, 9, &out), SNI_MALFORMED);
	hello_padded(&h, TLS_HELLO_MAX - 19);		/* fits, but not in 4 records */
	wrap(&s, &h.m, 4);
	assert_int_equal(parse(s.b, s.n, &out), SNI_MALFORMED);
	wrap(&s, &h.m, 3);
	assert_int_equal(parse(s.b, s.n, &out), SNI_FOUND);

	hello_style(&h, &styles[0]);
	wrap(&s, &h.m, 2);
	assert_int_equal(tls_hello_parse(s.b, s.n, small, 64, &out), SNI_MALFORMED);
	assert_int_equal(tls_hello_parse(s.b, 9, small, 64, &out), SNI_MALFORMED);
	assert_int_equal(tls_hello_parse(s.b, s.n, small, sizeof(small), &out), SNI_FOUND);
	wrap(&s, &h.m, 1);			/* one record: no scratch needed */
	assert_int_equal(tls_hello_parse(s.b, s.n, NULL, 0, &out), SNI_FOUND);
	assert_int_equal(tls_hello_parse(s.b, s.n - 1, NULL, 0, &out), SNI_NEED_MORE);
}

static void
test_malformed_legacy_version(void **state)
{
	struct hello h;

	(void)state;
	hello_style(&h, &styles[0]);
	h.m.b[4] = 0x02;
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_session_id(void **state)
{
	struct hello h;

	(void)state;
	hello_begin_with(&h, 33, 2, 1);
	ext_sni(&h.m, "example.com");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_cipher_suites(void **state)
{
	struct hello h;

	(void)state;
	hello_begin_with(&h, 32, 5, 1);		/* odd length */
	ext_sni(&h.m, "example.com");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
	hello_begin_with(&h, 32, 0, 1);		/* none */
	ext_sni(&h.m, "example.com");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_compression(void **state)
{
	struct hello h;

	(void)state;
	hello_begin_with(&h, 32, 2, 0);
	ext_sni(&h.m, "example.com");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
}

/* The extensions' length disagrees with the message, both ways. */
static void
test_malformed_extensions_length(void **state)
{
	struct hello h;

	(void)state;
	hello_style(&h, &styles[1]);
	h.m.b[h.exts_at + 1]++;
	expect_hello(&h, SNI_MALFORMED);
	hello_style(&h, &styles[1]);
	h.m.b[h.exts_at + 1]--;
	expect_hello(&h, SNI_MALFORMED);
	hello_begin_with(&h, 0, 2, 1);		/* one byte where a length should be */
	hello_end_no_exts(&h);
	m_u8(&h.m, 0);
	m_close(&h.m, h.hs_at, 3);
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_trailing_after_extensions(void **state)
{
	struct hello h;

	(void)state;
	hello_style(&h, &styles[0]);
	m_hex(&h.m, "0000");
	m_close(&h.m, h.hs_at, 3);
	expect_hello(&h, SNI_MALFORMED);
}

/* One extension's length runs past the extensions block. */
static void
test_malformed_extension_length(void **state)
{
	struct hello h;

	(void)state;
	hello_begin(&h);
	ext_sni(&h.m, "example.com");
	m_hex(&h.m, "0017 0004 00");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_duplicate_server_name(void **state)
{
	struct hello h;

	(void)state;
	hello_begin(&h);
	ext_sni(&h.m, "allowed.example");
	ext_common(&h.m);
	ext_sni(&h.m, "allowed.example");
	hello_end(&h);
	expect_hello(&h, SNI_MALFORMED);
}

static void
test_malformed_duplicate_extension(void **state)
{
	static const uint16_t types[] = { 0x0010, 0xfe0d, 0x0017, 0x0a0a, 0xffff, 0x0001 };
	struct hello h;

	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		hello_begin(&h);
		ext_sni(&h.m, "example.com");
		ext_hex(&h.m, types[i], "0003 02 6832");
		ext_common(&h.m);
		ext_hex(&h.m, types[i], "0003 02 6832");
		hello_end(&h);
		expect_hello(&h, SNI_MALFORMED);
	}
}

static void
test_malformed_sni_second_entry(void **state)
{
	(void)state;
	expect_ext(0x0000, "001c 00 000b 6578616d706c652e636f6d 00 000b 6578616d706c652e6f7267",
	    SNI_MALFORMED);
	/* Same name twice is no better. */
	expect_ext(0x0000, "001c 00 000b 6578616d706c652e636f6d 00 000b 6578616d706c652e636f6d",
	    SNI_MALFORMED);
	/* A second entry of another type. */
	expect_ext(0x0000, "0014 00 000b 6578616d706c652e636f6d 01 0003 616263", SNI_MALFORMED);
}

static void
test_malformed_sni_name_type(void **state)
{
	(void)state;
	expect_ext(0x0000, "000e 01 000b 6578616d706c652e636f6d", SNI_MALFORMED);
}

static void
test_malformed_sni_empty_name(void **state)
{
	(void)state;
	expect_host("", 0, SNI_MALFORMED);
}

static void
test_malformed_sni_empty_ext(void **state)
{
	(void)state;
	expect_ext(0x0000, "", SNI_MALFORMED);			/* the server's form */
	expect_ext(0x0000, "0000", SNI_MALFORMED);		/* an empty list */
}

static void
test_malformed_sni_nul(void **state)
{
	(void)state;
	expect_host("example.com\0.evil", 17, SNI_MALFORMED);
	expect_host("\0", 1, SNI_MALFORMED);
	expect_host("example.com\0", 12, SNI_MALFORMED);
}

static void
test_malformed_sni_bad_byte(void **state)
{
	static const char bad[] = "_ /:*@%\\\"'`!?#\t\r\n\x7f\x80\xc3\xff";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) - 1; i++) {
		char name[] = "ex?mple.com";

		name[2] = bad[i];
		expect_host(name, sizeof(name) - 1, SNI_MALFORMED);
	}
}

static void
test_malformed_sni_label_too_long(void **state)
{
	char name[80];

	(void)state;
	memset(name, 'a', 64);
	memcpy(name + 64, ".com", 4);
	expect_host(name, 68, SNI_MALFORMED);
}

static void
test_malformed_sni_empty_label(void **state)
{
	(void)state;
	expect_host("example..com", 12, SNI_MALFORMED);
	expect_host("example.com..", 13, SNI_MALFORMED);	/* only one trailing dot */
	expect_host(".", 1, SNI_MALFORMED);
}

static void
test_malformed_sni_leading_dot(void **state)
{
	(void)state;
	expect_host(".example.com", 12, SNI_MALFORMED);
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
	expect_host(name, 254, SNI_MALFORMED);
	name[254] = '.';
	expect_host(name, 255, SNI_MALFORMED);
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
	expect_ext(0x0000, "000e 00 000b 6578616d706c652e636f6d", SNI_FOUND);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		expect_ext(0x0000, bodies[i], SNI_MALFORMED);
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
	expect_ext(0x0010, "0003 02 6832", SNI_ABSENT);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		expect_ext(0x0010, bodies[i], SNI_MALFORMED);
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
		cmocka_unit_test(test_host_limits),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_alpn_values),
		cmocka_unit_test(test_ech_flag),
		cmocka_unit_test(test_need_more),
		cmocka_unit_test(test_not_tls_http),
		cmocka_unit_test(test_not_tls_ssh),
		cmocka_unit_test(test_not_tls_application_data),
		cmocka_unit_test(test_not_tls_sslv2),
		cmocka_unit_test(test_not_tls_record_header),
		cmocka_unit_test(test_malformed_handshake_type),
		cmocka_unit_test(test_malformed_non_handshake_record),
		cmocka_unit_test(test_malformed_bytes_after_hello),
		cmocka_unit_test(test_malformed_too_big),
		cmocka_unit_test(test_malformed_legacy_version),
		cmocka_unit_test(test_malformed_session_id),
		cmocka_unit_test(test_malformed_cipher_suites),
		cmocka_unit_test(test_malformed_compression),
		cmocka_unit_test(test_malformed_extensions_length),
		cmocka_unit_test(test_malformed_trailing_after_extensions),
		cmocka_unit_test(test_malformed_extension_length),
		cmocka_unit_test(test_malformed_duplicate_server_name),
		cmocka_unit_test(test_malformed_duplicate_extension),
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
