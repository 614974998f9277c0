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

struct timespec;

/* A growing line; oom sticks until the next reset, so one check covers a line. */
struct ctl_jsonl {
	char *p;
	size_t len, cap;
	bool oom;
};

void ctl_jsonl_reset(struct ctl_jsonl *b);
void ctl_jsonl_free(struct ctl_jsonl *b);

void ctl_jsonl_putn(struct ctl_jsonl *b, const char *s, size_t n);
void ctl_jsonl_puts(struct ctl_jsonl *b, const char *s);
void ctl_jsonl_printf(struct ctl_jsonl *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* s (n bytes, any of them, NUL included) as a JSON string, quoted. */
void ctl_jsonl_strn(struct ctl_jsonl *b, const char *s, size_t n);
/* The same for a NUL-terminated s. */
void ctl_jsonl_str(struct ctl_jsonl *b, const char *s);

/* "2026-11-29T12:00:00.123Z": UTC, milliseconds truncated, quoted. */
void ctl_jsonl_ts(struct ctl_jsonl *b, const struct timespec *t);

#endif
