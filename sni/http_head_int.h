/*
 * Shared by the request head reader's files: the byte classes and cursor helpers every
 * part uses, what the request line (http_head_line.c) and the field lines
 * (http_head_field.c) say, and the authority syntax (http_head_host.c) that
 * http_head.c judges them by. Not for other callers.
 */
#ifndef SNI_HTTP_HEAD_INT_H
#define SNI_HTTP_HEAD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/http.h"
#include "sni/rd.h"

/* tchar (RFC 9110 s5.6.2): the bytes of a method and of a field name. */
static inline bool
http_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static inline bool
http_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static inline bool
http_hexdig(uint8_t c)
{
	return http_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline bool
http_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static inline uint8_t
http_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

/* Case-insensitive: r holds exactly the lower-case string s. */
static inline bool
http_eq(struct rd r, const char *s)
{
	size_t n = strlen(s);

	if (r.len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (http_lower(r.p[i]) != (uint8_t)s[i])
			return false;
	return true;
}

static inline bool
http_exact(struct rd r, const char *s)
{
	return r.len == strlen(s) && memcmp(r.p, s, r.len) == 0;
}

/* Split off the longest prefix of *r whose bytes are all in class cls. */
static inline void
http_span(struct rd *r, bool (*cls)(uint8_t), struct rd *sub)
{
	size_t n = 0;

	while (n < r->len && cls(r->p[n]))
		n++;
	*sub = rd_make(r->p, n);
	rd_skip(r, n);
}

static inline struct rd
http_trim(struct rd r)
{
	while (r.len > 0 && http_ows(r.p[0]))
		rd_skip(&r, 1);
	while (r.len > 0 && http_ows(r.p[r.len - 1]))
		r.len--;
	return r;
}

/*
 * Eight bytes at a time (memory order does not matter: each asks whether ANY byte of w
 * is of a kind). http_below8(): some byte is below n (n <= 0x80); a byte's borrow can only
 * set a flag above a byte that is itself below n, so the word's answer is exact.
 */
#define HTTP_ONES8	0x0101010101010101ull
#define HTTP_HIGHS8	0x8080808080808080ull

static inline uint64_t
http_below8(uint64_t w, uint8_t n)
{
	return (w - HTTP_ONES8 * n) & ~w & HTTP_HIGHS8;
}

/* Some byte of w is 0x7f or above: (x & 0x7f) + 1 reaches 0x80 only from 0x7f, no carry. */
static inline uint64_t
http_high8(uint64_t w)
{
	return (w | ((w & ~HTTP_HIGHS8) + HTTP_ONES8)) & HTTP_HIGHS8;
}

/* ---- the request line (http_head_line.c) --------------------------------------------- */

struct http_request_line {
	struct rd method;
	struct rd target;
	bool http11;
	bool http09;		/* a simple request: the line is the whole head */
};

/*
 * Split the next line off *s, without its LF and one CR before it (RFC 9112 s2.2 lets a
 * recipient end a line with a bare LF). False while no LF has arrived. A CR left in *line
 * is a bare one: servers differ on whether it ends the line, and none of the bytes the
 * callers let through (tchar, VCHAR, field-value without CTLs) is a CR.
 */
bool http_line(struct rd *s, struct rd *line);

/* request-line = method SP request-target SP HTTP-version, or an HTTP/0.9 "GET" SP target. */
bool http_request_line(struct rd line, struct http_request_line *rl);

/*
 * Can the first line of the len bytes at p, not yet complete, still become a request
 * line?
 */
bool http_line_may_start(const uint8_t *p, size_t len);

/* ---- the field lines (http_head_field.c) --------------------------------------------- */

/* What the field lines of one head said about its host and its body. */
struct http_fields {
	struct rd host;		/* the Host value, OWS trimmed */
	unsigned int nb_host;
	bool have_length;
	bool chunked;
	bool upgrade;
	uint64_t length;
};

/* One field line into *f; false when it breaks a rule or contradicts an earlier one. */
bool http_field_line(struct rd line, struct http_fields *f);

/* ---- the authority (http_head_host.c) ------------------------------------------------ */

/* The bytes of a reg-name we accept, and of a dotted IPv4 address. */
static inline bool
http_host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || http_digit(c) ||
	    c == '-' || c == '.' || c == '_';
}

/* Those, the brackets and hex of an IPv6 literal, and the port's colon. */
static inline bool
http_authority_char(uint8_t c)
{
	return http_host_char(c) || c == ':' || c == '[' || c == ']';
}

/*
 * uri-host [ ":" port ], the whole of a: the host lower-cased into host (no brackets, no
 * trailing dot), *port 0 without ":port". False unless a is exactly that.
 */
bool http_authority(struct rd a, char host[SNI_HOST_MAX + 1], size_t *host_len,
    uint16_t *port);

#endif
