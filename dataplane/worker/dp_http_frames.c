/*
 * Where plaintext HTTP's framing lies, and what it says: see dp_http_frames.h.
 */
#include <string.h>

#include "dp_hash.h"
#include "dp_http_frames.h"

/* What a run of the ring keeps of what it says. */
enum dp_http_frame_state {
	DP_HTTP_FRAME_SHORT,	/* says holds its bytes (DP_HTTP_FRAME_BYTES at most) */
	DP_HTTP_FRAME_LONG,	/* its bytes are in the hold's buffer, nothing evicted yet */
	DP_HTTP_FRAME_DIGEST,	/* says holds the digest of its bytes */
	DP_HTTP_FRAME_GONE,	/* nothing: its bytes went before a digest could be taken */
};

_Static_assert(sizeof(struct dp_digest) == DP_HTTP_FRAME_BYTES, "a digest fits a run's says");
_Static_assert(DP_HTTP_FRAMES <= UINT16_MAX, "the ring's indices are 16-bit");

static inline unsigned int
dp_http_frame_at(const struct dp_http_frames *fr, unsigned int i)
{
	return (fr->first + i) % DP_HTTP_FRAMES;
}

/* The oldest run forgotten. */
static inline void
dp_http_frames_drop_first(struct dp_http_frames *fr)
{
	fr->first = (uint16_t)dp_http_frame_at(fr, 1);
	fr->n--;
	if (fr->settled > 0)
		fr->settled--;
}

void
dp_http_frames_init(struct dp_http_frames *fr, uint32_t lost_end)
{
	fr->first = 0;
	fr->n = 0;
	fr->settled = 0;
	fr->lost = lost_end != 0;
	fr->lost_end = lost_end;
}

void
dp_http_frames_note(struct dp_http_frames *fr, uint32_t start, uint32_t off,
    const uint8_t *bytes, uint32_t len)
{
	unsigned int k = dp_http_frame_at(fr, fr->n + DP_HTTP_FRAMES - 1u);
	uint32_t had;

	if (fr->n > 0 && fr->end[k] == off) {
		had = off - fr->off[k];
		fr->end[k] = off + len;
		if (fr->state[k] == DP_HTTP_FRAME_SHORT && had + len <= DP_HTTP_FRAME_BYTES)
			memcpy(fr->says[k] + had, bytes, len);
		else if (fr->state[k] == DP_HTTP_FRAME_SHORT)	/* in the buffer, all of it? */
			fr->state[k] = (int32_t)(fr->off[k] - start) >= 0 ?
			    DP_HTTP_FRAME_LONG : DP_HTTP_FRAME_GONE;
		else if (fr->state[k] == DP_HTTP_FRAME_DIGEST)
			fr->state[k] = DP_HTTP_FRAME_GONE;	/* its digest is of less */
		return;
	}
	if (fr->n == DP_HTTP_FRAMES) {
		fr->lost = true;
		fr->lost_end = fr->end[fr->first];
		dp_http_frames_drop_first(fr);
	}
	k = dp_http_frame_at(fr, fr->n++);
	fr->off[k] = off;
	fr->end[k] = off + len;
	fr->state[k] = len <= DP_HTTP_FRAME_BYTES ? DP_HTTP_FRAME_SHORT : DP_HTTP_FRAME_LONG;
	if (len <= DP_HTTP_FRAME_BYTES)
		memcpy(fr->says[k], bytes, len);
}

void
dp_http_frames_evict(struct dp_http_frames *fr, const uint8_t *buf, uint32_t start,
    uint32_t upto)
{
	/*
	 * runs are in stream order: those before settled were touched by an eviction already
	 * (a digested one that grows after is GONE: dp_http_frames_note())
	 */
	for (; fr->settled < fr->n; fr->settled++) {
		unsigned int k = dp_http_frame_at(fr, fr->settled);
		struct dp_digest d;

		if ((int32_t)(upto - fr->off[k]) <= 0)
			break;
		if (fr->state[k] != DP_HTTP_FRAME_LONG)
			continue;
		/*
		 * a long run is in the buffer from its first byte (an ACK trims it, an
		 * eviction digests it first); were it not, nothing is read outside buf
		 */
		if ((int32_t)(fr->off[k] - start) < 0) {
			fr->state[k] = DP_HTTP_FRAME_GONE;
			continue;
		}
		d = dp_hash_digest(buf + (fr->off[k] - start), fr->end[k] - fr->off[k]);
		memcpy(fr->says[k], &d, sizeof(d));
		fr->state[k] = DP_HTTP_FRAME_DIGEST;
	}
}

