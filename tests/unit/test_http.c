/*
 * HTTP/1.x request framing: http_classify on the first bytes of streams, http_head_parse
 * on request heads, http_body_feed on bodies. Every refused head is one visible change to
 * a head that is accepted (the case says which rule it tests), so a check that went
 * missing would fail the test. Heads are also parsed prefix by prefix, and bodies fed in
 * pieces of every size from one byte: the answer must not depend on how bytes arrive.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sni/http.h"

/* A string literal and its length, NULs included. */
#define S(lit)	(const uint8_t *)(lit), sizeof(lit) - 1

/* ---- classify -------------------------------------------------------------------------- */

/* p[0, n) is want, and every prefix is NEED_MORE or want. */
static void
expect_first(const uint8_t *p, size_t n, enum http_first want)
{
	assert_int_equal(http_classify(p, n), want);
	for (size_t k = 0; k < n; k++) {
		enum http_first st = http_classify(p, k);

		assert_true(st == HTTP_FIRST_NEED_MORE || st == want);
	}
}

static void
test_classify(void **state)
{
	static const uint8_t tls[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01 };
	static const uint8_t junk[] = { 0x00, 0x00, 0x00, 0x2c, 0x01, 0x02 };
	static const uint8_t sslv2[] = { 0x80, 0x1c, 0x01, 0x03, 0x01 };
	static const uint8_t v2_server[] = { 0x80, 0x1c, 0x04, 0x00, 0x02 };

	(void)state;
	expect_first(S("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"), HTTP_FIRST_SSH);
	expect_first(S("SSH-1.99-Cisco-1.25\r\n"), HTTP_FIRST_SSH);
	assert_int_equal(http_classify(S("SSH-2.0-OpenSSH_9.2p1 Debian")), HTTP_FIRST_NEED_MORE);
	assert_int_equal(http_classify(S("SS")), HTTP_FIRST_NEED_MORE);
	expect_first(tls, sizeof(tls), HTTP_FIRST_TLS);
	assert_int_equal(http_classify(tls, 1), HTTP_FIRST_TLS);
	/* an SSLv2-format CLIENT-HELLO is TLS (a TLS server takes it); another v2 type is not */
	expect_first(sslv2, sizeof(sslv2), HTTP_FIRST_TLS);
	assert_int_equal(http_classify(sslv2, 2), HTTP_FIRST_NEED_MORE);
	expect_first(v2_server, sizeof(v2_server), HTTP_FIRST_HTTP);
	assert_int_equal(http_classify(NULL, 0), HTTP_FIRST_NEED_MORE);

	/* Positive evidence only: whatever is neither TLS nor SSH is judged as HTTP at once. */
	assert_int_equal(http_classify(S("G")), HTTP_FIRST_HTTP);
	expect_first(S("GET / HTTP/1.1\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("GET http://evil.test/\r\n"), HTTP_FIRST_HTTP);	/* HTTP/0.9 */
	expect_first(S("\r\n\r\n\nPOST /x HTTP/1.0\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("GET\x1c/\x1fHTTP/1.1\r\n"), HTTP_FIRST_HTTP);
	expect_first(junk, sizeof(junk), HTTP_FIRST_HTTP);
	expect_first(S("EHLO mail.example\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("HTTP/1.1 200 OK\r\n"), HTTP_FIRST_HTTP);

	/* SSH only as RFC 4253 spells it, and never where a lenient server sees a request */
	expect_first(S("SSH-2.0-x / HTTP/1.1\r\n"), HTTP_FIRST_HTTP);	/* gunicorn serves it */
	expect_first(S("SSH-2.0-x / http/1.1junk\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("SSH-2.0-x\n"), HTTP_FIRST_HTTP);		/* no CR */
	expect_first(S("SSH-3.0-x\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("SSH-2.0-\r\n"), HTTP_FIRST_HTTP);		/* no software version */
	expect_first(S("SSH-2.0-x\x01y\r\n"), HTTP_FIRST_HTTP);
	expect_first(S("SSHX /sshm HTTP/1.1\r\n"), HTTP_FIRST_HTTP);	/* nginx serves it */
}

/* An SSH line still open at its RFC 4253 limit is HTTP, however it goes on. */
static void
test_classify_long(void **state)
{
	uint8_t p[HTTP_SSH_LINE_MAX + 1];

	(void)state;
	memset(p, 'a', sizeof(p));
	memcpy(p, "SSH-2.0-", 8);
	assert_int_equal(http_classify(p, HTTP_SSH_LINE_MAX - 1), HTTP_FIRST_NEED_MORE);
	assert_int_equal(http_classify(p, HTTP_SSH_LINE_MAX), HTTP_FIRST_HTTP);
	p[HTTP_SSH_LINE_MAX - 2] = '\r';	/* inside it: an identification line */
	p[HTTP_SSH_LINE_MAX - 1] = '\n';
	expect_first(p, HTTP_SSH_LINE_MAX, HTTP_FIRST_SSH);
	p[HTTP_SSH_LINE_MAX - 1] = 'a';
	p[HTTP_SSH_LINE_MAX] = '\n';		/* past the limit: not read */
	assert_int_equal(http_classify(p, HTTP_SSH_LINE_MAX + 1), HTTP_FIRST_HTTP);
}

/* ---- heads ----------------------------------------------------------------------------- */

/*
 * Parse p[0, n) from an exact-size copy; every shorter prefix must be NEED_MORE, or the
 * same status once it holds what decided it.
 */
static enum http_status
parse(const uint8_t *p, size_t n, struct http_head *h)
{
	uint8_t *copy = malloc(n > 0 ? n : 1);
	struct http_head hp;
	enum http_status st;

	assert_non_null(copy);
	memcpy(copy, p, n);
	st = http_head_parse(copy, n, h);
	for (size_t k = 0; k < n; k++) {
		enum http_status stp = http_head_parse(copy, k, &hp);

		assert_true(stp == HTTP_NEED_MORE || stp == st);
		if (st == HTTP_OK)
			assert_int_equal(stp, k < h->head_len ? HTTP_NEED_MORE : HTTP_OK);
	}
	free(copy);
	return st;
}

static void
expect_head(const uint8_t *p, size_t n, const char *host, uint16_t port, struct http_head *h)
{
	assert_int_equal(parse(p, n, h), HTTP_OK);
	assert_int_equal(h->head_len, n);
	assert_string_equal(h->host, host);
	assert_int_equal(h->host_len, strlen(host));
	assert_int_equal(h->port, port);
}

static void
expect_bad(const uint8_t *p, size_t n)
{
	struct http_head h;

	assert_int_equal(parse(p, n, &h), HTTP_BAD);
}

static void
test_head_forms(void **state)
{
	struct http_head h;

	(void)state;
	expect_head(S("GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"),
	    "example.com", 0, &h);
	assert_false(h.connect);
	assert_false(h.upgrade);
	assert_int_equal(h.body, HTTP_BODY_NONE);

	expect_head(S("GET http://example.com:8080/x HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"),
	    "example.com", 8080, &h);
	expect_head(S("GET HTTPS://Example.com HTTP/1.1\r\nHost: EXAMPLE.com.\r\n\r\n"),
	    "example.com", 0, &h);
	expect_head(S("OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n"), "example.com", 0, &h);

	expect_head(S("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
	    "example.com", 443, &h);
	assert_true(h.connect);
	expect_head(S("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n"), "2001:db8::1", 443, &h);
	assert_true(h.connect);

	expect_head(S("GET / HTTP/1.0\r\nHost: example.com\r\n\r\n"), "example.com", 0, &h);
	expect_head(S("GET / HTTP/1.1\nHost: example.com\n\n"), "example.com", 0, &h);
	expect_head(S("\r\n\nGET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), "example.com", 0, &h);
	expect_head(S("GET / HTTP/1.1\r\nUpgrade: websocket\r\nHost: example.com\r\n"
	    "Connection: Upgrade\r\n\r\n"), "example.com", 0, &h);
	assert_true(h.upgrade);
	expect_head(S("GET / HTTP/1.1\r\nX-Bin: caf\xc3\xa9\t1\r\nHost: example.com\r\n\r\n"),
	    "example.com", 0, &h);			/* obs-text and HTAB in a value */
}

/* HTTP/0.9 simple requests: nginx serves the site an absolute-form target names. */
static void
test_head_http09(void **state)
{
	struct http_head h;

	(void)state;
	expect_head(S("GET http://Example.com/x\r\n"), "example.com", 0, &h);
	assert_int_equal(h.body, HTTP_BODY_NONE);
	assert_false(h.connect);
	expect_head(S("\r\nGET http://example.com:8080\n"), "example.com", 8080, &h);
	expect_bad(S("GET /x\r\n"));				/* names no host */
	expect_bad(S("POST http://example.com/\r\n"));	/* only GET has a 0.9 form */
	expect_bad(S("get http://example.com/\r\n"));
	expect_bad(S("GET http://example.com/ \r\n"));
	expect_bad(S("CONNECT example.com:443\r\n"));
}

/* A first line that can no longer be a request line is refused before it ends. */
static void
test_head_bad_early(void **state)
{
	struct http_head h;

	(void)state;
	assert_int_equal(http_head_parse(S("\x00\x00\x00\x2c"), &h), HTTP_BAD);
	assert_int_equal(http_head_parse(S("GET\t/"), &h), HTTP_BAD);
	assert_int_equal(http_head_parse(S("\r\nEHLO\x1cx"), &h), HTTP_BAD);
	assert_int_equal(http_head_parse(S("\r\n\nGET"), &h), HTTP_NEED_MORE);
	assert_int_equal(http_head_parse(S("GET /\x01"), &h), HTTP_NEED_MORE);	/* its line */
}

static void
test_head_host(void **state)
{
	struct http_head h;

	(void)state;
	expect_head(S("GET / HTTP/1.1\r\nHost: WWW.Example.COM.\r\n\r\n"), "www.example.com", 0,
	    &h);
	expect_head(S("GET / HTTP/1.1\r\nhOST:   example.com:80  \r\n\r\n"), "example.com", 80, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: example.com:00080\r\n\r\n"), "example.com", 80, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: [2001:DB8::a]:8443\r\n\r\n"), "2001:db8::a", 8443,
	    &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: [::ffff:192.0.2.1]\r\n\r\n"), "::ffff:192.0.2.1", 0,
	    &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: 192.0.2.10:65535\r\n\r\n"), "192.0.2.10", 65535, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: 0.0.0.0\r\n\r\n"), "0.0.0.0", 0, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: my_host.example\r\n\r\n"), "my_host.example", 0, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: 1e100.net\r\n\r\n"), "1e100.net", 0, &h);
	expect_head(S("GET / HTTP/1.1\r\nHost: 0x7f.example\r\n\r\n"), "0x7f.example", 0, &h);
}

/*
 * IPv6 literals against glibc's inet_pton(), both ways; the reader may not use it (sni/
 * is libc only, by tests/layout), and must agree with it.
 */
static void
test_head_host_ipv6(void **state)
{
	static const char *const addrs[] = {
		"::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8",
		"1:2:3:4:5:6::8", "1::8", "ffff:FFFF::0000:0", "::ffff:192.0.2.1",
		"1:2:3:4:5:6:1.2.3.4", "::1.2.3.4", "64:ff9b::192.0.2.33",
		"", ":", ":::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::",
		"::1:2:3:4:5:6:7:8", "1::2::3", "12345::1", "g::1", ":1::", "1::2:", "1:",
		"::1.2.3", "::1.2.3.4.5", "::01.2.3.4", "::256.2.3.4", "1.2.3.4", "::1.2.3.4:5",
		"1:2:3:4:5:6:7:1.2.3.4", "::ffff:0x1.2.3.4", "::1 ", "1:2:3:4:5:6:7:8:",
	};
	char req[128];
	struct http_head h;
	struct in6_addr a;

	(void)state;
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		int n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: [%s]:80\r\n\r\n",
		    addrs[i]);
		enum http_status want = inet_pton(AF_INET6, addrs[i], &a) == 1 ? HTTP_OK : HTTP_BAD;

		assert_int_equal(http_head_parse((const uint8_t *)req, (size_t)n, &h), want);
		if (want == HTTP_OK)
			assert_int_equal(h.port, 80);
	}
}

/* Each is an accepted head above with one rule broken. */
static void
test_head_bad_request_line(void **state)
{
	(void)state;
	expect_bad(S("GET  / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET /  HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET\t/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1 \r\nHost: example.com\r\n\r\n"));
	expect_bad(S(" GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET /\x7f HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("G(T / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.2\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/2.0\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / http/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.10\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET /\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
}

static void
test_head_bad_lines(void **state)
{
	(void)state;
	/* a bare CR: in the request line, in a value, as a line, before the final LF */
	expect_bad(S("GET /\r HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\r2\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\r\n\r\r\n"));
	expect_bad(S("\r\r\nGET / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\r\r\n\r\n"));
	/* whitespace before the colon, obs-fold, no colon, an empty or non-token name */
	expect_bad(S("GET / HTTP/1.1\r\nHost : example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost\t: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\r\n 2\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\r\n\t2\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\n Host: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\r\n evil.example\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost:\r\n\texample.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\n: 1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX(A): 1\r\nHost: example.com\r\n\r\n"));
	/* CTLs in a value: NUL, VT, DEL */
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\0002\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\v2\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nX-A: 1\x7f\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\x00\r\n\r\n"));
}

/*
 * The request-target and the field values are checked a word at a time: a byte of every
 * kind at every place in a word (and in the tail after the last whole one) must be found,
 * and an HTAB or obs-text in a value (a word that must be asked byte by byte) let through.
 * The byte is put where snprintf() wrote a '~' (a NUL would end its string).
 */
static size_t
word_head(char *buf, size_t cap, const char *path, const char *value, uint8_t c)
{
	int n = snprintf(buf, cap, "GET %s HTTP/1.1\r\nX-A: x%sx\r\nHost: a.example\r\n\r\n",
	    path, value);
	char *at = memchr(buf, '~', (size_t)n);

	assert_non_null(at);
	*at = (char)c;
	return (size_t)n;
}

static void
test_head_word_bytes(void **state)
{
	static const uint8_t bad_target[] = { 0x00, 0x09, 0x0d, 0x1f, 0x7f, 0x80, 0xff };
	static const uint8_t bad_value[] = { 0x00, 0x01, 0x0b, 0x0d, 0x1f, 0x7f };
	static const uint8_t good_value[] = { '\t', 0x80, 0xff, ' ', 0x7e };
	char buf[256];

	(void)state;
	for (size_t at = 0; at < 20; at++) {
		char path[24], value[24];
		struct http_head h;

		memset(path, 'a', sizeof(path));
		memset(value, 'v', sizeof(value));
		path[0] = '/';
		path[21] = value[21] = '\0';
		path[at + 1] = '~';
		for (size_t k = 0; k < sizeof(bad_target); k++)
			expect_bad((const uint8_t *)buf, word_head(buf, sizeof(buf), path, value,
			    bad_target[k]));
		path[at + 1] = 'a';
		value[at] = '~';
		for (size_t k = 0; k < sizeof(bad_value); k++)
			expect_bad((const uint8_t *)buf, word_head(buf, sizeof(buf), path, value,
			    bad_value[k]));
		for (size_t k = 0; k < sizeof(good_value); k++)
			expect_head((const uint8_t *)buf, word_head(buf, sizeof(buf), path, value,
			    good_value[k]), "a.example", 0, &h);
		value[at] = 'v';
	}
}

static void
test_head_bad_host(void **state)
{
	(void)state;
	expect_bad(S("GET / HTTP/1.1\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.0\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com\r\nhost: evil.example\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com, evil.example\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com evil.example\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: user@example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: ex%61mple.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: ex\xc3\xa4mple.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: \r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: :80\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: .\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com..\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: .example.com\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: www..example.com\r\n\r\n"));
	/* ports: empty, 0, too big, signed, not decimal, two */
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:0\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:65536\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:+80\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:0x50\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:80:80\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.com:99999999999999999999\r\n\r\n"));
	/* IP literals: unclosed, not IPv6, zone id, IPvFuture, bytes after */
	expect_bad(S("GET / HTTP/1.1\r\nHost: [2001:db8::1\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: [192.0.2.1]\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: [v1.x]\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: []\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n"));
	/* numbers that inet_aton() and URL parsers read as another address */
	expect_bad(S("GET / HTTP/1.1\r\nHost: 0x7f.0.0.1\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: 127.1\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: 2130706433\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: 127.000.0.1\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: 192.0.2.256\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: 1.2.3.4.5\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.0x7f\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: example.123\r\n\r\n"));
	expect_bad(S("GET / HTTP/1.1\r\nHost: a.0x\r\n\r\n"));
}

static void
test_head_bad_host_length(void **state)
{
	char req[512], name[300];
	struct http_head h;
	int n;

	(void)state;
	/* 253 bytes: four labels of 63 and one more byte, with a trailing dot too */
	memset(name, 'a', sizeof(name));
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s.\r\n\r\n", name);
	expect_head((const uint8_t *)req, (size_t)n, name, 0, &h);
	name[253] = 'a';
	name[254] = '\0';
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", name);
	expect_bad((const uint8_t *)req, (size_t)n);
	/* a label of 64 */
	memset(name, 'a', 64);
	name[64] = '\0';
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s.com\r\n\r\n", name);
	expect_bad((const uint8_t *)req, (size_t)n);
}

static void
test_head_bad_target(void **state)
{
	(void)state;
	/* no form, or a form the method may not use */
	expect_bad(S("GET example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET example.com:80 HTTP/1.1\r\nHost: example.com:80\r\n\r\n"));
	expect_bad(S("GET * HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("OPTIONS ** HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("CONNECT / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("CONNECT * HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("CONNECT http://example.com:443/ HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
	expect_bad(S("CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("CONNECT example.com: HTTP/1.1\r\n\r\n"));
	expect_bad(S("connect example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
	expect_bad(S("Connect / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	/* absolute-form: another host or port than Host, another scheme, userinfo, delimiters */
	expect_bad(S("GET http://evil.example/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com/ HTTP/1.1\r\nHost: example.com:80\r\n\r\n"));
	expect_bad(S("GET http://example.com/ HTTP/1.1\r\n\r\n"));
	expect_bad(S("GET http://example.com/ HTTP/1.0\r\n\r\n"));
	expect_bad(S("GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http:/example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http:///x HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http://u@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com?@evil.example/ HTTP/1.1\r\n"
	    "Host: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com#@evil.example/ HTTP/1.1\r\n"
	    "Host: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com\\@evil.example/ HTTP/1.1\r\n"
	    "Host: example.com\r\n\r\n"));
	expect_bad(S("GET http://example.com:/ HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	/* CONNECT: a Host that disagrees, a body */
	expect_bad(S("CONNECT example.com:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"));
	expect_bad(S("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"));
	expect_bad(S("CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
	expect_bad(S("CONNECT example.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
	expect_bad(S("CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"));
}

#define POST	"POST / HTTP/1.1\r\nHost: example.com\r\n"

static void
test_head_body(void **state)
{
	struct http_head h;

	(void)state;
	expect_head(S(POST "Content-Length: 5\r\n\r\n"), "example.com", 0, &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.length, 5);
	expect_head(S(POST "Content-Length: 5, 005\r\n"
	    "content-length:5\r\n\r\n"), "example.com", 0, &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.length, 5);
	expect_head(S(POST "Content-Length: 9223372036854775807\r\n\r\n"), "example.com", 0, &h);
	assert_true(h.length == UINT64_C(9223372036854775807));
	expect_head(S("POST / HTTP/1.0\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n"),
	    "example.com", 0, &h);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.length, 0);
	expect_head(S(POST "Transfer-Encoding:  Chunked \r\n\r\n"), "example.com", 0, &h);
	assert_int_equal(h.body, HTTP_BODY_CHUNKED);
}

/* The smuggling classics, and each framing rule next to what it refuses. */
static void
test_head_bad_body(void **state)
{
	(void)state;
	/* CL.TE / TE.CL */
	expect_bad(S(POST "Content-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: chunked\r\n"
	    "Content-Length: 5\r\n\r\n"));
	/* codings other than a lone chunked */
	expect_bad(S(POST "Transfer-Encoding: chunked, identity\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: gzip, chunked\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: identity\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: xchunked\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: \"chunked\"\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding:\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"));
	expect_bad(S(POST "Transfer-Encoding : chunked\r\n\r\n"));
	expect_bad(S(POST "Transfer_Encoding: chunked\r\n\r\n"));
	expect_bad(S("POST / HTTP/1.0\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"));
	/* Content-Length: signs, non-digits, lists that differ, fields that differ, overflow */
	expect_bad(S(POST "Content-Length: +5\r\n\r\n"));
	expect_bad(S(POST "Content-Length: -1\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 0x5\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 5 5\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 5, 6\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 5,\r\n\r\n"));
	expect_bad(S(POST "Content-Length: ,5\r\n\r\n"));
	expect_bad(S(POST "Content-Length:\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 9223372036854775808\r\n\r\n"));
	expect_bad(S(POST "Content-Length: 18446744073709551621\r\n\r\n"));
	expect_bad(S(POST "Content_Length: 5\r\n\r\n"));
}

static void
test_head_limits(void **state)
{
	static const char start[] = "GET / HTTP/1.1\r\nHost: example.com\r\nX-Pad: ";
	uint8_t *p = malloc(HTTP_HEAD_MAX + 16);
	struct http_head h;
	size_t n;

	(void)state;
	assert_non_null(p);
	/* a head of exactly HTTP_HEAD_MAX bytes, and one of a byte more */
	memcpy(p, start, sizeof(start) - 1);
	memset(p + sizeof(start) - 1, 'x', HTTP_HEAD_MAX + 16 - (sizeof(start) - 1));
	memcpy(p + HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX, &h), HTTP_OK);
	assert_int_equal(h.head_len, HTTP_HEAD_MAX);
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX - 1, &h), HTTP_NEED_MORE);
	memcpy(p + HTTP_HEAD_MAX - 4, "xx\r\n\r\n", 6);
	n = HTTP_HEAD_MAX + 2;
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX - 1, &h), HTTP_NEED_MORE);
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX, &h), HTTP_BAD);
	assert_int_equal(http_head_parse(p, n, &h), HTTP_BAD);
	/* empty lines count too */
	memset(p, '\n', HTTP_HEAD_MAX);
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX - 1, &h), HTTP_NEED_MORE);
	assert_int_equal(http_head_parse(p, HTTP_HEAD_MAX, &h), HTTP_BAD);
	assert_int_equal(http_head_parse(NULL, 0, &h), HTTP_NEED_MORE);
	free(p);
}

/* Two requests back to back: the first head ends where the second starts. */
static void
test_head_pipelined(void **state)
{
	static const char two[] =
	    "GET /a HTTP/1.1\r\nHost: one.example\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: two.example\r\n\r\n";
	static const char body[] =
	    "POST /a HTTP/1.1\r\nHost: one.example\r\nContent-Length: 4\r\n\r\n"
	    "GET /"
	    "GET /b HTTP/1.1\r\nHost: two.example\r\n\r\n";
	const uint8_t *p = (const uint8_t *)two;
	struct http_body_rd b;
	struct http_head h;
	size_t used;

	(void)state;
	assert_int_equal(http_head_parse(p, sizeof(two) - 1, &h), HTTP_OK);
	assert_string_equal(h.host, "one.example");
	assert_int_equal(h.head_len, (sizeof(two) - 1) / 2);
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed(&b, p + h.head_len, sizeof(two) - 1 - h.head_len, &used),
	    HTTP_OK);
	assert_int_equal(used, 0);
	assert_int_equal(http_head_parse(p + h.head_len, sizeof(two) - 1 - h.head_len, &h),
	    HTTP_OK);
	assert_string_equal(h.host, "two.example");

	/* The body "GET /" is not a request: the next head starts after its 4 bytes... */
	p = (const uint8_t *)body;
	assert_int_equal(http_head_parse(p, sizeof(body) - 1, &h), HTTP_OK);
	assert_string_equal(h.host, "one.example");
	http_body_start(&b, &h);
	p += h.head_len;
	assert_int_equal(http_body_feed(&b, p, 2, &used), HTTP_NEED_MORE);
	assert_int_equal(used, 2);
	assert_int_equal(http_body_feed(&b, p + 2, strlen((const char *)p + 2), &used), HTTP_OK);
	assert_int_equal(used, 2);
	/* ... which is "/GET /b HTTP/1.1": not a head, though it starts like one */
	assert_int_equal(http_head_parse(p + 4, strlen((const char *)p + 4), &h), HTTP_BAD);
}

/* ---- bodies ---------------------------------------------------------------------------- */

/* Feed p[0, n) in pieces of step bytes; the status and the body's length in bytes. */
static enum http_status
feed(const struct http_head *h, const uint8_t *p, size_t n, size_t step, size_t *total)
{
	struct http_body_rd b;
	enum http_status st = HTTP_NEED_MORE;
	size_t used;

	http_body_start(&b, h);
	*total = 0;
	for (size_t off = 0; off < n || (off == 0 && n == 0); off += step) {
		size_t take = n - off < step ? n - off : step;

		st = http_body_feed(&b, p + off, take, &used);
		if (st == HTTP_BAD)
			return st;
		assert_true(used <= take);
		*total += used;
		if (st == HTTP_OK)
			return st;
		assert_int_equal(used, take);
		if (n == 0)
			break;
	}
	return st;
}

/* The body's status and length are want/len whichever way its bytes are split. */
static void
expect_body(enum http_body kind, uint64_t length, const uint8_t *p, size_t n,
    enum http_status want, size_t want_len)
{
	struct http_head h = { .body = kind, .length = length };
	uint8_t *copy = malloc(n > 0 ? n : 1);
	size_t total;

	assert_non_null(copy);
	memcpy(copy, p, n);
	for (size_t step = 1; step <= n + 1; step++) {
		assert_int_equal(feed(&h, copy, n, step, &total), want);
		if (want != HTTP_BAD)
			assert_int_equal(total, want_len);
	}
	free(copy);
}

static void
expect_chunked(const uint8_t *p, size_t n, enum http_status want, size_t want_len)
{
	expect_body(HTTP_BODY_CHUNKED, 0, p, n, want, want_len);
}

#define NEXT	"GET / HTTP/1.1\r\n"

static void
test_body_length(void **state)
{
	struct http_body_rd b;
	struct http_head h = { .body = HTTP_BODY_NONE };
	size_t used;

	(void)state;
	expect_body(HTTP_BODY_LENGTH, 5, S("hello" NEXT), HTTP_OK, 5);
	expect_body(HTTP_BODY_LENGTH, 5, S("hel"), HTTP_NEED_MORE, 3);
	expect_body(HTTP_BODY_LENGTH, 0, S(NEXT), HTTP_OK, 0);
	expect_body(HTTP_BODY_NONE, 0, S(NEXT), HTTP_OK, 0);
	expect_body(HTTP_BODY_LENGTH, UINT64_C(1) << 62, S("0123456789"), HTTP_NEED_MORE, 10);
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed(&b, NULL, 0, &used), HTTP_OK);
	assert_int_equal(used, 0);
}

static void
test_body_chunked(void **state)
{
	static const char ext[] =
	    "5;name=val;q=\"a b\\\" ;\\\\\" ; x\r\nhello\r\n"
	    "00000000000000A  ;big=\"\tno\"\r\n0123456789\r\n"
	    "0;last\r\n"
	    "Trailer-One: 1\r\nX-Checksum:\tab c\r\n\r\n";

	(void)state;
	expect_chunked(S("5\r\nhello\r\n0\r\n\r\n" NEXT), HTTP_OK, 15);
	expect_chunked(S("5\nhello\n0\n\n" NEXT), HTTP_OK, 11);
	expect_chunked(S("5\r\nhello\n0\r\n\n"), HTTP_OK, 13);
	expect_chunked(S("0\r\n\r\n"), HTTP_OK, 5);
	expect_chunked(S("000\r\n\r\n"), HTTP_OK, 7);
	expect_chunked(S("a\r\n0123456789\r\nA\r\n0123456789\r\n0\r\n\r\n"), HTTP_OK, 35);
	expect_chunked((const uint8_t *)ext, sizeof(ext) - 1, HTTP_OK, sizeof(ext) - 1);
	expect_chunked(S("5\r\nhello\r\n0\r\nX: 1\r\n"), HTTP_NEED_MORE, 19);
	expect_chunked(S("5\r\nhel"), HTTP_NEED_MORE, 6);
	expect_chunked(S(""), HTTP_NEED_MORE, 0);
	/* 16 digits, and the largest size a signed reader agrees on */
	expect_chunked(S("0000000000000005\r\nhello\r\n0\r\n\r\n"), HTTP_OK, 30);
	expect_chunked(S("7fffffffffffffff\r\nabc"), HTTP_NEED_MORE, 21);
}

/* Each next to one of the accepted bodies above. */
static void
test_body_chunked_bad(void **state)
{
	(void)state;
	/* chunk-size: none, not hex, signed, too long, >= 2^63, BWS without an extension */
	expect_chunked(S("\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S(";x\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S(";x\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5g\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("0x5\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("+5\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("-5\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S(" 5\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("00000000000000005\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("8000000000000000\r\nabc"), HTTP_BAD, 0);
	expect_chunked(S("ffffffffffffffff\r\nabc"), HTTP_BAD, 0);
	expect_chunked(S("10000000000000005\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5 \r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5 6\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	/* line ends: a bare CR after the size, after the data, in the last line */
	expect_chunked(S("5\rhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\n\r0"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\nX: 1\r0\r\n\r\n"), HTTP_BAD, 0);
	/* chunk-data longer than its size */
	expect_chunked(S("5\r\nhello!\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("4\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	/* chunk-ext: a CTL, a quoted CR or LF, a byte neither token nor separator */
	expect_chunked(S("5;a\x01\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5;a=\"x\rz\"\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5;a=\"x\n\"\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5;a=\"\\\n\"\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5;a=(x)\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5;a=\x80\r\nhello\r\n0\r\n\r\n"), HTTP_BAD, 0);
	/* trailers: no colon, obs-fold, space before the colon, empty name, CTL */
	expect_chunked(S("5\r\nhello\r\n0\r\nX-Broken\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\nX: 1\r\n 2\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\n X: 1\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\nX : 1\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\n: 1\r\n\r\n"), HTTP_BAD, 0);
	expect_chunked(S("5\r\nhello\r\n0\r\nX: 1\0002\r\n\r\n"), HTTP_BAD, 0);
}

/* A chunk-size line or a trailer line of HTTP_LINE_MAX bytes passes; one more does not. */
static void
test_body_line_max(void **state)
{
	size_t cap = HTTP_LINE_MAX + 64, n;
	uint8_t *p = malloc(cap);

	(void)state;
	assert_non_null(p);
	memset(p, 'x', cap);
	memcpy(p, "1;", 2);
	memcpy(p + HTTP_LINE_MAX, "\r\na\r\n0\r\n\r\n", 10);
	n = HTTP_LINE_MAX + 10;
	expect_chunked(p, n, HTTP_OK, n);
	memcpy(p + HTTP_LINE_MAX, "x\r\na\r\n0\r\n\r\n", 11);
	expect_chunked(p, n + 1, HTTP_BAD, 0);

	memset(p, 'x', cap);
	memcpy(p, "0\r\nX:", 5);
	memcpy(p + 3 + HTTP_LINE_MAX, "\r\n\r\n", 4);
	n = 3 + HTTP_LINE_MAX + 4;
	expect_chunked(p, n, HTTP_OK, n);
	memcpy(p + 3 + HTTP_LINE_MAX, "x\r\n\r\n", 5);
	expect_chunked(p, n + 1, HTTP_BAD, 0);
	free(p);
}

/* Once broken, a reader stays broken; once over, it takes no more bytes. */
static void
test_body_sticky(void **state)
{
	struct http_head h = { .body = HTTP_BODY_CHUNKED };
	struct http_body_rd b;
	size_t used;

	(void)state;
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed(&b, S("x"), &used), HTTP_BAD);
	assert_int_equal(http_body_feed(&b, S("0\r\n\r\n"), &used), HTTP_BAD);
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed(&b, S("0\r\n\r\n"), &used), HTTP_OK);
	assert_int_equal(used, 5);
	assert_int_equal(http_body_feed(&b, S("0\r\n\r\n"), &used), HTTP_OK);
	assert_int_equal(used, 0);
}

/*
 * What of the stream ahead is the body's own data: a Content-Length body's bytes left, a
 * chunk's data left; none at a size line, a chunk's CRLF, a trailer, or the end. Fed a
 * byte at a time, exactly the data bytes are met with some ahead; fed the reader's way,
 * http_body_feed_framing() takes exactly the framing, up to the next data.
 */
static void
test_body_data_ahead(void **state)
{
	static const char chunked[] = "3;x=1\r\nabc\r\n2\nde\n0\r\nT: v\r\n\r\n";
	static const char data[] = ".......xxx....xx............";
	struct http_head h = { .body = HTTP_BODY_LENGTH, .length = 5 };
	struct http_body_rd b;
	size_t used;

	(void)state;
	_Static_assert(sizeof(chunked) == sizeof(data), "a mark for each byte");
	http_body_start(&b, &h);
	assert_int_equal(http_body_data_ahead(&b), 5);
	assert_int_equal(http_body_feed(&b, S("ab"), &used), HTTP_NEED_MORE);
	assert_int_equal(http_body_data_ahead(&b), 3);
	assert_int_equal(http_body_feed(&b, S("cdeGET"), &used), HTTP_OK);
	assert_int_equal(used, 3);
	assert_int_equal(http_body_data_ahead(&b), 0);
	h = (struct http_head){ .body = HTTP_BODY_CHUNKED };
	http_body_start(&b, &h);
	for (size_t i = 0; i < sizeof(chunked) - 1; i++) {
		uint64_t ahead = http_body_data_ahead(&b);

		assert_int_equal(ahead != 0, data[i] == 'x');
		if (ahead != 0)	/* the data's last byte is where the count says */
			assert_int_equal(data[i + ahead - 1], 'x');
		assert_int_equal(http_body_feed(&b, (const uint8_t *)chunked + i, 1, &used),
		    i + 2 < sizeof(chunked) ? HTTP_NEED_MORE : HTTP_OK);
	}
	assert_int_equal(http_body_data_ahead(&b), 0);
	/* the reader's way: framing up to the next data in one call, then the data */
	http_body_start(&b, &h);
	for (size_t i = 0, n; i < sizeof(chunked) - 1; i += used) {
		uint64_t ahead = http_body_data_ahead(&b);
		enum http_status st = ahead == 0 ?
		    http_body_feed_framing(&b, (const uint8_t *)chunked + i,
		    sizeof(chunked) - 1 - i, &used) :
		    http_body_feed(&b, (const uint8_t *)chunked + i, (size_t)ahead, &used);

		assert_true(used > 0);
		for (n = 0; n < used; n++)
			assert_int_equal(data[i + n], ahead == 0 ? '.' : 'x');
		assert_int_equal(st, i + used + 1 < sizeof(chunked) ? HTTP_NEED_MORE : HTTP_OK);
	}
	assert_int_equal(http_body_feed_framing(&b, S("GET"), &used), HTTP_OK);
	assert_int_equal(used, 0);
	h = (struct http_head){ .body = HTTP_BODY_CHUNKED };
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed_framing(&b, S("5\r\nz"), &used), HTTP_NEED_MORE);
	assert_int_equal(used, 3);	/* the size line, not the data after it */
	assert_int_equal(http_body_data_ahead(&b), 5);
	http_body_start(&b, &h);
	assert_int_equal(http_body_feed_framing(&b, S("5x"), &used), HTTP_BAD);
}

static void
test_status_str(void **state)
{
	(void)state;
	assert_string_equal(http_status_str(HTTP_NEED_MORE), "need_more");
	assert_string_equal(http_status_str(HTTP_OK), "ok");
	assert_string_equal(http_status_str(HTTP_BAD), "bad");
	assert_string_equal(http_status_str((enum http_status)42), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_classify_long),
		cmocka_unit_test(test_head_forms),
		cmocka_unit_test(test_head_http09),
		cmocka_unit_test(test_head_bad_early),
		cmocka_unit_test(test_head_host),
		cmocka_unit_test(test_head_host_ipv6),
		cmocka_unit_test(test_head_bad_request_line),
		cmocka_unit_test(test_head_bad_lines),
		cmocka_unit_test(test_head_word_bytes),
		cmocka_unit_test(test_head_bad_host),
		cmocka_unit_test(test_head_bad_host_length),
		cmocka_unit_test(test_head_bad_target),
		cmocka_unit_test(test_head_body),
		cmocka_unit_test(test_head_bad_body),
		cmocka_unit_test(test_head_limits),
		cmocka_unit_test(test_head_pipelined),
		cmocka_unit_test(test_body_length),
		cmocka_unit_test(test_body_chunked),
		cmocka_unit_test(test_body_chunked_bad),
		cmocka_unit_test(test_body_line_max),
		cmocka_unit_test(test_body_sticky),
		cmocka_unit_test(test_body_data_ahead),
		cmocka_unit_test(test_status_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
