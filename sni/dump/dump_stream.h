/*
 * Half-stream table for namegate-dump: one entry per direction of a TCP connection that
 * carries something the fast path inspects (a client's first bytes on a TLS port, or DNS
 * over TCP). Entries live until the end of the capture; this is an offline tool.
 */
#ifndef DUMP_STREAM_H
#define DUMP_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "sni/pkt.h"
#include "sni/reasm.h"

enum dump_stream_kind {
	DUMP_STREAM_TLS,	/* client to a TLS port: judge the first bytes */
	DUMP_STREAM_DNS,	/* DNS over TCP, either direction: every framed message */
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
