/*
 * The field lines of an HTTP/1.x head (RFC 9112 s5, s6; RFC 9110 s5): each checked on its
 * own, and what the ones that frame the body or name the host said, kept for the judging.
 */
#include <string.h>

#include "http_head_int.h"

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

/* A field value's byte (RFC 9110 s5.5): no CTL but HTAB; obs-text is let through. */
static bool
http_field_byte(uint8_t c)
{
	return (c >= 0x20 || c == '\t') && c != 0x7f;
}

/*
 * Every byte of v a field value's: whole words with no byte below 0x20 and none 0x7f pass
 * at once, a word with one (an HTAB, or a CTL) is asked byte by byte.
 */
static bool
http_field_value_ok(struct rd v)
{
	size_t i = 0;
	uint64_t w;

	for (; i + 8 <= v.len; i += 8) {
		memcpy(&w, v.p + i, 8);
		if (!(http_below8(w, 0x20) | http_below8(w ^ (HTTP_ONES8 * 0x7f), 1)))
			continue;
		for (size_t k = i; k < i + 8; k++)
			if (!http_field_byte(v.p[k]))
				return false;
	}
	for (; i < v.len; i++)
		if (!http_field_byte(v.p[i]))
			return false;
	return true;
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
#define HTTP_KNOWN(s, k)	{ s, sizeof(s) - 1, k }
	static const struct {
		const char *name;
		size_t len;
		enum http_field kind;
	} known[] = {
		HTTP_KNOWN("host", HTTP_F_HOST),
		HTTP_KNOWN("content-length", HTTP_F_CONTENT_LENGTH),
		HTTP_KNOWN("transfer-encoding", HTTP_F_TRANSFER_ENCODING),
		HTTP_KNOWN("upgrade", HTTP_F_UPGRADE),
	};
#undef HTTP_KNOWN

	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		const char *s = known[k].name;
		bool alias = false;
		size_t i;

		if (name.len != known[k].len)
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


/*
 * field-line = field-name ":" OWS field-value OWS (RFC 9112 s5). A line that starts with
 * SP or HTAB is obs-fold (s5.2), and whitespace between name and colon is forbidden (s5.1):
 * servers that accept either read a different name or value than the gateway would.
 */
bool
http_field_line(struct rd line, struct http_fields *f)
{
	struct rd name, value;
	uint8_t c;

	http_span(&line, http_tchar, &name);
	if (name.len == 0 || !rd_u8(&line, &c) || c != ':')
		return false;
	value = http_trim(line);
	if (!http_field_value_ok(value))
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
