/*
 * Half-stream table: a chained hash over the directional 5-tuple.
 */
#include <stdlib.h>
#include <string.h>

#include "sni/tls.h"
#include "dump_stream.h"

#define DUMP_BUCKETS	65536
#define DUMP_STREAM_CAP	TLS_HELLO_MAX

struct dump_streams {
	struct dump_stream *bucket[DUMP_BUCKETS];
};

struct dump_streams *
dump_streams_new(void)
{
	return calloc(1, sizeof(struct dump_streams));
}

void
dump_streams_free(struct dump_streams *t)
{
	if (t == NULL)
		return;
	for (size_t b = 0; b < DUMP_BUCKETS; b++) {
		struct dump_stream *s = t->bucket[b], *next;

		for (; s != NULL; s = next) {
			next = s->next;
			free(s->buf);
			free(s);
		}
	}
	free(t);
}

static uint32_t
dump_hash(const struct pkt *p)
{
	uint32_t h = 2166136261u;	/* FNV-1a: an offline tool needs no keyed hash */
	size_t alen = p->family == 6 ? 16 : 4;

	for (size_t i = 0; i < alen; i++)
		h = (h ^ p->src[i]) * 16777619u;
	for (size_t i = 0; i < alen; i++)
		h = (h ^ p->dst[i]) * 16777619u;
	h = (h ^ p->sport) * 16777619u;
	h = (h ^ p->dport) * 16777619u;
	return h % DUMP_BUCKETS;
}

static bool
dump_same(const struct dump_stream *s, const struct pkt *p)
{
	return s->family == p->family && s->sport == p->sport && s->dport == p->dport &&
	    memcmp(s->src, p->src, 16) == 0 && memcmp(s->dst, p->dst, 16) == 0;
}

struct dump_stream *
dump_stream_get(struct dump_streams *t, const struct pkt *p, bool create, uint32_t isn,
    enum dump_stream_kind kind)
{
	uint32_t b = dump_hash(p);
	struct dump_stream *s;

	for (s = t->bucket[b]; s != NULL; s = s->next)
		if (dump_same(s, p))
			return s;
	if (!create)
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if ((s->buf = malloc(DUMP_STREAM_CAP)) == NULL) {
		free(s);
		return NULL;
	}
	s->family = p->family;
	memcpy(s->src, p->src, 16);
	memcpy(s->dst, p->dst, 16);
	s->sport = p->sport;
	s->dport = p->dport;
	s->kind = kind;
	s->first = *p;
	s->first.payload = NULL;
	s->first.payload_len = 0;
	reasm_init(&s->reasm, isn, s->buf, DUMP_STREAM_CAP);
	s->next = t->bucket[b];
	t->bucket[b] = s;
	return s;
}

void
dump_streams_walk(struct dump_streams *t, void (*fn)(struct dump_stream *, void *), void *arg)
{
	for (size_t b = 0; b < DUMP_BUCKETS; b++)
		for (struct dump_stream *s = t->bucket[b]; s != NULL; s = s->next)
			fn(s, arg);
}
