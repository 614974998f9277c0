/*
 * The HA pair's concern (ctl_ha.h): its state, the reader's start and stop, the role
 * changes logged, namegatectl ha, and namegate_ha_role.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_ha_int.h"
#include "ctl_sock.h"

struct ctl_ha *
ctl_ha_start(const struct ctl_ha_conf *conf, struct ctl_events *events, char *err,
    size_t errlen)
{
	struct ctl_ha *h;

	if ((h = calloc(1, sizeof(*h))) == NULL ||
	    (h->fifo = strdup(conf->fifo)) == NULL ||
	    (conf->instance != NULL && (h->instance = strdup(conf->instance)) == NULL)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	h->fd = -1;
	h->started_ms = ctl_now_ms();
	h->heartbeat_ms = conf->heartbeat_ms;
	h->on_role = conf->on_role;
	h->beat = conf->beat;
	h->veto = conf->veto;
	h->arg = conf->arg;
	h->events = events;
	atomic_init(&h->role, CTL_HA_STARTING);
	clock_gettime(CLOCK_REALTIME, &h->since);
	pthread_mutex_init(&h->lock, NULL);
	h->on_role(CTL_HA_STARTING, h->arg);	/* shut until keepalived says otherwise */
	if (ctl_ha_fifo_open(h, true, err, errlen) != 0)
		goto fail;
	if (pthread_create(&h->thread, NULL, ctl_ha_fifo_run, h) != 0) {
		snprintf(err, errlen, "cannot start the FIFO reader");
		goto fail;
	}
	h->running = true;
	return h;
fail:
	ctl_ha_stop(h);
	return NULL;
}

void
ctl_ha_stop(struct ctl_ha *h)
{
	if (h == NULL)
		return;
	if (h->running) {
		atomic_store(&h->stop, true);
		pthread_join(h->thread, NULL);
	}
	if (h->fd >= 0)
		close(h->fd);
	pthread_mutex_destroy(&h->lock);
	free(h->fifo);
	free(h->instance);
	free(h);
}

int
ctl_ha_track_write(const char *path, int value, char *err, size_t errlen)
{
	char buf[16];
	int fd, n = snprintf(buf, sizeof(buf), "%d\n", value), rc = 0;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    write(fd, buf, (size_t)n) != n)
		rc = -errno;
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc != 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

enum ctl_ha_role
ctl_ha_role(const struct ctl_ha *h)
{
	return atomic_load(&((struct ctl_ha *)(uintptr_t)h)->role);
}

bool
ctl_ha_tick(struct ctl_ha *h)
{
	struct ctl_ha_change q[CTL_HA_CHANGES_MAX];
	unsigned int n;
	bool master;

	pthread_mutex_lock(&h->lock);
	n = h->qlen;
	for (unsigned int i = 0; i < n; i++)
		q[i] = h->q[(h->qhead + i) % CTL_HA_CHANGES_MAX];
	h->qhead = (h->qhead + n) % CTL_HA_CHANGES_MAX;
	h->qlen = 0;
	master = h->became_master;
	h->became_master = false;
	pthread_mutex_unlock(&h->lock);
	for (unsigned int i = 0; h->events != NULL && i < n; i++)
		(void)ctl_events_log_ha(h->events, &q[i].at, ctl_ha_role_name(q[i].to),
		    ctl_ha_role_name(q[i].from), h->instance);
	return master && ctl_ha_role(h) == CTL_HA_MASTER;
}

