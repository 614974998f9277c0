/*
 * namegatectl ha --watch (ctl_ha_watch.h): a pidfd on the daemon, its state in /proc,
 * and "ha" asked with a short timeout, so that no look at the daemon waits long: the
 * watcher's own loop never becomes the stall it is there to catch.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>	// IWYU pragma: keep: SYS_pidfd_open, defined in its bits/
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_base.h"
#include "ctl_cli.h"
#include "ctl_client.h"
#include "ctl_ha.h"
#include "ctl_ha_watch.h"

bool
ctl_ha_watch_decide(struct ctl_ha_watch *w, const struct ctl_ha_watch_seen *s)
{
	char why[sizeof(w->why)] = "";

	if (s->gone)
		snprintf(why, sizeof(why), "namegate is not running");
	else if (s->stopped)
		snprintf(why, sizeof(why), "namegate is stopped (SIGSTOP or a tracer)");
	else if (s->answered && s->beat_ms > w->bound_ms)
		snprintf(why, sizeof(why), "stalled: the workers' last heartbeat was %lld ms ago "
		    "(bound %lld)", (long long)s->beat_ms, (long long)w->bound_ms);
	else if (!s->answered && s->silent_ms > w->bound_ms)
		snprintf(why, sizeof(why), "namegate has not answered for %lld ms (bound %lld)",
		    (long long)s->silent_ms, (long long)w->bound_ms);
	if (why[0] != '\0') {
		if (w->fault)
			return false;
		w->fault = true;
		memcpy(w->why, why, sizeof(why));
		return true;
	}
	if (w->fault && s->answered && s->healthy && s->beat_ms >= 0) {
		w->fault = false;
		return true;
	}
	return false;
}

pid_t
ctl_ha_watch_peer(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t pid = -1;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path) ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
		pid = cred.pid;
	else if (errno == EAGAIN)
		pid = 0;	/* a full backlog: someone listens, busy or stopped */
	close(fd);
	return pid;
}

int
ctl_ha_watch_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);	/* glibc 2.36 has no wrapper yet */
}

bool
ctl_ha_watch_exited(int pidfd, int ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

bool
ctl_ha_watch_stopped(pid_t pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "PID (COMM) S ...": COMM may hold ") ", so the state follows the last ')' */
	if ((rp = strrchr(buf, ')')) == NULL || rp[1] != ' ')
		return false;
	return rp[2] == 'T' || rp[2] == 't';
}

/* One "ha" request into s: answered, healthy, the heartbeat's age. */
static void
ctl_ha_watch_ask(const char *socket, struct ctl_ha_watch_seen *s)
{
	const char *const kv[] = { "cmd", "ha", NULL };
	struct json_object *v;
	struct ctl_reply r;
	char err[256];
	int rc = ctl_client_request(socket, kv, CTL_HA_WATCH_REPLY_MS, &r, err, sizeof(err));

	if (rc != 0) {
		s->gone = rc == -ENOENT || rc == -ECONNREFUSED;
		return;
	}
	s->answered = true;
	s->healthy = r.error == NULL && json_object_object_get_ex(r.json, "healthy", &v) &&
	    json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	if (r.error == NULL && json_object_object_get_ex(r.json, "heartbeat_age_ms", &v))
		s->beat_ms = json_object_get_int64(v);
	ctl_reply_free(&r);
}

/*
 * Whether the file says 0 (may lead) now: a watcher restarted beside a healthy master
 * goes on from there instead of writing 1 first, which would hand the lead over.
 */
static bool
ctl_ha_watch_clear(const char *file)
{
	char buf[8];
	ssize_t n;
	int fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n >= 1 && buf[0] == '0' && (n == 1 || buf[1] == '\n');
}

/*
 * One look at the daemon into s, which waits CTL_HA_WATCH_POLL_MS (the pidfd's poll, or a
 * sleep without one) and at most one reply: the pid and pidfd found when none is held.
 */
static void
ctl_ha_watch_look(const char *socket, pid_t *pid, int *pidfd, struct ctl_ha_watch_seen *s)
{
	if (*pidfd < 0 && (*pid = ctl_ha_watch_peer(socket)) > 0 &&
	    (*pidfd = ctl_ha_watch_pidfd(*pid)) < 0 && errno != ENOSYS)
		*pid = -1;	/* gone since it listened: its socket outlives it */
	if (*pidfd >= 0 && ctl_ha_watch_exited(*pidfd, CTL_HA_WATCH_POLL_MS))
		s->gone = true;
	else if (*pidfd < 0)	/* none, or ENOSYS: polling alone */
		(void)poll(NULL, 0, CTL_HA_WATCH_POLL_MS);
	if (s->gone || *pid < 0)
		s->gone = true;
	else if (*pid > 0 && ctl_ha_watch_stopped(*pid))
		s->stopped = true;
	else			/* 0: a full backlog, the pid not known yet */
		ctl_ha_watch_ask(socket, s);
}

static int
ctl_ha_watch_write(const char *file, const struct ctl_ha_watch *w)
{
	char err[512];

	if (ctl_ha_track_write(file, w->fault, err, sizeof(err)) != 0) {
		fprintf(stderr, "namegatectl: ha --watch: %s\n", err);
		return -1;
	}
	if (w->fault)
		fprintf(stderr, "namegatectl: ha --watch: fault: %s\n", w->why);
	else
		fprintf(stderr, "namegatectl: ha --watch: clear: namegate answers healthy\n");
	return 0;
}

int
ctl_ha_watch_run(const char *socket, const char *file, int64_t bound_ms)
{
	struct ctl_ha_watch w = { .bound_ms = bound_ms, .fault = !ctl_ha_watch_clear(file) };
	int64_t last = ctl_now_ms(), silent = 0, now;
	pid_t pid = -1;
	int pidfd = -1;

	snprintf(w.why, sizeof(w.why), "no healthy answer yet from %s", socket);
	if (w.fault && ctl_ha_watch_write(file, &w) != 0)
		return CTL_EXIT_ERROR;
	for (;;) {
		struct ctl_ha_watch_seen s = { .beat_ms = -1 };

		ctl_ha_watch_look(socket, &pid, &pidfd, &s);
		/*
		 * Silence counts the watcher's time, not the machine's: a round that took longer
		 * than a poll and a reply can was the watcher's own wait for the CPU, and counts
		 * as one round.
		 */
		now = ctl_now_ms();
		if (s.answered || s.gone || s.stopped)
			silent = 0;
		else if (now - last > CTL_HA_WATCH_POLL_MS + CTL_HA_WATCH_REPLY_MS)
			silent += CTL_HA_WATCH_POLL_MS + CTL_HA_WATCH_REPLY_MS;
		else
			silent += now - last;
		last = now;
		s.silent_ms = silent;
		if (s.gone && pidfd >= 0)
			close(pidfd);
		if (s.gone)
			pidfd = pid = -1;
		if (ctl_ha_watch_decide(&w, &s) && ctl_ha_watch_write(file, &w) != 0) {
			if (pidfd >= 0)
				close(pidfd);
			return CTL_EXIT_ERROR;
		}
	}
}
