/*
 * What the concerns of control/ share and none owns: an error message written into a
 * caller's buffer, and the monotonic clock. It stands below them all and uses none.
 */
#ifndef CTL_BASE_H
#define CTL_BASE_H

#include <stddef.h>
#include <stdint.h>

/* printf into err[0 .. errlen); nothing when errlen is 0. */
void ctl_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* CLOCK_MONOTONIC in milliseconds, for deadlines. */
int64_t ctl_now_ms(void);

struct timespec;

/* A time as the metrics give it: seconds, fractional. */
double ctl_seconds(const struct timespec *t);

#endif
