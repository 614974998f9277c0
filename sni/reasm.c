/*
 * Bounded reassembly of the first bytes of one direction of a TCP stream.
 *
 * Held bytes are a short sorted list of [start, end) stream offsets over the caller's
 * buffer. A segment is judged as a whole before anything is written, so every status but
 * REASM_OK and REASM_FULL leaves the stream exactly as it was.
 */
#include <stdbool.h>
#include <string.h>

#include "sni/reasm.h"

#define REASM_AHEAD_MAX	UINT32_C(0x7fffffff)	/* RFC 1982: half the space is "ahead" */

static const char *const reasm_status_names[] = {
	[REASM_OK] = "ok",
	[REASM_CONFLICT] = "conflict",
	[REASM_FULL] = "full",
	[REASM_SCATTERED] = "scattered",
};

const char *
reasm_status_str(enum reasm_status st)
{
	if ((size_t)st >= sizeof(reasm_status_names) / sizeof(reasm_status_names[0]))
		return "unknown";
	return reasm_status_names[st];
}

/*
 * Where a segment lands, by sequence number compared with isn as RFC 1982 serial numbers
 * (so a stream that starts just below 2^32 wraps to offset 0 and on):
 *
 *            isn                               isn + cap
 *   ..........|==================================|.............
 *    behind:     window: placed at seq - isn        ahead: beyond the buffer
 *    ignored                                        (REASM_FULL)
 *
 * A segment may straddle either edge; only its part inside the window is held. Bytes
 * behind isn are the SYN's sequence number or earlier, which carry no stream data.
 */
enum reasm_status
reasm_add_any(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len)
{
	uint32_t off = seq - r->isn, start, end;
	uint32_t first, last, lo, hi;
	bool full = false;

	if (off > REASM_AHEAD_MAX) {
		uint32_t behind = r->isn - seq;

		if (len <= behind)
			return REASM_OK;
		data += behind;
		len -= behind;
		off = 0;
	}
	if (len == 0)
		return REASM_OK;
	if (off >= r->cap)
		return REASM_FULL;
	if (len > r->cap - off) {
		len = r->cap - off;
		full = true;
	}
	start = off;
	end = off + (uint32_t)len;

	/*
	 * ranges[first, last) touch [start, end): they overlap it or are adjacent to it, and
	 * become one range with it. Where they overlap, the bytes must be the same: a
	 * retransmission may repeat the stream but not rewrite it.
	 */
	for (first = 0; first < r->nb_ranges && r->ranges[first].end < start; first++)
		continue;
	for (last = first; last < r->nb_ranges && r->ranges[last].start <= end; last++) {
		lo = r->ranges[last].start > start ? r->ranges[last].start : start;
		hi = r->ranges[last].end < end ? r->ranges[last].end : end;
		if (lo < hi && memcmp(r->buf + lo, data + (lo - start), hi - lo) != 0)
			return REASM_CONFLICT;
	}
	if (r->nb_ranges - (last - first) + 1 > REASM_RANGES_MAX)
		return REASM_SCATTERED;

	memcpy(r->buf + start, data, len);
	if (first < last) {
		if (r->ranges[first].start < start)
			start = r->ranges[first].start;
		if (r->ranges[last - 1].end > end)
			end = r->ranges[last - 1].end;
	}
	/*
	 * Replace ranges[first, last) with the merged range; last - first may be 0. In order,
	 * the segment extends the last range: nothing behind it to move, and no call.
	 */
	if (last != r->nb_ranges && first + 1 != last)
		memmove(&r->ranges[first + 1], &r->ranges[last],
		    (r->nb_ranges - last) * sizeof(r->ranges[0]));
	r->ranges[first] = (struct reasm_range){ .start = start, .end = end };
	r->nb_ranges = r->nb_ranges - (last - first) + 1;
	return full ? REASM_FULL : REASM_OK;
}

bool
reasm_consume(struct reasm *r, uint32_t n)
{
	if (n > reasm_contiguous(r))
		return false;
	if (n == 0)
		return true;
	memmove(r->buf, r->buf + n, r->ranges[r->nb_ranges - 1].end - n);
	for (uint32_t i = 0; i < r->nb_ranges; i++) {
		r->ranges[i].start = r->ranges[i].start > n ? r->ranges[i].start - n : 0;
		r->ranges[i].end -= n;
	}
	if (r->ranges[0].end == 0) {		/* everything in order was consumed */
		memmove(&r->ranges[0], &r->ranges[1], (r->nb_ranges - 1) * sizeof(r->ranges[0]));
		r->nb_ranges--;
	}
	r->isn += n;
	return true;
}
