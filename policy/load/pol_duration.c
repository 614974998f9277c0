/*
 * Durations in the configuration: "90" or "90s", "10m", "1h", "1d", and sums of those
 * written largest unit first ("1h30m"), in whole seconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

static const struct {
	char unit;
	uint32_t seconds;
} pol_units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };

#define POL_NUNITS	(sizeof(pol_units) / sizeof(pol_units[0]))

/*
 * Parse s into *out seconds. Each unit at most once and in falling order, so that a
 * duration has one spelling of each of its parts ("1h1h" and "30m1h" are typos, not sums).
 * Returns 0, or -EINVAL (not a duration), -ERANGE (past UINT32_MAX seconds).
 */
int
pol_duration_parse(const char *s, uint32_t *out)
{
	unsigned long long total = 0, x;
	size_t next_unit = 0;
	const char *p = s;

	if (s[0] == '\0')
		return -EINVAL;
	if (strspn(s, "0123456789") == strlen(s)) {	/* plain seconds */
		errno = 0;
		x = strtoull(s, NULL, 10);
		if (errno != 0 || x > UINT32_MAX)
			return -ERANGE;
		*out = (uint32_t)x;
		return 0;
	}
	while (*p != '\0') {
		size_t digits = strspn(p, "0123456789"), u;

		if (digits == 0 || digits > 10)
			return digits == 0 ? -EINVAL : -ERANGE;
		x = strtoull(p, NULL, 10);
		p += digits;
		for (u = next_unit; u < POL_NUNITS && pol_units[u].unit != *p; u++)
			;
		if (u == POL_NUNITS)
			return -EINVAL;
		total += x * pol_units[u].seconds;
		if (total > UINT32_MAX)
			return -ERANGE;
		next_unit = u + 1;
		p++;
	}
	*out = (uint32_t)total;
	return 0;
}

/* The shortest spelling of s seconds that pol_duration_parse() reads back: "1h30m". */
void
pol_duration_str(uint32_t s, char *buf, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (s == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (size_t u = 0; u < POL_NUNITS && o < len; u++) {
		uint32_t n = s / pol_units[u].seconds;

		if (n == 0)
			continue;
		s -= n * pol_units[u].seconds;
		o += (size_t)snprintf(buf + o, len - o, "%u%c", n, pol_units[u].unit);
	}
}

/* A uint32_t of seconds within f->min..f->max, written as a duration. */
int
pol_h_duration(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	char lo[32], hi[32];
	const char *v;
	uint32_t secs;
	int rc;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	rc = pol_duration_parse(v, &secs);
	pol_duration_str(f->min, lo, sizeof(lo));
	pol_duration_str(f->max, hi, sizeof(hi));
	if (rc == -EINVAL)
		return pol_err_node(c, n, "%s: expected a duration (90s, 10m, 1h30m, 1d), got "
		    "\"%s\"", path, v);
	if (rc < 0 || secs < f->min || secs > f->max)
		return pol_err_node(c, n, "%s: %s is out of range (%s..%s)", path, v, lo, hi);
	*(uint32_t *)((char *)obj + f->off) = secs;
	return 0;
}
