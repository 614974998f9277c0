/*
 * Random ClientHello messages for test_tls_hello_model: the shapes clients send, now and
 * then a field, a length or a name wrong, so that the parser meets both outcomes often.
 */
#include <stddef.h>
#include <stdint.h>

#include "tls_hello_gen.h"

static unsigned int
be16_at(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* xorshift64*: the next number from *rng. */
uint32_t
rnd(uint64_t *rng)
{
	*rng ^= *rng >> 12;
	*rng ^= *rng << 25;
	*rng ^= *rng >> 27;
	return (uint32_t)((*rng * UINT64_C(0x2545f4914f6cdd1d)) >> 32);
}

uint32_t
rnd_below(uint64_t *rng, uint32_t n)
{
	return rnd(rng) % n;
}

/* v as two big-endian bytes at p. */
void
put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A host name: labels of letters (some capitals), digits and '-', now and then a flaw. */
static size_t
gen_host(uint64_t *rng, uint8_t *h)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEZ0123456789-";
	size_t n = 0, labels = 1 + rnd_below(rng, 4);

	for (size_t l = 0; l < labels; l++) {
		size_t len = 1 + rnd_below(rng, rnd_below(rng, 8) == 0 ? 70 : 12);

		if (l > 0)
			h[n++] = '.';
		for (size_t i = 0; i < len; i++)
			h[n++] = (uint8_t)chars[rnd_below(rng, sizeof(chars) - 1)];
	}
	if (rnd_below(rng, 8) == 0)
		h[n++] = '.';
	if (rnd_below(rng, 16) == 0)	/* a byte no host name has, or a dot too many */
		h[rnd_below(rng, (uint32_t)n)] = (uint8_t)(rnd_below(rng, 2) ? '.' : rnd(rng));
	if (rnd_below(rng, 64) == 0)
		n = 0;
	return n;
}

static size_t
gen_sni(uint64_t *rng, uint8_t *d)
{
	size_t host = gen_host(rng, d + 5);

	put16(d, host + 3);
	d[2] = rnd_below(rng, 32) == 0 ? 1 : 0;
	put16(d + 3, host);
	if (rnd_below(rng, 32) == 0)		/* a list or a name of the wrong length */
		put16(rnd_below(rng, 2) ? d : d + 3, host + rnd_below(rng, 5) - 2);
	return host + 5;
}

static size_t
gen_alpn(uint64_t *rng, uint8_t *d)
{
	size_t n = 2, ids = rnd_below(rng, 12);

	for (size_t i = 0; i < ids; i++) {
		size_t len = rnd_below(rng, 24) == 0 ? 0 : 1 + rnd_below(rng, 8);

		d[n++] = (uint8_t)len;
		for (size_t j = 0; j < len; j++)
			d[n++] = (uint8_t)('a' + rnd_below(rng, 26));
	}
	put16(d, n - 2);
	if (rnd_below(rng, 32) == 0)
		put16(d, n - 2 + rnd_below(rng, 3) - 1);
	return n;
}

/* A type a client sends: the low ones, GREASE, renegotiation_info, ECH, ALPS, or any. */
static unsigned int
gen_type(uint64_t *rng)
{
	static const unsigned int common[] = { 5, 10, 11, 13, 18, 21, 23, 27, 35, 41, 43, 45,
	    51, 57, 63, 0xff01, 0xfe0d, 0x4469, 0x44cd, 64, 65535 };

	switch (rnd_below(rng, 16)) {
	case 0:
		return rnd_below(rng, 64);
	case 1:
	case 2:
		return rnd(rng) & 0xffff;
	case 3:
	case 4:
	case 5:
		return 0x0a0a + 0x1010 * rnd_below(rng, 16);	/* GREASE (RFC 8701) */
	default:
		return common[rnd_below(rng, sizeof(common) / sizeof(common[0]))];
	}
}

/* A type not among the k in types (no client repeats one; a test does on purpose). */
static unsigned int
gen_fresh_type(uint64_t *rng, const unsigned int *types, size_t k)
{
	for (;;) {
		unsigned int type = gen_type(rng);
		size_t i = 0;

		if (type == 0 || type == 16)
			continue;
		while (i < k && types[i] != type)
			i++;
		if (i == k)
			return type;
	}
}

