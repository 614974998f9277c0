/*
 * Control socket server: one non-blocking listener and up to CTL_SOCK_CLIENTS_MAX clients,
 * each a small state machine (read one request line, then write one reply, then close)
 * with a deadline, all multiplexed by one poll(2) per ctl_sock_poll() call. Nothing here
 * blocks: a client that stalls costs a slot until its deadline, never the event loop.
 * What a request says and what its reply is: ctl_sock_req.c; the listeners:
 * ctl_sock_listen.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "ctl_base.h"
#include "ctl_sock_int.h"

#define CTL_DRAIN_READS	16	/* of 4 KiB, before closing a client */

static void
ctl_conn_drop(struct ctl_sock *s, size_t i)
{
	struct ctl_conn *c = &s->conns[i];

	close(c->fd);
	free(c->resp);
	/* The last one moves into the hole; ctl_sock_poll walks downwards because of it. */
	if (i != s->nconns - 1)
		*c = s->conns[s->nconns - 1];
	s->nconns--;
}

static int ctl_conn_outq(const struct ctl_conn *c);

/*
 * Sends what the socket takes. Returns 1 when the reply is complete, 0 to wait for
 * POLLOUT, -1 when the client is gone.
 */
static int
ctl_conn_write(struct ctl_sock *s, struct ctl_conn *c)
{
	while (c->resp_off < c->resp_len) {
		ssize_t n = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->outq = ctl_conn_outq(c);
				return 0;
			}
			return -1;
		}
		c->resp_off += (size_t)n;
		/* A slow reader is fine as long as it keeps reading. */
		c->deadline = ctl_now_ms() + s->timeout_ms;
	}
	return 1;
}

