/*
 * libFuzzer target for reasm. The input is a little program of segments, run against
 * reasm and against a reference model kept here (one byte and one "held" flag per stream
 * offset, placed byte by byte); any disagreement abort()s.
 *
 *   header:  u8 flags | u16 isn_lo            isn = 0xffff0000 | isn_lo when flags & 1
 *                                              (streams that wrap), else isn_lo << 16
 *            cap = 512 >> (flags >> 1 & 3)
 *   segment: u8 op | u16 off | u8 len | ...   seq = isn + (int16_t)off, or with op & 4 a
 *                                              raw u32 seq follows
 *            op & 3 == 0: the true stream's bytes at that offset
 *            op & 3 == 1: the same with one byte flipped (u8 position follows)
 *            op & 3 >= 2: len bytes from the input
 *            op & 8: no segment; reasm_consume(len % (held in order + 2)) instead
 *
 * The true stream is byte i = i * 31 + 7, so most segments agree where they overlap and
 * the conflict paths are reached on purpose rather than on every segment.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "sni/reasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP_MAX		512
#define STEPS_MAX	64	/* segments per input: with 8 ranges, more add time, not paths */
#define BEHIND		0x7fffffffu	/* offsets above this are before isn (RFC 1982) */

/*
 * Bitmaps rather than bool arrays: the checks run after every segment, and word-wide
 * operations keep the harness from costing far more than the code under test.
 */
#define WORDS		(CAP_MAX / 64)

struct model {
	uint8_t byte[CAP_MAX];
	uint64_t held[WORDS];
};

static uint8_t
truth(uint32_t off)
{
	return (uint8_t)(off * 31 + 7);
}

static bool
bit(const uint64_t *map, uint32_t o)
{
	return map[o / 64] >> (o % 64) & 1;
}

static void
bit_set(uint64_t *map, uint32_t o)
{
	map[o / 64] |= UINT64_C(1) << (o % 64);
}

/* Runs of set bits: a run starts at a set bit whose predecessor is clear. */
static uint32_t
runs(const uint64_t *map)
{
	uint64_t carry = 0;
	uint32_t n = 0;

	for (uint32_t w = 0; w < WORDS; w++) {
		n += (uint32_t)__builtin_popcountll(map[w] & ~(map[w] << 1 | carry));
		carry = map[w] >> 63;
	}
	return n;
}

/* The byte-by-byte reference: each byte is placed by its own sequence number. */
static enum reasm_status
model_add(struct model *m, uint32_t isn, uint32_t cap, uint32_t seq, const uint8_t *seg,
    size_t len)
{
	uint64_t held[WORDS];
	bool beyond = false;

	for (size_t i = 0; i < len; i++) {
		uint32_t o = seq + (uint32_t)i - isn;

		if (o <= BEHIND && o < cap && bit(m->held, o) && m->byte[o] != seg[i])
			return REASM_CONFLICT;
	}
	memcpy(held, m->held, sizeof(held));
	for (size_t i = 0; i < len; i++) {
		uint32_t o = seq + (uint32_t)i - isn;

		if (o <= BEHIND && o < cap)
			bit_set(held, o);
		else if (o <= BEHIND)
			beyond = true;
	}
	if (runs(held) > REASM_RANGES_MAX)
		return REASM_SCATTERED;
	for (size_t i = 0; i < len; i++) {
		uint32_t o = seq + (uint32_t)i - isn;

		if (o <= BEHIND && o < cap)
			m->byte[o] = seg[i];
	}
	memcpy(m->held, held, sizeof(held));
	return beyond ? REASM_FULL : REASM_OK;
}

/* Drop the first n bytes: the model slides by n, byte by byte. */
static void
model_consume(struct model *m, uint32_t n)
{
	uint64_t held[WORDS] = { 0 };

	memmove(m->byte, m->byte + n, CAP_MAX - n);
	for (uint32_t o = n; o < CAP_MAX; o++)
		if (bit(m->held, o))
			bit_set(held, o - n);
	memcpy(m->held, held, sizeof(held));
}

/* reasm's ranges are exactly the model's held runs, holding the model's bytes. */
static void
check_state(const struct reasm *r, const struct model *m, const uint8_t *buf, uint32_t cap)
{
	uint64_t got[WORDS] = { 0 };
	uint32_t contig = 0, w;

	check(r->nb_ranges <= REASM_RANGES_MAX);
	for (uint32_t i = 0; i < r->nb_ranges; i++) {
		const struct reasm_range *rg = &r->ranges[i];

		check(rg->start < rg->end && rg->end <= cap);
		check(i == 0 || r->ranges[i - 1].end < rg->start);
		check(memcmp(buf + rg->start, m->byte + rg->start, rg->end - rg->start) == 0);
		for (uint32_t o = rg->start; o < rg->end; o++)
			bit_set(got, o);
	}
	check(memcmp(got, m->held, sizeof(got)) == 0);
	for (w = 0; w < WORDS && m->held[w] == UINT64_MAX; w++)
		contig += 64;
	if (w < WORDS)
		contig += (uint32_t)__builtin_ctzll(~m->held[w]);
	check(reasm_contiguous(r) == contig);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[CAP_MAX];
	struct input in = { data, size };
	struct model m;
	struct reasm r;
	uint8_t flags, hdr[2], op, pos, len, seg[256];
	uint32_t isn, isn0, cap, seq, steps = 0;

	if (!take(&in, &flags, 1) || !take(&in, hdr, 2))
		return 0;
	isn = (uint32_t)hdr[0] << 8 | hdr[1];
	isn = flags & 1 ? 0xffff0000u | isn : isn << 16;
	cap = CAP_MAX >> (flags >> 1 & 3);
	isn0 = isn;		/* the true stream is numbered from here, whatever is consumed */
	memset(&m, 0, sizeof(m));
	memset(buf, 0xee, sizeof(buf));
	reasm_init(&r, isn, buf, cap);

	while (steps++ < STEPS_MAX && take(&in, &op, 1) && take(&in, hdr, 2) &&
	    take(&in, &len, 1)) {
		enum reasm_status st, want;
		uint8_t raw[4];

		if ((op & 8) != 0) {
			uint32_t n = len % (reasm_contiguous(&r) + 2);
			bool fits = n <= reasm_contiguous(&r);

			check(reasm_consume(&r, n) == fits);
			if (fits) {
				model_consume(&m, n);
				isn += n;
			}
			check(r.isn == isn);
			check_state(&r, &m, buf, cap);
			continue;
		}
		seq = isn + (uint32_t)(int32_t)(int16_t)(hdr[0] << 8 | hdr[1]);
		if ((op & 4) != 0) {
			if (!take(&in, raw, 4))
				return 0;
			seq = (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 |
			    (uint32_t)raw[2] << 8 | raw[3];
		}
		if ((op & 3) >= 2) {
			if (!take(&in, seg, len))
				return 0;
		} else {
			for (uint32_t i = 0; i < len; i++)
				seg[i] = truth(seq + i - isn0);
			if ((op & 3) == 1 && len > 0) {
				if (!take(&in, &pos, 1))
					return 0;
				seg[pos % len] ^= 0x5a;
			}
		}
		want = model_add(&m, isn, cap, seq, seg, len);
		st = reasm_add(&r, seq, len > 0 ? seg : NULL, len);
		check(st == want);
		check(reasm_status_str(st) != NULL);
		check_state(&r, &m, buf, cap);
	}
	return 0;
}
