/*
 * The request line of an HTTP/1.x head (RFC 9112 s2.2, s3), and the lines a head is split
 * into. Each check reads one whole line, so its answer never changes as the stream grows.
 */
#include <string.h>

#include "http_head_int.h"

/* VCHAR: the bytes of a request-target, which holds no whitespace (RFC 9112 s3). */
static bool
http_vchar(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

/*
 * Split off the longest VCHAR prefix of *r, as http_span() with http_vchar() does: whole
 * words while none of their bytes is outside 0x21..0x7e, then byte by byte from the word
 * that holds the first one that is.
 */
static void
http_span_vchar(struct rd *r, struct rd *sub)
{
	size_t n = 0;
	uint64_t w;

	for (; n + 8 <= r->len; n += 8) {
		memcpy(&w, r->p + n, 8);
		if (http_below8(w, 0x21) | http_high8(w))
			break;
	}
	while (n < r->len && http_vchar(r->p[n]))
		n++;
	*sub = rd_make(r->p, n);
	rd_skip(r, n);
}

bool
http_line(struct rd *s, struct rd *line)
{
	const uint8_t *lf;
	size_t n;

	if (s->len == 0 || (lf = memchr(s->p, '\n', s->len)) == NULL)
		return false;
	n = (size_t)(lf - s->p);
	*line = rd_make(s->p, n > 0 && s->p[n - 1] == '\r' ? n - 1 : n);
	rd_skip(s, n + 1);
	return true;
}

/*
 * request-line = method SP request-target SP HTTP-version (RFC 9112 s3), with exactly one
 * SP each: the looser splits of s3 are for recipients that can afford to guess. Or an
 * HTTP/0.9 simple request, "GET" SP request-target: nginx and Python's http.server still
 * answer one, and nginx picks its site from an absolute-form target.
 */
bool
http_request_line(struct rd line, struct http_request_line *rl)
{
	struct rd version;
	uint8_t c;

	http_span(&line, http_tchar, &rl->method);
	if (rl->method.len == 0 || !rd_u8(&line, &c) || c != ' ')
		return false;
	http_span_vchar(&line, &rl->target);
	if (rl->target.len == 0)
		return false;
	if (line.len == 0) {
		rl->http09 = true;
		return http_exact(rl->method, "GET");
	}
	if (!rd_u8(&line, &c) || c != ' ')
		return false;
	version = line;
	rl->http11 = http_exact(version, "HTTP/1.1");
	return rl->http11 || http_exact(version, "HTTP/1.0");
}

/*
 * Can the first line of the len bytes at p, not yet complete, still become a request
 * line? Past empty lines, a method (tchar) and then SP: any other byte there makes every
 * longer stream HTTP_BAD, so the stream is refused now rather than held until its line
 * ends (a binary protocol may never send an LF).
 */
bool
http_line_may_start(const uint8_t *p, size_t len)
{
	size_t i = 0;

	while (i < len && (p[i] == '\r' || p[i] == '\n'))
		i++;
	while (i < len && http_tchar(p[i]))
		i++;
	return i == len || p[i] == ' ' || p[i] == '\r' || p[i] == '\n';
}
