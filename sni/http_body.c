/*
 * HTTP/1.x request bodies (RFC 9112 s6, s7.1): where the body after a head ends, so that
 * the next head is looked for where the server will look for it.
 *
 * A chunked body is read as a byte-at-a-time state machine whose only memory is struct
 * http_body_rd, so the bytes may arrive split anywhere: fed in any pieces, a body gets the
 * same answer at the same stream byte as fed whole.
 */
#include <string.h>

#include "sni/http.h"

_Static_assert(sizeof(struct http_body_rd) == 16, "http_body_rd is kept per connection");

#define HTTP_CHUNK_DIGITS_MAX	16

/*
 * A chunk size below 2^63: a reader with a signed 64-bit size takes 8000000000000000
 * for a negative number, and its framing then parts from ours.
 */
#define HTTP_CHUNK_SHIFT_MAX	(UINT64_C(1) << 59)

/*
 * The reader's states. DONE and BAD hold no bytes; LENGTH and DATA count left down; the
 * rest are the bytes of one line, whose length so far is line:
 *
 *   chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF     (RFC 9112 s7.1)
 *                    SIZE       SIZE_WS EXT  SIZE_LF  DATA  DATA_END DATA_LF
 *   last-chunk     = 1*"0" [ chunk-ext ] CRLF
 *   trailer-section = *( field-line CRLF ) CRLF
 *                    TRAILER FIELD_NAME ":" FIELD_VALUE FIELD_LF    END_LF
 */
enum {
	HTTP_RD_DONE,
	HTTP_RD_BAD,
	HTTP_RD_LENGTH,
	HTTP_RD_SIZE,
	HTTP_RD_SIZE_WS,	/* BWS after the size: only a chunk-ext may follow */
	HTTP_RD_EXT,
	HTTP_RD_SIZE_LF,	/* a CR ended the size line: LF must follow */
	HTTP_RD_DATA,
	HTTP_RD_DATA_END,	/* after chunk-data: CRLF or LF */
	HTTP_RD_DATA_LF,
	HTTP_RD_TRAILER,	/* the start of a trailer field line or of the empty line */
	HTTP_RD_FIELD_NAME,
	HTTP_RD_FIELD_VALUE,
	HTTP_RD_FIELD_LF,
	HTTP_RD_END_LF,
};

#define HTTP_RD_QUOTED	0x01	/* EXT: inside a quoted-string */
#define HTTP_RD_ESCAPED	0x02	/* EXT: after a backslash in a quoted-string */
#define HTTP_RD_DIGITS	0x04	/* SIZE: a digit was seen */

static const char *const http_status_names[] = {
	[HTTP_NEED_MORE] = "need_more",
	[HTTP_OK] = "ok",
	[HTTP_BAD] = "bad",
};

const char *
http_status_str(enum http_status st)
{
	if ((size_t)st >= sizeof(http_status_names) / sizeof(http_status_names[0]))
		return "unknown";
	return http_status_names[st];
}

/* tchar (RFC 9110 s5.6.2), as in http_head.c. */
static bool
http_tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
http_hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
http_line_state(uint8_t state)
{
	return state == HTTP_RD_SIZE || state == HTTP_RD_SIZE_WS || state == HTTP_RD_EXT ||
	    state == HTTP_RD_TRAILER || state == HTTP_RD_FIELD_NAME ||
	    state == HTTP_RD_FIELD_VALUE;
}

void
http_body_start(struct http_body_rd *b, const struct http_head *h)
{
	*b = (struct http_body_rd){ .state = HTTP_RD_DONE };
	if (h->body == HTTP_BODY_LENGTH && h->length > 0) {
		b->state = HTTP_RD_LENGTH;
		b->left = h->length;
	} else if (h->body == HTTP_BODY_CHUNKED) {
		b->state = HTTP_RD_SIZE;
	}
}

/* The end of a chunk-size line: chunk-data follows, or the trailers after the last chunk. */
static void
http_size_line_end(struct http_body_rd *b)
{
	b->state = b->left == 0 ? HTTP_RD_TRAILER : HTTP_RD_DATA;
	b->line = 0;
	b->flags = 0;
}

static void
http_next_chunk(struct http_body_rd *b)
{
	*b = (struct http_body_rd){ .state = HTTP_RD_SIZE };
}

/*
 * chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ): the bytes
 * of that and their quoting are checked, not the grammar, since no one acts on an
 * extension; what matters is that the line ends where every reader sees it end, which a
 * CR or LF inside quotes would not.
 */
static bool
http_ext_byte(struct http_body_rd *b, uint8_t c)
{
	if (b->flags & HTTP_RD_ESCAPED) {
		b->flags &= (uint8_t)~HTTP_RD_ESCAPED;
		return c == '\t' || (c >= 0x20 && c != 0x7f);	/* quoted-pair */
	}
	if (b->flags & HTTP_RD_QUOTED) {
		if (c == '"')
			b->flags &= (uint8_t)~HTTP_RD_QUOTED;
		else if (c == '\\')
			b->flags |= HTTP_RD_ESCAPED;
		else if (c != '\t' && (c < 0x20 || c == 0x7f))	/* qdtext */
			return false;
		return true;
	}
	if (c == '\r')
		b->state = HTTP_RD_SIZE_LF;
	else if (c == '\n')
		http_size_line_end(b);
	else if (c == '"')
		b->flags |= HTTP_RD_QUOTED;
	else if (!http_tchar(c) && c != ';' && c != '=' && c != ' ' && c != '\t')
		return false;
	return true;
}

