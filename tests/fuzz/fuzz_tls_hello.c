/*
 * libFuzzer target for tls_hello_parse. Besides what ASan/UBSan catch, it checks the
 * promises the dataplane builds on, and abort()s when one breaks:
 *
 *  - FOUND/ABSENT: the name passes sni_host_valid() without a trailing dot, every pointer
 *    lies inside the input or scratch, ALPN ids are non-empty, stream_len fits.
 *  - A definite answer never changes as bytes arrive: one prefix of the input is
 *    NEED_MORE or gets the whole input's status (and the same hello when valid); no
 *    prefix shorter than a valid hello's stream_len is anything but NEED_MORE.
 *  - The same handshake message re-cut into records of another size gives the same hello,
 *    or MALFORMED exactly when it no longer fits in TLS_HELLO_MAX.
 *  - tls_hello_parse_sni() gives the same status, and when FOUND or ABSENT the same name
 *    and stream_len; tls_hello_parse_retry() of the input behind a change_cipher_spec
 *    record gives that status too, its stream_len 6 more.
 *  - tls_hello_tail_ok() of the input is false when it starts a handshake record, and of
 *    a valid hello's stream past it never reads beyond it; tls_server_retry() reads no
 *    byte past those it is given.
 *
 * The prefix length and the record size come from the input's last two bytes, not its
 * first: every TLS input starts with 0x16, and bytes after a hello are never read, so the
 * fuzzer can steer both without touching the hello.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "sni/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t scratch[TLS_HELLO_MAX];
static uint8_t scratch2[TLS_HELLO_MAX];
static uint8_t msg[TLS_HELLO_MAX];

static bool
inside(const uint8_t *p, size_t len, const uint8_t *buf, size_t buf_len)
{
	return p >= buf && len <= buf_len && (size_t)(p - buf) <= buf_len - len;
}

static bool
aliases(struct sni_name nm, const uint8_t *buf, size_t len, const uint8_t *scr)
{
	return inside(nm.p, nm.len, buf, len) || inside(nm.p, nm.len, scr, TLS_HELLO_MAX);
}

static bool
name_eq(struct sni_name a, struct sni_name b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static void
check_hello(enum sni_status st, const struct tls_hello *h, const uint8_t *buf, size_t len,
    const uint8_t *scr)
{
	if (st != SNI_FOUND && st != SNI_ABSENT)
		return;
	check(h->stream_len >= 5 && h->stream_len <= len && h->stream_len <= TLS_HELLO_MAX);
	if (st == SNI_FOUND) {
		check(sni_host_valid(h->sni.p, h->sni.len));
		check(h->sni.p[h->sni.len - 1] != '.');
		check(aliases(h->sni, buf, len, scr));
	}
	check(h->nb_alpn <= TLS_ALPN_MAX);
	check(!h->alpn_more || h->nb_alpn == TLS_ALPN_MAX);
	for (unsigned int i = 0; i < h->nb_alpn; i++)
		check(h->alpn[i].len > 0 && aliases(h->alpn[i], buf, len, scr));
}

static bool
hello_eq(enum sni_status st, const struct tls_hello *a, const struct tls_hello *b)
{
	if ((st == SNI_FOUND && !name_eq(a->sni, b->sni)) || a->nb_alpn != b->nb_alpn ||
	    a->alpn_more != b->alpn_more || a->ech != b->ech)
		return false;
	for (unsigned int i = 0; i < a->nb_alpn; i++)
		if (!name_eq(a->alpn[i], b->alpn[i]))
			return false;
	return true;
}

/* The handshake bytes of the records in buf[0, stream_len), which the parser accepted. */
static size_t
gather(const uint8_t *buf, size_t stream_len)
{
	size_t n = 0;

	for (size_t off = 0; off + 5 <= stream_len;) {
		size_t rec = (size_t)buf[off + 3] << 8 | buf[off + 4];

		check(off + 5 + rec <= stream_len && n + rec <= sizeof(msg));
		memcpy(msg + n, buf + off + 5, rec);
		n += rec;
		off += 5 + rec;
	}
	return n;
}

