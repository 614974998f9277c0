/*
 * Byte sizes in the configuration: a whole number and a unit, "500k", "100MB", "1GiB".
 * Decimal units are powers of 1000 and binary ones (KiB, MiB, ...) powers of 1024, as in
 * IEC 80000-13, so "1MB" and "1MiB" are the sizes an operator's tools (curl, ls -h --si)
 * print. Nothing else is read: no fractions, signs, spaces, or lower-case "m"/"g" (which
 * could mean milli or bits), so a typo is an error, not a surprising budget.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_load_int.h"

static const struct {
	const char *unit;
	uint64_t bytes;
} pol_size_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "k", 1000 }, { "K", 1000 }, { "kB", 1000 }, { "KB", 1000 }, { "KiB", 1024 },
	{ "M", 1000000 }, { "MB", 1000000 }, { "MiB", 1048576 },
	{ "G", 1000000000 }, { "GB", 1000000000 }, { "GiB", 1073741824 },
	{ "T", 1000000000000 }, { "TB", 1000000000000 }, { "TiB", 1099511627776 },
};

#define POL_NSIZE_UNITS	(sizeof(pol_size_units) / sizeof(pol_size_units[0]))

int
pol_size_parse(const char *s, uint64_t *out)
{
	size_t digits = strspn(s, "0123456789");
	unsigned long long x;

	if (digits == 0)
		return -EINVAL;
	if (digits > 20)
		return -ERANGE;
	errno = 0;
	x = strtoull(s, NULL, 10);
	if (errno != 0)
		return -ERANGE;
	for (size_t u = 0; u < POL_NSIZE_UNITS; u++) {
		if (strcmp(s + digits, pol_size_units[u].unit) != 0)
			continue;
		if (x > UINT64_MAX / pol_size_units[u].bytes)
			return -ERANGE;
		*out = x * pol_size_units[u].bytes;
		return 0;
	}
	return -EINVAL;
}

/*
 * The shortest spelling pol_size_parse() reads back: the largest unit that divides n,
 * binary or decimal, "100MB", "1GiB", "1500B".
 */
void
pol_size_str(uint64_t n, char *buf, size_t len)
{
	static const size_t order[] = { 15, 14, 12, 11, 9, 8, 6, 4 };	/* TiB TB ... KiB kB */

	for (size_t i = 0; n != 0 && i < sizeof(order) / sizeof(order[0]); i++) {
		uint64_t b = pol_size_units[order[i]].bytes;

		if (n % b == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(n / b),
			    pol_size_units[order[i]].unit);
			return;
		}
	}
	snprintf(buf, len, "%lluB", (unsigned long long)n);
}

/* A uint64_t of bytes, 1B..POL_SIZE_MAX (1TiB: more per window is no budget at all). */
int
pol_h_size(struct pol_ctx *c, yaml_node_t *n, const struct pol_field *f, void *obj,
    const char *path)
{
	const char *v;
	uint64_t bytes;
	int rc;

	if ((v = pol_scalar(c, n, path)) == NULL)
		return -1;
	rc = pol_size_parse(v, &bytes);
	if (rc == -EINVAL)
		return pol_err_node(c, n, "%s: expected a size (a whole number and B, kB, MB, GB, "
		    "TB, KiB, MiB, GiB or TiB: 500k, 100MB, 1GiB), got \"%s\"", path, v);
	if (rc < 0 || bytes == 0 || bytes > POL_SIZE_MAX)
		return pol_err_node(c, n, "%s: %s is out of range (1B..1TiB)", path, v);
	*(uint64_t *)((char *)obj + f->off) = bytes;
	return 0;
}
