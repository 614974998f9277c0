/*
 * bench_input: one line for a benchmark input that is not there; see bench_input.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_input.h"

bool
bench_input_missing(const char *prog, const char *path)
{
	if (access(path, R_OK) == 0)
		return false;
	fprintf(stderr, "%s: %s: %s; tests/traffic/gen_traffic.py makes it when the tests are "
	    "built (meson compile)\n", prog, path, strerror(errno));
	return true;
}
