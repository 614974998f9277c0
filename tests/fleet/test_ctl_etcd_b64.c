/*
 * The gateway's base64 (control/fleet/ctl_etcd_b64.c): RFC 4648 s10's vectors both ways,
 * every byte value through a round trip, and input that is not canonical base64 refused:
 * a wrong length, a stray character, padding inside, bits set under the padding.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_etcd_int.h"

static const struct {
	const char *plain;
	const char *enc;
} vectors[] = {		/* RFC 4648 s10 */
	{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
};

static void
test_rfc4648_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t n = strlen(vectors[i].plain), got;
		char enc[16];
		uint8_t dec[16];

		assert_int_equal(ctl_etcd_b64_len(n), strlen(vectors[i].enc));
		ctl_etcd_b64_encode((const uint8_t *)vectors[i].plain, n, enc);
		assert_string_equal(enc, vectors[i].enc);
		assert_int_equal(ctl_etcd_b64_decode(enc, strlen(enc), dec, &got), 0);
		assert_int_equal(got, n);
		assert_memory_equal(dec, vectors[i].plain, n);
	}
}

static void
test_every_byte_round_trip(void **state)
{
	uint8_t in[256], out[258];
	char enc[400];
	size_t got;

	(void)state;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	for (size_t n = 0; n <= sizeof(in); n++) {	/* each length: each padding */
		ctl_etcd_b64_encode(in, n, enc);
		assert_int_equal(ctl_etcd_b64_decode(enc, strlen(enc), out, &got), 0);
		assert_int_equal(got, n);
		assert_memory_equal(out, in, n);
	}
}

static void
test_refuses_non_canonical(void **state)
{
	static const char *bad[] = {
		"Zg=", "Zm9", "Z", "Zm9v\n", "Zm 9", "Zm9*", "Zg==Zg==", "Z===", "=Zg=",
		"Zh==",		/* bits under the padding: "Zg==" is the one spelling */
		"Zm9=",		/* likewise for one byte of padding */
	};
	uint8_t out[16];
	size_t got;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ctl_etcd_b64_decode(bad[i], strlen(bad[i]), out, &got), -EPROTO);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_every_byte_round_trip),
		cmocka_unit_test(test_refuses_non_canonical),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
