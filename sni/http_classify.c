/*
 * What a client's stream starts with (RFC 9112 s2-s3, RFC 4253 s4.2): TLS, an SSH
 * identification line, or anything else, which is judged as an HTTP request head.
 */
#include <string.h>

#include "sni/http.h"
#include "http_head_int.h"

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
