/*
 * tls_hello_parse() on streams that end where the process may no longer read: the stream
 * is copied to the end of a mapping whose next page is PROT_NONE, and so is the gathered
 * message of a hello spread over records (scratch as long as the message, at the end of
 * another such mapping). A read past either faults, which fails the test, where in a
 * larger buffer it would pass unseen: a bound the verdict does not show (a length that
 * only the checks after it would refuse) is held here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "sni/tls.h"
#include "tls_fixture.h"

#define GUARD_ROOM	(TF_MSG_MAX + TLS_HELLO_MAX)	/* readable bytes before the guard */

/* The last byte before a PROT_NONE page, GUARD_ROOM readable bytes before it. */
static uint8_t *
guard_end(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t room = (GUARD_ROOM + page - 1) / page * page;
	uint8_t *map = mmap(NULL, room + page, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + room, page, PROT_NONE), 0);
	return map + room;
}

/* The stream b of n bytes, which holds the message of msg_len bytes, parsed at the guards. */
static enum sni_status
parse_guarded(const uint8_t *b, size_t n, size_t msg_len)
{
	static uint8_t *stream_end, *scratch_end;
	struct tls_hello out;

	if (stream_end == NULL) {
		stream_end = guard_end();
		scratch_end = guard_end();
	}
	assert_true(n <= GUARD_ROOM && msg_len <= TLS_HELLO_MAX);
	memcpy(stream_end - n, b, n);
	return tls_hello_parse(stream_end - n, n, scratch_end - msg_len, msg_len, &out);
}

/* h in one record and in three, each whole stream parsed at the guards: want, both. */
static void
expect_guarded(const struct tf_hello *h, enum sni_status want)
{
	struct tf_msg s;

	for (size_t records = 1; records <= 3; records += 2) {
		tf_wrap(&s, &h->m, records);
		assert_int_equal(parse_guarded(s.b, s.n, h->m.n), want);
	}
}

/*
 * A hello without extensions whose compression methods run 1..4 bytes past its end: only
 * the methods' bound refuses it before a read past the message (the extensions' length
 * would be read there).
 */
static void
test_compression_past_end(void **state)
{
	struct tf_hello h;

	(void)state;
	for (unsigned int past = 0; past <= 4; past++) {
		tf_hello_begin_with(&h, 32, 2, 2);
		tf_hello_end_no_exts(&h);
		h.m.b[h.exts_at - 3] = (uint8_t)(2 + past);	/* the methods' count */
		expect_guarded(&h, past == 0 ? SNI_ABSENT : SNI_MALFORMED);
	}
}

/* The session id and the cipher suites' length run past a message that ends with them. */
static void
test_fields_past_end(void **state)
{
	struct tf_hello h;

	(void)state;
	for (unsigned int past = 1; past <= 4; past++) {
		tf_hello_begin_with(&h, 0, 2, 1);
		h.m.n = h.exts_at - 4;			/* cut after the suites' length */
		tf_close(&h.m, h.hs_at, 3);
		h.m.b[h.m.n - 2] = 0;
		h.m.b[h.m.n - 1] = (uint8_t)(2 * past);	/* suites where there are none */
		expect_guarded(&h, SNI_MALFORMED);
		tf_hello_begin_with(&h, 0, 2, 1);
		h.m.n = 4 + 35;				/* cut after the session id's length */
		tf_close(&h.m, h.hs_at, 3);
		h.m.b[h.m.n - 1] = (uint8_t)past;
		expect_guarded(&h, SNI_MALFORMED);
	}
}

/*
 * Every byte of the first 120 of each style's hello set to values about bounds: any
 * verdict, but no read outside the stream or the gathered message.
 */
static void
test_every_field_byte(void **state)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x03, 0x20, 0x21, 0x7f, 0x80, 0xfe, 0xff };
	struct tf_hello h;

	(void)state;
	for (size_t st = 0; st < tf_nb_styles; st++) {
		tf_hello_style(&h, &tf_styles[st]);
		for (size_t at = 0; at < h.m.n && at < 120; at++) {
			uint8_t keep = h.m.b[at];

			for (size_t v = 0; v < sizeof(vals); v++) {
				struct tf_msg s;

				h.m.b[at] = vals[v];
				tf_wrap(&s, &h.m, 1);
				(void)parse_guarded(s.b, s.n, h.m.n);
				tf_wrap(&s, &h.m, 3);
				(void)parse_guarded(s.b, s.n, h.m.n);
			}
			h.m.b[at] = keep;
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compression_past_end),
		cmocka_unit_test(test_fields_past_end),
		cmocka_unit_test(test_every_field_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
