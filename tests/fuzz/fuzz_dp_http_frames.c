/*
 * dp_http_frames (plaintext HTTP's framing kept once its copy is evicted), driven the way
 * dp_http.c drives it by a script the input spells, against the stream it stands for: the
 * reader judging bytes (framing noted as it comes, in pieces), evictions, the server's
 * ACKs, and a client's resends with bytes changed. The buffer the record reads is a copy
 * of exactly the stream's kept bytes, and a resend is a block of its own, so a read
 * outside either is ASan's to see. Checked: a resend that changes a framing byte whose
 * copy went is never taken as the same (the property the cut rests on).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_hash.h"
#include "dp_http_frames.h"

#define F_STREAM	4096

#define check(c)	((c) ? (void)0 : (fprintf(stderr, "check failed: %s\n", #c), abort()))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct f_state {
	uint8_t stream[F_STREAM];
	bool framing[F_STREAM];
	uint32_t len, judged, start, acked;
	uint8_t *kept;			/* stream[start, judged), a block of its own */
	struct dp_http_frames fr;
};

static void
f_keep(struct f_state *s)
{
	free(s->kept);
	s->kept = malloc(s->judged - s->start + 1);
	check(s->kept != NULL);
	memcpy(s->kept, s->stream + s->start, s->judged - s->start);
}

/* The reader judges n more bytes: each run of framing among them noted, in pieces. */
static void
f_judge(struct f_state *s, uint32_t n, uint8_t piece)
{
	uint32_t to = s->judged + n > s->len ? s->len : s->judged + n, at = s->judged;

	s->judged = to;
	f_keep(s);
	while (at < to) {
		uint32_t run = at, step = 1 + piece % 7;

		while (run < to && s->framing[run] && run - at < step)
			run++;
		if (run > at)
			dp_http_frames_note(&s->fr, s->start, at, s->kept + (at - s->start),
			    run - at);
		at = run > at ? run : at + 1;
	}
}

/* A resend of [off, off + n) with byte flip (if below n) changed: checked, as said above. */
static void
f_resend(struct f_state *s, uint32_t off, uint32_t n, uint32_t flip)
{
	uint32_t lo = off > s->acked ? off : s->acked, hi = off + n;
	bool changed_framing;
	uint8_t *seg;

	if (hi > s->judged)
		hi = s->judged;
	if (hi > s->start)
		hi = s->start;
	if (lo >= hi)
		return;
	/* what dp_http_unverifiable() passes: the segment from lo on, a block of its own */
	seg = malloc(off + n - lo);
	check(seg != NULL);
	memcpy(seg, s->stream + lo, off + n - lo);
	changed_framing = flip < n && off + flip >= lo && off + flip < hi &&
	    s->framing[off + flip];
	if (flip < n && off + flip >= lo)
		seg[off + flip - lo] ^= 0x5a;
	if (dp_http_frames_differ(&s->fr, lo, hi, seg, lo, off + n - lo) == false)
		check(!changed_framing);
	free(seg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct f_state s;
	static bool keyed;
	size_t i = 0;

	if (!keyed) {	/* a digest under no key says little: the daemon keys it at start */
		check(dp_hash_init() == 0);
		keyed = true;
	}
	if (size < 3)
		return 0;
	memset(&s, 0, sizeof(s));
	s.len = (uint32_t)(data[0] * 16 + 64) % F_STREAM;
	for (uint32_t k = 0; k < s.len; k++) {
		s.stream[k] = (uint8_t)(k * 7 + data[1]);
		/* framing from the input's bits, a byte's worth each: runs of any length */
		s.framing[k] = (data[2 + k / 8 % (size - 2)] >> (k % 8)) & 1;
	}
	dp_http_frames_init(&s.fr, 0);
	f_keep(&s);
	for (i = 2; i + 4 <= size; i += 4) {
		uint32_t a = data[i + 1] | (uint32_t)data[i + 2] << 8, b = data[i + 3];

		switch (data[i] % 4) {
		case 0:
			f_judge(&s, a % 512, data[i + 3]);
			break;
		case 1:		/* an eviction up to a point within the judged bytes */
			if (s.judged > s.start) {
				uint32_t upto = s.start + 1 + a % (s.judged - s.start);

				dp_http_frames_evict(&s.fr, s.kept, s.start, upto);
				s.start = upto;
				f_keep(&s);
			}
			break;
		case 2:		/* the server's ACK, within the judged bytes; the buffer follows */
			if (s.judged > s.acked) {
				s.acked += 1 + a % (s.judged - s.acked);
				dp_http_frames_acked(&s.fr, s.acked);
				if (s.start < s.acked) {
					s.start = s.acked;
					f_keep(&s);
				}
			}
			break;
		default:
			if (s.judged > 0)
				f_resend(&s, a % s.judged, 1 + b * 8 % 1500, data[i + 3] % 64);
			break;
		}
	}
	free(s.kept);
	s.kept = NULL;
	return 0;
}