/* Bytes sent to the client that it has not read yet, or -1. */
static int
ctl_conn_outq(const struct ctl_conn *c)
{
	int n;

	return ioctl(c->fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

/* Reads what arrived. Returns as ctl_conn_write(), 1 meaning a reply is now queued. */
static int
ctl_conn_read(struct ctl_sock *s, struct ctl_conn *c)
{
	char *nl;

	for (;;) {
		size_t room = sizeof(c->req) - c->len;
		ssize_t n;

		if (room == 0) {
			/* The request must fit in req, newline included. */
			s->cnt.oversize++;
			if (!ctl_conn_errorf(c, "bad request: longer than %d bytes",
			    CTL_SOCK_REQ_MAX))
				return -1;
			break;
		}
		n = recv(c->fd, c->req + c->len, room, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (n == 0) {
			/* EOF ends the request as a newline would; nothing at all: gone. */
			if (c->len == 0)
				return -1;
			if (!ctl_conn_request(s, c, c->req, c->len))
				return -1;
			break;
		}
		nl = memchr(c->req + c->len, '\n', (size_t)n);
		c->len += (size_t)n;
		if (nl != NULL) {
			/* Anything after the newline is ignored: one request per connection. */
			if (!ctl_conn_request(s, c, c->req, (size_t)(nl - c->req)))
				return -1;
			break;
		}
	}
	c->deadline = ctl_now_ms() + s->timeout_ms;
	return 1;
}

/*
 * Closing a UNIX socket with unread bytes resets the peer, which can then lose the reply
 * it has not read yet; so what an oversized or chatty client sent is read away first.
 */
static void
ctl_conn_drain(int fd)
{
	char buf[4096];

	for (int i = 0; i < CTL_DRAIN_READS; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
}

/* Moves c along after poll said it is ready; returns 1 when its reply completed. */
static int
ctl_conn_step(struct ctl_sock *s, size_t i, short revents)
{
	struct ctl_conn *c = &s->conns[i];
	int rc;

	if (c->state == CTL_CONN_READ) {
		if (!(revents & (POLLIN | POLLHUP | POLLERR)))
			return 0;
		if ((rc = ctl_conn_read(s, c)) <= 0)
			goto done;
	}
	rc = ctl_conn_write(s, c);
done:
	if (rc == 0)
		return 0;
	if (rc < 0) {
		s->cnt.aborted++;
	} else {
		if (c->is_error)
			s->cnt.errors++;
		else
			s->cnt.replied++;
		ctl_conn_drain(c->fd);
	}
	ctl_conn_drop(s, i);
	return rc > 0;
}

static void
ctl_sock_accept(struct ctl_sock *s, const struct ctl_listener *l)
{
	while (s->nconns < CTL_SOCK_CLIENTS_MAX) {
		struct ucred cred;
		socklen_t credlen = sizeof(cred);
		struct ctl_conn *c;
		int fd;

		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;		/* EAGAIN, or out of descriptors: the backlog waits */
		}
		/* Who connected, as the kernel recorded it at connect(): no reply without it. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0 ||
		    credlen != sizeof(cred)) {
			close(fd);
			s->cnt.aborted++;
			continue;
		}
		s->cnt.accepted++;
		c = &s->conns[s->nconns++];
		c->fd = fd;
		c->readonly = l->readonly;
		c->peer = (struct ctl_peer){ .uid = cred.uid, .gid = cred.gid, .pid = cred.pid };
		c->state = CTL_CONN_READ;
		c->is_error = false;
		c->deadline = ctl_now_ms() + s->timeout_ms;
		c->len = 0;
		c->resp = NULL;
		c->resp_len = c->resp_off = 0;
		c->outq = 0;
	}
}

/* A turn's wait; also for the nextra fds to be readable, saying which in ready[]. */
static int
ctl_sock_sleep(struct ctl_sock *s, int timeout_ms, const int *extra, size_t nextra, bool *ready)
{
	int64_t now = ctl_now_ms();
	int wait = timeout_ms > 0 ? timeout_ms : 0;
	size_t nfds = 0, nconns = s->nconns, first_extra;

	for (size_t i = 0; i < nconns; i++) {
		int64_t left = s->conns[i].deadline - now;

		if (left < wait)
			wait = left > 0 ? (int)left : 0;
		s->pfd[i] = (struct pollfd){ .fd = s->conns[i].fd,
		    .events = s->conns[i].state == CTL_CONN_READ ? POLLIN : POLLOUT };
	}
	nfds = nconns;
	/* Full: leave the listeners alone and let new clients wait in their backlogs. */
	for (size_t i = 0; nconns < CTL_SOCK_CLIENTS_MAX && i < s->nlis; i++)
		s->pfd[nfds++] = (struct pollfd){ .fd = s->lis[i].fd, .events = POLLIN };
	first_extra = nfds;
	for (size_t i = 0; i < nextra; i++)	/* a negative fd is ignored by poll(2) */
		s->pfd[nfds++] = (struct pollfd){ .fd = extra[i], .events = POLLIN };
	if (poll(s->pfd, nfds, wait) < 0)
		return errno == EINTR ? 0 : -errno;
	for (size_t i = 0; i < nextra; i++)
		ready[i] = (s->pfd[first_extra + i].revents & POLLIN) != 0;
	s->polled = true;
	s->polled_listener = first_extra > nconns;
	return 0;
}

/* Serve what the last ctl_sock_sleep() found ready, and drop clients past their deadline. */
static int
ctl_sock_run(struct ctl_sock *s)
{
	size_t nconns = s->nconns;
	int done = 0;
	int64_t now;

	if (!s->polled)
		return 0;
	s->polled = false;
	/* Downwards: ctl_conn_drop() fills slot i from the end, which is already done. */
	for (size_t i = nconns; i-- > 0; )
		if (s->pfd[i].revents != 0)
			done += ctl_conn_step(s, i, s->pfd[i].revents);
	for (size_t l = 0; s->polled_listener && l < s->nlis; l++) {
		size_t first = s->nconns;

		if (!(s->pfd[nconns + l].revents & POLLIN))
			continue;
		ctl_sock_accept(s, &s->lis[l]);
		/* The request is usually there already; answer it without another turn. */
		for (size_t i = s->nconns; i-- > first; )
			done += ctl_conn_step(s, i, POLLIN);
	}
	now = ctl_now_ms();
	for (size_t i = s->nconns; i-- > 0; ) {
		struct ctl_conn *c = &s->conns[i];
		int q;

		if (c->deadline > now)
			continue;
		/*
		 * A UNIX socket polls writable again only once most of its buffer has been
		 * read, so a client reading slowly but steadily shows its progress here.
		 */
		if (c->state == CTL_CONN_WRITE && (q = ctl_conn_outq(c)) >= 0 && q < c->outq) {
			c->outq = q;
			c->deadline = now + s->timeout_ms;
			continue;
		}
		s->cnt.timeouts++;
		ctl_conn_drop(s, i);
	}
	return done;
}

int
ctl_sock_poll(struct ctl_sock *s, int timeout_ms)
{
	int rc = ctl_sock_sleep(s, timeout_ms, NULL, 0, NULL);

	return rc < 0 ? rc : ctl_sock_run(s);
}

int
ctl_sock_wait(struct ctl_sock *s, int timeout_ms, const int *fds, size_t nfds, bool *ready)
{
	if (nfds > CTL_SOCK_WAIT_FDS)
		return -EINVAL;
	for (size_t i = 0; i < nfds; i++)
		ready[i] = false;
	return ctl_sock_sleep(s, timeout_ms, fds, nfds, ready);
}

int
ctl_sock_serve_ready(struct ctl_sock *s)
{
	return ctl_sock_run(s);
}

void
ctl_sock_counters(const struct ctl_sock *s, struct ctl_sock_counters *out)
{
	*out = s->cnt;
}

void
ctl_sock_close(struct ctl_sock *s)
{
	if (s == NULL)
		return;
	while (s->nconns > 0)
		ctl_conn_drop(s, s->nconns - 1);
	for (size_t i = 0; i < s->nlis; i++)
		ctl_listener_close(&s->lis[i]);
	free(s);
}
