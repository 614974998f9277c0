/*
 * What the fuzz targets share: a check that aborts (the fuzzer, and the replay under the
 * sanitizers, report an abort as the finding), and the input read as a stream of choices.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct input {
	const uint8_t *p;
	size_t len;
};

static inline void
check(bool ok)
{
	if (!ok)
		abort();
}

/* The next n bytes of in into out; false when fewer are left. */
static inline bool
take(struct input *in, void *out, size_t n)
{
	if (in->len < n)
		return false;
	memcpy(out, in->p, n);
	in->p += n;
	in->len -= n;
	return true;
}

/* Up to n bytes of in into out, as many as are left; returns how many. */
static inline size_t
take_some(struct input *in, void *out, size_t n)
{
	if (n > in->len)
		n = in->len;
	memcpy(out, in->p, n);
	in->p += n;
	in->len -= n;
	return n;
}

#endif
