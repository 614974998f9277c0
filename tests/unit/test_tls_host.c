/*
 * sni_host_scan and tls_host_judge (tls_host.c): their vector paths must say what the
 * byte-at-a-time path says of every name they take, capitals included, wherever the name
 * sits after its buffer's start (the last load of a short name reaches before it).
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

/* pad dots (what precedes must not count), then a name of len bytes: labels of 3 */
static void
name_fill(uint8_t *buf, size_t pad, size_t len)
{
	memset(buf, '.', pad);
	for (size_t i = 0; i < len; i++)
		buf[pad + i] = i % 4 == 3 ? '.' : (uint8_t)('a' + i % 26);
}

/* check(buf, len) with each byte value at each place of buf[pad, pad + len) in turn */
static void
each_byte_everywhere(uint8_t *buf, size_t pad, size_t len,
    void (*check)(const uint8_t *buf, size_t len))
{
	for (size_t at = 0; at < len; at++) {
		uint8_t keep = buf[pad + at];

		for (unsigned int c = 0; c < 256; c++) {
			buf[pad + at] = (uint8_t)c;
			check(buf, len);
		}
		buf[pad + at] = keep;
	}
}

/* Every byte value at every place of names of 1..70 bytes, labels of 3 and a dot. */
static void
test_every_byte_everywhere(void **state)
{
	uint8_t buf[PAD + 80];

	(void)state;
	for (size_t len = 1; len <= 70; len++) {
		name_fill(buf, PAD, len);
		each_byte_everywhere(buf, PAD, len, agree);
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

/*
 * tls_host_judge() of buf[TLS_HOST_AT, TLS_HOST_AT + n), buf a heap block of exactly that
 * much (the fewest bytes a hello has before its host: a load before it is one a checker
 * sees): what the bytes say of the name less its root dot, out->sni that name, and
 * out->sni_lower no capitals.
 */
static void
judge_agrees(const uint8_t *buf, size_t n)
{
	const uint8_t *host = buf + TLS_HOST_AT;
	size_t len = n > 0 && host[n - 1] == '.' ? n - 1 : n;
	struct tls_hello out;
	bool upper = false, ok;
	enum sni_status st;

	memset(&out, 0xa5, sizeof(out));
	st = tls_host_judge(host, n, &out);
	ok = len > 0 && len <= SNI_HOST_MAX && sni_host_scan_bytes(host, len, &upper);
	if (st != (ok ? SNI_FOUND : SNI_MALFORMED))
		fail_msg("n %zu: %s, bytes %d", n, sni_status_str(st), ok);
	if (ok && (out.sni.p != host || out.sni.len != len || out.sni_lower != !upper))
		fail_msg("n %zu: sni %zu bytes at +%td, lower %d, want %zu, lower %d", n,
		    out.sni.len, out.sni.p - host, out.sni_lower, len, !upper);
}

/* A block of TLS_HOST_AT + n bytes: '.' before the name, labels of 3 in it. */
static uint8_t *
judge_block(size_t n)
{
	uint8_t *buf = malloc(TLS_HOST_AT + n);

	assert_non_null(buf);
	name_fill(buf, TLS_HOST_AT, n);
	return buf;
}

/* The server_name judge: every byte value at every place, with and without a root dot. */
static void
test_judge_every_byte_everywhere(void **state)
{
	(void)state;
	for (size_t n = 0; n <= 72; n++) {
		uint8_t *buf = judge_block(n);

		each_byte_everywhere(buf, TLS_HOST_AT, n, judge_agrees);
		judge_agrees(buf, n);
		free(buf);
	}
}

/* The judge's length bounds: 1..253 bytes, one root dot more. */
static void
test_judge_lengths(void **state)
{
	static const size_t lens[] = { 0, 1, 2, 31, 32, 33, 63, 64, 252, 253, 254, 255, 256 };

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *buf = judge_block(lens[i]);
		struct tls_hello out;

		judge_agrees(buf, lens[i]);
		if (lens[i] > 0) {
			buf[TLS_HOST_AT + lens[i] - 1] = '.';
			judge_agrees(buf, lens[i]);
			assert_int_equal(tls_host_judge(buf + TLS_HOST_AT, lens[i], &out),
			    lens[i] >= 2 && lens[i] <= SNI_HOST_MAX + 1 && lens[i] % 4 != 1 ?
			    SNI_FOUND : SNI_MALFORMED);
		}
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
		cmocka_unit_test(test_judge_every_byte_everywhere),
		cmocka_unit_test(test_judge_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
