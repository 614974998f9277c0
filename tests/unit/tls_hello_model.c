/*
 * A model of the ClientHello message (RFC 8446 s4.1.2, RFC 6066 s3, RFC 7301 s3.1) written
 * the plain way, index by index, for test_tls_hello_model: every duplicate extension
 * refused, server_name and ALPN read, ECH flagged.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tls_hello_model.h"

static unsigned int
be16_at(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

static bool
model_sni(const uint8_t *d, size_t n, struct tls_hello *out)
{
	size_t list, host;

	if (n < 2 || (list = be16_at(d)) != n - 2 || list < 3 || d[2] != 0 ||
	    (host = be16_at(d + 3)) != list - 3 || !sni_host_valid(d + 5, host))
		return false;
	if (d[5 + host - 1] == '.')
		host--;
	out->sni = (struct sni_name){ .p = d + 5, .len = host };
	out->sni_lower = true;
	for (size_t i = 0; i < host; i++)
		if (d[5 + i] >= 'A' && d[5 + i] <= 'Z')
			out->sni_lower = false;
	return true;
}

static bool
model_alpn(const uint8_t *d, size_t n, struct tls_hello *out)
{
	size_t list, i;

	if (n < 2 || (list = be16_at(d)) != n - 2 || list == 0)
		return false;
	for (i = 2; i < n; i += 1 + d[i]) {
		if (d[i] == 0 || d[i] > n - i - 1)
			return false;
		if (out->nb_alpn == TLS_ALPN_MAX)
			out->alpn_more = true;
		else
			out->alpn[out->nb_alpn++] = (struct sni_name){ .p = d + i + 1, .len = d[i] };
	}
	return true;
}

static enum sni_status
model_exts(const uint8_t *e, size_t n, struct tls_hello *out)
{
	static bool seen[65536];
	bool have_sni = false;
	size_t i = 0;

	memset(seen, 0, sizeof(seen));
	while (i < n) {
		unsigned int type, len;

		if (n - i < 4)
			return SNI_MALFORMED;
		type = be16_at(e + i);
		len = be16_at(e + i + 2);
		i += 4;
		if (len > n - i || seen[type])
			return SNI_MALFORMED;
		seen[type] = true;
		if (type == 0xfe0d)
			out->ech = true;
		if (type == 0 && !(have_sni = model_sni(e + i, len, out)))
			return SNI_MALFORMED;
		if (type == 16 && !model_alpn(e + i, len, out))
			return SNI_MALFORMED;
		i += len;
	}
	return have_sni ? SNI_FOUND : SNI_ABSENT;
}

/* The handshake message m (header included), as the parser must read it. */
enum sni_status
model_msg(const uint8_t *m, size_t n, struct tls_hello *out)
{
	size_t i = 4 + 2 + 32, sid, suites, comp, exts;

	memset(out, 0, sizeof(*out));
	if (n < 4 || m[0] != 1 || ((size_t)m[1] << 16 | (size_t)m[2] << 8 | m[3]) != n - 4 ||
	    n < i + 1 || m[4] != 3 || (sid = m[i]) > 32 || n - i - 1 < sid)
		return SNI_MALFORMED;
	i += 1 + sid;
	if (n - i < 2 || (suites = be16_at(m + i)) == 0 || suites % 2 != 0 ||
	    n - i - 2 < suites)
		return SNI_MALFORMED;
	i += 2 + suites;
	if (n - i < 1 || (comp = m[i]) == 0 || n - i - 1 < comp)
		return SNI_MALFORMED;
	i += 1 + comp;
	if (i == n)
		return SNI_ABSENT;
	if (n - i < 2 || (exts = be16_at(m + i)) != n - i - 2)
		return SNI_MALFORMED;
	return model_exts(m + i + 2, exts, out);
}
