/*
 * dataplane/worker/dp_dns_text.c: a question name as a host's text, held to the
 * byte-by-byte check it replaced, with both of its scans.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "dp_dns_int.h"

/*
 * dp_dns_host_text() as it was, byte by byte: each label's bytes checked, then joined.
 * What the word-at-a-time check must answer.
 */
static int
t_host_text_ref(const uint8_t *name, size_t len, char *out, size_t outlen)
{
	for (size_t i = 0; i < len && name[i] != 0; i += (size_t)name[i] + 1) {
		size_t end = i + 1 + name[i] < len ? i + 1 + name[i] : len;

		for (size_t j = i + 1; j < end; j++) {
			uint8_t c = name[j];

			if (!((uint8_t)((c | 0x20) - 'a') <= 'z' - 'a' || (uint8_t)(c - '0') <= 9 ||
			    c == '-' || c == '_'))
				return -1;
		}
	}
	if (len == 0 || (len < 2 ? 1 : len - 2) >= outlen)
		return -1;
	if (len < 2) {
		memcpy(out, ".", 2);
		return 1;
	}
	memcpy(out, name + 1, len - 2);
	for (size_t i = name[0]; i < len - 2; i += 1 + (size_t)name[i + 1])
		out[i] = '.';
	out[len - 2] = '\0';
	return (int)(len - 2);
}

/*
 * Names of 1 to 9 labels of 1 to 40 bytes, most bytes host bytes and the rest the bytes
 * next to their ranges ('/', ':', '@', '[', '`', '{', ',', '^'), '.', NUL, DEL and bytes
 * with the high bit: both scans (sixteen bytes at a time with SSE2, and the portable one
 * a word at a time) answer as the byte-by-byte check, and write the same text; the root
 * and names that do not fit too.
 */
static void
test_host_text_as_bytewise(void **state)
{
	static const uint8_t odd[] = { '/', ':', '@', '[', '`', '{', ',', '^', '.', 0, 0x7f,
		0x80, 0xad, 0xc1, 0xff, '-' + 0x80, 'a' + 0x80 };
	static const char host[] = "abcxyzABCXYZ0189-_";
	char got[DNS_NAME_TEXT_MAX], want[DNS_NAME_TEXT_MAX];
	unsigned int ok = 0;
	uint8_t name[DNS_NAME_WIRE_MAX];

	(void)state;
	srand(20251206);
	for (unsigned int k = 0; k < 200000; k++) {
		size_t len = 0, labels = 1 + (size_t)rand() % 9, outlen;
		int g, r;

		for (size_t l = 0; l < labels && len + 42 < sizeof(name); l++) {
			size_t n = 1 + (size_t)rand() % (rand() % 4 == 0 ? 40 : 6);

			name[len++] = (uint8_t)n;
			for (size_t i = 0; i < n; i++)
				name[len++] = rand() % 60 == 0 ? odd[(size_t)rand() % sizeof(odd)] :
				    (uint8_t)host[(size_t)rand() % (sizeof(host) - 1)];
		}
		name[len++] = 0;
		if (k % 1000 == 0)
			len = 1;		/* the root */
		outlen = k % 97 == 0 ? len - 1 : sizeof(got);	/* too small for some */
		memset(want, 'x', sizeof(want));
		want[0] = '\0';
		r = t_host_text_ref(name, len, want, outlen);
		for (int words = 0; words < 2; words++) {
			memset(got, 'x', sizeof(got));
			got[0] = '\0';
			g = words ? dp_dns_host_text_words(name, len, got, outlen) :
			    dp_dns_host_text(name, len, got, outlen);
			assert_int_equal(g, r);
			assert_int_equal(got[0] == '\0', r < 0);
			if (r > 0)
				assert_memory_equal(got, want, (size_t)r + 1);
		}
		ok += r > 0;
	}
	assert_true(ok > 10000 && ok < 190000);	/* both answers, many times */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_text_as_bytewise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
