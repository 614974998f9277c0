/*
 * HTTP/1.x request framing (RFC 9110, RFC 9112) of a client's TCP stream, as a gateway
 * must see it: what the first bytes of a stream are, each request head's target host, and
 * where each request's body ends so that the next head is found where the server finds
 * it. No allocation, no policy; the caller holds a head's bytes until it is whole.
 *
 * Strict where a lenient server and a strict gateway could disagree about framing or about
 * the host: anything two readers could frame differently is HTTP_BAD.
 */
#ifndef SNI_HTTP_H
#define SNI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/tls.h"

#define HTTP_HEAD_MAX	8192	/* a request head (request line through the blank line) */
#define HTTP_LINE_MAX	4096	/* a chunk-size line or a trailer field, in a chunked body */

/* What the first bytes of a TCP stream from a client are. */
enum http_first {
	HTTP_FIRST_NEED_MORE,	/* too few bytes to tell */
	HTTP_FIRST_TLS,		/* a TLS handshake record (0x16), or an SSLv2-format hello */
	HTTP_FIRST_HTTP,	/* anything else: judged as a request head, or cut */
	HTTP_FIRST_SSH,		/* an SSH identification line: another protocol, shown */
};

#define HTTP_SSH_LINE_MAX	255	/* RFC 4253 s4.2, CR LF included */

/*
 * Classify the first len bytes of a client's stream on positive evidence only: a byte
 * stream is another protocol when its first bytes prove it, and nothing else is let
 * through unjudged. TLS is a 0x16 record or an SSLv2-format CLIENT-HELLO; an SSH
 * identification line ("SSH-2.0-" or "SSH-1.99-", printable, CR LF, 255 bytes at most,
 * with no "HTTP/" in it) is HTTP_FIRST_SSH; everything else is HTTP_FIRST_HTTP, for
 * http_head_parse() to judge or refuse (binary protocols, HTTP/0.9 lines, request lines
 * split on bytes other than SP: whatever some server may read as a request). A status
 * other than HTTP_FIRST_NEED_MORE does not change as len grows.
 */
enum http_first http_classify(const uint8_t *p, size_t len);

enum http_status {
	HTTP_NEED_MORE,		/* a valid prefix: hold it and wait for more bytes */
	HTTP_OK,
	HTTP_BAD,		/* cannot be framed, or could be framed two ways: cut */
};

enum http_body {
	HTTP_BODY_NONE,		/* the next request starts right after the head */
	HTTP_BODY_LENGTH,	/* Content-Length bytes follow */
	HTTP_BODY_CHUNKED,	/* Transfer-Encoding: chunked */
};

struct http_head {
	size_t head_len;		/* bytes from the request line through the blank line */
	char host[SNI_HOST_MAX + 1];	/* lower case, no port, no trailing dot, NUL-terminated */
	size_t host_len;
	uint16_t port;			/* the port the host named, 0 when it named none */
	bool connect;			/* CONNECT: host and port are the tunnel's authority */
	bool upgrade;			/* carries Upgrade (the server may switch protocols) */
	enum http_body body;
	uint64_t length;		/* HTTP_BODY_LENGTH: the body's bytes */
};

/*
 * Parse the request head at the start of p (len bytes, at least the head; bytes after it
 * are the body or the next request and are not read). HTTP_OK fills *out; HTTP_NEED_MORE
 * when no blank line ends a valid prefix yet (HTTP_BAD instead once len reaches
 * HTTP_HEAD_MAX); *out is unspecified otherwise. A complete line that breaks a rule is
 * HTTP_BAD at once, and a status other than HTTP_NEED_MORE does not change as len grows.
 *
 * The host is Host's, or the target's authority for absolute-form and CONNECT, which must
 * then agree with Host on host and port. Host is required but on CONNECT, whose
 * authority-form target names the host and port of the tunnel, and on an HTTP/0.9 simple
 * request ("GET" SP absolute-form target, the line alone is the head). A first line that
 * can no longer become a request line (a byte other than SP after the method) is HTTP_BAD
 * before its LF comes.
 */
enum http_status http_head_parse(const uint8_t *p, size_t len, struct http_head *out);

/* Where the reader of one request body is: 16 bytes, kept for a connection's life. */
struct http_body_rd {
	uint64_t left;		/* bytes left in the body or in the current chunk's data */
	uint16_t line;		/* bytes of the current chunk-size or trailer line so far */
	uint8_t state;		/* private */
	uint8_t flags;		/* private */
};

/* Start reading the body that follows head h (HTTP_BODY_NONE: it is already over). */
void http_body_start(struct http_body_rd *b, const struct http_head *h);

/*
 * Feed the next len stream bytes of the body. *used: how many belong to the body (the
 * rest, if any, start the next request). HTTP_OK when the body ended within them,
 * HTTP_NEED_MORE when all len bytes were body and it goes on, HTTP_BAD when the chunked
 * framing is broken (state unspecified).
 */
enum http_status http_body_feed(struct http_body_rd *b, const uint8_t *p, size_t len,
    size_t *used);

/*
 * How many of the next stream bytes are the body's own data (a Content-Length body's, or
 * the current chunk's), which no framing depends on: the server counts them, whatever they
 * hold. 0 while a chunk-size line, the CRLF after a chunk's data or a trailer is read, and
 * once the body is over.
 */
uint64_t http_body_data_ahead(const struct http_body_rd *b);

/*
 * http_body_feed() of the framing at p[0, len) only: it stops at the body's next data
 * byte (http_body_data_ahead() then says how many follow), so *used bytes were all
 * framing. HTTP_NEED_MORE when it stopped there or took all len bytes.
 */
enum http_status http_body_feed_framing(struct http_body_rd *b, const uint8_t *p, size_t len,
    size_t *used);

/* "need_more", "ok", "bad". */
const char *http_status_str(enum http_status st);

#endif