static void
recut(enum sni_status st, const struct tls_hello *h, const uint8_t *data, size_t size)
{
	size_t n = gather(data, h->stream_len), frag = 1 + data[size - 2] % 200, len = 0;
	size_t want_len = n + 5 * ((n + frag - 1) / frag);
	struct tls_hello h2;
	enum sni_status st2;
	uint8_t *s = malloc(want_len);		/* exact size: ASan sees a read past it */

	check(s != NULL);
	for (size_t from = 0; from < n; from += frag) {
		size_t take = n - from < frag ? n - from : frag;

		s[len++] = 22;
		s[len++] = 3;
		s[len++] = 3;
		s[len++] = (uint8_t)(take >> 8);
		s[len++] = (uint8_t)take;
		memcpy(s + len, msg + from, take);
		len += take;
	}
	check(len == want_len);
	st2 = tls_hello_parse(s, len, scratch2, sizeof(scratch2), &h2);
	if (len > TLS_HELLO_MAX) {
		check(st2 == SNI_MALFORMED);
	} else {
		check(st2 == st && h2.stream_len == len);
		check_hello(st2, &h2, s, len, scratch2);
		check(hello_eq(st, h, &h2));
	}
	free(s);
}

/*
 * The input as a second hello, behind the change_cipher_spec record a client in middlebox
 * compatibility mode sends first: what tls_hello_parse_sni() says of the input alone.
 */
static void
retried(enum sni_status st, const struct tls_hello *h, const uint8_t *data, size_t size)
{
	static const uint8_t ccs[6] = { 20, 3, 3, 0, 1, 1 };
	uint8_t *s = malloc(size + sizeof(ccs));	/* exact size: ASan sees a read past it */
	struct tls_hello h2;
	enum sni_status st2;

	check(s != NULL);
	memcpy(s, ccs, sizeof(ccs));
	if (size != 0)
		memcpy(s + sizeof(ccs), data, size);
	st2 = tls_hello_parse_retry(s, size + sizeof(ccs), scratch2, sizeof(scratch2), &h2);
	/* an input of change_cipher_spec records itself is skipped too: its status is another */
	check(st2 == st || (size != 0 && data[0] == 20));
	if (st2 == st && (st == SNI_FOUND || st == SNI_ABSENT))
		check(h2.stream_len == h->stream_len + sizeof(ccs));
	/* cut inside the record: more may come */
	check(tls_hello_parse_retry(s, 1 + size % 5, scratch2, sizeof(scratch2), &h2) ==
	    SNI_NEED_MORE);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_hello h, hp;
	enum sni_status st, stp;
	size_t k;

	st = tls_hello_parse(data, size, scratch, sizeof(scratch), &h);
	check((unsigned int)st <= SNI_MALFORMED);
	check(sni_status_str(st) != NULL);
	check_hello(st, &h, data, size, scratch);
	/* the dataplane's parse: the same status, name, capitals and stream length */
	check(tls_hello_parse_sni(data, size, scratch2, sizeof(scratch2), &hp) == st);
	check(st != SNI_FOUND || (name_eq(hp.sni, h.sni) && hp.sni_lower == h.sni_lower));
	check((st != SNI_FOUND && st != SNI_ABSENT) || hp.stream_len == h.stream_len);
	retried(st, &h, data, size);
	check(size == 0 || data[0] != 22 || !tls_hello_tail_ok(data, size));
	if (st == SNI_FOUND || st == SNI_ABSENT)
		(void)tls_hello_tail_ok(data + h.stream_len, size - h.stream_len);
	if (size > 0)
		(void)tls_server_retry(data, size);
	if (size < 2)
		return 0;

	k = ((size_t)data[size - 2] << 8 | data[size - 1]) % size;
	stp = tls_hello_parse(data, k, scratch2, sizeof(scratch2), &hp);
	check_hello(stp, &hp, data, k, scratch2);
	check(stp == SNI_NEED_MORE || stp == st);
	if (st == SNI_FOUND || st == SNI_ABSENT) {
		check(k < h.stream_len ? stp == SNI_NEED_MORE : stp == st);
		if (stp == st)
			check(hp.stream_len == h.stream_len && hello_eq(st, &h, &hp));
		if (data[0] & 0x80)	/* an SSLv2-format hello: one message, no records to recut */
			check(st == SNI_ABSENT && h.stream_len == (size_t)(((data[0] & 0x7f) << 8 |
			    data[1]) + 2));
		else
			recut(st, &h, data, size);
	}
	return 0;
}