static size_t
gen_exts(uint64_t *rng, uint8_t *e, size_t room)
{
	unsigned int types[64];
	size_t n = 0, count = rnd_below(rng, rnd_below(rng, 4) == 0 ? 40 : 20);
	size_t sni_at = rnd_below(rng, 8) == 0 ? SIZE_MAX : rnd_below(rng, (uint32_t)count + 1);
	size_t alpn_at = rnd_below(rng, (uint32_t)count * 2 + 1);

	for (size_t k = 0; k < count && n + 600 < room; k++) {
		size_t len;
		unsigned int type;

		if (k == sni_at)
			type = 0;
		else if (k == alpn_at)
			type = 16;
		else if (k > 0 && rnd_below(rng, 48) == 0)
			type = types[rnd_below(rng, (uint32_t)k)];	/* a duplicate */
		else
			type = gen_fresh_type(rng, types, k);
		types[k] = type;
		put16(e + n, type);
		if (type == 0 && rnd_below(rng, 16) != 0) {
			len = gen_sni(rng, e + n + 4);
		} else if (type == 16 && rnd_below(rng, 16) != 0) {
			len = gen_alpn(rng, e + n + 4);
		} else {
			len = rnd_below(rng, 40);
			for (size_t i = 0; i < len; i++)
				e[n + 4 + i] = (uint8_t)rnd(rng);
		}
		put16(e + n + 2, len);
		n += 4 + len;
	}
	if (rnd_below(rng, 24) == 0 && n < room)	/* a stray byte or three */
		for (size_t k = 1 + rnd_below(rng, 3); k > 0 && n < room; k--)
			e[n++] = (uint8_t)rnd(rng);
	if (rnd_below(rng, 24) == 0 && n >= 4) {	/* one length no longer fits */
		size_t at = rnd_below(rng, (uint32_t)(n - 3));

		put16(e + at + 2, be16_at(e + at + 2) + 1 + rnd_below(rng, 3));
	}
	return n;
}

/* A ClientHello handshake message, header included; its fields now and then wrong. */
size_t
gen_msg(uint64_t *rng, uint8_t *m)
{
	size_t n = 4, sid = rnd_below(rng, 8) == 0 ? rnd_below(rng, 40) : 32;
	size_t suites = rnd_below(rng, 32) == 0 ? rnd_below(rng, 5) : 2 + 2 * rnd_below(rng, 20);
	size_t comp = rnd_below(rng, 32) == 0 ? 0 : 1, exts;

	m[0] = rnd_below(rng, 64) == 0 ? 2 : 1;
	m[n++] = rnd_below(rng, 64) == 0 ? 2 : 3;
	m[n++] = (uint8_t)rnd(rng);
	for (size_t i = 0; i < 32; i++)
		m[n++] = (uint8_t)rnd(rng);
	m[n++] = (uint8_t)sid;
	for (size_t i = 0; i < sid; i++)
		m[n++] = (uint8_t)rnd(rng);
	put16(m + n, suites);
	n += 2;
	for (size_t i = 0; i < suites; i++)
		m[n++] = (uint8_t)rnd(rng);
	m[n++] = (uint8_t)comp;
	for (size_t i = 0; i < comp; i++)
		m[n++] = 0;
	if (rnd_below(rng, 20) != 0) {
		size_t off_by = rnd_below(rng, 48) == 0 ? rnd_below(rng, 3) : 1;	/* 1: none */

		exts = gen_exts(rng, m + n + 2, MSG_MAX - n - 8);
		put16(m + n, exts + off_by - 1);
		n += 2 + exts;
	}
	if (rnd_below(rng, 48) == 0)
		n -= rnd_below(rng, (uint32_t)(n - 4));	/* cut short */
	m[1] = (uint8_t)((n - 4) >> 16);
	m[2] = (uint8_t)((n - 4) >> 8);
	m[3] = (uint8_t)(n - 4);
	return n;
}

