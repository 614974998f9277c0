/*
 * quic_initial_parse: a real v1 Initial (a fixed vector) and built headers for the rest.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sni/quic.h"

/* A real client's first Initial, kept as a fixed vector: UDP to port 443, 1250 bytes. */
static const char real_initial_hex[] =
	    "ce0000000108db9a00caaa3f72d0000044d091a8a63cff774c41367d482c67db8740cb9762d1131b"
	    "28bf9efb734f98658d29c9962b7b8c72cdccea67d5d8e934b1b7cd76b08a1caae05b76084be4754e"
	    "c99d3ee090e03d457128aa78089289de333ce86fa23c3261cac46a18fef521d5b1c38c018f161910"
	    "809c72c81cd16bb791a847c25f7e352c4c5604837093ecf93d51abb567c7e3aea3cbd9f35abb0f26"
	    "ce897c82bde875bebec37f8b7b9fa8f1d9cd853196430ed7931579e601aa179596452c7bf1bd6eb4"
	    "32f25174d990cf443fbc23dcd58f09ca9e0780dd0c0add47910c1a98c3180c1e6e2cc3fbe68e7a58"
	    "abc4561bf1d2c4ea28a6ff79d77d613b7fe6d0b8ae2e300f4b47b396a073bdcdf2b8ef9559ff2ad9"
	    "a16ccc4859b218a89f1c8a750ee8496cd908ae1e2c7967f8e589d73dd8136540bb1dffa3a1f2d900"
	    "175f62de3edce2e051c42d07f4927bcf5960e3babcd7301e1f977c66e6210cb96e497f8335feb90f"
	    "29c7603913d95df655cacaa7759a0abbc62dc6b74f2c0e0fbf52a279d3ccf76c34cea662ef519429"
	    "fc1eb3e03a4e341c589faf8469d537bdeda871783041c5a6f0d062bbae9cee990ee29a6fef8ecf53"
	    "ae849c16b3fc56a2c17801333398976629c56b7863d6b74025e5a0958b706388482db6545e612284"
	    "f15a3a0fa0344e184c77cd21ae0348268e6530f16b959439dd7b29b552f4162fb14d7a3558a78032"
	    "34bf1ff8512329c6fc46d2cd42b44dd76559fee97bd7e00d1f303f30f0ddbe37a2fdb0ec230ecbb1"
	    "ed73a5c24f2db0294a936e44392a824643a4b13259f30d3915994916983af1d143cebef16fc89eef"
	    "434e1dc43282888fc9a906bcefc2f7ed3a76f2e997e76ed075c71b8c5869a73c595197eb37b05c06"
	    "213aa57c66467d74d72fcef9aaa4f59f1b626cdcc0ccfd148a36d09c3462948639feab8e63a188f0"
	    "8f6a0000569128bad1bdaf022f32cbab025801dd16635327283403976df866ac5cb2d8ccd8ba81d3"
	    "f5d49d5f18e8c26edc4e6221defc4ab237d6f8f398cf8fe64f8f4f6f2c7d1487f8afa9da3df6e0cc"
	    "6cd0f2d4852c67b8b3b6e4d27637e4508f32d079735efabb9d3d1bb0429d1d99b79bb2a12ba2188a"
	    "e28b34f848784de23549390461abe6450792d73e11b8ce8e85524045d65bfc03d6e663c3550a4bb5"
	    "75f05e50bbb2c21c6f7d3ed6773523dae743156c5f077bb87fdf4538da11538caedda7120c295b0c"
	    "94c32f83b6655e8257925c1f6dd68c90b8146e9630b114ff4e3a238a73dcd198ed5c2b4c7d7c1581"
	    "0ed37d266086c8d20b318b4fd632721235bf9f056ba4d2dbdfd263906c395c3d1d41410576696a8d"
	    "ccf3ccb94d4c7bfca3dbd229eef3099263941ee3602322427d985d50ca8ec3408918530dd2567c6b"
	    "5007b8043c79de579ec8a3a558e2246d6816f42cd51cb9d3b248ca236cedb01425ee07e08f9a2db7"
	    "c5f65e6e4720da3a1ba6420a9dceb15f0de3b714a9c045899ae07d1e287bc742522753635adfb994"
	    "80107815062d9aa4ddd68ccafd87e997e349e8d135b62f35db766696914885bf9517ffde9855d1e0"
	    "273ff757d773609a85c4c073c77704fed28464d529d48dcdbc543493db359a2a0bfeeff3b5238990"
	    "6a13bae688b5e0194945be218c3d73ee61c542014d25aec4567e3d4dc0be828dc06eece3d6161321"
	    "6253230edab3aa7108f6f852f84d05cda02a5c184a0379e5519d8b6dd57bf4f20602d349af22727d"
	    "5225ded210bb20ad2c72";

