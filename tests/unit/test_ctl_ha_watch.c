/*
 * namegatectl ha --watch's decisions (a daemon gone or stopped faults at once, a heartbeat
 * or a silence past the bound faults, only a healthy answer clears) and its looks at a
 * real process: the pidfd that says a child exited, /proc that says it is stopped, and the
 * control socket's peer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_ha_watch.h"

#define BOUND	2000

static const struct ctl_ha_watch_seen healthy = {
	.answered = true, .healthy = true, .beat_ms = 5,
};

static void
test_decide(void **state)
{
	static const struct {
		const char *what;
		bool fault;			/* the value before */
		struct ctl_ha_watch_seen s;
		bool change, after;
	} cases[] = {
		{ "healthy clears", true, { .answered = true, .healthy = true, .beat_ms = 5 },
		    true, false },
		{ "healthy keeps clear", false, { .answered = true, .healthy = true, .beat_ms = 5 },
		    false, false },
		{ "gone faults at once", false, { .gone = true }, true, true },
		{ "gone keeps a fault", true, { .gone = true }, false, true },
		{ "stopped faults at once", false, { .stopped = true, .beat_ms = -1 }, true, true },
		{ "heartbeat past the bound", false, { .answered = true, .healthy = false,
		    .beat_ms = BOUND + 1 }, true, true },
		{ "heartbeat at the bound", false, { .answered = true, .healthy = false,
		    .beat_ms = BOUND }, false, false },
		{ "healthy but a heartbeat past the bound", true, { .answered = true,
		    .healthy = true, .beat_ms = BOUND + 1 }, false, true },
		{ "silent past the bound", false, { .silent_ms = BOUND + 1, .beat_ms = -1 },
		    true, true },
		{ "silent within the bound", false, { .silent_ms = BOUND, .beat_ms = -1 },
		    false, false },
		{ "starting: the fault stays", true, { .answered = true, .healthy = false,
		    .beat_ms = -1 }, false, true },
		{ "behind on sync: the check's call", false, { .answered = true,
		    .healthy = false, .beat_ms = 3 }, false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctl_ha_watch w = { .bound_ms = BOUND, .fault = cases[i].fault };
		bool change = ctl_ha_watch_decide(&w, &cases[i].s);

		if (change != cases[i].change || w.fault != cases[i].after)
			fail_msg("%s: change %d fault %d", cases[i].what, change, w.fault);
		if (cases[i].change && w.fault)
			assert_true(w.why[0] != '\0');
	}
}

/* A crash: the pidfd says so while the silence is still nothing, and healthy clears. */
static void
test_crash_then_new_daemon(void **state)
{
	struct ctl_ha_watch w = { .bound_ms = BOUND, .fault = false };
	struct ctl_ha_watch_seen s = { .gone = true };
	pid_t pid;
	int fd;

	(void)state;
	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	assert_true((fd = ctl_ha_watch_pidfd(pid)) >= 0);
	assert_false(ctl_ha_watch_exited(fd, 0));
	assert_false(ctl_ha_watch_stopped(pid));
	assert_int_equal(kill(pid, SIGSTOP), 0);
	assert_int_equal(waitpid(pid, NULL, WUNTRACED), pid);
	assert_true(ctl_ha_watch_stopped(pid));
	assert_false(ctl_ha_watch_exited(fd, 0));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_true(ctl_ha_watch_exited(fd, 10000));	/* wakes at the exit */
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(fd);
	assert_true(ctl_ha_watch_decide(&w, &s));
	assert_true(w.fault);
	assert_non_null(strstr(w.why, "not running"));
	assert_true(ctl_ha_watch_decide(&w, &healthy));
	assert_false(w.fault);
}

/*
 * A stand-in daemon whose control socket outlives it: it listens (so SO_PEERCRED names
 * it) and a child of its own answers "ha" healthy on that socket, on and on. Only the
 * watcher's looks at the process itself, the pidfd and /proc, can see it stop or go.
 */
static pid_t
daemon_start(const char *path, pid_t *server)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int p[2], fd, c;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	if ((pid = fork()) == 0) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0)
			_exit(1);
		if ((*server = fork()) == 0) {
			static const char reply[] = "{\"healthy\":true,\"heartbeat_age_ms\":1}\n";
			char buf[256];

			signal(SIGPIPE, SIG_IGN);	/* the watcher's SO_PEERCRED look hangs up */
			for (;;) {
				if ((c = accept(fd, NULL, NULL)) < 0)
					continue;
				(void)read(c, buf, sizeof(buf));	/* one short line */
				(void)write(c, reply, sizeof(reply) - 1);
				close(c);
			}
		}
		(void)write(p[1], server, sizeof(*server));
		for (;;)
			pause();
	}
	assert_true(pid > 0);
	close(p[1]);
	assert_int_equal(read(p[0], server, sizeof(*server)), (ssize_t)sizeof(*server));
	close(p[0]);
	return pid;
}

static pid_t kids[3];		/* test_watcher's: killed after it, passed or failed */

static int
kill_kids(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGCONT);
			kill(kids[i], SIGKILL);
			kids[i] = 0;
		}
	while (waitpid(-1, NULL, 0) > 0)
		;
	return 0;
}

/* Waits, up to a cap, for file to say want ("0" or "1"). */
static bool
file_says(const char *file, char want)
{
	for (int i = 0; i < 1000; i++) {
		char buf[4] = "";
		FILE *f = fopen(file, "r");

		if (f != NULL) {
			if (fgets(buf, sizeof(buf), f) == NULL)
				buf[0] = '\0';
			fclose(f);
		}
		if (buf[0] == want && buf[1] == '\n')
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The watcher itself (ctl_ha_watch_run()) at a bound no test reaches: clear once the
 * daemon answers healthy; 1 while it is stopped though its socket answers healthy, 0
 * again once continued; 1 once it exits, and it stays 1 though the socket still answers.
 */
static void
test_watcher(void **state)
{
	char dir[] = "/tmp/ng-watch-XXXXXX", sock[64], file[64], buf[4] = "";
	pid_t d, server, w;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s", dir);
	snprintf(file, sizeof(file), "%s/watch", dir);
	kids[0] = d = daemon_start(sock, &server);
	kids[1] = server;
	if ((w = fork()) == 0)
		_exit(ctl_ha_watch_run(sock, file, 60000));
	assert_true(w > 0);
	kids[2] = w;
	assert_true(file_says(file, '0'));
	assert_int_equal(kill(d, SIGSTOP), 0);
	assert_true(file_says(file, '1'));
	assert_int_equal(kill(d, SIGCONT), 0);
	assert_true(file_says(file, '0'));
	assert_int_equal(kill(d, SIGKILL), 0);
	assert_int_equal(waitpid(d, NULL, 0), d);
	assert_true(file_says(file, '1'));
	assert_true(ctl_ha_watch_peer(sock) > 0);	/* the socket lives on */
	usleep(500000);					/* several of the watcher's rounds */
	assert_non_null(f = fopen(file, "r"));
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "1\n");
	kids[0] = 0;
	(void)kill_kids(NULL);
	unlink(sock);
	unlink(file);
	rmdir(dir);
}

/* The daemon's pid from its control socket. */
static void
test_peer(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/ng-watch-XXXXXX";
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	assert_int_equal(ctl_ha_watch_peer(sa.sun_path), -1);		/* none yet */
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(ctl_ha_watch_peer(sa.sun_path), getpid());
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_crash_then_new_daemon),
		cmocka_unit_test(test_peer),
		cmocka_unit_test_teardown(test_watcher, kill_kids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
