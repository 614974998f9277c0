/*
 * The sync stream's two threads (ctl_ha_sync.h): the sender connects to the peer and
 * writes what the event loop queues, timing each record until the peer acknowledges it;
 * the listener accepts the peer's stream (a newer connection replaces the one before once
 * its handshake proved the key: the peer restarted), queues its records for the event loop and acknowledges what the event
 * loop installed. A frame that fails its check drops the connection, counted.
 */
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_base.h"
#include "ctl_ha_sync_int.h"

#define HA_POLL_MS		100	/* the threads' longest wait: stop */
#define HA_CONNECT_MS		1000
#define HA_RETRY_MS		200	/* between attempts to reach the peer */
#define HA_HANDSHAKE_MS		2000
#define HA_SEND_TIMEOUT_S	2	/* a peer that takes nothing for this long is dropped */
#define HA_DEAD_PEER_S		4	/* a peer that answers nothing, not even TCP's probes */
#define HA_BATCH		64	/* records sealed per write */

struct ha_conn {
	int fd;
	struct ctl_ha_chan ch;
	uint8_t rbuf[4 * CTL_HA_WIRE_MAX];
	size_t rlen;
};

typedef bool ha_rec_fn(void *arg, const struct ctl_ha_rec *r);

static double
ha_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
ha_write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A peer that vanishes (powered off, its link cut) sends no FIN: with nothing to send, a
 * connection would look open for good, and the peer's return would find this side still
 * holding the old one. Keepalives (an idle second, then a probe a second, three unanswered)
 * and the user timeout for data in flight end it within about HA_DEAD_PEER_S.
 */
