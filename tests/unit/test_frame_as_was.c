/*
 * Fast paths of sni/frame*.c held to the code they replaced, kept here as it was:
 * frame_addr_rebind()'s compares to its prefix tables, and frame_dns_spell()'s skip of a
 * lower-case question to the walk of every name. Many cases each, byte for byte.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/frame.h"

/*
 * The rebinding check as it was a table walk: IPv4 words and masks, IPv6 prefixes, and an
 * IPv6 address's embedded IPv4 ones (frame_addr_embedded_v4()) judged as IPv4. The
 * compares frame_addr_rebind() makes instead must decide every address as this does.
 */
static bool
rebind_by_table(uint8_t family, const uint8_t *a)
{
	static const uint32_t v4[][2] = {
		{ 0x00000000, 0xff000000 }, { 0x7f000000, 0xff000000 },
		{ 0xa9fe0000, 0xffff0000 }, { 0xe0000000, 0xf0000000 },
		{ 0xffffffff, 0xffffffff },
	};
	static const struct {
		unsigned int bits;
		uint8_t addr[16];
	} v6[] = { { 128, { 0 } }, { 128, { [15] = 1 } }, { 10, { 0xfe, 0x80 } }, { 8, { 0xff } } };
	uint8_t embedded[FRAME_EMBEDDED_V4_MAX][4];
	size_t n;

	if (family == 4) {
		uint32_t w = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 |
		    a[3];

		for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++)
			if ((w & v4[i][1]) == v4[i][0])
				return true;
		return false;
	}
	if (family != 6)
		return true;
	n = frame_addr_embedded_v4(a, embedded, FRAME_EMBEDDED_V4_MAX);
	for (size_t i = 0; i < n; i++)
		if (rebind_by_table(4, embedded[i]))
			return true;
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		unsigned int whole = v6[i].bits / 8, rest = v6[i].bits % 8;

		if (memcmp(a, v6[i].addr, whole) == 0 && (rest == 0 ||
		    ((a[whole] ^ v6[i].addr[whole]) & (0xff << (8 - rest))) == 0))
			return true;
	}
	return false;
}

/*
 * Every IPv4 /16 with low halves at the edges and between, each also as IPv4-mapped,
 * NAT64 and 6to4 IPv6, then IPv6 addresses at random around the prefixes: the compares
 * decide as the table did.
 */
static void
test_addr_rebind_as_table(void **state)
{
	static const uint16_t lows[] = { 0x0000, 0x0001, 0x00ff, 0x7fff, 0xa9fe, 0xfffe, 0xffff };
	static const uint8_t heads[][4] = {
		{ 0, 0, 0, 0 }, { 0, 0x64, 0xff, 0x9b }, { 0x20, 0x02, 0, 0 }, { 0x20, 0x01, 0, 0 },
		{ 0xfe, 0x80, 0, 0 }, { 0xfe, 0xc0, 0, 0 }, { 0xff, 0, 0, 0 },
		{ 0xfe, 0xbf, 0xff, 0xff },
	};
	uint8_t a[16];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	(void)state;

	for (uint32_t hi = 0; hi <= 0xffff; hi++)
		for (size_t k = 0; k < sizeof(lows) / sizeof(lows[0]); k++) {
			uint32_t w = hi << 16 | lows[k];
			uint8_t v4[4] = { (uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8),
			    (uint8_t)w };

			assert_int_equal(frame_addr_rebind(4, v4), rebind_by_table(4, v4));
			memset(a, 0, sizeof(a));
			a[10] = a[11] = 0xff;
			memcpy(a + 12, v4, 4);
			assert_int_equal(frame_addr_rebind(6, a), rebind_by_table(6, a));
			memcpy(a, heads[1], 4);
			assert_int_equal(frame_addr_rebind(6, a), rebind_by_table(6, a));
			memset(a, 0, sizeof(a));
			a[0] = 0x20;
			a[1] = 0x02;
			memcpy(a + 2, v4, 4);
			assert_int_equal(frame_addr_rebind(6, a), rebind_by_table(6, a));
		}
	for (unsigned int i = 0; i < 200000; i++) {
		for (size_t b = 0; b < sizeof(a); b++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			a[b] = (uint8_t)(x >> 56);
		}
		/* most with a prefix's head, sparse in its tail so the zero runs match too */
		memcpy(a, heads[i % (sizeof(heads) / sizeof(heads[0]))], (i / 8) % 5);
		if (i % 3 == 0)
			memset(a + 4, 0, 8 + i % 5);
		assert_int_equal(frame_addr_rebind(6, a), rebind_by_table(6, a));
		assert_int_equal(frame_addr_rebind(4, a), rebind_by_table(4, a));
	}
	for (unsigned int f = 0; f < 256; f++)
		assert_int_equal(frame_addr_rebind((uint8_t)f, a), rebind_by_table((uint8_t)f, a));
}

/*
 * frame_dns_spell() as it was, every call walking the message for the names to spell: the
 * one it has now, which skips the walk for a question alone asked in lower case, must
 * leave every byte (message and checksum) as this does.
 */
