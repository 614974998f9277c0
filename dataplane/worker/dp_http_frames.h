/*
 * Plaintext HTTP: where framing lies among a connection's judged bytes the server has not
 * acknowledged, and what it says, once the hold's copy of those bytes was evicted
 * (dp_http.c). Framing is what the server finds requests by: request heads, chunk-size
 * lines, the CRLF after a chunk's data, trailers. A body's own data frames nothing, and
 * namegate never read it for what it says, so it needs no copy: a client that sends it
 * again after a loss past namegate may send anything there.
 */
#ifndef DP_HTTP_FRAMES_H
#define DP_HTTP_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_hold.h"

/* fr empty, for a buffer whose stream before lost_end (0: none) holds framing not known. */
void dp_http_frames_init(struct dp_http_frames *fr, uint32_t lost_end);

/*
 * Stream bytes [off, off + len), at bytes in the hold's buffer (which starts at stream
 * offset start), are framing: joined to the last run when they follow it, else a run of
 * their own (the oldest forgotten when the ring is full: all before its end then counts
 * as framing, unknown).
 */
void dp_http_frames_note(struct dp_http_frames *fr, uint32_t start, uint32_t off,
    const uint8_t *bytes, uint32_t len);

/*
 * The buffer buf, holding the stream from offset start, gives up its copy of the bytes
 * before upto: a long run they touch is digested first, while all of it is there.
 */
void dp_http_frames_evict(struct dp_http_frames *fr, const uint8_t *buf, uint32_t start,
    uint32_t upto);

/*
 * The server has the stream up to offset acked (the buffer starts there now): runs that
 * end by it are forgotten, and one it ends inside starts there.
 */
void dp_http_frames_acked(struct dp_http_frames *fr, uint32_t acked);

/*
 * A client segment at stream offsets [seg_off, seg_off + seg_len), bytes seg, over [lo, hi)
 * (lo below hi), judged bytes whose copy was evicted: does it say other than the framing
 * there said, or framing there cannot be compared (a long run it covers only in part, one
 * whose bytes went before they were digested, or one forgotten)?
 */
bool dp_http_frames_differ(const struct dp_http_frames *fr, uint32_t lo, uint32_t hi,
    const uint8_t *seg, uint32_t seg_off, uint32_t seg_len);

#endif
