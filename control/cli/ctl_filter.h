/*
 * The filters of namegatectl events and flows (and bindings' --name): which log lines or
 * bindings to show. A line is shown when every filter given holds:
 *
 *   --vm VM       its "vm" is VM
 *   --reason R    its "reason" is R, or its "end" is "cut:R" (a flow cut for R)
 *   --name P      one of its name members (events: "name"; flows: "name", "sni", "host")
 *                 matches host pattern P as policy does: "*.example.com" any name below
 *                 example.com, never example.com itself; a plain name that name; ASCII
 *                 case and a trailing dot ignored
 *   --since T     its "ts" is at or after T (RFC 3339, or a duration back from now)
 *   --last N      (not a filter of one line: the last N lines that pass the others)
 */
#ifndef CTL_FILTER_H
#define CTL_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/match.h"

#define CTL_LAST_MAX	1000000u	/* --last: lines held in memory at once */

struct ctl_args;
struct json_object;

struct ctl_filter {
	const char *vm, *reason;	/* NULL: any */
	bool has_name, wild;
	char name[POL_NAME_MAX + 1];	/* canonical; a wildcard's suffix */
	bool has_since;
	int64_t since_ms;		/* UTC milliseconds */
	size_t last;			/* 0: every line */
	const char *const *name_keys;	/* the members --name looks at, NULL-terminated */
};

/*
 * Fills *f from the filter options in *a (now_ms: the clock --since counts back from).
 * Returns 0, or -EINVAL with a one-line reason in why (whylen bytes).
 */
int ctl_filter_init(struct ctl_filter *f, const struct ctl_args *a,
    const char *const *name_keys, int64_t now_ms, char *why, size_t whylen);

/* Does name (len bytes, any case, a trailing dot ignored) match --name? True without one. */
bool ctl_filter_name(const struct ctl_filter *f, const char *name, size_t len);

/* Does the line o, whose "ts" is ts_ms, pass every filter? */
bool ctl_filter_match(const struct ctl_filter *f, struct json_object *o, int64_t ts_ms);

/*
 * "2026-12-05T08:01:02.345Z", "2026-12-05T09:01:02+01:00" (RFC 3339: a "T" or a space,
 * any digits of fraction, "Z" or an offset) as UTC milliseconds. Returns 0 or -EINVAL.
 */
int ctl_time_parse(const char *s, int64_t *ms);

#endif /* CTL_FILTER_H */
