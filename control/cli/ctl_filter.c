/*
 * Filters of log lines and bindings (ctl_filter.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl_cli.h"
#include "ctl_filter.h"
#include "ctl_grants.h"
#include "ctl_tab.h"
#include "policy/load.h"

/* n digits at *p as a number; false when one is not a digit. */
static bool
ctl_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return true;
}

static bool
ctl_expect(const char **p, const char *any)
{
	if (**p == '\0' || strchr(any, **p) == NULL)
		return false;
	(*p)++;
	return true;
}

int
ctl_time_parse(const char *s, int64_t *ms)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, frac = 0, scale = 100;
	const char *p = s;
	struct tm tm = { 0 };
	time_t t;

	if (!ctl_digits(&p, 4, &y) || !ctl_expect(&p, "-") || !ctl_digits(&p, 2, &mo) ||
	    !ctl_expect(&p, "-") || !ctl_digits(&p, 2, &d) || !ctl_expect(&p, "Tt ") ||
	    !ctl_digits(&p, 2, &h) || !ctl_expect(&p, ":") || !ctl_digits(&p, 2, &mi) ||
	    !ctl_expect(&p, ":") || !ctl_digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;	/* milliseconds; finer digits drop to 0 */
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!ctl_digits(&p, 2, &oh) || !ctl_expect(&p, ":") || !ctl_digits(&p, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	/* 60: a leap second, which timegm() carries into the next minute */
	if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60 ||
	    (mo == 2 && d == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0))))
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -EINVAL;
	*ms = ((int64_t)t - sign * (oh * 3600 + om * 60)) * 1000 + frac;
	return 0;
}

static int
ctl_filter_since(struct ctl_filter *f, const char *since, int64_t now_ms, char *why,
    size_t whylen)
{
	char dwhy[128];
	uint32_t secs;

	f->has_since = true;
	if (ctl_time_parse(since, &f->since_ms) == 0)
		return 0;
	/* a time has dashes; a duration never does, so say what was wrong with which */
	if (strchr(since, '-') != NULL) {
		snprintf(why, whylen, "--since: bad time \"%.64s\" (RFC 3339: "
		    "2026-12-05T08:00:00Z)", since);
		return -EINVAL;
	}
	if (ctl_duration_parse(since, &secs, dwhy, sizeof(dwhy)) < 0) {
		snprintf(why, whylen, "--since: %s, or an RFC 3339 time", dwhy);
		return -EINVAL;
	}
	f->since_ms = now_ms - (int64_t)secs * 1000;
	return 0;
}

static int
ctl_filter_last(struct ctl_filter *f, const char *last, char *why, size_t whylen)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(last, &end, 10);
	if (*last < '0' || *last > '9' || *end != '\0' || errno != 0 || n == 0 ||
	    n > CTL_LAST_MAX) {
		snprintf(why, whylen, "--last: \"%.32s\" is not a count from 1 to %u", last,
		    CTL_LAST_MAX);
		return -EINVAL;
	}
	f->last = (size_t)n;
	return 0;
}

int
ctl_filter_init(struct ctl_filter *f, const struct ctl_args *a,
    const char *const *name_keys, int64_t now_ms, char *why, size_t whylen)
{
	char pwhy[POL_WHY_MAX];
	struct pol_pattern p;

	memset(f, 0, sizeof(*f));
	f->vm = a->vm;
	f->reason = a->reason;
	f->name_keys = name_keys;
	if (a->name != NULL) {
		/*
		 * The suffix is parsed as a name: a filter may look under a top-level domain
		 * ("*.org"), which policy refuses to allow.
		 */
		f->wild = strncmp(a->name, "*.", 2) == 0;
		if (pol_pattern_parse(a->name + (f->wild ? 2 : 0), &p, pwhy, sizeof(pwhy)) < 0) {
			snprintf(why, whylen, "--name: bad host pattern \"%.64s\": %s", a->name,
			    pwhy);
			return -EINVAL;
		}
		if (p.kind != POL_NAME_EXACT || p.port != 0) {
			snprintf(why, whylen, "--name: \"%.64s\" is not a name or *.name pattern "
			    "(no address, no port)", a->name);
			return -EINVAL;
		}
		f->has_name = true;
		memcpy(f->name, p.name, sizeof(f->name));
	}
	if (a->since != NULL && ctl_filter_since(f, a->since, now_ms, why, whylen) < 0)
		return -EINVAL;
	if (a->last != NULL && ctl_filter_last(f, a->last, why, whylen) < 0)
		return -EINVAL;
	return 0;
}

bool
ctl_filter_name(const struct ctl_filter *f, const char *name, size_t len)
{
	size_t n = strlen(f->name);

	if (!f->has_name)
		return true;
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (!f->wild)
		return len == n && strncasecmp(name, f->name, n) == 0;
	/* one or more whole labels in front of the suffix */
	return len > n + 1 && name[len - n - 1] == '.' &&
	    strncasecmp(name + len - n, f->name, n) == 0;
}

bool
ctl_filter_match(const struct ctl_filter *f, struct json_object *o, int64_t ts_ms)
{
	if (f->has_since && ts_ms < f->since_ms)
		return false;
	if (f->vm != NULL && strcmp(ctl_jstr(o, "vm", ""), f->vm) != 0)
		return false;
	if (f->reason != NULL && strcmp(ctl_jstr(o, "reason", ""), f->reason) != 0) {
		const char *end = ctl_jstr(o, "end", "");

		if (strncmp(end, "cut:", 4) != 0 || strcmp(end + 4, f->reason) != 0)
			return false;
	}
	if (f->has_name) {
		for (const char *const *k = f->name_keys; *k != NULL; k++) {
			struct json_object *v = ctl_jget(o, *k);

			if (v != NULL && json_object_is_type(v, json_type_string) &&
			    ctl_filter_name(f, json_object_get_string(v),
			    (size_t)json_object_get_string_len(v)))
				return true;
		}
		return false;
	}
	return true;
}