static void
spell_as_walked(uint8_t *udp, uint8_t *dns, size_t len, size_t qname_len,
    const uint8_t caps[DNS_CASE_BYTES])
{
	uint16_t csum = (uint16_t)(udp[6] << 8 | udp[7]), before = 0, after = 0;
	bool odd = ((size_t)(dns - udp) & 1) != 0, all_lower = true;
	size_t at[16], n, sum_len = qname_len;
	uint32_t sum;

	for (size_t i = 0; i < DNS_CASE_BYTES; i++)
		all_lower = all_lower && caps[i] == 0;
	n = dns_msg_spell_names(dns, len, qname_len, at, 16);
	for (size_t i = 0; all_lower && n <= 16 && i < n; i++)
		all_lower = !dns_name_has_upper(dns + at[i], qname_len);
	if (all_lower && n <= 16)
		return;
	if (n > 16) {
		n = 1;
		at[0] = 0;
		sum_len = len;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			dns_msg_spell(dns, len, qname_len, caps);
			if (csum == 0)
				return;
		}
		sum = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t part = frame_csum_add(0, dns + at[i], sum_len);

			sum += (at[i] & 1) != 0 ? (uint16_t)(part << 8 | part >> 8) : part;
		}
		if (pass == 0)
			before = (uint16_t)~frame_csum_fold(sum);
		else
			after = (uint16_t)~frame_csum_fold(sum);
	}
	if (odd) {
		before = (uint16_t)(before << 8 | before >> 8);
		after = (uint16_t)(after << 8 | after >> 8);
	}
	csum = frame_csum_update16(csum, before, after);
	if (csum == 0)
		csum = 0xffff;
	udp[6] = (uint8_t)(csum >> 8);
	udp[7] = (uint8_t)csum;
}

static unsigned int
next_rand(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned int)(*x >> 33);
}

/*
 * Random messages, most a question alone (as an answer's spelling is given it), some
 * with copies of it after, names of random case or none, caps lower or not, lengths and
 * name lengths at and around the question's, checksums zero or not, at even and odd
 * offsets: frame_dns_spell() leaves each as the walk did.
 */
static void
test_spell_as_walked(void **state)
{
	uint8_t buf[2][600], caps[DNS_CASE_BYTES];
	uint64_t x = 0x2545f4914f6cdd1dull;
	(void)state;

	for (unsigned int round = 0; round < 100000; round++) {
		size_t off = 8 + round % 2, name_len = 0, len, qlen;
		unsigned int labels;
		uint8_t *dns = buf[0] + off;

		for (size_t i = 0; i < sizeof(buf[0]); i++)
			buf[0][i] = (uint8_t)next_rand(&x);
		if (next_rand(&x) % 4 != 0)
			buf[0][6] = buf[0][7] = 0;
		dns[6] = 0;
		dns[7] = (uint8_t)(next_rand(&x) % 3);	/* ancount: copies walked after */
		labels = 1 + next_rand(&x) % 4;
		for (unsigned int l = 0; l < labels; l++) {
			unsigned int n = 1 + next_rand(&x) % 12;

			dns[DNS_HDR_LEN + name_len++] = (uint8_t)n;
			for (unsigned int c = 0; c < n; c++) {
				unsigned int r = next_rand(&x);
				uint8_t *at = &dns[DNS_HDR_LEN + name_len++];

				*at = (uint8_t)(r % 8 == 0 ? 'A' + r % 26 :
				    r % 8 == 1 ? '0' + r % 10 : 'a' + r % 26);
			}
		}
		dns[DNS_HDR_LEN + name_len++] = 0;
		memset(caps, 0, sizeof(caps));
		if (next_rand(&x) % 3 == 0) {
			unsigned int bit = next_rand(&x) % (8 * DNS_CASE_BYTES);

			caps[bit / 8] = (uint8_t)(1u << bit % 8);
		}
		qlen = next_rand(&x) % 8 == 0 ? name_len + next_rand(&x) % 3 - 1 : name_len;
		len = DNS_HDR_LEN + qlen + 4;
		if (next_rand(&x) % 4 == 0) {
			/* an answer record copying the name, or a length off the question's */
			size_t at = len + 1 + next_rand(&x) % (name_len - 1);

			memcpy(dns + len, dns + DNS_HDR_LEN, name_len);
			/* a copy spelled otherwise: spelled too, unless a length rules it out */
			if (dns[at] >= 'a' && dns[at] <= 'z' && next_rand(&x) % 2 == 0)
				dns[at] ^= 0x20;
			memset(dns + len + name_len, 0, 10);
			len = next_rand(&x) % 2 ? len + name_len + 10 : len - 1 + next_rand(&x) % 3;
		}
		memcpy(buf[1], buf[0], sizeof(buf[0]));
		frame_dns_spell(buf[0], dns, len, qlen, caps);
		spell_as_walked(buf[1], buf[1] + off, len, qlen, caps);
		assert_memory_equal(buf[0], buf[1], sizeof(buf[0]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_rebind_as_table),
		cmocka_unit_test(test_spell_as_walked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
