/*
 * HTTP/1.x request heads (RFC 9112 s2-s3 and s6, RFC 9110 s5.6 and s7.2): what a client's
 * stream starts with, and each request head's host and body framing.
 *
 * The caller re-runs both functions from the same first byte as more bytes arrive, so they
 * keep no state. Every check is made on a whole line and reads only bytes before the end
 * of the head, or before HTTP_HEAD_MAX: a status other than NEED_MORE never changes as the
 * stream grows, and the dataplane may act on the first definite answer.
 */
#include <string.h>

#include "sni/http.h"
#include "sni/rd.h"

#define HTTP_IPV6_TEXT_MAX	45	/* "ffff:" x 6 and a dotted quad */

/* tchar (RFC 9110 s5.6.2): the bytes of a method and of a field name. */
static bool
http_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
http_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static bool
http_hexdig(uint8_t c)
{
	return http_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* VCHAR: the bytes of a request-target, which holds no whitespace (RFC 9112 s3). */
static bool
http_vchar(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

/* The bytes of a reg-name we accept, and of a dotted IPv4 address. */
static bool
http_host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || http_digit(c) ||
	    c == '-' || c == '.' || c == '_';
}

/* Those, the brackets and hex of an IPv6 literal, and the port's colon. */
static bool
http_authority_char(uint8_t c)
{
	return http_host_char(c) || c == ':' || c == '[' || c == ']';
}

static bool
http_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static uint8_t
http_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

/* Case-insensitive: r holds exactly the lower-case string s. */
static bool
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

static bool
http_exact(struct rd r, const char *s)
{
	return r.len == strlen(s) && memcmp(r.p, s, r.len) == 0;
}

/* Split off the longest prefix of *r whose bytes are all in class cls. */
static void
http_span(struct rd *r, bool (*cls)(uint8_t), struct rd *sub)
{
	size_t n = 0;

	while (n < r->len && cls(r->p[n]))
		n++;
	*sub = rd_make(r->p, n);
	rd_skip(r, n);
}

static struct rd
http_trim(struct rd r)
{
	while (r.len > 0 && http_ows(r.p[0]))
		rd_skip(&r, 1);
	while (r.len > 0 && http_ows(r.p[r.len - 1]))
		r.len--;
	return r;
}

/*
 * An SSH identification line (RFC 4253 s4.2): "SSH-2.0-" or "SSH-1.99-", printable bytes,
 * CR LF, at most 255 bytes. One that says "HTTP/" anywhere is not taken for one: gunicorn
 * matches its method and version patterns on prefixes and serves "SSH-2.0-x / HTTP/1.1x".
 * The '.' of the version is what makes nginx and aiohttp refuse the line as a method.
 */
static enum http_first
http_ssh_line(const uint8_t *p, size_t len)
{
	size_t n = len < HTTP_SSH_LINE_MAX ? len : HTTP_SSH_LINE_MAX, i;
	const uint8_t *lf = memchr(p, '\n', n);

	if (lf == NULL)
		return len >= HTTP_SSH_LINE_MAX ? HTTP_FIRST_HTTP : HTTP_FIRST_NEED_MORE;
	n = (size_t)(lf - p);
	if (n == 0 || p[n - 1] != '\r')
		return HTTP_FIRST_HTTP;
	n--;
	if (!(n > 8 && memcmp(p, "SSH-2.0-", 8) == 0) && !(n > 9 && memcmp(p, "SSH-1.99-", 9) == 0))
		return HTTP_FIRST_HTTP;
	for (i = 0; i < n; i++) {
		if (p[i] < 0x20 || p[i] > 0x7e)
			return HTTP_FIRST_HTTP;
		if (i + 5 <= n && http_eq(rd_make(p + i, 5), "http/"))
			return HTTP_FIRST_HTTP;
	}
	return HTTP_FIRST_SSH;
}

enum http_first
http_classify(const uint8_t *p, size_t len)
{
	static const char ssh[] = "SSH-";

	if (len == 0)
		return HTTP_FIRST_NEED_MORE;
	if (p[0] == 0x16)
		return HTTP_FIRST_TLS;
	/* an SSLv2-format CLIENT-HELLO (tls_hello_parse() reads it): a TLS server takes it */
	if (p[0] & 0x80) {
		if (len < 3)
			return HTTP_FIRST_NEED_MORE;
		if (p[2] == 0x01)
			return HTTP_FIRST_TLS;
	}
	if (memcmp(p, ssh, len < 4 ? len : 4) == 0)
		return len < 4 ? HTTP_FIRST_NEED_MORE : http_ssh_line(p, len);
	/* no other protocol is shown by its first bytes: judged as a request, or cut */
	return HTTP_FIRST_HTTP;
}

/*
 * Split the next line off *s, without its LF and one CR before it (RFC 9112 s2.2 lets a
 * recipient end a line with a bare LF). False while no LF has arrived. A CR left in *line
 * is a bare one: servers differ on whether it ends the line, and none of the bytes the
 * callers let through (tchar, VCHAR, field-value without CTLs) is a CR.
 */
static bool
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
 * Lower-case the n bytes at p into host, NUL-terminated.
 */
static void
http_host_copy(char host[SNI_HOST_MAX + 1], size_t *host_len, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		host[i] = (char)http_lower(p[i]);
	host[n] = '\0';
	*host_len = n;
}

/*
 * IPv4address (RFC 3986 s3.2.2): four decimal parts of 0..255 without leading zeros, the
 * one spelling every reader takes for the same address.
 */
static bool
http_dotted_quad(const uint8_t *p, size_t n)
{
	size_t i = 0;

	for (unsigned int part = 0; part < 4; part++) {
		unsigned int v = 0;
		size_t d = 0;

		if (part > 0 && (i == n || p[i++] != '.'))
			return false;
		for (; i < n && http_digit(p[i]) && d <= 3; i++, d++)
			v = v * 10 + (unsigned int)(p[i] - '0');
		if (d == 0 || d > 3 || v > 255 || (d > 1 && p[i - d] == '0'))
			return false;
	}
	return i == n;
}

/*
 * IPv6address (RFC 3986 s3.2.2, RFC 4291 s2.2): eight groups of 1..4 hex digits, the last
 * two of which may be a dotted quad, with at most one "::" standing for one or more zero
 * groups.
 */
static bool
http_ipv6(struct rd t)
{
	size_t i = 0, units = 0;
	bool gap = false;

	if (t.len >= 2 && t.p[0] == ':' && t.p[1] == ':') {
		gap = true;
		i = 2;
	}
	while (i < t.len) {
		size_t start = i, d = 0;

		for (; i < t.len && http_hexdig(t.p[i]) && d <= 4; i++, d++)
			continue;
		if (i < t.len && t.p[i] == '.') {	/* ls32 as IPv4address: the end */
			if (!http_dotted_quad(t.p + start, t.len - start))
				return false;
			units += 2;
			break;
		}
		if (d == 0 || d > 4)
			return false;
		units++;
		if (i == t.len)
			break;
		if (t.p[i++] != ':' || i == t.len)	/* a lone ':' at the end */
			return false;
		if (t.p[i] == ':') {
			if (gap)
				return false;
			gap = true;
			i++;
		}
	}
	return gap ? units <= 7 : units == 8;
}

/*
 * A reg-name or dotted IPv4 address (RFC 3986 s3.2.2), one trailing dot removed: labels of
 * 1..SNI_LABEL_MAX bytes, SNI_HOST_MAX in all. A name whose last label is a number (decimal,
 * or 0x and hex) is an IPv4 address to WHATWG URL parsers and to inet_aton(), which read
 * "0x7f.1" or "2130706433" as 127.0.0.1; only the canonical dotted quad is let through, so
 * that the name judged is the address connected to.
 */
static bool
http_reg_name(struct rd h)
{
	size_t label = 0, last = 0;
	bool dec = true, hex;

	if (h.len > 0 && h.p[h.len - 1] == '.')
		h.len--;
	if (h.len == 0 || h.len > SNI_HOST_MAX)
		return false;
	for (size_t i = 0; i <= h.len; i++) {
		if (i < h.len && h.p[i] != '.') {
			if (++label > SNI_LABEL_MAX)
				return false;
			continue;
		}
		if (label == 0)			/* ".a", "a..b" */
			return false;
		last = i - label;
		label = 0;
	}
	for (size_t i = last; i < h.len; i++)
		dec = dec && http_digit(h.p[i]);
	hex = h.len - last >= 2 && h.p[last] == '0' && http_lower(h.p[last + 1]) == 'x';
	for (size_t i = last + 2; hex && i < h.len; i++)
		hex = http_hexdig(h.p[i]);
	return (!dec && !hex) || http_dotted_quad(h.p, h.len);
}

/*
 * uri-host [ ":" port ] (RFC 9110 s7.2, RFC 3986 s3.2.2-s3.2.3), the whole of a:
 *
 *   reg-name / IPv4address / "[" IPv6address "]"   [ ":" 1*DIGIT (1..65535) ]
 *
 * No userinfo, percent-encoding, zone id or IPvFuture: their bytes are not host bytes. The
 * host lands lower-cased in host, without brackets or trailing dot; *port is 0 without
 * ":port". A colon with no digits after it is refused although RFC 3986 allows it: a
 * server may then pick a default port the gateway did not judge.
 */
static bool
http_authority(struct rd a, char host[SNI_HOST_MAX + 1], size_t *host_len, uint16_t *port)
{
	struct rd h, digits;
	uint32_t v = 0;
	uint8_t c;

	if (a.len > 0 && a.p[0] == '[') {
		const uint8_t *end = memchr(a.p, ']', a.len);

		if (end == NULL)
			return false;
		h = rd_make(a.p + 1, (size_t)(end - a.p) - 1);
		rd_skip(&a, h.len + 2);
		if (h.len > HTTP_IPV6_TEXT_MAX || !http_ipv6(h))
			return false;
		http_host_copy(host, host_len, h.p, h.len);
	} else {
		http_span(&a, http_host_char, &h);
		if (!http_reg_name(h))
			return false;
		if (h.p[h.len - 1] == '.')
			h.len--;
		http_host_copy(host, host_len, h.p, h.len);
	}
	*port = 0;
	if (a.len == 0)
		return true;
	if (!rd_u8(&a, &c) || c != ':')
		return false;
	http_span(&a, http_digit, &digits);
	if (digits.len == 0 || a.len != 0)
		return false;
	for (size_t i = 0; i < digits.len; i++)
		if ((v = v * 10 + (uint32_t)(digits.p[i] - '0')) > UINT16_MAX)
			return false;
	if (v == 0)
		return false;
	*port = (uint16_t)v;
	return true;
}

/*
 * Content-Length (RFC 9110 s8.6, RFC 9112 s6.3): 1*DIGIT, or a list of equal ones that a
 * proxy merged ("5, 5"). Values up to 2^63 - 1, what a reader with a signed 64-bit
 * length can hold; more than that would wrap in one of them.
 */
static bool
http_content_length(struct rd v, uint64_t *out)
{
	struct rd num;
	uint64_t n;
	uint8_t c;

	for (bool first = true;; first = false) {
		http_span(&v, http_digit, &num);
		if (num.len == 0)
			return false;
		n = 0;
		for (size_t i = 0; i < num.len; i++) {
			if (n > (UINT64_C(0x7fffffffffffffff) - (uint64_t)(num.p[i] - '0')) / 10)
				return false;
			n = n * 10 + (uint64_t)(num.p[i] - '0');
		}
		if (!first && n != *out)
			return false;
		*out = n;
		v = http_trim(v);
		if (v.len == 0)
			return true;
		if (!rd_u8(&v, &c) || c != ',')
			return false;
		v = http_trim(v);
	}
}

enum http_field {
	HTTP_F_OTHER,
	HTTP_F_HOST,
	HTTP_F_CONTENT_LENGTH,
	HTTP_F_TRANSFER_ENCODING,
	HTTP_F_UPGRADE,
	HTTP_F_ALIAS,		/* a framing field spelt with '_' for '-' */
};

/*
 * Field names are compared without case (RFC 9110 s5.1). "Content_Length" is another
 * field to HTTP, but CGI-style servers fold '_' and '-' together into CONTENT_LENGTH and
 * would frame the body by it; such a spelling of a field this reader acts on is refused.
 */
static enum http_field
http_field_kind(struct rd name)
{
	static const struct {
		const char *name;
		enum http_field kind;
	} known[] = {
		{ "host", HTTP_F_HOST },
		{ "content-length", HTTP_F_CONTENT_LENGTH },
		{ "transfer-encoding", HTTP_F_TRANSFER_ENCODING },
		{ "upgrade", HTTP_F_UPGRADE },
	};

	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		const char *s = known[k].name;
		bool alias = false;
		size_t i;

		if (name.len != strlen(s))
			continue;
		for (i = 0; i < name.len; i++) {
			uint8_t c = http_lower(name.p[i]);

			if (c == '_' && s[i] == '-')
				alias = true;
			else if (c != (uint8_t)s[i])
				break;
		}
		if (i == name.len)
			return alias ? HTTP_F_ALIAS : known[k].kind;
	}
	return HTTP_F_OTHER;
}

