/*
 * uri-host [ ":" port ] (RFC 9110 s7.2, RFC 3986 s3.2.2-s3.2.3), as a Host field or a
 * request-target names it: only the spellings every reader takes for the same host.
 */
#include <string.h>

#include "http_head_int.h"

#define HTTP_IPV6_TEXT_MAX	45	/* "ffff:" x 6 and a dotted quad */

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
bool
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
