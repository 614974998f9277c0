/* namegate-dump: HTTP/1.x requests, framed as the fast path frames them. */
#include <stdbool.h>
#include <stdio.h>

#include "sni/http.h"
#include "dump_http.h"
#include "dump_out.h"

static void
dump_http_line(FILE *out, uint64_t frame, const struct dump_stream *s)
{
	fprintf(out, "{\"frame\":%llu,\"type\":\"http\",", (unsigned long long)frame);
	dump_json_endpoints(out, &s->first);
}

static void
dump_http_bad(FILE *out, uint64_t frame, struct dump_stream *s, const char *verdict)
{
	dump_http_line(out, frame, s);
	fprintf(out, ",\"verdict\":\"%s\"}\n", verdict);
	s->done = true;
}

/* A head: printed, and the reader set for its body. Returns the bytes it took. */
static size_t
dump_http_head(FILE *out, uint64_t frame, struct dump_stream *s, const struct http_head *h)
{
	dump_http_line(out, frame, s);
	fputs(",\"host\":", out);
	dump_json_str(out, (const uint8_t *)h->host, h->host_len);
	fprintf(out, ",\"port\":%u,\"connect\":%s,\"upgrade\":%s,\"body\":\"%s\"}\n", h->port,
	    h->connect ? "true" : "false", h->upgrade ? "true" : "false",
	    h->body == HTTP_BODY_NONE ? "none" : h->body == HTTP_BODY_LENGTH ? "length" :
	    "chunked");
	http_body_start(&s->http_body, h);
	s->http_in_body = h->body != HTTP_BODY_NONE;
	s->done = h->connect;		/* a tunnel's bytes are not HTTP */
	return h->head_len;
}

void
dump_http(FILE *out, uint64_t frame, struct dump_stream *s)
{
	struct http_head h;
	enum http_status st;
	size_t have, used;

	while (!s->done && (have = reasm_contiguous(&s->reasm)) > 0) {
		if (!s->http_seen) {
			enum http_first first = http_classify(s->buf, have);

			if (first == HTTP_FIRST_NEED_MORE)
				return;
			if (first != HTTP_FIRST_HTTP) {
				s->done = true;		/* another protocol: nothing to print */
				return;
			}
			s->http_seen = true;
		}
		if (!s->http_in_body) {
			if ((st = http_head_parse(s->buf, have, &h)) == HTTP_NEED_MORE)
				return;
			if (st == HTTP_BAD) {
				dump_http_bad(out, frame, s, "bad_head");
				return;
			}
			used = dump_http_head(out, frame, s, &h);
		} else {
			if ((st = http_body_feed(&s->http_body, s->buf, have, &used)) == HTTP_BAD) {
				dump_http_bad(out, frame, s, "bad_body");
				return;
			}
			s->http_in_body = st != HTTP_OK;
		}
		reasm_consume(&s->reasm, (uint32_t)used);
	}
}
