/*
 * The sync stream's event-loop side (ctl_ha_sync.h): the two queues the threads meet it
 * in, the addresses, the stream's state for namegatectl ha and its metrics.
 */
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium/utils.h>

#include "ctl_base.h"
#include "ctl_ha_sync_int.h"

static const double ctl_ha_lag_le[] = {
#define X(v) v,
	CTL_HA_LAG_BUCKETS(X)
#undef X
};
_Static_assert(sizeof(ctl_ha_lag_le) / sizeof(ctl_ha_lag_le[0]) <
    sizeof(((struct ctl_ha_sync *)0)->lag_bucket) / sizeof(uint64_t), "a count per bucket");

bool
ctl_ha_syncq_push(struct ctl_ha_syncq *q, const struct ctl_ha_sync_item *it)
{
	if (q->len == CTL_HA_SYNC_QUEUE)
		return false;
	q->q[(q->head + q->len++) % CTL_HA_SYNC_QUEUE] = *it;
	return true;
}

bool
ctl_ha_syncq_pop(struct ctl_ha_syncq *q, struct ctl_ha_sync_item *it)
{
	if (q->len == 0)
		return false;
	*it = q->q[q->head];
	q->head = (q->head + 1) % CTL_HA_SYNC_QUEUE;
	q->len--;
	it->r.vm = it->vm;
	it->r.name = it->name;
	return true;
}

void
ctl_ha_sync_lag(struct ctl_ha_sync *s, double lag)
{
	size_t i = 0;

	while (i < sizeof(ctl_ha_lag_le) / sizeof(ctl_ha_lag_le[0]) && lag > ctl_ha_lag_le[i])
		i++;
	s->lag_bucket[i]++;
	s->lag_count++;
	s->lag_sum += lag;
	s->lag_last = lag;
}

int
ctl_ha_sync_addr(const char *text, struct sockaddr_storage *sa, unsigned int *salen, char *err,
    size_t errlen)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(text, ':');
	size_t hlen = colon != NULL ? (size_t)(colon - text) : 0;
	char *end;
	unsigned long port;
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

	memset(sa, 0, sizeof(*sa));
	if (colon == NULL || hlen == 0 || hlen >= sizeof(host))
		goto bad;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port == 0 || port > 65535)
		goto bad;
	if (text[0] == '[') {
		if (hlen < 3 || text[hlen - 1] != ']')
			goto bad;
		memcpy(host, text + 1, hlen - 2);
		host[hlen - 2] = '\0';
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*salen = sizeof(*s6);
		return 0;
	}
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		goto bad;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*salen = sizeof(*s4);
	return 0;
bad:
	snprintf(err, errlen, "\"%s\" is not ADDR:PORT (an IPv4 address, or [IPv6])", text);
	return -1;
}

