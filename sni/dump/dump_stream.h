/*
 * Half-stream table for namegate-dump: one entry per direction of a TCP connection that
 * carries something the fast path inspects (a client's first bytes on a TLS port, DNS over
 * TCP, or a client's stream elsewhere that may be HTTP). Entries live until the end of the capture; this is an offline tool.
 */
#ifndef DUMP_STREAM_H
#define DUMP_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "sni/http.h"
#include "sni/pkt.h"
#include "sni/reasm.h"

enum dump_stream_kind {
	DUMP_STREAM_TLS,	/* client to a TLS port: judge the first bytes */
	DUMP_STREAM_DNS,	/* DNS over TCP, either direction: every framed message */
	DUMP_STREAM_HTTP,	/* a client's stream elsewhere: each HTTP request, if it is HTTP */
};

struct dump_stream {
	struct dump_stream *next;	/* hash chain */
	uint8_t family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	enum dump_stream_kind kind;
	bool done;			/* verdict printed (TLS) or stream broken (DNS) */
	struct pkt first;		/* addresses and ports, for output */
	struct reasm reasm;
	uint8_t *buf;
	bool http_seen;			/* HTTP: the first bytes said so */
	bool http_in_body;		/* and the reader is inside a request's body */
	struct http_body_rd http_body;
};

struct dump_streams;

struct dump_streams *dump_streams_new(void);
void dump_streams_free(struct dump_streams *t);

/*
 * The half stream of p's direction. create: make it when missing, with stream offset 0
 * at isn. Returns NULL when missing and not created, or when out of memory.
 */
struct dump_stream *dump_stream_get(struct dump_streams *t, const struct pkt *p, bool create,
    uint32_t isn, enum dump_stream_kind kind);

/* Call fn on every stream still in the table (for end-of-capture verdicts). */
void dump_streams_walk(struct dump_streams *t, void (*fn)(struct dump_stream *, void *),
    void *arg);

#endif
