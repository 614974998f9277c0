/*
 * JSON lines (ctl_jsonl.h).
 */
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
	*b = (struct ctl_jsonl){ 0 };
}

void
ctl_jsonl_putn(struct ctl_jsonl *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return;
	if (n > b->cap - b->len) {
		cap = b->cap > 0 ? b->cap : 256;
		while (cap - b->len < n)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
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
ctl_jsonl_ts(struct ctl_jsonl *b, const struct timespec *t)
{
	long ms = t->tv_nsec >= 0 && t->tv_nsec < CTL_JSONL_NS ? t->tv_nsec / 1000000 : 0;
	struct tm tm;

	if (gmtime_r(&t->tv_sec, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));	/* a time gmtime cannot show: year 1900 flags it */
	ctl_jsonl_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}