static void
ha_sock_opts(int fd)
{
	struct timeval tv = { .tv_sec = HA_SEND_TIMEOUT_S };
	unsigned int user_ms = HA_DEAD_PEER_S * 1000;
	int one = 1, probes = 3;

	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

/*
 * Reads what c->fd has and takes each whole frame: a handshake's reply written back, a
 * record to fn. -1 when the connection must go: closed, a frame refused (*refused), fn
 * said no, or a write failed.
 */
static int
ha_conn_read(struct ha_conn *c, ha_rec_fn *fn, void *arg, bool *refused)
{
	uint8_t out[CTL_HA_WIRE_MAX], plain[CTL_HA_REC_MAX];
	struct ctl_ha_rec r;
	size_t flen, olen, at = 0;
	ssize_t n;

	n = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		c->rlen += (size_t)n;
	for (;;) {
		enum ctl_ha_frame st = ctl_ha_frame_next(c->rbuf + at, c->rlen - at, &flen);

		if (st == CTL_HA_FRAME_MORE)
			break;
		if (st == CTL_HA_FRAME_BAD) {
			*refused = true;
			return -1;
		}
		switch (ctl_ha_chan_recv(&c->ch, c->rbuf + at, flen, out, &olen, &r, plain)) {
		case CTL_HA_CHAN_FAIL:
			*refused = true;
			return -1;
		case CTL_HA_CHAN_NONE:
			if (olen > 0 && ha_write_all(c->fd, out, olen) != 0)
				return -1;
			break;
		case CTL_HA_CHAN_RECORD:
			if (!fn(arg, &r))
				return -1;
			break;
		}
		at += flen;
	}
	memmove(c->rbuf, c->rbuf + at, c->rlen - at);
	c->rlen -= at;
	return 0;
}

/* Sleeps up to ms or until efd is written (reset). */
static void
ha_nap(int efd, int ms)
{
	struct pollfd p = { .fd = efd, .events = POLLIN };
	eventfd_t v;

	if (poll(&p, 1, ms) > 0)
		(void)eventfd_read(efd, &v);
}

static int
ha_connect(const char *peer)
{
	struct pollfd p = { .events = POLLOUT };
	struct sockaddr_storage sa;
	unsigned int salen;
	socklen_t elen = sizeof(int);
	char err[128];
	int fd, e = 0;

	if (ctl_ha_sync_addr(peer, &sa, &salen, err, sizeof(err)) != 0 ||
	    (fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -1;
	p.fd = fd;
	if ((connect(fd, (struct sockaddr *)&sa, salen) != 0 && errno != EINPROGRESS) ||
	    poll(&p, 1, HA_CONNECT_MS) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0 || e != 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	ha_sock_opts(fd);
	return fd;
}

static bool
ha_no_record(void *arg, const struct ctl_ha_rec *r)
{
	(void)arg;
	(void)r;
	return false;		/* nothing comes before the channel is open */
}

/* Connects and shakes hands: 0 with c open. */
static int
ha_sender_open(struct ctl_ha_sync *s, struct ha_conn *c)
{
	uint8_t hello[CTL_HA_WIRE_MAX];
	double until = ha_now() + HA_HANDSHAKE_MS / 1e3;
	bool refused = false;
	size_t n;

	c->rlen = 0;
	if ((c->fd = ha_connect(s->peer)) < 0)
		return -1;
	n = ctl_ha_chan_init(&c->ch, s->psk, true, hello);
	if (n > 0 && ha_write_all(c->fd, hello, n) == 0) {
		while (!ctl_ha_chan_open(&c->ch) && ha_now() < until && !atomic_load(&s->stop)) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };

			if (poll(&p, 1, HA_POLL_MS) > 0 &&
			    ha_conn_read(c, ha_no_record, NULL, &refused) != 0)
				break;
		}
	}
	if (refused) {
		pthread_mutex_lock(&s->lock);
		s->refused++;
		pthread_mutex_unlock(&s->lock);
	}
	if (ctl_ha_chan_open(&c->ch))
		return 0;
	close(c->fd);
	c->fd = -1;
	return -1;
}

struct ha_sender {
	struct ctl_ha_sync *s;
	double *sent_at;		/* by record number, modulo CTL_HA_SENT_RING */
	uint64_t seq, acked;
};

static bool
ha_sender_ack(void *arg, const struct ctl_ha_rec *r)
{
	struct ha_sender *h = arg;
	double now = ha_now();

	if (r->type != CTL_HA_REC_ACK || r->seq > h->seq)
		return false;		/* only acks come back, of what was sent */
	pthread_mutex_lock(&h->s->lock);
	for (uint64_t i = h->acked + 1; i <= r->seq; i++)
		if (h->seq - i < CTL_HA_SENT_RING)
			ctl_ha_sync_lag(h->s, now - h->sent_at[i % CTL_HA_SENT_RING]);
	if (r->seq > h->acked)
		h->acked = r->seq;
	h->s->acked = h->acked;
	pthread_mutex_unlock(&h->s->lock);
	return true;
}

/* Seals and writes what is queued. -1 when the connection must go. */
static int
ha_sender_write(struct ha_sender *h, struct ha_conn *c)
{
	static _Thread_local struct ctl_ha_sync_item items[HA_BATCH];
	static _Thread_local uint8_t wbuf[HA_BATCH * CTL_HA_WIRE_MAX];
	struct ctl_ha_sync *s = h->s;
	bool open, wake;
	size_t k, w;

	do {
		pthread_mutex_lock(&s->lock);
		open = s->out_open;
		for (k = 0; k < HA_BATCH && ctl_ha_syncq_pop(&s->out, &items[k]); k++)
			;
		pthread_mutex_unlock(&s->lock);
		if (!open)
			return -1;	/* the queue overflowed: a resync on a new connection */
		w = 0;
		for (size_t i = 0; i < k; i++) {
			size_t n = ctl_ha_chan_seal(&c->ch, &items[i].r, wbuf + w);

			if (n == 0)
				continue;	/* nothing a peer would take: not numbered */
			w += n;
			h->sent_at[++h->seq % CTL_HA_SENT_RING] = ha_now();
		}
		if (w > 0 && ha_write_all(c->fd, wbuf, w) != 0)
			return -1;
		pthread_mutex_lock(&s->lock);
		s->sent = h->seq;
		pthread_mutex_unlock(&s->lock);
	} while (k == HA_BATCH);
	pthread_mutex_lock(&s->lock);
	wake = s->want_room;		/* all taken: a resync's next step */
	s->want_room = false;
	pthread_mutex_unlock(&s->lock);
	if (wake && s->wake != NULL)
		s->wake(s->arg);
	return 0;
}

static void
ha_sender_run(struct ctl_ha_sync *s, struct ha_conn *c, double *sent_at)
{
	struct ha_sender h = { .s = s, .sent_at = sent_at };
	bool refused = false;

	pthread_mutex_lock(&s->lock);
	s->out.len = 0;			/* superseded by the resync */
	s->out_open = true;
	s->out_open_ms = ctl_now_ms();
	s->resync_wanted = true;
	s->connects++;
	s->sent = s->acked = 0;
	pthread_mutex_unlock(&s->lock);
	if (s->wake != NULL)
		s->wake(s->arg);
	while (!atomic_load(&s->stop)) {
		struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
			{ .fd = s->out_efd, .events = POLLIN } };
		eventfd_t v;

		if (poll(p, 2, HA_POLL_MS) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			(void)eventfd_read(s->out_efd, &v);
		if (ha_sender_write(&h, c) != 0)
			break;
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    ha_conn_read(c, ha_sender_ack, &h, &refused) != 0)
			break;
	}
	pthread_mutex_lock(&s->lock);
	s->out_open = false;
	s->out.len = 0;
	s->refused += refused;
	pthread_mutex_unlock(&s->lock);
}

void *
ctl_ha_sync_sender(void *arg)
{
	struct ctl_ha_sync *s = arg;
	double *sent_at = calloc(CTL_HA_SENT_RING, sizeof(double));
	struct ha_conn *c = calloc(1, sizeof(*c));

	while (sent_at != NULL && c != NULL && !atomic_load(&s->stop)) {
		if (ha_sender_open(s, c) != 0) {
			ha_nap(s->out_efd, HA_RETRY_MS);
			continue;
		}
		ha_sender_run(s, c, sent_at);
		close(c->fd);
		ctl_ha_chan_wipe(&c->ch);
	}
	free(sent_at);
	free(c);
	return NULL;
}

/*
 * The listener's connections: the stream (cur) and one being accepted (pend), which
 * replaces it only once its handshake proved the key, so that a connection without it
 * (a recorded session replayed) never disturbs the stream.
 */
struct ha_listener {
	struct ctl_ha_sync *s;
	struct ha_conn c[2];		/* cur and pend, by index */
	unsigned int cur;
	uint64_t acked;			/* the last ACK sent on cur */
	bool any;			/* records queued this read: wake the event loop */
};

static void
ha_listener_close(struct ha_listener *l, unsigned int i)
{
	if (l->c[i].fd >= 0)
		close(l->c[i].fd);
	l->c[i].fd = -1;
	ctl_ha_chan_wipe(&l->c[i].ch);
	if (i == l->cur) {
		pthread_mutex_lock(&l->s->lock);
		l->s->in_open = false;
		pthread_mutex_unlock(&l->s->lock);
	}
}

/* The pending connection proved the key: it is the stream now (the peer restarted). */
static void
ha_listener_promote(struct ha_listener *l)
{
	ha_listener_close(l, l->cur);
	l->cur ^= 1;
	l->acked = 0;
	pthread_mutex_lock(&l->s->lock);
	l->s->in_conn++;
	l->s->in.len = 0;
	l->s->received = l->s->applied = 0;
	l->s->in_end = 0;
	l->s->in_last_ms = ctl_now_ms();
	l->s->in_open = true;
	pthread_mutex_unlock(&l->s->lock);
}

struct ha_listener_read {
	struct ha_listener *l;
	unsigned int i;			/* the connection read */
};

static bool
ha_listener_record(void *arg, const struct ctl_ha_rec *r)
{
	struct ha_listener_read *rd = arg;
	struct ha_listener *l = rd->l;
	struct ctl_ha_sync_item it = { .r = *r };
	bool ok;

	if (r->type == CTL_HA_REC_ACK)
		return false;		/* the sender sends none */
	if (rd->i != l->cur) {		/* its first record: open since its CONFIRM */
		ha_listener_promote(l);
		rd->i = l->cur;
	}
	memcpy(it.vm, r->vm != NULL ? r->vm : "", r->vm_len);
	memcpy(it.name, r->name != NULL ? r->name : "", r->name_len);
	pthread_mutex_lock(&l->s->lock);
	if ((ok = ctl_ha_syncq_push(&l->s->in, &it))) {
		l->s->received++;
		l->s->in_last_ms = ctl_now_ms();
		if (r->type == CTL_HA_REC_RESYNC_BEGIN)
			l->s->in_end = 0;
		else if (r->type == CTL_HA_REC_RESYNC_END)
			l->s->in_end = l->s->received;
	} else
		l->s->dropped++;	/* the peer reconnects and resyncs */
	pthread_mutex_unlock(&l->s->lock);
	l->any = true;
	return ok;
}

static void
ha_listener_accept(struct ha_listener *l)
{
	uint8_t none[CTL_HA_WIRE_MAX];
	unsigned int p = l->cur ^ 1;
	int fd = accept4(l->s->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	ha_listener_close(l, p);	/* a newer attempt replaces an unfinished one */
	ha_sock_opts(fd);
	l->c[p].fd = fd;
	l->c[p].rlen = 0;
	ctl_ha_chan_init(&l->c[p].ch, l->s->psk, false, none);
	pthread_mutex_lock(&l->s->lock);
	l->s->accepts++;
	pthread_mutex_unlock(&l->s->lock);
}

/* Acknowledges on the stream what the event loop installed since the last ACK. */
static int
ha_listener_ack(struct ha_listener *l)
{
	struct ctl_ha_rec r = { .type = CTL_HA_REC_ACK };
	struct ha_conn *c = &l->c[l->cur];
	uint8_t f[CTL_HA_WIRE_MAX];
	size_t n;

	pthread_mutex_lock(&l->s->lock);
	r.seq = l->s->applied;
	pthread_mutex_unlock(&l->s->lock);
	if (c->fd < 0 || r.seq <= l->acked || !ctl_ha_chan_open(&c->ch))
		return 0;
	if ((n = ctl_ha_chan_seal(&c->ch, &r, f)) == 0 || ha_write_all(c->fd, f, n) != 0)
		return -1;
	l->acked = r.seq;
	return 0;
}

/* Whether the event loop asked for the stream to go (ctl_ha_sync_redo()). */
static bool
ha_listener_redo(struct ha_listener *l)
{
	bool redo;

	pthread_mutex_lock(&l->s->lock);
	redo = l->s->redo;
	l->s->redo = false;
	pthread_mutex_unlock(&l->s->lock);
	return redo;
}

/* Reads connection i; a pending one that completed its handshake becomes the stream. */
static void
ha_listener_read(struct ha_listener *l, unsigned int i)
{
	struct ha_listener_read rd = { .l = l, .i = i };
	bool refused = false;

	if (ha_conn_read(&l->c[i], ha_listener_record, &rd, &refused) != 0) {
		pthread_mutex_lock(&l->s->lock);
		l->s->refused += refused;
		pthread_mutex_unlock(&l->s->lock);
		ha_listener_close(l, rd.i);
		return;
	}
	if (rd.i != l->cur && ctl_ha_chan_open(&l->c[rd.i].ch))
		ha_listener_promote(l);
}

void *
ctl_ha_sync_listener(void *arg)
{
	struct ha_listener *l = calloc(1, sizeof(*l));
	struct ctl_ha_sync *s = arg;

	if (l == NULL)
		return NULL;
	l->s = s;
	l->c[0].fd = l->c[1].fd = -1;
	while (!atomic_load(&s->stop)) {
		struct pollfd p[4] = { { .fd = s->lfd, .events = POLLIN },
			{ .fd = s->ack_efd, .events = POLLIN },
			{ .fd = l->c[0].fd, .events = POLLIN },
			{ .fd = l->c[1].fd, .events = POLLIN } };	/* fd -1: ignored */
		eventfd_t v;

		if (poll(p, 4, HA_POLL_MS) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			ha_listener_accept(l);
		if ((p[1].revents & POLLIN) && eventfd_read(s->ack_efd, &v) == 0 &&
		    (ha_listener_redo(l) || ha_listener_ack(l) != 0))
			ha_listener_close(l, l->cur);
		l->any = false;
		for (unsigned int i = 0; i < 2; i++)
			if (l->c[i].fd >= 0 && (p[2 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				ha_listener_read(l, i);
		if (l->any && s->wake != NULL)
			s->wake(s->arg);
	}
	ha_listener_close(l, 0);
	ha_listener_close(l, 1);
	free(l);
	return NULL;
}