/*
 * One byte of a chunked body outside chunk-data; false when the framing breaks. A line
 * ends in CRLF or a bare LF (RFC 9112 s2.2); a CR must be followed by LF, since servers
 * differ on whether a bare one ends the line.
 */
static bool
http_chunked_byte(struct http_body_rd *b, uint8_t c)
{
	int h;

	if (http_line_state(b->state) && c != '\r' && c != '\n' && ++b->line > HTTP_LINE_MAX)
		return false;
	switch (b->state) {
	case HTTP_RD_SIZE:
		if ((h = http_hex(c)) >= 0) {
			/* line counts the digits, this one too: all its bytes so far were. */
			if (b->line > HTTP_CHUNK_DIGITS_MAX || b->left >= HTTP_CHUNK_SHIFT_MAX)
				return false;
			b->left = b->left << 4 | (uint64_t)h;
			b->flags |= HTTP_RD_DIGITS;
			return true;
		}
		if ((b->flags & HTTP_RD_DIGITS) == 0)
			return false;
		b->flags = 0;
		if (c == ';')
			b->state = HTTP_RD_EXT;
		else if (c == ' ' || c == '\t')
			b->state = HTTP_RD_SIZE_WS;
		else if (c == '\r')
			b->state = HTTP_RD_SIZE_LF;
		else if (c == '\n')
			http_size_line_end(b);
		else
			return false;
		return true;
	case HTTP_RD_SIZE_WS:
		/* "5 6" could be read as 5 or 56, and "5 " as 5 or as nothing */
		if (c == ';')
			b->state = HTTP_RD_EXT;
		return c == ';' || c == ' ' || c == '\t';
	case HTTP_RD_EXT:
		return http_ext_byte(b, c);
	case HTTP_RD_SIZE_LF:
		if (c != '\n')
			return false;
		http_size_line_end(b);
		return true;
	case HTTP_RD_DATA_END:
		if (c == '\r')
			b->state = HTTP_RD_DATA_LF;
		else if (c == '\n')
			http_next_chunk(b);
		else
			return false;	/* data longer than its size said */
		return true;
	case HTTP_RD_DATA_LF:
		if (c != '\n')
			return false;
		http_next_chunk(b);
		return true;
	case HTTP_RD_TRAILER:
		if (c == '\r')
			b->state = HTTP_RD_END_LF;
		else if (c == '\n')
			b->state = HTTP_RD_DONE;
		else if (http_tchar(c))		/* not SP or HTAB: obs-fold (s5.2) */
			b->state = HTTP_RD_FIELD_NAME;
		else
			return false;
		return true;
	case HTTP_RD_FIELD_NAME:
		if (c == ':')
			b->state = HTTP_RD_FIELD_VALUE;
		return c == ':' || http_tchar(c);	/* no space before the colon (s5.1) */
	case HTTP_RD_FIELD_VALUE:
		if (c == '\r') {
			b->state = HTTP_RD_FIELD_LF;
		} else if (c == '\n') {
			b->state = HTTP_RD_TRAILER;
			b->line = 0;
		} else if (c != '\t' && (c < 0x20 || c == 0x7f)) {	/* RFC 9110 s5.5 */
			return false;
		}
		return true;
	case HTTP_RD_FIELD_LF:
		if (c != '\n')
			return false;
		b->state = HTTP_RD_TRAILER;
		b->line = 0;
		return true;
	case HTTP_RD_END_LF:
		if (c != '\n')
			return false;
		b->state = HTTP_RD_DONE;
		return true;
	default:
		return false;
	}
}

uint64_t
http_body_data_ahead(const struct http_body_rd *b)
{
	return b->state == HTTP_RD_LENGTH || b->state == HTTP_RD_DATA ? b->left : 0;
}

enum http_status
http_body_feed_framing(struct http_body_rd *b, const uint8_t *p, size_t len, size_t *used)
{
	size_t i = 0;

	while (i < len && b->state != HTTP_RD_DONE && b->state != HTTP_RD_BAD &&
	    b->state != HTTP_RD_LENGTH && b->state != HTTP_RD_DATA)
		if (!http_chunked_byte(b, p[i++]))
			b->state = HTTP_RD_BAD;
	*used = i;
	return b->state == HTTP_RD_DONE ? HTTP_OK : b->state == HTTP_RD_BAD ? HTTP_BAD :
	    HTTP_NEED_MORE;
}

/*
 * Feed p[0, len) one state at a time; chunk-data and Content-Length bodies are skipped in
 * one step, everything else goes byte by byte.
 */
enum http_status
http_body_feed(struct http_body_rd *b, const uint8_t *p, size_t len, size_t *used)
{
	size_t i = 0, n;

	for (;;) {
		switch (b->state) {
		case HTTP_RD_DONE:
			*used = i;
			return HTTP_OK;
		case HTTP_RD_BAD:
			*used = i;
			return HTTP_BAD;
		default:
			break;
		}
		if (i == len) {
			*used = len;
			return HTTP_NEED_MORE;
		}
		if (b->state == HTTP_RD_LENGTH || b->state == HTTP_RD_DATA) {
			n = len - i < b->left ? len - i : (size_t)b->left;
			i += n;
			b->left -= n;
			if (b->left == 0)
				b->state = b->state == HTTP_RD_LENGTH ? HTTP_RD_DONE :
				    HTTP_RD_DATA_END;
			continue;
		}
		if (!http_chunked_byte(b, p[i++]))
			b->state = HTTP_RD_BAD;
	}
}
