/*
 * sni_host_scan (tls_host.c): its 16-byte path must say what its byte-at-a-time path says
 * of every name it takes, capitals included, wherever the name sits after its buffer's
 * start (the last load of a short name reaches before it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sni/tls.h"
#include "tls_int.h"

#define PAD	16	/* bytes of buffer before the name: a 16-byte load may start there */

/* Both paths on buf[PAD, PAD + len): the same verdict, and the same capitals when valid. */
static void
agree(const uint8_t *buf, size_t len)
{
	size_t n = len > 0 && buf[PAD + len - 1] == '.' ? len - 1 : len;
	bool up_vec = false, up_byte = false, ok_vec, ok_byte;

	ok_vec = sni_host_scan(buf, buf + PAD, len, &up_vec);
	ok_byte = n > 0 && n <= SNI_HOST_MAX && sni_host_scan_bytes(buf + PAD, n, &up_byte);
	if (ok_vec != ok_byte || (ok_vec && up_vec != up_byte))
		fail_msg("len %zu: vector %d/%d, bytes %d/%d", len, ok_vec, up_vec, ok_byte,
		    up_byte);
}

/* Every byte value at every place of names of 1..70 bytes, labels of 3 and a dot. */
static void
test_every_byte_everywhere(void **state)
{
	uint8_t buf[PAD + 80];

	(void)state;
	for (size_t len = 1; len <= 70; len++) {
		memset(buf, '.', PAD);		/* what precedes must not count */
		for (size_t i = 0; i < len; i++)
			buf[PAD + i] = i % 4 == 3 ? '.' : (uint8_t)('a' + i % 26);
		for (size_t at = 0; at < len; at++) {
			uint8_t keep = buf[PAD + at];

			for (unsigned int c = 0; c < 256; c++) {
				buf[PAD + at] = (uint8_t)c;
				agree(buf, len);
			}
			buf[PAD + at] = keep;
		}
	}
}

/* Dots where they may not be: first, last but the root's, two in a row; long labels. */
static void
test_dots_and_labels(void **state)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
		{ "a", true }, { "A.b-C.d", true }, { "pypi.org.", true }, { ".pypi.org", false },
		{ "pypi..org", false }, { "pypi.org..", false }, { ".", false }, { "", false },
		{ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", true },
		{ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false },
		{ "a_b.example", false }, { "a b.example", false }, { "caf\xc3\xa9.example", false },
	};
	uint8_t buf[PAD + 80];
	bool up;

	(void)state;
	memset(buf, 'a', sizeof(buf));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].name);

		memcpy(buf + PAD, cases[i].name, len);
		if (sni_host_scan(buf, buf + PAD, len, &up) != cases[i].ok)
			fail_msg("\"%s\": want %d", cases[i].name, cases[i].ok);
		agree(buf, len);
		assert_int_equal(sni_host_valid((const uint8_t *)cases[i].name, len), cases[i].ok);
	}
	memcpy(buf + PAD, "pyPI.org", 8);
	assert_true(sni_host_scan(buf, buf + PAD, 8, &up) && up);
	memcpy(buf + PAD, "pypi.org", 8);
	assert_true(sni_host_scan(buf, buf + PAD, 8, &up) && !up);
}

/*
 * Names of 1..63 bytes at every distance 0..40 from their buffer's start, which is a heap
 * block of exactly that many bytes (a load before it is one a checker sees): each length's
 * vector paths (16 bytes, and 32 with AVX2 for 17..32) are taken or left by the distance,
 * and every one must judge as the bytes do. A capital or a bad byte sits at each end.
 */
static void
test_floor_distance(void **state)
{
	static const uint8_t ends[] = { 'a', 'Q', '_', '-' };

	(void)state;
	for (size_t len = 1; len <= 63; len++)
		for (size_t d = 0; d <= 40; d++)
			for (size_t e = 0; e < sizeof(ends) * sizeof(ends); e++) {
				uint8_t *buf = malloc(d + len);
				bool up_vec = false, up_byte = false, ok_vec, ok_byte;

				assert_non_null(buf);
				memset(buf, '.', d);
				for (size_t i = 0; i < len; i++)
					buf[d + i] = i % 5 == 4 ? '.' : (uint8_t)('a' + i % 26);
				buf[d] = ends[e % sizeof(ends)];
				buf[d + len - 1] = ends[e / sizeof(ends)];
				ok_vec = sni_host_scan(buf, buf + d, len, &up_vec);
				ok_byte = sni_host_scan_bytes(buf + d, len, &up_byte);
				if (ok_vec != ok_byte || (ok_vec && up_vec != up_byte))
					fail_msg("len %zu at %zu: vector %d/%d, bytes %d/%d", len, d,
					    ok_vec, up_vec, ok_byte, up_byte);
				free(buf);
			}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_byte_everywhere),
		cmocka_unit_test(test_dots_and_labels),
		cmocka_unit_test(test_floor_distance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
