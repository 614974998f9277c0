/*
 * JSON lines (ctl_jsonl.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_jsonl.h"

#define CTL_JSONL_NS	1000000000L

void
ctl_jsonl_reset(struct ctl_jsonl *b)
{
	b->len = 0;
	b->oom = false;
}

void
ctl_jsonl_free(struct ctl_jsonl *b)
{
	free(b->p);
	*b = (struct ctl_jsonl){ .date_next = 0 };
}

bool
ctl_jsonl_grow(struct ctl_jsonl *b, size_t n)
{
	size_t cap = b->cap > 0 ? b->cap : 256;
	char *p;

	while (cap - b->len < n)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void
ctl_jsonl_puts(struct ctl_jsonl *b, const char *s)
{
	ctl_jsonl_putn(b, s, strlen(s));
}

void
ctl_jsonl_printf(struct ctl_jsonl *b, const char *fmt, ...)
{
	char small[128], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		ctl_jsonl_putn(b, small, (size_t)n);
		return;
	}
	if ((big = malloc((size_t)n + 1)) == NULL) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ctl_jsonl_putn(b, big, (size_t)n);
	free(big);
}

void
ctl_jsonl_strn(struct ctl_jsonl *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";	/* s7 short forms */
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	char esc[6] = { '\\', 'u', '0', '0' };
	const char *hit;
	size_t run;

	ctl_jsonl_putn(b, "\"", 1);
	while (p < end) {
		for (run = 0; p + run < end && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' &&
		    p[run] != '\\'; run++)
			;
		ctl_jsonl_putn(b, (const char *)p, run);
		if ((p += run) == end)
			break;
		if (*p != '\0' && (hit = memchr(from, *p, sizeof(from) - 1)) != NULL) {
			char pair[2] = { '\\', to[hit - from] };

			ctl_jsonl_putn(b, pair, sizeof(pair));
		} else {
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 0xf];
			ctl_jsonl_putn(b, esc, sizeof(esc));
		}
		p++;
	}
	ctl_jsonl_putn(b, "\"", 1);
}

void
ctl_jsonl_str(struct ctl_jsonl *b, const char *s)
{
	ctl_jsonl_strn(b, s, strlen(s));
}

void
ctl_jsonl_u64(struct ctl_jsonl *b, uint64_t v)
{
	char digits[20];
	size_t n = sizeof(digits);

	do {
		digits[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	ctl_jsonl_putn(b, digits + n, sizeof(digits) - n);
}

void
ctl_jsonl_proto(struct ctl_jsonl *b, uint8_t proto)
{
	switch (proto) {
	case IPPROTO_ICMP:
		ctl_jsonl_puts(b, "\"icmp\"");
		break;
	case IPPROTO_TCP:
		ctl_jsonl_puts(b, "\"tcp\"");
		break;
	case IPPROTO_UDP:
		ctl_jsonl_puts(b, "\"udp\"");
		break;
	case IPPROTO_ICMPV6:
		ctl_jsonl_puts(b, "\"icmpv6\"");
		break;
	default:
		ctl_jsonl_putn(b, "\"", 1);
		ctl_jsonl_u64(b, proto);
		ctl_jsonl_putn(b, "\"", 1);
	}
}

/* IPv4 spelled here, not by inet_ntop: a flow log line has two of them. */
void
ctl_jsonl_endpoint(struct ctl_jsonl *b, int family, const uint8_t *addr, uint16_t port)
{
	bool brackets = family == AF_INET6 && port != 0;
	char a[INET6_ADDRSTRLEN];

	ctl_jsonl_putn(b, brackets ? "\"[" : "\"", brackets ? 2 : 1);
	if (family == AF_INET) {
		for (int i = 0; i < 4; i++) {
			if (i > 0)
				ctl_jsonl_putn(b, ".", 1);
			ctl_jsonl_u64(b, addr[i]);
		}
	} else if (inet_ntop(family, addr, a, sizeof(a)) != NULL) {
		ctl_jsonl_puts(b, a);
	} else {
		b->oom = true;		/* no family to spell: the line is not written */
	}
	if (brackets)
		ctl_jsonl_putn(b, "]", 1);
	if (port != 0) {
		ctl_jsonl_putn(b, ":", 1);
		ctl_jsonl_u64(b, port);
	}
	ctl_jsonl_putn(b, "\"", 1);
}

/* The first w digits of v, zero-padded, at out. */
static void
ctl_jsonl_digits(char *out, unsigned int v, int w)
{
	while (w-- > 0) {
		out[w] = (char)('0' + v % 10);
		v /= 10;
	}
}

void
ctl_jsonl_ts(struct ctl_jsonl *b, const struct timespec *t)
{
	long ms = t->tv_nsec >= 0 && t->tv_nsec < CTL_JSONL_NS ? t->tv_nsec / 1000000 : 0;
	char tail[6] = { '.', 0, 0, 0, 'Z', '"' }, *date;
	unsigned int i;
	struct tm tm;

	for (i = 0; i < 2; i++)
		if (b->date[i][0] != '\0' && b->date_sec[i] == t->tv_sec)
			break;
	if (i == 2) {
		i = b->date_next;
		b->date_next ^= 1;
		date = b->date[i];
		if (gmtime_r(&t->tv_sec, &tm) == NULL)
			memset(&tm, 0, sizeof(tm));	/* one gmtime cannot show: year 1900 */
		memcpy(date, "0000-00-00T00:00:00", sizeof(b->date[i]));
		ctl_jsonl_digits(date, (unsigned int)(tm.tm_year + 1900) % 10000, 4);
		ctl_jsonl_digits(date + 5, (unsigned int)tm.tm_mon + 1, 2);
		ctl_jsonl_digits(date + 8, (unsigned int)tm.tm_mday, 2);
		ctl_jsonl_digits(date + 11, (unsigned int)tm.tm_hour, 2);
		ctl_jsonl_digits(date + 14, (unsigned int)tm.tm_min, 2);
		ctl_jsonl_digits(date + 17, (unsigned int)tm.tm_sec, 2);
		b->date_sec[i] = t->tv_sec;
	}
	ctl_jsonl_putn(b, "\"", 1);
	ctl_jsonl_putn(b, b->date[i], sizeof(b->date[i]) - 1);
	ctl_jsonl_digits(tail + 1, (unsigned int)ms, 3);
	ctl_jsonl_putn(b, tail, sizeof(tail));
}
