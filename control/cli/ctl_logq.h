/*
 * Reading a JSON-lines log (the event log, the flow log) for namegatectl events and flows:
 * the lines that pass a filter (ctl_filter.h), from history and, with follow, as they are
 * appended, across rotations as ctl_events_follow() does (it does the reading).
 *
 * History is the file at path from its first line. --last N keeps the last N lines that
 * pass, and --since T (and --last, when path has too few) also reads path.1 first: the
 * file logrotate's delaycompress leaves uncompressed (dataplane/dist/namegate.logrotate),
 * for --since when path's first line is later than T. A line that is not a JSON object
 * with an RFC 3339 "ts" is skipped and counted: a torn write must not stop a reader.
 */
#ifndef CTL_LOGQ_H
#define CTL_LOGQ_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct ctl_filter;
struct json_object;

/* A line that passed: as read (len bytes, no newline), and parsed (valid during the call). */
typedef void ctl_logq_emit_fn(void *arg, const char *line, size_t len, struct json_object *o);
/* The end of a batch: the history, then each read of what was appended. */
typedef void ctl_logq_flush_fn(void *arg);

struct ctl_logq_out {
	ctl_logq_emit_fn *emit;
	ctl_logq_flush_fn *flush;	/* may be NULL */
	void *arg;
};

/*
 * Hands out the lines of path that pass f, oldest first; with follow, goes on until *stop
 * is set. Returns 0 or -errno (path cannot be read, out of memory; path.1 missing is no
 * error); *malformed is the count of lines skipped.
 */
int ctl_logq_run(const char *path, const struct ctl_filter *f, bool follow,
    const struct ctl_logq_out *out, volatile sig_atomic_t *stop, size_t *malformed);

#endif /* CTL_LOGQ_H */