/* "2026-12-05T11:00:00.123Z" */
static void
ctl_ha_ts(const struct timespec *t, char *buf, size_t len)
{
	struct tm tm;
	char s[32];

	if (gmtime_r(&t->tv_sec, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", s, t->tv_nsec / 1000000);
}

/*
 * Whether the box may lead now, and if not, why (into why). Without a role read, no for
 * a while after start: a namegate restarted under a keepalived still MASTER (which tells
 * a role only when it changes) makes it fail over and say FAULT, instead of being held
 * master without forwarding. Past the grace, one started under a keepalived in FAULT
 * already (which then says nothing) may lead, or the two would wait on each other. Behind
 * on sync, no: the sync stream bounds that itself (CTL_HA_BEHIND_QUIET_MS), so a box whose
 * peer is gone is not locked out. A master is never behind: it forwards with its own
 * state, and the resync a restarted standby sends it must not hand the lead to that box.
 */
static bool
ctl_ha_healthy(struct ctl_ha *h, int64_t age, char *why, size_t len)
{
	const char *veto;

	why[0] = '\0';
	if (age < 0)
		snprintf(why, len, "starting: the workers do not run yet");
	else if (ctl_ha_role(h) == CTL_HA_STARTING &&
	    ctl_now_ms() - h->started_ms < CTL_HA_START_GRACE_MS)
		snprintf(why, len, "starting: no role from keepalived yet (%s)", h->fifo);
	else if (age > (int64_t)h->heartbeat_ms)
		snprintf(why, len, "stalled: the workers' last heartbeat was %lld ms ago (limit %u)",
		    (long long)age, h->heartbeat_ms);
	else if (h->veto != NULL && (veto = h->veto(h->arg)) != NULL)
		snprintf(why, len, "%s", veto);
	else if (h->behind != NULL && ctl_ha_role(h) != CTL_HA_MASTER)
		(void)h->behind(h->behind_arg, why, len);
	return why[0] == '\0';
}

static int
ctl_ha_cmd(FILE *out, const struct ctl_req *req, void *arg)
{
	struct ctl_ha *h = arg;
	struct json_object *o = json_object_new_object(), *lines = json_object_new_object();
	int64_t age = h->beat(h->arg);
	struct timespec now, since;
	uint64_t changes, nlines, ignored, malformed, reopened;
	char why[160], ts[48];
	bool ok = ctl_ha_healthy(h, age, why, sizeof(why));

	(void)req;
	pthread_mutex_lock(&h->lock);
	since = h->since;
	changes = h->changes;
	nlines = h->lines;
	ignored = h->ignored;
	malformed = h->malformed;
	reopened = h->reopened;
	pthread_mutex_unlock(&h->lock);
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_ha_ts(&since, ts, sizeof(ts));
	if (o == NULL || lines == NULL) {
		json_object_put(o);
		json_object_put(lines);
		return -ENOMEM;
	}
	json_object_object_add(o, "role", json_object_new_string(ctl_ha_role_name(ctl_ha_role(h))));
	json_object_object_add(o, "since", json_object_new_string(ts));
	json_object_object_add(o, "seconds", json_object_new_double(
	    (double)(now.tv_sec - since.tv_sec) + (double)(now.tv_nsec - since.tv_nsec) / 1e9));
	json_object_object_add(o, "instance", json_object_new_string(
	    h->instance != NULL ? h->instance : ""));
	json_object_object_add(o, "notify_fifo", json_object_new_string(h->fifo));
	json_object_object_add(o, "healthy", json_object_new_boolean(ok));
	json_object_object_add(o, "reason", json_object_new_string(why));
	json_object_object_add(o, "heartbeat_age_ms", json_object_new_int64(age));
	json_object_object_add(o, "heartbeat_timeout_ms", json_object_new_int64(h->heartbeat_ms));
	json_object_object_add(o, "changes", json_object_new_uint64(changes));
	json_object_object_add(lines, "read", json_object_new_uint64(nlines));
	json_object_object_add(lines, "ignored", json_object_new_uint64(ignored));
	json_object_object_add(lines, "malformed", json_object_new_uint64(malformed));
	json_object_object_add(o, "lines", lines);
	json_object_object_add(o, "reopened", json_object_new_uint64(reopened));
	for (unsigned int i = 0; i < CTL_HA_EXTRAS; i++)
		if (h->extra[i].fn != NULL)
			json_object_object_add(o, h->extra[i].key, h->extra[i].fn(h->extra[i].arg));
	return ctl_sock_reply_json(out, NULL, o);
}

void
ctl_ha_extra(struct ctl_ha *h, const char *key, ctl_ha_json_fn *fn, void *arg)
{
	unsigned int i = 0, slot = CTL_HA_EXTRAS;

	for (; i < CTL_HA_EXTRAS; i++)
		if (h->extra[i].fn != NULL && strcmp(h->extra[i].key, key) == 0)
			break;
		else if (h->extra[i].fn == NULL && slot == CTL_HA_EXTRAS)
			slot = i;
	if (i == CTL_HA_EXTRAS)
		i = slot;
	if (i == CTL_HA_EXTRAS)
		return;		/* a caller's bug: CTL_HA_EXTRAS is theirs to raise */
	h->extra[i].key = key;
	h->extra[i].fn = fn;
	h->extra[i].arg = arg;
}

void
ctl_ha_behind(struct ctl_ha *h, ctl_ha_behind_fn *fn, void *arg)
{
	h->behind = fn;
	h->behind_arg = arg;
}

static const struct ctl_cmd ctl_ha_cmds[] = {
	{ "ha", 0, ctl_ha_cmd },
};

int
ctl_ha_serve(struct ctl_ha *h, struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_ha_cmds, sizeof(ctl_ha_cmds) / sizeof(ctl_ha_cmds[0]), h);
}

static int
ctl_ha_cmd_absent(FILE *out, const struct ctl_req *req, void *arg)
{
	(void)req;
	(void)arg;
	fputs("this namegate is not one of an HA pair (no ha: in its configuration)", out);
	return -ENOENT;
}

static const struct ctl_cmd ctl_ha_cmds_absent[] = {
	{ "ha", 0, ctl_ha_cmd_absent },
};

int
ctl_ha_serve_absent(struct ctl_sock *s)
{
	return ctl_sock_serve(s, ctl_ha_cmds_absent, 1, NULL);
}

void
ctl_ha_render(const struct ctl_ha *h, FILE *out)
{
	struct ctl_ha *m = (struct ctl_ha *)(uintptr_t)h;
	enum ctl_ha_role r = ctl_ha_role(h);
	uint64_t changes;

	pthread_mutex_lock(&m->lock);
	changes = m->changes;
	pthread_mutex_unlock(&m->lock);
	fputs("# HELP namegate_ha_role The role keepalived gave this box of the HA pair (1: the "
	    "current one; only master forwards)\n# TYPE namegate_ha_role gauge\n", out);
	for (unsigned int i = 0; i < CTL_HA_ROLE_MAX; i++)
		fprintf(out, "namegate_ha_role{role=\"%s\"} %d\n",
		    ctl_ha_role_name((enum ctl_ha_role)i), (enum ctl_ha_role)i == r);
	fprintf(out, "# HELP namegate_ha_role_changes_total Role changes read from keepalived's "
	    "notify FIFO\n# TYPE namegate_ha_role_changes_total counter\n"
	    "namegate_ha_role_changes_total %llu\n", (unsigned long long)changes);
}
