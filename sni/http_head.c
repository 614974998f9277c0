/*
 * HTTP/1.x request heads (RFC 9112 s2-s3 and s6, RFC 9110 s5.6 and s7.2): each request
 * head's host and body framing. The request line (http_head_line.c), the field lines
 * (http_head_field.c) and the authorities they name (http_head_host.c) are read on their
 * own; what the head is judged by, the host and the framing, is settled here from all of
 * them together.
 *
 * The caller re-runs http_classify() (http_classify.c) and http_head_parse() from the same
 * first byte as more bytes arrive, so they keep no state. Every check is made on a whole
 * line and reads only bytes before the end of the head, or before HTTP_HEAD_MAX: a status
 * other than NEED_MORE never changes as the stream grows, and the dataplane may act on the
 * first definite answer.
 */
#include <string.h>

#include "sni/http.h"
#include "http_head_int.h"

/*
 * The request-target's forms (RFC 9112 s3.2) and the host the request names:
 *
 *   origin-form     "/" ...                        Host
 *   absolute-form   http[s]://authority [/ ...]    authority, and Host must say the same
 *   authority-form  host:port, CONNECT only        authority, and a Host must say the same
 *   asterisk-form   "*", OPTIONS only              Host
 *
 * A server takes the absolute-form's authority over Host (s3.2.2) and a proxy may take
 * Host, so the two must agree. The authority ends at '/' or at the end: '?', '#', '\' and
 * '@' there are bytes some URL parsers read as part of it and some as a delimiter.
 */
static bool
http_target(const struct http_request_line *rl, const struct http_fields *f,
    struct http_head *out)
{
	struct rd t = rl->target, scheme, auth;
	char host[SNI_HOST_MAX + 1];
	size_t host_len;
	uint16_t port;
	bool need_host = true;

	if (http_exact(rl->method, "CONNECT")) {
		if (!http_authority(t, out->host, &out->host_len, &out->port) || out->port == 0 ||
		    f->have_length || f->chunked)
			return false;
		out->connect = true;
		need_host = false;
	} else if (http_eq(rl->method, "connect")) {
		return false;	/* methods have case (RFC 9110 s9.1); not every server agrees */
	} else if (t.p[0] == '/') {
		/* origin-form: the host is Host's */
	} else if (http_exact(t, "*")) {
		if (!http_exact(rl->method, "OPTIONS"))
			return false;
	} else {
		http_span(&t, http_tchar, &scheme);
		if ((!http_eq(scheme, "http") && !http_eq(scheme, "https")) || t.len < 3 ||
		    memcmp(t.p, "://", 3) != 0)
			return false;
		rd_skip(&t, 3);
		http_span(&t, http_authority_char, &auth);
		if ((t.len > 0 && t.p[0] != '/') ||
		    !http_authority(auth, out->host, &out->host_len, &out->port))
			return false;
		need_host = !rl->http09;	/* a simple request has no fields: the target names it */
	}

	if (f->nb_host == 0)
		return !need_host;
	if (!http_authority(f->host, host, &host_len, &port))
		return false;
	if (!need_host || out->host_len != 0)	/* the target named one: they must agree */
		return host_len == out->host_len && memcmp(host, out->host, host_len) == 0 &&
		    port == out->port;
	memcpy(out->host, host, host_len + 1);
	out->host_len = host_len;
	out->port = port;
	return true;
}

/*
 * A request head (RFC 9112 s2.1): request-line, field lines, an empty line; lines end in
 * CRLF or a bare LF, and empty lines before the request-line are skipped (s2.2).
 */
enum http_status
http_head_parse(const uint8_t *p, size_t len, struct http_head *out)
{
	struct rd s = rd_make(p, len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX), line;
	enum http_status more = len >= HTTP_HEAD_MAX ? HTTP_BAD : HTTP_NEED_MORE;
	struct http_fields f = { .nb_host = 0 };
	struct http_request_line rl;

	memset(out, 0, sizeof(*out));
	memset(&rl, 0, sizeof(rl));
	do {
		if (!http_line(&s, &line))
			return http_line_may_start(p, s.p + s.len - p) ? more : HTTP_BAD;
	} while (line.len == 0);
	if (!http_request_line(line, &rl))
		return HTTP_BAD;
	while (!rl.http09) {
		if (!http_line(&s, &line))
			return more;
		if (line.len == 0)
			break;
		if (!http_field_line(line, &f))
			return HTTP_BAD;
	}
	out->head_len = (size_t)(s.p - p);
	out->upgrade = f.upgrade;

	if (!http_target(&rl, &f, out))
		return HTTP_BAD;
	/*
	 * Body framing (RFC 9112 s6.3): chunked needs HTTP/1.1 (s6.1: a 1.0 server does not
	 * know it), and Transfer-Encoding with Content-Length is the classic smuggling pair.
	 */
	if (f.chunked) {
		if (!rl.http11 || f.have_length)
			return HTTP_BAD;
		out->body = HTTP_BODY_CHUNKED;
	} else if (f.have_length) {
		out->body = HTTP_BODY_LENGTH;
		out->length = f.length;
	}
	return HTTP_OK;
}
