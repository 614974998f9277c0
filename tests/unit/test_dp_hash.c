/*
 * dp_hash: SipHash-2-4 against the reference vectors, and the start-time key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dp_hash.h"

/*
 * The SipHash paper's appendix A: key 00 01 .. 0f, message 00 01 .. 0e (15 bytes), and
 * the first entries of the reference implementation's vectors.h (messages 00 .. n-1).
 */
static void
test_reference_vectors(void **state)
{
	static const uint64_t want[] = {
		UINT64_C(0x726fdb47dd0e0e31),	/* empty */
		UINT64_C(0x74f839c593dc67fd),	/* 00 */
		UINT64_C(0x0d6c8009d9a94f5a),	/* 00 01 */
		UINT64_C(0x85676696d7fb7e2d),
		UINT64_C(0xcf2794e0277187b7),
		UINT64_C(0x18765564cd99a68d),
		UINT64_C(0xcbc9466e58fee3ce),
		UINT64_C(0xab0200f58b01d137),
		UINT64_C(0x93f5f5799a932462),	/* 8 bytes: one whole word */
		UINT64_C(0x9e0082df0ba9e4b0),
	};
	uint64_t k0 = UINT64_C(0x0706050403020100), k1 = UINT64_C(0x0f0e0d0c0b0a0908);
	uint8_t msg[64];

	(void)state;
	for (unsigned int i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (unsigned int n = 0; n < sizeof(want) / sizeof(want[0]); n++)
		assert_int_equal(dp_siphash24(k0, k1, msg, n), want[n]);
	assert_int_equal(dp_siphash24(k0, k1, msg, 15), UINT64_C(0xa129ca6149be45e5));
}

static void
test_key_is_drawn(void **state)
{
	static const char name[] = "pypi.org";
	uint64_t first;

	(void)state;
	assert_int_equal(dp_hash_init(), 0);
	first = dp_hash_bytes(name, sizeof(name) - 1);
	assert_int_not_equal(first, dp_siphash24(0, 0, name, sizeof(name) - 1));
	assert_int_equal(dp_hash_bytes(name, sizeof(name) - 1), first);
	assert_int_equal(dp_hash_init(), 0);	/* another start, another key */
	assert_int_not_equal(dp_hash_bytes(name, sizeof(name) - 1), first);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_vectors),
		cmocka_unit_test(test_key_is_drawn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