/* The listener's socket, bound and listening. -1 with a reason in err. */
static int
ctl_ha_sync_bind(const char *text, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	unsigned int salen;
	int fd, one = 1;

	if (ctl_ha_sync_addr(text, &sa, &salen, err, errlen) != 0)
		return -1;
	if ((fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, 4) != 0) {
		snprintf(err, errlen, "%s: %s", text, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

struct ctl_ha_sync *
ctl_ha_sync_start(const struct ctl_ha_sync_conf *conf, char *err, size_t errlen)
{
	struct ctl_ha_sync *s = calloc(1, sizeof(*s));
	struct sockaddr_storage sa;
	unsigned int salen;

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->out_efd = s->ack_efd = s->lfd = -1;
	s->lag_last = -1;
	memcpy(s->psk, conf->psk, sizeof(s->psk));
	if (conf->key_file != NULL && ctl_ha_psk_read(conf->key_file, s->psk, err, errlen) != 0)
		goto fail;
	s->wake = conf->wake;
	s->arg = conf->arg;
	if ((conf->peer != NULL && ((s->peer = strdup(conf->peer)) == NULL ||
	    ctl_ha_sync_addr(conf->peer, &sa, &salen, err, errlen) != 0)) ||
	    (conf->listen != NULL && (s->listen = strdup(conf->listen)) == NULL))
		goto fail;
	if ((s->out.q = calloc(CTL_HA_SYNC_QUEUE, sizeof(s->out.q[0]))) == NULL ||
	    (s->in.q = calloc(CTL_HA_SYNC_QUEUE, sizeof(s->in.q[0]))) == NULL ||
	    (s->out_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    (s->ack_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto fail;
	}
	if (s->listen != NULL && (s->lfd = ctl_ha_sync_bind(s->listen, err, errlen)) < 0)
		goto fail;
	if (s->peer != NULL) {
		if (pthread_create(&s->sender, NULL, ctl_ha_sync_sender, s) != 0)
			goto fail_thread;
		s->sender_running = true;
	}
	if (s->listen != NULL) {
		if (pthread_create(&s->listener, NULL, ctl_ha_sync_listener, s) != 0)
			goto fail_thread;
		s->listener_running = true;
	}
	return s;
fail_thread:
	snprintf(err, errlen, "cannot start a thread");
fail:
	ctl_ha_sync_stop(s);
	return NULL;
}

void
ctl_ha_sync_stop(struct ctl_ha_sync *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stop, true);
	if (s->out_efd >= 0)
		(void)eventfd_write(s->out_efd, 1);
	if (s->ack_efd >= 0)
		(void)eventfd_write(s->ack_efd, 1);
	if (s->sender_running)
		pthread_join(s->sender, NULL);
	if (s->listener_running)
		pthread_join(s->listener, NULL);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->out_efd >= 0)
		close(s->out_efd);
	if (s->ack_efd >= 0)
		close(s->ack_efd);
	pthread_mutex_destroy(&s->lock);
	sodium_memzero(s->psk, sizeof(s->psk));
	free(s->out.q);
	free(s->in.q);
	free(s->peer);
	free(s->listen);
	free(s);
}

bool
ctl_ha_sync_send(struct ctl_ha_sync *s, const struct ctl_ha_rec *r)
{
	struct ctl_ha_sync_item it = { .r = *r };
	bool ok = false;

	if (r->vm_len > sizeof(it.vm) || r->name_len > sizeof(it.name))
		return false;
	if (r->vm_len > 0)
		memcpy(it.vm, r->vm, r->vm_len);
	if (r->name_len > 0)
		memcpy(it.name, r->name, r->name_len);
	pthread_mutex_lock(&s->lock);
	if (s->out_open) {
		if (!(ok = ctl_ha_syncq_push(&s->out, &it))) {
			s->dropped++;
			s->out_open = false;	/* dropped: a resync follows */
		} else {
			s->out_queued++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

size_t
ctl_ha_sync_room(struct ctl_ha_sync *s)
{
	size_t room;

	pthread_mutex_lock(&s->lock);
	room = s->out_open ? CTL_HA_SYNC_QUEUE - s->out.len : 0;
	s->want_room = s->out_open;
	pthread_mutex_unlock(&s->lock);
	return room;
}

void
ctl_ha_sync_flush(struct ctl_ha_sync *s)
{
	bool any;

	pthread_mutex_lock(&s->lock);
	any = s->out_queued > 0 || (!s->out_open && s->out.len > 0);
	s->out_queued = 0;
	pthread_mutex_unlock(&s->lock);
	if (any)
		(void)eventfd_write(s->out_efd, 1);
}

bool
ctl_ha_sync_resync_wanted(struct ctl_ha_sync *s)
{
	bool w;

	pthread_mutex_lock(&s->lock);
	w = s->resync_wanted;
	s->resync_wanted = false;
	if (w)
		s->resyncs++;
	pthread_mutex_unlock(&s->lock);
	return w;
}

uint64_t
ctl_ha_sync_redo(struct ctl_ha_sync *s)
{
	uint64_t conn;

	pthread_mutex_lock(&s->lock);
	conn = s->in_conn;
	s->redo = true;
	pthread_mutex_unlock(&s->lock);
	(void)eventfd_write(s->ack_efd, 1);	/* the listener's wake */
	return conn;
}

size_t
ctl_ha_sync_take(struct ctl_ha_sync *s, struct ctl_ha_sync_item *out, size_t n, uint64_t *conn)
{
	size_t k = 0;

	pthread_mutex_lock(&s->lock);
	while (k < n && ctl_ha_syncq_pop(&s->in, &out[k]))
		k++;
	*conn = s->in_conn;
	pthread_mutex_unlock(&s->lock);
	return k;
}

void
ctl_ha_sync_applied(struct ctl_ha_sync *s, uint64_t conn, size_t n)
{
	pthread_mutex_lock(&s->lock);
	if (conn == s->in_conn)		/* a connection replaced meanwhile starts over */
		s->applied += n;
	pthread_mutex_unlock(&s->lock);
	if (n > 0)
		(void)eventfd_write(s->ack_efd, 1);
}

/* ctl_ha_sync_behind(), lock held. */
static bool
ctl_ha_sync_behind_locked(struct ctl_ha_sync *s, int64_t now, char *why, size_t len)
{
	why[0] = '\0';
	if (s->in_open && (s->in_end == 0 || s->applied < s->in_end) &&
	    now - s->in_last_ms < CTL_HA_BEHIND_QUIET_MS)
		snprintf(why, len, "behind on sync: the peer's resync is not all installed "
		    "(%llu records so far)", (unsigned long long)s->applied);
	else if (s->in_open && s->received - s->applied > CTL_HA_BEHIND_BACKLOG)
		snprintf(why, len, "behind on sync: %llu of the peer's records wait to be "
		    "installed", (unsigned long long)(s->received - s->applied));
	else if (!s->in_open && s->listen != NULL && s->out_open &&
	    now - s->out_open_ms < CTL_HA_BEHIND_QUIET_MS)
		snprintf(why, len, "behind on sync: the peer is reached, its stream not yet open");
	return why[0] != '\0';
}

bool
ctl_ha_sync_behind(struct ctl_ha_sync *s, char *why, size_t len)
{
	int64_t now = ctl_now_ms();
	bool b;

	pthread_mutex_lock(&s->lock);
	b = ctl_ha_sync_behind_locked(s, now, why, len);
	pthread_mutex_unlock(&s->lock);
	return b;
}

struct json_object *
ctl_ha_sync_json(struct ctl_ha_sync *s)
{
	struct json_object *o = json_object_new_object();
	char why[160];

	if (o == NULL)
		return NULL;
	pthread_mutex_lock(&s->lock);
	json_object_object_add(o, "peer", json_object_new_string(s->peer != NULL ? s->peer : ""));
	json_object_object_add(o, "peer_state", json_object_new_string(s->peer == NULL ? "off" :
	    s->out_open ? "open" : "connecting"));
	json_object_object_add(o, "sent", json_object_new_uint64(s->sent));
	json_object_object_add(o, "acked", json_object_new_uint64(s->acked));
	json_object_object_add(o, "resyncs", json_object_new_uint64(s->resyncs));
	json_object_object_add(o, "lag_ms", json_object_new_double(s->lag_last < 0 ? -1 :
	    s->lag_last * 1e3));
	json_object_object_add(o, "listen", json_object_new_string(
	    s->listen != NULL ? s->listen : ""));
	json_object_object_add(o, "inbound", json_object_new_string(s->listen == NULL ? "off" :
	    s->in_open ? "open" : "listening"));
	json_object_object_add(o, "received", json_object_new_uint64(s->received));
	json_object_object_add(o, "applied", json_object_new_uint64(s->applied));
	json_object_object_add(o, "refused", json_object_new_uint64(s->refused));
	json_object_object_add(o, "dropped", json_object_new_uint64(s->dropped));
	json_object_object_add(o, "resync_in", json_object_new_string(!s->in_open ? "none" :
	    s->in_end != 0 && s->applied >= s->in_end ? "done" : "receiving"));
	json_object_object_add(o, "behind", json_object_new_boolean(
	    ctl_ha_sync_behind_locked(s, ctl_now_ms(), why, sizeof(why))));
	pthread_mutex_unlock(&s->lock);
	return o;
}

void
ctl_ha_sync_render(struct ctl_ha_sync *s, FILE *out)
{
	uint64_t cum = 0;
	size_t nb = sizeof(ctl_ha_lag_le) / sizeof(ctl_ha_lag_le[0]);

	pthread_mutex_lock(&s->lock);
	fputs("# HELP namegate_ha_sync_lag_seconds From sending a record to the peer until the "
	    "peer acknowledged it installed (the sender's clock only)\n"
	    "# TYPE namegate_ha_sync_lag_seconds histogram\n", out);
	for (size_t i = 0; i < nb; i++) {
		cum += s->lag_bucket[i];
		fprintf(out, "namegate_ha_sync_lag_seconds_bucket{le=\"%g\"} %llu\n",
		    ctl_ha_lag_le[i], (unsigned long long)cum);
	}
	cum += s->lag_bucket[nb];
	fprintf(out, "namegate_ha_sync_lag_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "namegate_ha_sync_lag_seconds_sum %.6f\n"
	    "namegate_ha_sync_lag_seconds_count %llu\n", (unsigned long long)cum, s->lag_sum,
	    (unsigned long long)s->lag_count);
	fprintf(out, "# HELP namegate_ha_sync_records_total Sync records by direction\n"
	    "# TYPE namegate_ha_sync_records_total counter\n"
	    "namegate_ha_sync_records_total{direction=\"sent\"} %llu\n"
	    "namegate_ha_sync_records_total{direction=\"received\"} %llu\n"
	    "# HELP namegate_ha_sync_refused_total Sync connections dropped for a frame that "
	    "failed its check (a replay, a wrong key, a broken peer)\n"
	    "# TYPE namegate_ha_sync_refused_total counter\n"
	    "namegate_ha_sync_refused_total %llu\n",
	    (unsigned long long)s->sent, (unsigned long long)s->received,
	    (unsigned long long)s->refused);
	pthread_mutex_unlock(&s->lock);
}
