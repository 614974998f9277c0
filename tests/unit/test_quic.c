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

#include "quic_vectors.h"
#include "sni/quic.h"

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
	size_t n = qf_unhex(qf_real_initial_hex, buf, sizeof(buf));
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
