/*
 * A control socket server in a thread with the test's ops, and ways to talk to it: through
 * namegatectl's own client, and raw bytes for what a well-behaved client never sends.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_client.h"
#include "ctl_sock_fixture.h"

static void *
srv_main(void *arg)
{
	struct srv *v = arg;

	while (!atomic_load(&v->stop))
		(void)ctl_sock_poll(v->s, 20);
	return NULL;
}

/* Listening and serving cmds, the thread not started yet. */
static void
srv_open(struct srv *v, const struct ctl_cmd *cmds, size_t n)
{
	char err[256];

	memset(v, 0, sizeof(*v));
	strcpy(v->dir, "/tmp/test_ctl_sock.XXXXXX");
	assert_non_null(mkdtemp(v->dir));
	snprintf(v->path, sizeof(v->path), "%s/ng.sock", v->dir);
	v->s = ctl_sock_open(v->path, TIMEOUT_MS, err, sizeof(err));
	if (v->s == NULL)
		fail_msg("ctl_sock_open: %s", err);
	assert_int_equal(ctl_sock_serve(v->s, cmds, n, NULL), 0);
}

void
srv_start_cmds(struct srv *v, const struct ctl_cmd *cmds, size_t n)
{
	srv_open(v, cmds, n);
	assert_int_equal(pthread_create(&v->th, NULL, srv_main, v), 0);
}

void
srv_start_ro(struct srv *v, const struct ctl_cmd *cmds, size_t n, uint32_t gid)
{
	char err[256];

	srv_open(v, cmds, n);
	snprintf(v->ro_path, sizeof(v->ro_path), "%s/ng-ro.sock", v->dir);
	if (ctl_sock_listen(v->s, v->ro_path, gid, true, err, sizeof(err)) < 0)
		fail_msg("ctl_sock_listen: %s", err);
	assert_int_equal(pthread_create(&v->th, NULL, srv_main, v), 0);
}

void
srv_stop(struct srv *v)
{
	atomic_store(&v->stop, true);
	assert_int_equal(pthread_join(v->th, NULL), 0);
	ctl_sock_counters(v->s, &v->cnt);
	ctl_sock_close(v->s);
	assert_int_equal(access(v->path, F_OK), -1);	/* close removed it */
	assert_true(v->ro_path[0] == '\0' || access(v->ro_path, F_OK) == -1);
	assert_int_equal(rmdir(v->dir), 0);
}

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
raw_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = IO_MS / 1000 };
	int fd;

	assert_true(strlen(path) < sizeof(sun.sun_path));
	strcpy(sun.sun_path, path);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

void
raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/* Everything until EOF, NUL-terminated; the test fails on a read error or timeout. */
char *
raw_read_all(int fd, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	assert_non_null(buf);
	for (;;) {
		ssize_t n;

		if (cap - len < 2048) {
			cap *= 2;
			assert_non_null(buf = realloc(buf, cap));
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_msg("recv: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return buf;
}

/* One raw exchange: bytes out, write side shut if asked, the whole reply back. */
char *
raw_call(const char *path, const void *req, size_t len, bool shut)
{
	int fd = raw_connect(path);
	char *reply;

	raw_send(fd, req, len);
	if (shut)
		shutdown(fd, SHUT_WR);
	reply = raw_read_all(fd, NULL);
	close(fd);
	return reply;
}

void
expect_raw(const char *path, const char *req, const char *want)
{
	char *reply = raw_call(path, req, strlen(req), false);

	if (strcmp(reply, want) != 0)
		fail_msg("request %s: got '%s', want '%s'", req, reply, want);
	free(reply);
}

/* Through namegatectl's client: the reply text, or the error text prefixed "E:". */
void
expect_call(const char *path, const char *cmd, const char *vm, const char *host,
    const char *want)
{
	struct ctl_reply r;
	char err[256], got[8192];

	assert_int_equal(ctl_client_call(path, cmd, vm, host, IO_MS, &r, err, sizeof(err)), 0);
	assert_non_null(r.json);
	if (r.error != NULL)
		snprintf(got, sizeof(got), "E:%s", r.error);
	else
		snprintf(got, sizeof(got), "%s", r.text);
	if (strcmp(got, want) != 0)
		fail_msg("%s %s %s: got '%s', want '%s'", cmd, vm ? vm : "-", host ? host : "-",
		    got, want);
	ctl_reply_free(&r);
}
