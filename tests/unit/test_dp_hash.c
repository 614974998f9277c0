/*
 * dp_hash: SipHash-2-4 against the reference vectors, the start-time key, the judged-bytes
 * digest (NH, its 128-bit sum kept, or CLNH where the CPU multiplies carry-less) and the
 * keyed CRC flow hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* A fixed NH key for the digest cases: words of one pattern, so the cases repeat. */
static uint64_t test_nh_key[DP_HASH_NH_BYTES / 8];

/* The digest's form under test: NH, CLNH (where the CPU has it), or the one in use. */
static struct dp_digest (*test_form)(const uint64_t *, uint64_t, uint64_t, const void *,
    size_t) = dp_hash_digest_keyed;

static struct dp_digest
digest(const void *buf, size_t len)
{
	return test_form(test_nh_key, 1, 2, buf, len);
}

/* Two digests told apart: the cases below each compare one pair. */
static bool
differ(struct dp_digest a, struct dp_digest b)
{
	return !dp_digest_eq(a, b);
}

/*
 * What a VM could try against the digest of bytes it wrote: flip any one bit, swap two
 * 16-byte blocks (a key reused across blocks would not see it), append zeros (the padding
 * of the last block), cut the tail. Each must change the digest; the same bytes must not.
 */
static void
digest_tells_contents_apart(void)
{
	uint8_t msg[600], alt[600];
	struct dp_digest d;

	for (size_t i = 0; i < sizeof(test_nh_key) / sizeof(test_nh_key[0]); i++)
		test_nh_key[i] = UINT64_C(0x9e3779b97f4a7c15) * (i + 1);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	d = digest(msg, sizeof(msg));
	assert_true(dp_digest_eq(digest(msg, sizeof(msg)), d));
	for (size_t bit = 0; bit < sizeof(msg) * 8; bit++) {
		memcpy(alt, msg, sizeof(msg));
		alt[bit / 8] ^= (uint8_t)(1u << bit % 8);
		assert_true(differ(digest(alt, sizeof(alt)), d));
	}
	memcpy(alt, msg, sizeof(msg));
	memcpy(alt, msg + 16, 16);
	memcpy(alt + 16, msg, 16);
	assert_true(differ(digest(alt, sizeof(alt)), d));
	memset(alt, 0, sizeof(alt));
	memcpy(alt, msg, 17);
	assert_true(differ(digest(alt, 18), digest(alt, 17)));	/* a zero byte more */
	assert_true(differ(digest(msg, sizeof(msg) - 1), d));
	assert_true(differ(digest(msg, 0), digest(alt + 17, 1)));
}

static void
test_digest_tells_contents_apart(void **state)
{
	(void)state;
	test_form = dp_hash_digest_nh;
	digest_tells_contents_apart();
	if (dp_hash_has_clnh()) {
		test_form = dp_hash_digest_clnh;
		digest_tells_contents_apart();
	}
	test_form = dp_hash_digest_keyed;
}

/* Past the key's length the digest is SipHash of the whole; every length still works. */
static void
test_digest_long_and_short(void **state)
{
	static uint8_t big[DP_HASH_NH_BYTES + 100];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	assert_int_equal(digest(big, sizeof(big)).lo, dp_siphash24(1, 2, big, sizeof(big)));
	assert_true(differ(digest(big, DP_HASH_NH_BYTES), digest(big, DP_HASH_NH_BYTES - 1)));
	for (size_t n = 0; n < 40; n++)
		assert_true(differ(digest(big, n), digest(big, n + 1)));
	assert_int_equal(dp_hash_init(), 0);
	assert_true(dp_digest_eq(dp_hash_digest(big, 600), dp_hash_digest(big, 600)));
}

/*
 * dp_hash_bytes starts from the key's state made once at dp_hash_init: it must be SipHash
 * under the drawn key still. The long digest is SipHash under that key from the key itself,
 * so the two agree on every message past DP_HASH_NH_BYTES, each length of the last word.
 */
static void
test_bytes_state_is_the_key(void **state)
{
	static uint8_t big[DP_HASH_NH_BYTES + 24];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	for (int start = 0; start < 2; start++) {
		assert_int_equal(dp_hash_init(), 0);
		for (size_t n = DP_HASH_NH_BYTES + 1; n <= sizeof(big); n++)
			assert_int_equal(dp_hash_bytes(big, n), dp_hash_digest(big, n).lo);
	}
}

/* The fixed key, and the message the reference cases digest at every length. */
static void
test_key_and_msg(uint8_t *msg, size_t n)
{
	for (size_t i = 0; i < sizeof(test_nh_key) / sizeof(test_nh_key[0]); i++)
		test_nh_key[i] = UINT64_C(0x9e3779b97f4a7c15) * (i + 1);
	for (size_t i = 0; i < n; i++)
		msg[i] = (uint8_t)(i * 13 + 5);
}

