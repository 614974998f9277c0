/*
 * reasm: a bounded reassembler for the first bytes of one direction of a TCP stream.
 *
 * The caller owns the byte buffer (at most a few KiB per flow that is still being
 * inspected) and the struct; nothing is allocated. Segments may arrive in any order and
 * any number of times; bytes are placed by sequence number (modulo 2^32) relative to the
 * stream's first byte. A segment that overlaps bytes already held but says something
 * different is a conflict: the two copies would let a filter and a server see different
 * streams, so the caller must cut the flow.
 */
#ifndef SNI_REASM_H
#define SNI_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REASM_RANGES_MAX 8

enum reasm_status {
	REASM_OK,		/* taken; a retransmission of identical bytes is OK too */
	REASM_CONFLICT,		/* overlaps held bytes with other content; nothing taken */
	REASM_FULL,		/* reaches past the buffer; the part inside was taken */
	REASM_SCATTERED,	/* would need more than REASM_RANGES_MAX holes; nothing taken */
};

struct reasm_range {
	uint32_t start;		/* stream offsets: [start, end) */
	uint32_t end;
};

struct reasm {
	uint8_t *buf;
	uint32_t cap;
	uint32_t isn;			/* sequence number of stream offset 0 */
	uint32_t nb_ranges;
	struct reasm_range ranges[REASM_RANGES_MAX];	/* held bytes: sorted, disjoint, not adjacent */
};

/*
 * Start an empty stream whose byte 0 has sequence number isn (the SYN's seq + 1). Inline,
 * and only what an empty stream reads: no range past nb_ranges is ever read, so the eight
 * are left as they are (a hold takes a stream for every hello split over segments).
 */
static inline void
reasm_init(struct reasm *r, uint32_t isn, uint8_t *buf, uint32_t cap)
{
	r->buf = buf;
	r->cap = cap;
	r->isn = isn;
	r->nb_ranges = 0;
}

/*
 * Start a stream whose first len bytes (0 < len <= cap) lie at buf already, the caller's
 * cap bytes: no copy of them.
 */
static inline void
reasm_init_at(struct reasm *r, uint32_t isn, uint8_t *buf, uint32_t len, uint32_t cap)
{
	reasm_init(r, isn, buf, cap);
	r->ranges[0] = (struct reasm_range){ .start = 0, .end = len };
	r->nb_ranges = 1;
}

/*
 * The stream's bytes moved into buf (cap bytes, no fewer than the stream's buffer has), which
 * holds them from now on.
 */
static inline void
reasm_move(struct reasm *r, uint8_t *buf, uint32_t cap)
{
	if (r->nb_ranges != 0)
		memcpy(buf, r->buf, r->ranges[r->nb_ranges - 1].end);
	r->buf = buf;
	r->cap = cap;
}

/* reasm_add() of a segment that is not the stream's next bytes: the walk over the ranges. */
enum reasm_status reasm_add_any(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len);

/*
 * Are len bytes at seq the stream's next ones, in order after what it holds from offset 0
 * (or its first bytes), within the buffer? Nothing held overlaps them, and reasm_add() of
 * them (the common segment: a split hello's two) only copies them and grows the one range.
 */
static inline bool
reasm_is_next(const struct reasm *r, uint32_t seq, size_t len)
{
	uint32_t off = seq - r->isn;

	/* 0 < len <= cap - off as one unsigned compare: off, where held bytes end, is <= cap */
	if (r->nb_ranges == 0)
		return off == 0 && len - 1 < r->cap;
	return r->nb_ranges == 1 && r->ranges[0].start == 0 && off == r->ranges[0].end &&
	    len - 1 < r->cap - off;
}

/*
 * reasm_add() of bytes reasm_is_next() says are the next: what reasm_add_any() makes of them.
 * Returns reasm_contiguous() after them (they are its last len bytes).
 */
static inline uint32_t
reasm_add_next(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len)
{
	uint32_t off = seq - r->isn;

	memcpy(r->buf + off, data, len);
	r->ranges[0] = (struct reasm_range){ .start = 0, .end = off + (uint32_t)len };
	r->nb_ranges = 1;
	return off + (uint32_t)len;
}

/*
 * Add a segment's payload. Bytes before stream offset 0 (sequence numbers "behind" isn
 * in serial-number arithmetic, RFC 1982) are ignored. Conflicts are checked before
 * anything is copied, so a rejected segment leaves the stream as it was. Inline for the
 * stream's next bytes (reasm_is_next()), without reasm_add_any()'s walk, its overlap tests
 * and its merge.
 */
static inline enum reasm_status
reasm_add(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len)
{
	if (reasm_is_next(r, seq, len)) {
		reasm_add_next(r, seq, data, len);
		return REASM_OK;
	}
	return reasm_add_any(r, seq, data, len);
}

/*
 * reasm_add() of a fresh stream's first bytes (nothing held yet, seq the stream's isn): a
 * split hello's first segment, without reasm_add()'s tests of what is held.
 */
static inline enum reasm_status
reasm_add_first(struct reasm *r, const uint8_t *data, size_t len)
{
	if (len > 0 && len <= r->cap) {
		memcpy(r->buf, data, len);
		r->ranges[0] = (struct reasm_range){ .start = 0, .end = (uint32_t)len };
		r->nb_ranges = 1;
		return REASM_OK;
	}
	return reasm_add_any(r, r->isn, data, len);
}

/* Bytes held in order from offset 0: buf[0 .. reasm_contiguous()) is the stream so far. */
static inline uint32_t
reasm_contiguous(const struct reasm *r)
{
	if (r->nb_ranges == 0 || r->ranges[0].start != 0)
		return 0;
	return r->ranges[0].end;
}

/*
 * Drop the first n in-order bytes (n <= reasm_contiguous()): what follows moves to the
 * front of the buffer and stream offset 0 becomes the old offset n. A reader of a long
 * stream of small messages (DNS over TCP) frames what it holds, consumes it, and so runs
 * for ever in a bounded window. Returns false, changing nothing, when n is too large.
 */
bool reasm_consume(struct reasm *r, uint32_t n);

/* "ok", "conflict", "full", "scattered". */
const char *reasm_status_str(enum reasm_status st);

#endif
