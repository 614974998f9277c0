/*
 * control/events/ctl_logfile: whole lines or none. A file past RLIMIT_FSIZE takes part of a
 * line and then refuses (EFBIG, SIGXFSZ ignored): the file must still end with the last whole
 * line, every refused line counted, and stderr say so once per run of losses. Also /dev/full,
 * a collector's datagram socket (absent, present, full), stdout, rotation and bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cmocka.h>

#include "ctl_logfile.h"

#define NS	1000000000LL

struct fx {
	char dir[64];
	char path[128];		/* dir/log */
	char old[128];		/* dir/log.1 */
	char sock[96];		/* dir/sock: fits sun_path */
	int errpipe;		/* what the writer said on stderr, read end */
	int saved_err;		/* the test's own stderr, while the pipe stands in for it */
	struct rlimit fsize;	/* RLIMIT_FSIZE as it was, put back even after a failure */
	void (*xfsz)(int);	/* SIGXFSZ's disposition as it was */
	struct ctl_logfile *lf;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/ctl_logfile.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/log", f->dir);
	snprintf(f->old, sizeof(f->old), "%s/log.1", f->dir);
	snprintf(f->sock, sizeof(f->sock), "%s/sock", f->dir);
	f->saved_err = f->errpipe = -1;
	if (getrlimit(RLIMIT_FSIZE, &f->fsize) != 0)
		return -1;
	f->xfsz = signal(SIGXFSZ, SIG_IGN);	/* past the limit: EFBIG, not death */
	*state = f;
	return 0;
}

