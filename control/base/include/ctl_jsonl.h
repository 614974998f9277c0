/*
 * A JSON line built in one reusable buffer: what the event log and the flow log append
 * with one write(2) each. Strings are escaped so that any bytes (an SNI a VM made up)
 * come out as valid JSON and UTF-8: bytes >= 0x80 and controls as \u00XX, which a reader
 * maps back to the original byte.
 *
 * Kept by hand although json-c is a dependency: json-c passes bytes >= 0x80 through as they
 * are (a line that is not UTF-8), and it would build and free an object per line where this
 * appends to the one reused buffer.
 */
#ifndef CTL_JSONL_H
#define CTL_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/*
 * A growing line; oom sticks until the next reset, so one check covers a line. The dates of
 * the last two seconds a time was written in are kept, so that the flow log's three times a
 * line (when it is written, when the flow started and stopped) cost a calendar conversion
 * only when their seconds change.
 */
struct ctl_jsonl {
	char *p;
	size_t len, cap;
	bool oom;
	time_t date_sec[2];		/* the seconds date[] are of */
	char date[2][20];		/* "2026-11-29T12:00:00"; date[i][0] '\0': none */
	unsigned int date_next;		/* the one a new second replaces */
};

/* Grow b for n more bytes; false (and oom) when it cannot. */
bool ctl_jsonl_grow(struct ctl_jsonl *b, size_t n);

void ctl_jsonl_reset(struct ctl_jsonl *b);
void ctl_jsonl_free(struct ctl_jsonl *b);

/* Inline: a line is dozens of small pieces, each a call and a memcpy call otherwise. */
static inline void
ctl_jsonl_putn(struct ctl_jsonl *b, const char *s, size_t n)
{
	if (b->oom || (n > b->cap - b->len && !ctl_jsonl_grow(b, n)))
		return;
	if (n <= 4) {
		for (size_t i = 0; i < n; i++)
			b->p[b->len + i] = s[i];
	} else {
		memcpy(b->p + b->len, s, n);
	}
	b->len += n;
}

void ctl_jsonl_puts(struct ctl_jsonl *b, const char *s);
void ctl_jsonl_printf(struct ctl_jsonl *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* s (n bytes, any of them, NUL included) as a JSON string, quoted. */
void ctl_jsonl_strn(struct ctl_jsonl *b, const char *s, size_t n);
/* The same for a NUL-terminated s. */
void ctl_jsonl_str(struct ctl_jsonl *b, const char *s);

/* v in decimal, unquoted. */
void ctl_jsonl_u64(struct ctl_jsonl *b, uint64_t v);

/* An IP protocol, quoted: "tcp", "udp", "icmp", "icmpv6", else its number ("47"). */
void ctl_jsonl_proto(struct ctl_jsonl *b, uint8_t proto);

/*
 * An endpoint, quoted: "203.0.113.5:443", "[2001:db8::1]:443", or the address alone for
 * port 0. family AF_INET or AF_INET6, addr in network order (IPv4 in its first 4 bytes).
 */
void ctl_jsonl_endpoint(struct ctl_jsonl *b, int family, const uint8_t *addr, uint16_t port);

/* "2026-11-29T12:00:00.123Z": UTC, milliseconds truncated, quoted. */
void ctl_jsonl_ts(struct ctl_jsonl *b, const struct timespec *t);

#endif