/* The block at b of msg's first len bytes, zero-padded, a byte at a time: two words. */
static void
test_block(const uint8_t *msg, size_t len, size_t b, uint64_t w[2])
{
	w[0] = w[1] = 0;
	for (size_t j = 0; j < 16 && b + j < len; j++)
		w[j / 8] |= (uint64_t)msg[b + j] << (8 * (j % 8));
}

/*
 * NH as RFC 4418 s5.2.3 writes it, a byte at a time: the digest's four-block turns and its
 * shifted last load must give the same sum for every length and every place of a block.
 */
static void
test_digest_is_nh(void **state)
{
	uint8_t msg[300];

	(void)state;
	test_key_and_msg(msg, sizeof(msg));
	for (size_t len = 0; len <= sizeof(msg); len++) {
		unsigned __int128 sum = len;
		struct dp_digest d = dp_hash_digest_nh(test_nh_key, 1, 2, msg, len);

		for (size_t b = 0; b < len; b += 16) {
			uint64_t w[2];

			test_block(msg, len, b, w);
			sum += (unsigned __int128)(w[0] + test_nh_key[b / 8]) *
			    (w[1] + test_nh_key[b / 8 + 1]);
		}
		assert_int_equal(d.lo, (uint64_t)sum);
		assert_int_equal(d.hi, (uint64_t)(sum >> 64));
	}
}

/* The carry-less product of two 64-bit words, a bit at a time, into p[0] (low), p[1]. */
static void
clmul_ref(uint64_t a, uint64_t b, uint64_t p[2])
{
	p[0] = p[1] = 0;
	for (int i = 0; i < 64; i++)
		if (b >> i & 1) {
			p[0] ^= a << i;
			p[1] ^= i == 0 ? 0 : a >> (64 - i);
		}
}

/*
 * CLNH as dp_hash.h writes it, a byte at a time and a bit at a time: the XOR of
 * (m0 ^ k0) * (m1 ^ k1) carry-less over the zero-padded blocks, the length XORed in; and
 * the digest in use is CLNH exactly where the CPU has it, NH elsewhere.
 */
static void
test_digest_is_clnh(void **state)
{
	uint8_t msg[600];

	(void)state;
	test_key_and_msg(msg, sizeof(msg));
	for (size_t len = 0; len <= sizeof(msg); len++) {
		struct dp_digest d = dp_hash_has_clnh() ?
		    dp_hash_digest_clnh(test_nh_key, 1, 2, msg, len) :
		    dp_hash_digest_nh(test_nh_key, 1, 2, msg, len);
		uint64_t sum[2] = { len, 0 }, pr[2];

		assert_true(dp_digest_eq(dp_hash_digest_keyed(test_nh_key, 1, 2, msg, len), d));
		if (!dp_hash_has_clnh())
			continue;
		for (size_t b = 0; b < len; b += 16) {
			uint64_t w[2];

			test_block(msg, len, b, w);
			clmul_ref(w[0] ^ test_nh_key[b / 8], w[1] ^ test_nh_key[b / 8 + 1], pr);
			sum[0] ^= pr[0];
			sum[1] ^= pr[1];
		}
		assert_int_equal(d.lo, sum[0]);
		assert_int_equal(d.hi, sum[1]);
	}
}

/* The flow hash depends on the start-time secrets, and on every word of the key. */
static void
test_crc_hash_is_keyed(void **state)
{
	uint64_t key[4] = { 1, 2, 3, 0 };
	uint32_t h;

	(void)state;
	assert_int_equal(dp_hash_init(), 0);
	h = dp_hash_crc(key, sizeof(key), 7);
	assert_int_equal(dp_hash_crc(key, sizeof(key), 7), h);
	assert_int_not_equal(dp_hash_crc(key, sizeof(key), 8), h);
	for (int w = 0; w < 4; w++) {
		key[w] ^= UINT64_C(1) << 40;
		assert_int_not_equal(dp_hash_crc(key, sizeof(key), 7), h);
		key[w] ^= UINT64_C(1) << 40;
	}
	assert_int_equal(dp_hash_init(), 0);	/* another start, other secrets */
	assert_int_not_equal(dp_hash_crc(key, sizeof(key), 7), h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_vectors),
		cmocka_unit_test(test_key_is_drawn),
		cmocka_unit_test(test_digest_tells_contents_apart),
		cmocka_unit_test(test_digest_long_and_short),
		cmocka_unit_test(test_digest_is_nh),
		cmocka_unit_test(test_digest_is_clnh),
		cmocka_unit_test(test_bytes_state_is_the_key),
		cmocka_unit_test(test_crc_hash_is_keyed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