static size_t
unhex(const char *hex, uint8_t *out, size_t outlen)
{
	size_t n = 0;

	for (; hex[0] != '\0' && hex[1] != '\0'; hex += 2) {
		char h[3] = { hex[0], hex[1], '\0' };

		assert_true(n < outlen);
		out[n++] = (uint8_t)strtoul(h, NULL, 16);
	}
	return n;
}

/* A QUIC varint of value v in exactly n (1, 2, 4, 8) bytes. */
static size_t
put_varint(uint8_t *p, uint64_t v, size_t n)
{
	static const uint8_t prefix[9] = { [1] = 0x00, [2] = 0x40, [4] = 0x80, [8] = 0xc0 };

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	p[0] |= prefix[n];
	return n;
}

struct qhdr {
	uint8_t first;
	uint32_t version;
	size_t dcid_len, scid_len, token_len;
	size_t len_bytes;	/* width of the Length varint; 0 means 2 */
	size_t length;		/* the Length field */
	size_t body;		/* bytes actually following it */
	size_t cut;		/* bytes then cut off the end */
};

#define V1I	0xc3		/* long, fixed, type 0, pn_len 4 */
#define V2I	0xd3		/* long, fixed, type 1: Initial in v2 */

static size_t
build(const struct qhdr *h, uint8_t *buf)
{
	size_t n = 0;

	buf[n++] = h->first;
	buf[n++] = (uint8_t)(h->version >> 24);
	buf[n++] = (uint8_t)(h->version >> 16);
	buf[n++] = (uint8_t)(h->version >> 8);
	buf[n++] = (uint8_t)h->version;
	buf[n++] = (uint8_t)h->dcid_len;
	for (size_t i = 0; i < h->dcid_len; i++)
		buf[n++] = (uint8_t)(0xd0 + i);
	buf[n++] = (uint8_t)h->scid_len;
	for (size_t i = 0; i < h->scid_len; i++)
		buf[n++] = (uint8_t)(0x50 + i);
	n += put_varint(buf + n, h->token_len, h->token_len < 64 ? 1 : 2);
	for (size_t i = 0; i < h->token_len; i++)
		buf[n++] = 0x7a;
	n += put_varint(buf + n, h->length, h->len_bytes ? h->len_bytes : 2);
	memset(buf + n, 0xee, h->body);
	return n + h->body - h->cut;
}

struct quic_case {
	const char *name;
	struct qhdr h;
	enum quic_status st;
	size_t pn_offset;
};