static void
stderr_restore(struct fx *f)
{
	if (f->saved_err < 0)
		return;
	fflush(stderr);
	dup2(f->saved_err, STDERR_FILENO);
	close(f->saved_err);
	f->saved_err = -1;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	setrlimit(RLIMIT_FSIZE, &f->fsize);
	signal(SIGXFSZ, f->xfsz);
	stderr_restore(f);
	if (f->errpipe >= 0)
		close(f->errpipe);
	ctl_logfile_close(f->lf);
	unlink(f->path);
	unlink(f->old);
	unlink(f->sock);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* stderr into a pipe until stderr_restore() (a pipe: RLIMIT_FSIZE does not cut it short). */
static void
stderr_capture(struct fx *f)
{
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(stderr);
	f->saved_err = dup(STDERR_FILENO);
	assert_true(f->saved_err >= 0);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	f->errpipe = p[0];
}

/* What was said on stderr, after stderr_restore(). */
static char *
stderr_said(struct fx *f)
{
	char *s = calloc(1, 1 << 16);
	size_t len = 0;
	ssize_t n;

	assert_non_null(s);
	while (len < (1 << 16) - 1 && (n = read(f->errpipe, s + len, (1 << 16) - 1 - len)) > 0)
		len += (size_t)n;
	s[len] = '\0';
	return s;
}

/* The whole file, NUL-terminated. */
static char *
slurp(const char *path)
{
	char *s = NULL;
	size_t len = 0;
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	s = calloc(1, 1 << 16);
	assert_non_null(s);
	len = fread(s, 1, (1 << 16) - 1, fp);
	s[len] = '\0';
	fclose(fp);
	return s;
}

/* How often needle occurs in hay. */
static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void
open_lf(struct fx *f, const char *path)
{
	char err[256];

	f->lf = ctl_logfile_open(path, err, sizeof(err));
	if (f->lf == NULL)
		fail_msg("%s", err);
}

/* "line NN ...\n", exactly 30 bytes */
static const char *
line30(int i)
{
	static char buf[31];

	snprintf(buf, sizeof(buf), "line %02d abcdefghijklmnopqrstu\n", i);
	assert_int_equal(strlen(buf), 30);
	return buf;
}

/*
 * RLIMIT_FSIZE at 100 bytes: three 30-byte lines fit, the fourth gets 10 bytes in and then
 * EFBIG. Those 10 bytes must go, both lost lines be counted, and stderr say it once; once
 * there is room again lines are written, and a new run of losses is said again.
 */
static void
test_short_write(void **state)
{
	struct fx *f = *state;
	struct rlimit old = f->fsize, small = { .rlim_cur = 100, .rlim_max = f->fsize.rlim_max };
	char *s, *e;
	struct stat st;

	open_lf(f, f->path);
	stderr_capture(f);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ctl_logfile_write(f->lf, line30(i), 30), 0);
	errno = 0;
	assert_int_equal(ctl_logfile_write(f->lf, line30(3), 30), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(ctl_logfile_write(f->lf, line30(4), 30), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(ctl_logfile_lost(f->lf), 2);

	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 90);	/* the torn 10 bytes taken back */
	s = slurp(f->path);
	assert_string_equal(s, "line 00 abcdefghijklmnopqrstu\nline 01 abcdefghijklmnopqrstu\n"
	    "line 02 abcdefghijklmnopqrstu\n");
	free(s);

	/* room again: the next line follows the last whole one */
	assert_int_equal(ctl_logfile_write(f->lf, line30(5), 30), 0);
	assert_int_equal(ctl_logfile_lost(f->lf), 2);
	s = slurp(f->path);
	assert_int_equal(strlen(s), 120);
	assert_string_equal(s + 90, "line 05 abcdefghijklmnopqrstu\n");
	free(s);

	/* a new run of losses is said again */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	assert_int_equal(ctl_logfile_write(f->lf, line30(6), 30), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	stderr_restore(f);
	assert_int_equal(ctl_logfile_lost(f->lf), 3);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 120);

	e = stderr_said(f);
	assert_int_equal(count_of(e, "lines are being lost"), 2);
	assert_non_null(strstr(e, "namegate: "));
	assert_non_null(strstr(e, f->path));
	assert_non_null(strstr(e, strerror(EFBIG)));
	free(e);
}

/* A device that is always full: every line lost, counted, said once. */
static void
test_dev_full(void **state)
{
	struct fx *f = *state;
	char *e;

	open_lf(f, "/dev/full");
	stderr_capture(f);
	for (int i = 0; i < 5; i++) {
		errno = 0;
		assert_int_equal(ctl_logfile_write(f->lf, "{}\n", 3), -1);
		assert_int_equal(errno, ENOSPC);
	}
	stderr_restore(f);
	assert_int_equal(ctl_logfile_lost(f->lf), 5);
	e = stderr_said(f);
	assert_string_equal(e, "namegate: /dev/full: No space left on device: "
	    "lines are being lost\n");
	free(e);
}

/* unix:PATH: no receiver (lost), a receiver (one datagram a line), a full one (lost). */
static void
test_unix(void **state)
{
	struct fx *f = *state;
	char path[160], buf[256], *e;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint64_t lost;
	ssize_t n;
	int rx, sent = 0;

	snprintf(path, sizeof(path), "unix:%s", f->sock);
	open_lf(f, path);
	assert_string_equal(ctl_logfile_path(f->lf), path);
	stderr_capture(f);
	assert_int_equal(ctl_logfile_write(f->lf, "{\"a\":1}\n", 8), -1);
	assert_int_equal(ctl_logfile_lost(f->lf), 1);

	rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(rx >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", f->sock);
	assert_int_equal(bind(rx, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(ctl_logfile_write(f->lf, "{\"a\":2}\n", 8), 0);
	assert_int_equal(ctl_logfile_write(f->lf, "{\"a\":3}\n", 8), 0);
	n = recv(rx, buf, sizeof(buf), 0);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "{\"a\":2}\n", 8);
	n = recv(rx, buf, sizeof(buf), 0);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "{\"a\":3}\n", 8);

	/* nobody reads: the queue fills, and the writer loses lines rather than wait */
	for (int i = 0; i < 100000 && ctl_logfile_lost(f->lf) == 1; i++)
		if (ctl_logfile_write(f->lf, "{\"a\":4}\n", 8) == 0)
			sent++;
	lost = ctl_logfile_lost(f->lf);
	stderr_restore(f);
	assert_int_equal(lost, 2);
	assert_true(sent > 0);
	for (int i = 0; i < sent; i++)
		assert_int_equal(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), 8);
	assert_int_equal(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), -1);
	close(rx);
	e = stderr_said(f);
	assert_int_equal(count_of(e, "lines are being lost"), 2);	/* successes between */
	free(e);
}

