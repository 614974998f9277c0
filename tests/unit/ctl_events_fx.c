/*
 * The event log tests' fixture (ctl_events_fx.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_events_fx.h"


int
setup(void **state)
{
	struct tm tm = { .tm_year = 2026 - 1900, .tm_mon = 10, .tm_mday = 29, .tm_hour = 12 };
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/ctl_events.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/events.log", f->dir);
	snprintf(f->old, sizeof(f->old), "%s/events.log.1", f->dir);
	f->t0 = (struct timespec){ .tv_sec = timegm(&tm), .tv_nsec = 123456789 };
	*state = f;
	return 0;
}

int
teardown(void **state)
{
	struct fx *f = *state;

	ctl_events_close(f->ev);
	unlink(f->path);
	unlink(f->old);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* t0 + ms milliseconds */
struct timespec
at(const struct fx *f, int64_t ms)
{
	int64_t ns = (int64_t)f->t0.tv_nsec + ms * 1000000;
	struct timespec t = { .tv_sec = f->t0.tv_sec + ns / 1000000000,
	    .tv_nsec = ns % 1000000000 };

	if (t.tv_nsec < 0) {
		t.tv_nsec += 1000000000;
		t.tv_sec--;
	}
	return t;
}

void
open_log(struct fx *f, uint32_t rate, uint32_t burst)
{
	char err[256];

	f->ev = ctl_events_open(f->path, rate, burst, err, sizeof(err));
	if (f->ev == NULL)
		fail_msg("%s", err);
}

/* The whole file, NUL-terminated; "" when it does not exist. */
char *
slurp(const char *path)
{
	char *s = NULL;
	size_t len = 0;
	FILE *in = fopen(path, "r"), *out = open_memstream(&s, &len);
	int c;

	assert_non_null(out);
	if (in != NULL) {
		while ((c = fgetc(in)) != EOF)
			fputc(c, out);
		fclose(in);
	}
	fclose(out);
	return s;
}

size_t
count_lines(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}