static const struct quic_case cases[] = {
	{ "v1", { V1I, QUIC_V1, 8, 8, 0, 0, 1200, 1200 }, QUIC_INITIAL, 26 },
	{ "v1_coalesced", { V1I, QUIC_V1, 8, 0, 0, 0, 100, 300 }, QUIC_INITIAL, 18 },
	{ "v1_token", { V1I, QUIC_V1, 8, 8, 100, 0, 50, 50 }, QUIC_INITIAL, 127 },
	{ "v1_len_1byte", { V1I, QUIC_V1, 0, 0, 0, 1, 20, 20 }, QUIC_INITIAL, 9 },
	{ "v1_len_8byte", { V1I, QUIC_V1, 0, 0, 0, 8, 20, 20 }, QUIC_INITIAL, 16 },
	{ "v1_cid20", { V1I, QUIC_V1, 20, 20, 0, 0, 40, 40 }, QUIC_INITIAL, 50 },
	{ "v2", { V2I, QUIC_V2, 8, 8, 0, 0, 1200, 1200 }, QUIC_INITIAL, 26 },
	{ "v1_0rtt", { 0xd3, QUIC_V1, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "v1_handshake", { 0xe3, QUIC_V1, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "v1_retry", { 0xf0, QUIC_V1, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "v2_type0_is_0rtt", { 0xc3, QUIC_V2, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "v2_handshake", { 0xf3, QUIC_V2, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "version_negotiation", { 0x80, 0, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "version_negotiation_fixed", { 0xc0, 0, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "draft29", { V1I, QUIC_DRAFT29, 8, 8, 0, 0, 1200, 1200 }, QUIC_INITIAL, 26 },
	{ "draft29_handshake", { 0xe3, QUIC_DRAFT29, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "draft27", { V1I, 0xff00001b, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "grease_version", { V1I, 0x1a2a3a4a, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "unknown_version_cid255", { V1I, 0x12345678, 255, 0, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "no_fixed_bit", { 0x83, QUIC_V1, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "short_header", { 0x43, QUIC_V1, 8, 8, 0, 0, 40, 40 }, QUIC_OTHER, 0 },
	{ "dcid21", { V1I, QUIC_V1, 21, 8, 0, 0, 40, 40 }, QUIC_MALFORMED, 0 },
	{ "scid21", { V1I, QUIC_V1, 8, 21, 0, 0, 40, 40 }, QUIC_MALFORMED, 0 },
	{ "handshake_dcid21", { 0xe3, QUIC_V1, 21, 8, 0, 0, 40, 40 }, QUIC_MALFORMED, 0 },
	{ "length_over", { V1I, QUIC_V1, 8, 8, 0, 0, 1201, 1200 }, QUIC_MALFORMED, 0 },
	{ "length_8byte_huge", { V1I, QUIC_V1, 8, 8, 0, 8, (size_t)1 << 61, 40 },
	    QUIC_MALFORMED, 0 },
	{ "length_below_hp_sample", { V1I, QUIC_V1, 8, 8, 0, 0, 19, 19 }, QUIC_MALFORMED, 0 },
	{ "token_over", { V1I, QUIC_V1, 8, 8, 100, 0, 20, 0, 3 }, QUIC_MALFORMED, 0 },
};

static void
test_cases(void **state)
{
	uint8_t buf[2048];

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct quic_case *t = &cases[c];
		struct quic_initial q;
		size_t n = build(&t->h, buf);

		print_message("case %s (%zu bytes)\n", t->name, n);
		assert_int_equal(quic_initial_parse(buf, n, &q), t->st);
		if (t->st != QUIC_INITIAL)
			continue;
		assert_int_equal(q.version, t->h.version);
		assert_int_equal(q.dcid_len, t->h.dcid_len);
		assert_ptr_equal(q.dcid, buf + 6);
		assert_int_equal(q.scid_len, t->h.scid_len);
		assert_ptr_equal(q.scid, buf + 7 + t->h.dcid_len);
		assert_int_equal(q.token_len, t->h.token_len);
		if (q.token_len > 0)
			assert_int_equal(q.token[0], 0x7a);
		assert_int_equal(q.pn_offset, t->pn_offset);
		assert_int_equal(q.payload_len, t->h.length);
		assert_int_equal(q.packet_len, t->pn_offset + t->h.length);
		assert_true(q.packet_len <= n);
		/* Every truncation into the packet is malformed; none is an Initial. */
		for (size_t k = 1; k < q.packet_len; k++) {
			struct quic_initial cut;

			assert_int_equal(quic_initial_parse(buf, k, &cut), QUIC_MALFORMED);
		}
	}
}

static void
test_real(void **state)
{
	uint8_t buf[1500];
	size_t n = unhex(real_initial_hex, buf, sizeof(buf));
	static const uint8_t dcid[] = { 0xdb, 0x9a, 0x00, 0xca, 0xaa, 0x3f, 0x72, 0xd0 };
	struct quic_initial q;

	(void)state;
	assert_int_equal(n, 1250);
	assert_int_equal(quic_initial_parse(buf, n, &q), QUIC_INITIAL);
	assert_int_equal(q.version, QUIC_V1);
	assert_int_equal(q.dcid_len, 8);
	assert_memory_equal(q.dcid, dcid, 8);
	assert_int_equal(q.scid_len, 0);
	assert_int_equal(q.token_len, 0);
	assert_int_equal(q.pn_offset, 18);
	assert_int_equal(q.payload_len, 1232);
	assert_int_equal(q.packet_len, 1250);

	assert_int_equal(quic_initial_parse(buf, 0, &q), QUIC_OTHER);
	for (size_t k = 1; k < n; k++)
		assert_int_equal(quic_initial_parse(buf, k, &q), QUIC_MALFORMED);

	/* The same bytes with the Length one past the datagram. */
	buf[17] = 0xd1;
	assert_int_equal(quic_initial_parse(buf, n, &q), QUIC_MALFORMED);
}

static void
test_strings(void **state)
{
	(void)state;
	assert_string_equal(quic_status_str(QUIC_INITIAL), "initial");
	assert_string_equal(quic_status_str(QUIC_OTHER), "other");
	assert_string_equal(quic_status_str(QUIC_MALFORMED), "malformed");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_real),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
