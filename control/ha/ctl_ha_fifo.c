/*
 * The notify FIFO's reader (ctl_ha.h). Opened read-write, so it never sees end-of-file
 * while keepalived is away, and what keepalived wrote while namegate was not reading is
 * still there, in order, to be read when it comes back. keepalived makes a new FIFO at a
 * reload, so the path is looked at again every CTL_HA_POLL_MS, and the new one opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_base.h"
#include "ctl_ha_int.h"

int
ctl_ha_fifo_open(struct ctl_ha *h, bool create, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (create && mkfifo(h->fifo, 0600) != 0 && errno != EEXIST) {
		rc = -errno;
		ctl_err(err, errlen, "cannot make the FIFO %s: %s", h->fifo, strerror(errno));
		return rc;
	}
	if ((fd = open(h->fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "cannot open %s: %s", h->fifo, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		ctl_err(err, errlen, "%s is not a FIFO", h->fifo);
		return -EINVAL;
	}
	if (h->fd >= 0)
		close(h->fd);
	h->fd = fd;
	h->ino = st.st_ino;
	h->llen = 0;
	h->skipping = false;
	return 0;
}

/* A role read: the gate first, then the change queued for the log. */
static void
ctl_ha_fifo_role(struct ctl_ha *h, enum ctl_ha_role to)
{
	enum ctl_ha_role from = atomic_load(&h->role);
	struct ctl_ha_change *c;

	if (to == from)
		return;
	atomic_store(&h->role, to);
	h->on_role(to, h->arg);
	pthread_mutex_lock(&h->lock);
	clock_gettime(CLOCK_REALTIME, &h->since);
	h->changes++;
	if (to == CTL_HA_MASTER)
		h->became_master = true;
	if (h->qlen == CTL_HA_CHANGES_MAX) {
		h->qlost++;
	} else {
		c = &h->q[(h->qhead + h->qlen++) % CTL_HA_CHANGES_MAX];
		*c = (struct ctl_ha_change){ .from = from, .to = to, .at = h->since };
	}
	pthread_mutex_unlock(&h->lock);
}

static void
ctl_ha_fifo_line(struct ctl_ha *h, const char *s, size_t len)
{
	enum ctl_ha_role role;
	enum ctl_ha_line st = ctl_ha_line_parse(s, len, h->instance, &role);

	pthread_mutex_lock(&h->lock);
	h->lines++;
	if (st == CTL_HA_LINE_OTHER)
		h->ignored++;
	else if (st == CTL_HA_LINE_MALFORMED)
		h->malformed++;
	pthread_mutex_unlock(&h->lock);
	if (st == CTL_HA_LINE_ROLE)
		ctl_ha_fifo_role(h, role);
}

/* What read() gave, split into lines; one longer than CTL_HA_LINE_MAX is malformed. */
static void
ctl_ha_fifo_bytes(struct ctl_ha *h, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '\n') {
			if (!h->skipping)
				ctl_ha_fifo_line(h, h->line, h->llen);
			h->llen = 0;
			h->skipping = false;
		} else if (h->skipping) {
			continue;
		} else if (h->llen == sizeof(h->line)) {
			h->skipping = true;
			pthread_mutex_lock(&h->lock);
			h->malformed++;
			pthread_mutex_unlock(&h->lock);
		} else {
			h->line[h->llen++] = b[i];
		}
	}
}

/* Whether the path names another FIFO now than the one open (or none). */
static bool
ctl_ha_fifo_replaced(const struct ctl_ha *h)
{
	struct stat st;

	return stat(h->fifo, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_ino != h->ino;
}

void *
ctl_ha_fifo_run(void *arg)
{
	struct ctl_ha *h = arg;
	char buf[4096];
	int64_t looked = ctl_now_ms();

	while (!atomic_load(&h->stop)) {
		struct pollfd p = { .fd = h->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, CTL_HA_POLL_MS) > 0 && (p.revents & POLLIN) != 0) {
			while ((n = read(h->fd, buf, sizeof(buf))) > 0)
				ctl_ha_fifo_bytes(h, buf, (size_t)n);
		}
		if (ctl_now_ms() - looked < CTL_HA_POLL_MS)
			continue;
		looked = ctl_now_ms();
		/* drain the old one first: its last lines came before the new one's first */
		if (ctl_ha_fifo_replaced(h) && ctl_ha_fifo_open(h, false, NULL, 0) == 0) {
			pthread_mutex_lock(&h->lock);
			h->reopened++;
			pthread_mutex_unlock(&h->lock);
		}
	}
	return NULL;
}
