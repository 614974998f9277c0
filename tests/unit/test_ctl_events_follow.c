/*
 * control/events/ctl_events: the reader behind `namegatectl events [--follow]`: a log read
 * whole, and followed across a rename, a removal and a truncation.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_events_fx.h"

static void
test_follow_once(void **state)
{
	struct fx *f = *state;
	struct timespec t = f->t0;
	char *buf = NULL, *want;
	size_t len = 0;
	FILE *out;

	open_log(f, 0, 0);
	assert_int_equal(ctl_events_log_start(f->ev, &t, "0.1.0"), 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 1, 2, NULL, NULL), 0);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(ctl_events_follow(f->path, out, false, NULL), 0);
	fclose(out);
	want = slurp(f->path);
	assert_string_equal(buf, want);
	free(want);
	free(buf);

	out = open_memstream(&buf, &len);
	assert_int_equal(ctl_events_follow(f->old, out, false, NULL), -ENOENT);
	fclose(out);
	free(buf);
}

struct follower {
	pthread_t th;
	const char *path;
	FILE *out;
	int rd;			/* the test reads what was followed here */
	volatile sig_atomic_t stop;
	int rc;
	char got[16384];
	size_t len;
};

static void *
follow_main(void *arg)
{
	struct follower *fl = arg;

	fl->rc = ctl_events_follow(fl->path, fl->out, true, &fl->stop);
	fclose(fl->out);
	return NULL;
}

static void
follow_start(struct follower *fl, const char *path)
{
	int p[2];

	memset(fl, 0, sizeof(*fl));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fl->path = path;
	fl->rd = p[0];
	fl->out = fdopen(p[1], "w");
	assert_non_null(fl->out);
	assert_int_equal(pthread_create(&fl->th, NULL, follow_main, fl), 0);
}

/* Waits until what was followed so far contains want. */
static void
follow_expect(struct follower *fl, const char *want)
{
	int64_t left = WAIT_MS;

	while (strstr(fl->got, want) == NULL) {
		struct pollfd p = { .fd = fl->rd, .events = POLLIN };
		ssize_t n;

		if (left <= 0)
			fail_msg("followed output lacks \"%s\"; has:\n%s", want, fl->got);
		if (poll(&p, 1, 50) == 1) {
			n = read(fl->rd, fl->got + fl->len, sizeof(fl->got) - 1 - fl->len);
			assert_true(n > 0);
			fl->len += (size_t)n;
			fl->got[fl->len] = '\0';
		}
		left -= 50;
	}
}

static void
follow_stop(struct follower *fl)
{
	fl->stop = 1;
	assert_int_equal(pthread_join(fl->th, NULL), 0);
	assert_int_equal(fl->rc, 0);
	close(fl->rd);
}

static void
test_follow(void **state)
{
	struct fx *f = *state;
	struct follower fl;
	struct timespec t;
	int fd;

	open_log(f, 0, 0);
	t = at(f, 0);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 1, 1, NULL, NULL), 0);
	follow_start(&fl, f->path);
	follow_expect(&fl, "\"generation\":1,");		/* what was there */
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 2, 1, NULL, NULL), 0);
	follow_expect(&fl, "\"generation\":2,");		/* appended */

	/* logrotate renames; the writer has not noticed yet, so the line goes to the old file. */
	assert_int_equal(rename(f->path, f->old), 0);
	t = at(f, 500);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 3, 1, NULL, NULL), 0);
	follow_expect(&fl, "\"generation\":3,");
	/* The writer notices and creates a new file; the follower switches to it. */
	t = at(f, 1500);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 4, 1, NULL, NULL), 0);
	follow_expect(&fl, "\"generation\":4,");
	/* A late append to the renamed file is still read during the grace period. */
	fd = open(f->old, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"late\":\"1\"}\n", 13), 13);
	close(fd);
	follow_expect(&fl, "{\"late\":\"1\"}\n");
	t = at(f, 1600);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 5, 1, NULL, NULL), 0);
	follow_expect(&fl, "\"generation\":5,");
	/* Removal: the follower waits, and reads the new file from its start. */
	assert_int_equal(unlink(f->path), 0);
	t = at(f, 3000);
	assert_int_equal(ctl_events_log_policy(f->ev, &t, 6, 1, NULL, NULL), 0);
	follow_expect(&fl, "\"generation\":6,");
	follow_stop(&fl);
	/* Each line exactly once, in order. */
	for (int g = 1; g <= 6; g++) {
		char key[32];
		const char *p;

		snprintf(key, sizeof(key), "\"generation\":%d,", g);
		assert_non_null(p = strstr(fl.got, key));
		assert_null(strstr(p + 1, key));
	}
	assert_int_equal(count_lines(fl.got), 7);
}

/* copytruncate: the file shrinks under the follower, which starts over. */
static void
test_follow_truncate(void **state)
{
	struct fx *f = *state;
	struct follower fl;
	struct timespec t = f->t0;

	open_log(f, 0, 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(ctl_events_log_policy(f->ev, &t, 100 + (uint64_t)i, 1, NULL,
		    NULL), 0);
	follow_start(&fl, f->path);
	follow_expect(&fl, "\"generation\":119,");
	assert_int_equal(truncate(f->path, 0), 0);
	usleep(300 * 1000);		/* the follower sees the shorter file first */
	assert_int_equal(ctl_events_log_stop(f->ev, &t), 0);
	follow_expect(&fl, "\"event\":\"stop\"");
	follow_stop(&fl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_follow_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_truncate, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