/* "-": stdout, whatever it is; here a pipe, read back. */
static void
test_stdout(void **state)
{
	struct fx *f = *state;
	int p[2], saved;
	char buf[64];
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
	open_lf(f, "-");
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(p[1]);
	assert_int_equal(ctl_logfile_write(f->lf, "{\"to\":\"stdout\"}\n", 16), 0);
	assert_int_equal(ctl_logfile_reopen(f->lf), 0);		/* nothing to reopen */
	ctl_logfile_close(f->lf);
	f->lf = NULL;
	n = read(p[0], buf, sizeof(buf));
	assert_int_equal(n, 16);
	assert_memory_equal(buf, "{\"to\":\"stdout\"}\n", 16);
	assert_int_equal(read(p[0], buf, sizeof(buf)), 0);	/* our descriptor was closed */
	close(p[0]);
}

/* Renamed away: noticed once a second has passed since the last look, not before. */
static void
test_rotation(void **state)
{
	struct fx *f = *state;
	const int64_t t0 = 1000 * NS;
	struct stat st;
	mode_t mask = umask(077);	/* a new file still gets CTL_LOGFILE_MODE */
	char *s;

	open_lf(f, f->path);
	assert_int_equal(ctl_logfile_check(f->lf, t0), 0);
	assert_int_equal(ctl_logfile_write(f->lf, "1\n", 2), 0);
	assert_int_equal(rename(f->path, f->old), 0);
	ctl_logfile_tick(f->lf, t0 + NS / 2);
	assert_int_equal(ctl_logfile_write(f->lf, "2\n", 2), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	ctl_logfile_tick(f->lf, t0 + NS);
	assert_int_equal(ctl_logfile_write(f->lf, "3\n", 2), 0);
	umask(mask);
	s = slurp(f->old);
	assert_string_equal(s, "1\n2\n");
	free(s);
	s = slurp(f->path);
	assert_string_equal(s, "3\n");
	free(s);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, CTL_LOGFILE_MODE);

	/* a clock stepped back looks at once */
	assert_int_equal(unlink(f->path), 0);
	ctl_logfile_tick(f->lf, t0);
	assert_int_equal(ctl_logfile_write(f->lf, "4\n", 2), 0);
	s = slurp(f->path);
	assert_string_equal(s, "4\n");
	free(s);
	assert_int_equal(ctl_logfile_lost(f->lf), 0);
}

static void
test_bad_input(void **state)
{
	struct fx *f = *state;
	char err[256], path[200];
	struct stat st;

	errno = 0;
	assert_null(ctl_logfile_open(NULL, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_logfile_open("", NULL, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(ctl_logfile_open("/nonexistent/dir/log", err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err, "open /nonexistent/dir/log: No such file or directory");
	assert_null(ctl_logfile_open("unix:", err, sizeof(err)));
	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	memcpy(path, "unix:/", 6);
	assert_null(ctl_logfile_open(path, err, sizeof(err)));
	assert_int_equal(errno, ENAMETOOLONG);

	assert_true(ctl_logfile_is_file("/var/log/namegate/events.jsonl"));
	assert_true(ctl_logfile_is_file("events.jsonl"));
	assert_false(ctl_logfile_is_file("-"));
	assert_false(ctl_logfile_is_file("unix:/run/collector.sock"));

	open_lf(f, f->path);
	stderr_capture(f);
	errno = 0;
	assert_int_equal(ctl_logfile_write(f->lf, "no newline", 10), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ctl_logfile_write(f->lf, "", 0), -1);
	stderr_restore(f);
	assert_int_equal(ctl_logfile_lost(f->lf), 2);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_short_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dev_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
