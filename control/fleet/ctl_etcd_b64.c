/*
 * base64 of RFC 4648 s4, as the gateway carries keys and values. By hand: the libraries
 * control/ may link (libcurl, json-c) export none, and libcrypto's EVP_DecodeBlock counts
 * padding as data and accepts stray characters.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_etcd_int.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
ctl_etcd_b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void
ctl_etcd_b64_encode(const uint8_t *p, size_t n, char *out)
{
	size_t i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		*out++ = b64_alphabet[v >> 18];
		*out++ = b64_alphabet[v >> 12 & 0x3f];
		*out++ = b64_alphabet[v >> 6 & 0x3f];
		*out++ = b64_alphabet[v & 0x3f];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);

		*out++ = b64_alphabet[v >> 18];
		*out++ = b64_alphabet[v >> 12 & 0x3f];
		*out++ = i + 1 < n ? b64_alphabet[v >> 6 & 0x3f] : '=';
		*out++ = '=';
	}
	*out = '\0';
}

static int
b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/*
 * out holds len / 4 * 3 bytes. Only the last quantum may be padded ("xx==" or "xxx="),
 * and the bits padding drops must be zero, so each value has one spelling.
 */
int
ctl_etcd_b64_decode(const char *s, size_t len, uint8_t *out, size_t *out_len)
{
	size_t o = 0;

	if (len % 4 != 0)
		return -EPROTO;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int pad = last && s[i + 3] == '=' ? (s[i + 2] == '=' ? 2 : 1) : 0;
		int a = b64_value(s[i]), b = b64_value(s[i + 1]);
		int d2 = pad == 2 ? 0 : b64_value(s[i + 2]);
		int d3 = pad >= 1 ? 0 : b64_value(s[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || d2 < 0 || d3 < 0)
			return -EPROTO;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)d2 << 6 | (uint32_t)d3;
		if ((pad == 2 && (v & 0xffff) != 0) || (pad == 1 && (v & 0xff) != 0))
			return -EPROTO;
		out[o++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[o++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[o++] = (uint8_t)v;
	}
	*out_len = o;
	return 0;
}
