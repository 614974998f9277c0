/*
 * namegate-dump's plaintext HTTP: each request head of a client's stream, as the fast
 * path's reader frames it (sni/http.h), one JSON line per request.
 */
#ifndef DUMP_HTTP_H
#define DUMP_HTTP_H

#include <stdint.h>
#include <stdio.h>

#include "dump_stream.h"

/*
 * Read what s holds in order: print each whole head (frame: the one that completed it),
 * skip each body, consume what was read. Marks s done when its first bytes are not HTTP,
 * after a CONNECT, or (printing the verdict) when the stream cannot be framed.
 */
void dump_http(FILE *out, uint64_t frame, struct dump_stream *s);

#endif