void
dp_http_frames_acked(struct dp_http_frames *fr, uint32_t acked)
{
	unsigned int k = fr->first;
	uint32_t cut;

	while (fr->n > 0 && (int32_t)(fr->end[k] - acked) <= 0) {
		dp_http_frames_drop_first(fr);
		k = fr->first;
	}
	if (fr->lost && (int32_t)(fr->lost_end - acked) <= 0)
		fr->lost = false;
	/*
	 * A run the ACK ends inside starts there now, as the buffer does: a long one is then
	 * still in it from its first byte; a digest is of the whole, and stays so.
	 */
	if (fr->n == 0 || (int32_t)(acked - fr->off[k]) <= 0 ||
	    fr->state[k] == DP_HTTP_FRAME_DIGEST || fr->state[k] == DP_HTTP_FRAME_GONE)
		return;
	cut = acked - fr->off[k];
	if (fr->state[k] == DP_HTTP_FRAME_SHORT)
		memmove(fr->says[k], fr->says[k] + cut, fr->end[k] - acked);
	fr->off[k] = acked;
}

/* Does the segment say run k's bytes in [from, to) (within both) as the run did? */
static bool
dp_http_frame_same(const struct dp_http_frames *fr, unsigned int k, uint32_t from,
    uint32_t to, const uint8_t *seg, uint32_t seg_off, uint32_t seg_len)
{
	struct dp_digest d, was;

	switch (fr->state[k]) {
	case DP_HTTP_FRAME_SHORT:
		return memcmp(seg + (from - seg_off), fr->says[k] + (from - fr->off[k]),
		    to - from) == 0;
	case DP_HTTP_FRAME_DIGEST:
		/* a digest is of the whole run: the segment must hold all of it */
		if ((int32_t)(fr->off[k] - seg_off) < 0 ||
		    (int32_t)(seg_off + seg_len - fr->end[k]) < 0)
			return false;
		d = dp_hash_digest(seg + (fr->off[k] - seg_off), fr->end[k] - fr->off[k]);
		memcpy(&was, fr->says[k], sizeof(was));
		return dp_digest_eq(d, was);
	default:
		return false;
	}
}

/*
 * The first run (its place in the ring's order) that ends past offset lo, or fr->n: runs
 * are in stream order and do not overlap, so a binary search finds it. A VM that sends
 * segments over evicted bytes again and again costs a search each, not a walk of the ring.
 */
static unsigned int
dp_http_frames_from(const struct dp_http_frames *fr, uint32_t lo)
{
	unsigned int a = 0, b = fr->n;

	while (a < b) {
		unsigned int mid = a + (b - a) / 2;

		if ((int32_t)(fr->end[dp_http_frame_at(fr, mid)] - lo) > 0)
			b = mid;
		else
			a = mid + 1;
	}
	return a;
}

bool
dp_http_frames_differ(const struct dp_http_frames *fr, uint32_t lo, uint32_t hi,
    const uint8_t *seg, uint32_t seg_off, uint32_t seg_len)
{
	if (fr->lost && (int32_t)(fr->lost_end - lo) > 0)
		return true;
	for (unsigned int i = dp_http_frames_from(fr, lo); i < fr->n; i++) {
		unsigned int k = dp_http_frame_at(fr, i);
		uint32_t from = (int32_t)(fr->off[k] - lo) > 0 ? fr->off[k] : lo;
		uint32_t to = (int32_t)(fr->end[k] - hi) < 0 ? fr->end[k] : hi;

		if ((int32_t)(hi - fr->off[k]) <= 0)
			break;		/* this run and all after it start past the segment */
		if (!dp_http_frame_same(fr, k, from, to, seg, seg_off, seg_len))
			return true;
	}
	return false;
}