/* What the field lines of one head said about its host and its body. */
struct http_fields {
	struct rd host;		/* the Host value, OWS trimmed */
	unsigned int nb_host;
	bool have_length;
	bool chunked;
	bool upgrade;
	uint64_t length;
};

/*
 * field-line = field-name ":" OWS field-value OWS (RFC 9112 s5). A line that starts with
 * SP or HTAB is obs-fold (s5.2), and whitespace between name and colon is forbidden (s5.1):
 * servers that accept either read a different name or value than the gateway would.
 */
static bool
http_field_line(struct rd line, struct http_fields *f)
{
	struct rd name, value;
	uint8_t c;

	http_span(&line, http_tchar, &name);
	if (name.len == 0 || !rd_u8(&line, &c) || c != ':')
		return false;
	value = http_trim(line);
	for (size_t i = 0; i < value.len; i++)	/* no CTL but HTAB (RFC 9110 s5.5) */
		if ((value.p[i] < 0x20 && value.p[i] != '\t') || value.p[i] == 0x7f)
			return false;

	switch (http_field_kind(name)) {
	case HTTP_F_HOST:
		if (++f->nb_host > 1)		/* RFC 9112 s3.2 */
			return false;
		f->host = value;
		break;
	case HTTP_F_CONTENT_LENGTH: {
		uint64_t n = 0;

		if (!http_content_length(value, &n) || (f->have_length && n != f->length))
			return false;
		f->have_length = true;
		f->length = n;
		break;
	}
	case HTTP_F_TRANSFER_ENCODING:
		/*
		 * Only a lone "chunked": any other coding, a list or a second field leaves
		 * servers to guess where the body ends (RFC 9112 s6.1, s6.3 point 4).
		 */
		if (f->chunked || !http_eq(value, "chunked"))
			return false;
		f->chunked = true;
		break;
	case HTTP_F_UPGRADE:
		f->upgrade = true;
		break;
	case HTTP_F_ALIAS:
		return false;
	case HTTP_F_OTHER:
		break;
	}
	return true;
}

struct http_request_line {
	struct rd method;
	struct rd target;
	bool http11;
	bool http09;		/* a simple request: the line is the whole head */
};

/*
 * request-line = method SP request-target SP HTTP-version (RFC 9112 s3), with exactly one
 * SP each: the looser splits of s3 are for recipients that can afford to guess. Or an
 * HTTP/0.9 simple request, "GET" SP request-target: nginx and Python's http.server still
 * answer one, and nginx picks its site from an absolute-form target.
 */
static bool
http_request_line(struct rd line, struct http_request_line *rl)
{
	struct rd version;
	uint8_t c;

	http_span(&line, http_tchar, &rl->method);
	if (rl->method.len == 0 || !rd_u8(&line, &c) || c != ' ')
		return false;
	http_span(&line, http_vchar, &rl->target);
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
static bool
http_line_may_start(const uint8_t *p, size_t len)
{
	size_t i = 0;

	while (i < len && (p[i] == '\r' || p[i] == '\n'))
		i++;
	while (i < len && http_tchar(p[i]))
		i++;
	return i == len || p[i] == ' ' || p[i] == '\r' || p[i] == '\n';
}

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
