/*
 * The event log tests' fixture (test_ctl_events.c, test_ctl_events_follow.c): a log in a
 * directory of its own, at a fixed time, and what it wrote read back.
 */
#ifndef CTL_EVENTS_FX_H
#define CTL_EVENTS_FX_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ctl_events.h"

#define WAIT_MS		5000

struct fx {
	char dir[64];
	char path[128];		/* dir/events.log */
	char old[128];		/* dir/events.log.1 */
	struct ctl_events *ev;
	struct timespec t0;	/* 2026-11-29T12:00:00.123Z */
};

int setup(void **state);
int teardown(void **state);
/* t0 + ms milliseconds */
struct timespec at(const struct fx *f, int64_t ms);
void open_log(struct fx *f, uint32_t rate, uint32_t burst);
/* The whole file, NUL-terminated; "" when it does not exist. */
char *slurp(const char *path);
size_t count_lines(const char *s);

#endif
