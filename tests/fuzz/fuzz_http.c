/*
 * libFuzzer target for the HTTP/1.x framer (sni/http.h). Besides what ASan/UBSan catch, it
 * checks the promises the dataplane builds on, and abort()s when one breaks:
 *
 *  - http_classify and http_head_parse: a definite answer never changes as bytes arrive
 *    (one prefix, cut where the input's last two bytes say, is NEED_MORE or the same); a
 *    head that parses is one the classifier calls HTTP.
 *  - An OK head: head_len within the input and HTTP_HEAD_MAX, a host of 1..SNI_HOST_MAX
 *    lower-case host bytes, NUL-terminated, a port when CONNECT; a host that is an IP
 *    address is one inet_pton() takes.
 *  - The body reader gives the same status and length whether the body is fed whole, a
 *    byte at a time, or in pieces whose sizes the input chooses; each piece is an
 *    exact-size copy, so ASan sees a read past it. The body is what follows an OK head,
 *    with its framing, or else the whole input read as chunked, so the fuzzer can reach
 *    the chunked reader without building a head first.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "sni/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
host_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	    c == '_' || c == ':';
}

static void
check_head(const struct http_head *h, size_t len)
{
	struct in6_addr a6;
	struct in_addr a4;

	check(h->head_len > 0 && h->head_len <= len && h->head_len <= HTTP_HEAD_MAX);
	check(h->host_len > 0 && h->host_len <= SNI_HOST_MAX);
	check(h->host[h->host_len] == '\0' && strlen(h->host) == h->host_len);
	for (size_t i = 0; i < h->host_len; i++)
		check(host_byte(h->host[i]));
	check(h->host[h->host_len - 1] != '.');
	/* An address is one libc reads the same way (sni/ may not call it: tests/layout). */
	if (strchr(h->host, ':') != NULL)
		check(inet_pton(AF_INET6, h->host, &a6) == 1);
	else if (strspn(h->host, "0123456789.") == h->host_len)
		check(inet_pton(AF_INET, h->host, &a4) == 1);
	check(h->body <= HTTP_BODY_CHUNKED);
	check(h->body == HTTP_BODY_LENGTH || h->length == 0);
	check(h->length <= UINT64_C(0x7fffffffffffffff));
	check(!h->connect || (h->port != 0 && h->body == HTTP_BODY_NONE));
}

/* xorshift64: piece sizes from a seed the input chooses. */
static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Feed p[0, n) in pieces: step bytes each, or random sizes when step is 0. Returns the
 * status, with the body's length in *total.
 */
static enum http_status
feed(const struct http_head *h, const uint8_t *p, size_t n, size_t step, uint64_t seed,
    size_t *total)
{
	struct http_body_rd b;
	enum http_status st = HTTP_NEED_MORE;
	size_t off = 0, used;

	http_body_start(&b, h);
	*total = 0;
	do {
		size_t take = step != 0 ? step : 1 + (size_t)(next_rand(&seed) % 97);
		uint8_t *piece;

		if (take > n - off)
			take = n - off;
		piece = malloc(take > 0 ? take : 1);
		check(piece != NULL);
		memcpy(piece, p + off, take);
		st = http_body_feed(&b, piece, take, &used);
		free(piece);
		if (st == HTTP_BAD)
			return st;
		check(st == HTTP_OK || st == HTTP_NEED_MORE);
		check(used <= take && (st == HTTP_OK || used == take));
		*total += used;
		off += take;
	} while (st == HTTP_NEED_MORE && off < n);
	return st;
}

/*
 * p[0, n) fed as dp_http_read() feeds it: the data ahead (http_body_data_ahead()) in one
 * piece, all of it body, its run over exactly where the count said; framing up to the
 * next data (http_body_feed_framing()).
 */
static enum http_status
feed_runs(const struct http_head *h, const uint8_t *p, size_t n, size_t *total)
{
	struct http_body_rd b;
	enum http_status st;
	size_t off = 0, used;

	http_body_start(&b, h);
	*total = 0;
	do {
		uint64_t ahead = http_body_data_ahead(&b);
		size_t take = ahead == 0 || ahead >= n - off ? n - off : (size_t)ahead;

		st = ahead == 0 ? http_body_feed_framing(&b, p + off, take, &used) :
		    http_body_feed(&b, p + off, take, &used);
		if (st == HTTP_BAD)
			return st;
		check(used <= take);
		check(ahead == 0 || used == take);
		/* framing stops only where data starts, or at the body's end, or at n */
		if (ahead == 0 && st == HTTP_NEED_MORE && used < take)
			check(http_body_data_ahead(&b) != 0 && used > 0);
		if (ahead != 0 && take == ahead)
			check(http_body_data_ahead(&b) == 0);
		*total += used;
		off += used;	/* framing stops where data starts */
	} while (st == HTTP_NEED_MORE && off < n);
	return st;
}

static void
check_body(const struct http_head *h, const uint8_t *p, size_t n, uint64_t seed)
{
	size_t whole, bytes, pieces, runs;
	enum http_status st;

	st = feed(h, p, n, n > 0 ? n : 1, 0, &whole);
	check(feed(h, p, n, 1, 0, &bytes) == st);
	check(feed(h, p, n, 0, seed | 1, &pieces) == st);
	check(feed_runs(h, p, n, &runs) == st);
	if (st != HTTP_BAD)
		check(whole == bytes && whole == pieces && whole == runs && whole <= n);
	if (st == HTTP_NEED_MORE)
		check(whole == n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_head h, hp;
	enum http_status st, stp;
	enum http_first first, firstp;
	uint64_t seed = 0xcbf29ce484222325;	/* FNV-1a of the input */
	size_t k = 0;

	for (size_t i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 0x100000001b3;
	if (size >= 2)
		k = ((size_t)data[size - 2] << 8 | data[size - 1]) % size;

	first = http_classify(data, size);
	check(first <= HTTP_FIRST_SSH);
	firstp = http_classify(data, k);
	check(firstp == HTTP_FIRST_NEED_MORE || firstp == first);

	st = http_head_parse(data, size, &h);
	check(st <= HTTP_BAD && http_status_str(st) != NULL);
	stp = http_head_parse(data, k, &hp);
	check(stp == HTTP_NEED_MORE || stp == st);
	if (st == HTTP_OK) {
		check_head(&h, size);
		check(first == HTTP_FIRST_HTTP);
		check(k < h.head_len ? stp == HTTP_NEED_MORE : stp == HTTP_OK);
		if (stp == HTTP_OK)
			check(hp.head_len == h.head_len && hp.port == h.port &&
			    strcmp(hp.host, h.host) == 0 && hp.body == h.body &&
			    hp.length == h.length && hp.connect == h.connect &&
			    hp.upgrade == h.upgrade);
		check_body(&h, data + h.head_len, size - h.head_len, seed);
	} else {
		struct http_head chunked = { .body = HTTP_BODY_CHUNKED };

		check_body(&chunked, data, size, seed);
	}
	return 0;
}
