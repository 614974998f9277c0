/*
 * dp_hash_name: the AES-128 it encrypts with against FIPS-197's vector, its form (CLNH of
 * the name, then AES of the sum) against dp_hash_digest_clnh at every length, the loads
 * it makes of a short name kept within the name, and names told apart under a drawn key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "dp_hash.h"

static uint64_t test_nh[DP_HASH_NH_BYTES / 8];	/* the digest's key length: covers the name's */
static uint8_t test_aes[16];

static void
test_keys(void)
{
	for (size_t i = 0; i < sizeof(test_nh) / sizeof(test_nh[0]); i++)
		test_nh[i] = UINT64_C(0x9e3779b97f4a7c15) * (i + 3);
	for (unsigned int i = 0; i < sizeof(test_aes); i++)
		test_aes[i] = (uint8_t)(i * 29 + 1);
}

static uint64_t
name_hash(const void *buf, size_t len)
{
	return dp_hash_name_keyed(test_nh, test_aes, 1, 2, buf, len);
}

/* FIPS-197 appendix C.1: key 00 01 .. 0f, plaintext 00 11 22 .. ff. */
static void
test_aes_vector(void **state)
{
	static const uint8_t want[16] = { 0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30,
	    0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a };
	uint8_t key[16], in[16], out[16];

	(void)state;
	if (!dp_hash_has_aes())
		skip();
	for (unsigned int i = 0; i < 16; i++) {
		key[i] = (uint8_t)i;
		in[i] = (uint8_t)(i * 0x11);
	}
	assert_true(dp_hash_aes128(key, in, out));
	assert_memory_equal(out, want, sizeof(want));
}

/*
 * At every length up to the key's and past it: the CLNH sum dp_hash_digest_clnh makes
 * (its loads, a byte at a time for short tails, are the reference here), AES-128 of it,
 * the low 64 bits; SipHash past DP_HASH_NAME_BYTES; SipHash everywhere without AES-NI.
 */
static void
test_name_is_clnh_then_aes(void **state)
{
	uint8_t msg[DP_HASH_NAME_BYTES + 20], enc[16];
	struct dp_digest d;
	uint64_t lo;

	(void)state;
	test_keys();
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 13 + 5);
	for (size_t len = 0; len <= sizeof(msg); len++) {
		if (!dp_hash_has_aes() || len > DP_HASH_NAME_BYTES) {
			assert_int_equal(name_hash(msg, len), dp_siphash24(1, 2, msg, len));
			continue;
		}
		d = dp_hash_digest_clnh(test_nh, 1, 2, msg, len);
		uint8_t sum[16];

		memcpy(sum, &d.lo, 8);
		memcpy(sum + 8, &d.hi, 8);
		assert_true(dp_hash_aes128(test_aes, sum, enc));
		memcpy(&lo, enc, 8);
		assert_int_equal(name_hash(msg, len), lo);
	}
}

/*
 * A name ending at a page no process may read, and starting right after one: the short
 * names' overlapping loads and the long ones' last load stay within the name. The hash of
 * each is the hash of the same bytes elsewhere.
 */
static void
test_name_loads_within(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *m, *mid, copy[DP_HASH_NAME_BYTES];

	(void)state;
	test_keys();
	m = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m, (size_t)page, PROT_NONE), 0);
	assert_int_equal(mprotect(m + 2 * page, (size_t)page, PROT_NONE), 0);
	mid = m + page;
	for (long i = 0; i < page; i++)
		mid[i] = (uint8_t)('a' + i % 26);
	for (size_t len = 1; len <= DP_HASH_NAME_BYTES; len++) {
		memcpy(copy, mid, len);
		assert_int_equal(name_hash(mid, len), name_hash(copy, len));
		assert_int_equal(dp_hash_name(mid, len), dp_hash_name(copy, len));
		memcpy(copy, mid + page - len, len);
		assert_int_equal(name_hash(mid + page - len, len), name_hash(copy, len));
		assert_int_equal(dp_hash_name(mid + page - len, len), dp_hash_name(copy, len));
	}
	munmap(m, (size_t)page * 3);
}

/*
 * Names a VM could aim at one another: one bit apart at every place, a byte more or
 * less, a zero byte more (the padding's), all lengths: none shares a hash. And another
 * start draws another key: the same name, another hash.
 */
static void
test_names_apart(void **state)
{
	uint8_t a[64], b[65];
	uint64_t h;

	(void)state;
	assert_int_equal(dp_hash_init(), 0);
	memset(a, 'x', sizeof(a));
	for (size_t len = 1; len <= sizeof(a); len++) {
		h = dp_hash_name(a, len);
		assert_int_not_equal(h, dp_hash_name(a, len - 1));
		memcpy(b, a, len);
		b[len] = 0;
		assert_int_not_equal(h, dp_hash_name(b, len + 1));
		for (size_t i = 0; i < len * 8; i++) {
			b[i / 8] ^= (uint8_t)(1u << (i % 8));
			assert_int_not_equal(h, dp_hash_name(b, len));
			b[i / 8] ^= (uint8_t)(1u << (i % 8));
		}
	}
	h = dp_hash_name(a, sizeof(a));
	assert_int_equal(dp_hash_init(), 0);
	assert_int_not_equal(dp_hash_name(a, sizeof(a)), h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aes_vector),
		cmocka_unit_test(test_name_is_clnh_then_aes),
		cmocka_unit_test(test_name_loads_within),
		cmocka_unit_test(test_names_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
