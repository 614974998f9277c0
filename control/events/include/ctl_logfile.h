/*
 * A log that takes whole lines or none: the event log's and the flow log's writer. Each line
 * goes out in one write(2) (or one datagram), so `tail -f` and a collector see whole lines
 * as they happen, and there is no stdio buffer to flush.
 *
 * A line that cannot be written whole is lost, never half kept: it is counted
 * (ctl_logfile_lost()), the first loss after a success is said once on stderr, and a file
 * that took part of it (a full disk: ENOSPC, EDQUOT, or EFBIG past RLIMIT_FSIZE) is
 * truncated back to where the line began, so every consumer still reads whole lines. A pipe
 * or FIFO cannot be taken back: its next line starts on a fresh line instead.
 *
 * A file is reopened when its path no longer names it (logrotate renamed or removed it),
 * noticed by ctl_logfile_tick() stat'ing the path at most once a second, or at once by
 * ctl_logfile_reopen() (postrotate). Not thread-safe, except ctl_logfile_lost(), which a
 * metrics thread may call while the owner writes.
 */
#ifndef CTL_LOGFILE_H
#define CTL_LOGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_LOGFILE_MODE	0640	/* a file we create; an existing file keeps its mode */

struct ctl_logfile;

/*
 * path: a file (appended, created CTL_LOGFILE_MODE whatever the umask), "-" for stdout, or
 * "unix:PATH": each line sent as one datagram (its '\n' included) to a SOCK_DGRAM socket at
 * PATH, for a collector (a receiver not there or full: the line is lost, counted). Nothing
 * ever blocks the caller: a file or FIFO is opened O_NONBLOCK (a FIFO without a reader fails
 * here with ENXIO; a full one loses lines). NULL with errno and a one-line reason in err
 * (errlen bytes, may be 0) on failure. Free with ctl_logfile_close().
 */
struct ctl_logfile *ctl_logfile_open(const char *path, char *err, size_t errlen);

/* Closes the file or socket (stdout stays open) and frees lf; NULL is a no-op. */
void ctl_logfile_close(struct ctl_logfile *lf);

/*
 * Write one whole line (line ends in '\n', len includes it). 0 when written whole; -1 with
 * errno when lost: counted, and the first loss after a success said once on stderr
 * ("namegate: PATH: <strerror>: lines are being lost"). A file never keeps a partial line:
 * after a short write (ENOSPC, EDQUOT, EFBIG) it is truncated back to where the line began.
 * A line without its '\n' is lost with EINVAL.
 */
int ctl_logfile_write(struct ctl_logfile *lf, const char *line, size_t len);

/* Lines lost since open; any thread. */
uint64_t ctl_logfile_lost(const struct ctl_logfile *lf);

/*
 * Opens the path again now (logrotate's postrotate). 0, or -errno with the old file still in
 * use. Stdout and a socket have nothing to reopen: 0.
 */
int ctl_logfile_reopen(struct ctl_logfile *lf);

/*
 * The rotation check: when a second (of now_ns, any clock the caller keeps to) has passed
 * since the last, stat the path and reopen it if it no longer names our file. A clock step
 * backwards checks at once. 0, or the failed reopen's -errno (the old file stays in use).
 */
int ctl_logfile_check(struct ctl_logfile *lf, int64_t now_ns);

/* ctl_logfile_check() for callers with nothing to do about a failure. */
void ctl_logfile_tick(struct ctl_logfile *lf, int64_t now_ns);

/* True when path names a file (not "-" nor "unix:..."): one whose directory may be made. */
bool ctl_logfile_is_file(const char *path);

/* The path as given to ctl_logfile_open(). */
const char *ctl_logfile_path(const struct ctl_logfile *lf);

#endif /* CTL_LOGFILE_H */
