/*
 * The event log: JSON lines built in one reusable buffer and handed whole to ctl_logfile,
 * which writes a line whole or not at all. Per-VM token buckets live in an insertion-ordered
 * array indexed by a small open-addressing hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/socket.h>

#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_jsonl.h"
#include "ctl_logfile.h"

#define EV_NS			1000000000LL
#define EV_FOLLOW_POLL_NS	(100 * 1000000LL)
#define EV_FOLLOW_GRACE		30		/* idle polls a rotated-away file is still read */
#define EV_READ_CHUNK		65536

struct ev_vm {
	char *name;
	uint64_t tokens;	/* in token-nanoseconds: EV_NS of them make one event */
	int64_t last_ns;	/* when tokens was last refilled */
	uint64_t suppressed;	/* blocks counted, not logged, since the VM's last line */
};

struct ctl_events {
	struct ctl_logfile *lf;
	_Atomic uint64_t unbuilt;	/* lines lost before the write: no memory to build them */
	uint32_t rate, burst;
	struct ev_vm *vms;	/* in the order first seen, for a stable flush */
	size_t nvms, capvms;
	uint32_t *slots;	/* index into vms + 1; 0 is empty */
	size_t nslots;		/* a power of two, at least twice nvms */
	struct ctl_jsonl line;
};

static int64_t
ev_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * EV_NS + ts->tv_nsec;
}

/* Starts a line: {"ts":...,"vm":...,"event":... (vm may be NULL). */
static void
ev_begin(struct ctl_events *ev, const struct timespec *now, const char *vm, const char *event)
{
	struct ctl_jsonl *b = &ev->line;

	b->len = 0;
	b->oom = false;
	ctl_jsonl_puts(b, "{\"ts\":");
	ctl_jsonl_ts(b, now);
	if (vm != NULL) {
		ctl_jsonl_puts(b, ",\"vm\":");
		ctl_jsonl_str(b, vm);
	}
	ctl_jsonl_puts(b, ",\"event\":");
	ctl_jsonl_str(b, event);
}

/* Ends the line and appends it whole; 0 or -errno, the line lost and counted. */
static int
ev_end(struct ctl_events *ev)
{
	struct ctl_jsonl *b = &ev->line;

	ctl_jsonl_putn(b, "}\n", 2);
	if (b->oom) {
		atomic_fetch_add_explicit(&ev->unbuilt, 1, memory_order_relaxed);
		return -ENOMEM;
	}
	if (ctl_logfile_write(ev->lf, b->p, b->len) != 0)
		return -errno;
	return 0;
}

struct ctl_events *
ctl_events_open(const char *path, uint32_t rate, uint32_t burst, char *err, size_t errlen)
{
	struct ctl_events *ev;
	char why[256];

	if (errlen > 0)
		err[0] = '\0';
	if (path == NULL || path[0] == '\0' || (rate > 0 && burst == 0)) {
		errno = EINVAL;
		ctl_err(err, errlen, "events: %s", path == NULL || path[0] == '\0' ?
		    "no log path" : "burst must be at least 1 when rate is limited");
		return NULL;
	}
	if ((ev = calloc(1, sizeof(*ev))) == NULL) {
		ctl_err(err, errlen, "events: %s: %s", path, strerror(errno));
		return NULL;
	}
	if ((ev->lf = ctl_logfile_open(path, why, sizeof(why))) == NULL) {
		int e = errno;

		ctl_err(err, errlen, "events: %s", why);
		free(ev);
		errno = e;
		return NULL;
	}
	ev->rate = rate;
	ev->burst = burst;
	return ev;
}

void
ctl_events_close(struct ctl_events *ev)
{
	if (ev == NULL)
		return;
	ctl_logfile_close(ev->lf);
	for (size_t i = 0; i < ev->nvms; i++)
		free(ev->vms[i].name);
	free(ev->vms);
	free(ev->slots);
	free(ev->line.p);
	free(ev);
}

int
ctl_events_reopen(struct ctl_events *ev)
{
	return ctl_logfile_reopen(ev->lf);
}

uint64_t
ctl_events_lost(const struct ctl_events *ev)
{
	if (ev == NULL)
		return 0;
	return ctl_logfile_lost(ev->lf) + atomic_load_explicit(&ev->unbuilt, memory_order_relaxed);
}

/* Reopens when logrotate renamed or removed the file, looked at once a second at most. */
static int
ev_check_rotation(struct ctl_events *ev, const struct timespec *now)
{
	return ctl_logfile_check(ev->lf, ev_ns(now));
}

/* FNV-1a: VM names are few and short, and come from the policy, not from the wire. */
static uint32_t
ev_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int
ev_slots_grow(struct ctl_events *ev)
{
	size_t n = ev->nslots > 0 ? ev->nslots * 2 : 16, mask = n - 1;
	uint32_t *slots;

	if ((slots = calloc(n, sizeof(*slots))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < ev->nvms; i++) {
		size_t j = ev_hash(ev->vms[i].name) & mask;

		while (slots[j] != 0)
			j = (j + 1) & mask;
		slots[j] = (uint32_t)i + 1;
	}
	free(ev->slots);
	ev->slots = slots;
	ev->nslots = n;
	return 0;
}

/* The VM's bucket, created full; NULL when out of memory. */
static struct ev_vm *
ev_vm_get(struct ctl_events *ev, const char *name, int64_t now)
{
	struct ev_vm *v;
	size_t j, mask;

	if (ev->nslots > 0) {
		mask = ev->nslots - 1;
		for (j = ev_hash(name) & mask; ev->slots[j] != 0; j = (j + 1) & mask) {
			v = &ev->vms[ev->slots[j] - 1];
			if (strcmp(v->name, name) == 0)
				return v;
		}
	}
	if ((ev->nvms + 1) * 2 > ev->nslots && ev_slots_grow(ev) != 0)
		return NULL;
	if (ev->nvms == ev->capvms) {
		size_t cap = ev->capvms > 0 ? ev->capvms * 2 : 8;

		if ((v = realloc(ev->vms, cap * sizeof(*v))) == NULL)
			return NULL;
		ev->vms = v;
		ev->capvms = cap;
	}
	v = &ev->vms[ev->nvms];
	if ((v->name = strdup(name)) == NULL)
		return NULL;
	v->tokens = (uint64_t)ev->burst * EV_NS;
	v->last_ns = now;
	v->suppressed = 0;
	mask = ev->nslots - 1;
	for (j = ev_hash(name) & mask; ev->slots[j] != 0; j = (j + 1) & mask)
		;
	ev->slots[j] = (uint32_t)++ev->nvms;
	return v;
}

/*
 * Token bucket: rate tokens a second, at most burst. Kept in token-nanoseconds so refills
 * are exact integers. A clock step backwards restarts the refill from the new time: the
 * bucket neither stalls nor gains.
 */
static bool
ev_vm_take(const struct ctl_events *ev, struct ev_vm *v, int64_t now)
{
	uint64_t cap = (uint64_t)ev->burst * EV_NS, dt, room;

	if (now > v->last_ns) {
		dt = (uint64_t)(now - v->last_ns);
		room = cap - v->tokens;
		/* Comparing before multiplying keeps dt * rate from overflowing. */
		if (dt > room / ev->rate)
			v->tokens = cap;
		else
			v->tokens += dt * ev->rate;
	}
	v->last_ns = now;
	if (v->tokens < (uint64_t)EV_NS)
		return false;
	v->tokens -= EV_NS;
	return true;
}

int
ctl_events_log_block(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_block *b)
{
	struct ev_vm *v = NULL;
	uint64_t suppressed = 0;
	int rc;

	if (b->vm == NULL || b->reason == NULL)
		return -EINVAL;
	if (ev->rate > 0) {
		if ((v = ev_vm_get(ev, b->vm, ev_ns(now))) == NULL)
			return -ENOMEM;
		if (!ev_vm_take(ev, v, ev_ns(now))) {
			v->suppressed++;
			return 0;
		}
		suppressed = v->suppressed;
	}
	(void)ev_check_rotation(ev, now);	/* on failure the old file still takes the line */
	ev_begin(ev, now, b->vm, "block");
	ctl_jsonl_puts(&ev->line, ",\"reason\":");
	ctl_jsonl_str(&ev->line, b->reason);
	ctl_jsonl_puts(&ev->line, ",\"proto\":");
	ctl_jsonl_proto(&ev->line, b->proto);
	if (b->family == AF_INET || b->family == AF_INET6) {
		ctl_jsonl_puts(&ev->line, ",\"dst\":");
		ctl_jsonl_endpoint(&ev->line, b->family, b->addr, b->port);
	}
	if (b->name != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"name\":");
		ctl_jsonl_str(&ev->line, b->name);
	}
	if (suppressed > 0)
		ctl_jsonl_printf(&ev->line, ",\"suppressed\":%llu", (unsigned long long)suppressed);
	if ((rc = ev_end(ev)) == 0 && v != NULL)
		v->suppressed = 0;	/* reported; on failure the count waits for the next line */
	return rc;
}

/* ,"uid":U,"pid":P,"user":N of who did it; nothing for NULL. */
static void
buf_who(struct ctl_jsonl *b, const struct ctl_ev_who *who)
{
	if (who == NULL)
		return;
	ctl_jsonl_printf(b, ",\"uid\":%u,\"pid\":%d,\"user\":", who->uid, who->pid);
	ctl_jsonl_str(b, who->user != NULL ? who->user : "");
}

int
ctl_events_log_policy_rejected(struct ctl_events *ev, const struct timespec *now,
    uint64_t generation, const char *file, uint32_t line, uint32_t col, const char *message,
    size_t errors, const struct ctl_ev_who *who)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "policy_rejected");
	ctl_jsonl_printf(&ev->line, ",\"generation\":%llu,\"file\":", (unsigned long long)generation);
	ctl_jsonl_str(&ev->line, file);
	ctl_jsonl_printf(&ev->line, ",\"line\":%u,\"col\":%u,\"message\":", line, col);
	ctl_jsonl_str(&ev->line, message);
	ctl_jsonl_printf(&ev->line, ",\"errors\":%zu", errors);
	buf_who(&ev->line, who);
	return ev_end(ev);
}

int
ctl_events_log_policy(struct ctl_events *ev, const struct timespec *now, uint64_t generation,
    uint32_t vms, const char *file, const struct ctl_ev_who *who)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "policy");
	ctl_jsonl_printf(&ev->line, ",\"generation\":%llu,\"vms\":%u", (unsigned long long)generation,
	    vms);
	if (file != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"file\":");
		ctl_jsonl_str(&ev->line, file);
	}
	buf_who(&ev->line, who);
	return ev_end(ev);
}

int
ctl_events_log_fleet(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_fleet *f)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, f->event);
	if (f->have_serial)
		ctl_jsonl_printf(&ev->line, ",\"serial\":%llu", (unsigned long long)f->serial);
	if (f->digest != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"digest\":");
		ctl_jsonl_str(&ev->line, f->digest);
	}
	if (f->reason != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"reason\":");
		ctl_jsonl_str(&ev->line, f->reason);
	}
	return ev_end(ev);
}

int
ctl_events_log_grant(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_grant *g)
{
	struct timespec until = { .tv_sec = (time_t)g->expires };
	size_t at;

	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, g->vm, g->event);
	ctl_jsonl_printf(&ev->line, ",\"id\":%llu,\"host\":", (unsigned long long)g->id);
	ctl_jsonl_str(&ev->line, g->host);
	ctl_jsonl_puts(&ev->line, ",\"until\":");
	at = ev->line.len;
	ctl_jsonl_ts(&ev->line, &until);
	/* whole seconds: "...:00.000Z" loses its milliseconds */
	if (!ev->line.oom && ev->line.len - at == 26) {
		memmove(ev->line.p + ev->line.len - 6, ev->line.p + ev->line.len - 2, 2);
		ev->line.len -= 4;
	}
	if (g->reason != NULL && g->reason[0] != '\0') {
		ctl_jsonl_puts(&ev->line, ",\"reason\":");
		ctl_jsonl_str(&ev->line, g->reason);
	}
	buf_who(&ev->line, g->who);
	return ev_end(ev);
}

int
ctl_events_log_grants_damaged(struct ctl_events *ev, const struct timespec *now,
    const char *file, const char *error)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "grants_damaged");
	ctl_jsonl_puts(&ev->line, ",\"file\":");
	ctl_jsonl_str(&ev->line, file);
	ctl_jsonl_puts(&ev->line, ",\"error\":");
	ctl_jsonl_str(&ev->line, error);
	return ev_end(ev);
}

int
ctl_events_log_ha(struct ctl_events *ev, const struct timespec *now, const char *role,
    const char *from, const char *instance)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "ha_role");
	ctl_jsonl_puts(&ev->line, ",\"role\":");
	ctl_jsonl_str(&ev->line, role);
	ctl_jsonl_puts(&ev->line, ",\"from\":");
	ctl_jsonl_str(&ev->line, from);
	if (instance != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"instance\":");
		ctl_jsonl_str(&ev->line, instance);
	}
	return ev_end(ev);
}

int
ctl_events_log_ha_guard(struct ctl_events *ev, const struct timespec *now, const char *state,
    const char *from, const char *reason)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "ha_guard");
	ctl_jsonl_puts(&ev->line, ",\"state\":");
	ctl_jsonl_str(&ev->line, state);
	ctl_jsonl_puts(&ev->line, ",\"from\":");
	ctl_jsonl_str(&ev->line, from);
	ctl_jsonl_puts(&ev->line, ",\"reason\":");
	ctl_jsonl_str(&ev->line, reason);
	return ev_end(ev);
}

int
ctl_events_log_budget(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_budget *b)
{
	if (b->vm == NULL || b->rule == NULL || b->state == NULL)
		return -EINVAL;
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, b->vm, "budget");
	ctl_jsonl_puts(&ev->line, ",\"state\":");
	ctl_jsonl_str(&ev->line, b->state);
	ctl_jsonl_puts(&ev->line, ",\"rule\":");
	ctl_jsonl_str(&ev->line, b->rule);
	ctl_jsonl_printf(&ev->line, ",\"used\":%llu,\"limit\":%llu,\"per\":%u",
	    (unsigned long long)b->used, (unsigned long long)b->limit, b->per);
	return ev_end(ev);
}

int
ctl_events_log_approval(struct ctl_events *ev, const struct timespec *now, const char *event,
    const char *vm, uint64_t id, const char *name, uint16_t qtype, uint64_t grant,
    const struct ctl_ev_who *who)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, vm, event);
	ctl_jsonl_printf(&ev->line, ",\"id\":%llu,\"name\":", (unsigned long long)id);
	ctl_jsonl_str(&ev->line, name);
	ctl_jsonl_printf(&ev->line, ",\"type\":%u", (unsigned int)qtype);
	if (grant != 0)
		ctl_jsonl_printf(&ev->line, ",\"grant\":%llu", (unsigned long long)grant);
	buf_who(&ev->line, who);
	return ev_end(ev);
}

int
ctl_events_log_start(struct ctl_events *ev, const struct timespec *now, const char *version)
{
	(void)ev_check_rotation(ev, now);
	ev_begin(ev, now, NULL, "start");
	if (version != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"version\":");
		ctl_jsonl_str(&ev->line, version);
	}
	ctl_jsonl_printf(&ev->line, ",\"pid\":%ld", (long)getpid());
	return ev_end(ev);
}

int
ctl_events_flush(struct ctl_events *ev, const struct timespec *now)
{
	int rc, first = ev_check_rotation(ev, now);

	for (size_t i = 0; i < ev->nvms; i++) {
		struct ev_vm *v = &ev->vms[i];

		if (v->suppressed == 0)
			continue;
		ev_begin(ev, now, v->name, "suppressed");
		ctl_jsonl_printf(&ev->line, ",\"suppressed\":%llu", (unsigned long long)v->suppressed);
		if ((rc = ev_end(ev)) == 0)
			v->suppressed = 0;
		else if (first == 0)
			first = rc;
	}
	return first;
}

int
ctl_events_log_stop(struct ctl_events *ev, const struct timespec *now)
{
	int rc = ctl_events_flush(ev, now), rc2;

	ev_begin(ev, now, NULL, "stop");
	rc2 = ev_end(ev);
	return rc != 0 ? rc : rc2;
}

/* Copies what fd has now to out: bytes copied, or -errno. */
static ssize_t
ev_copy(int fd, FILE *out, char *buf)
{
	ssize_t n, total = 0;

	for (;;) {
		if ((n = read(fd, buf, EV_READ_CHUNK)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		errno = 0;
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			return errno != 0 ? -errno : -EIO;
		total += n;
	}
	errno = 0;
	if (total > 0 && fflush(out) != 0)
		return errno != 0 ? -errno : -EIO;
	return total;
}

/* True when path names a different file than fd (rotated); false if it is absent. */
static bool
ev_replaced(const char *path, int fd)
{
	struct stat a, b;

	if (stat(path, &a) != 0 || fstat(fd, &b) != 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

int
ctl_events_follow(const char *path, FILE *out, bool follow, volatile sig_atomic_t *stop)
{
	const struct timespec nap = { .tv_sec = 0, .tv_nsec = EV_FOLLOW_POLL_NS };
	int fd, oldfd = -1, old_idle = 0, nfd, rc = 0;
	char *buf = NULL;
	struct stat st;
	ssize_t n;
	off_t off;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((buf = malloc(EV_READ_CHUNK)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	while (stop == NULL || !*stop) {
		/*
		 * The writer may append to a renamed file until it next checks the path (within
		 * a second of its next event), so the old file is read until it has been quiet
		 * for EV_FOLLOW_GRACE polls.
		 */
		if (oldfd >= 0) {
			if ((n = ev_copy(oldfd, out, buf)) < 0) {
				rc = (int)n;
				goto out;
			}
			old_idle = n > 0 ? 0 : old_idle + 1;
			if (old_idle >= EV_FOLLOW_GRACE) {
				close(oldfd);
				oldfd = -1;
			}
		}
		if ((n = ev_copy(fd, out, buf)) < 0) {
			rc = (int)n;
			goto out;
		}
		if (!follow)
			break;
		/* copytruncate: the file shrank under us, so what is there now is new. */
		if ((off = lseek(fd, 0, SEEK_CUR)) >= 0 && fstat(fd, &st) == 0 && st.st_size < off)
			(void)lseek(fd, 0, SEEK_SET);
		if (ev_replaced(path, fd) && (nfd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			if (oldfd >= 0)
				close(oldfd);	/* rotated twice within the grace: drop it */
			oldfd = fd;
			old_idle = 0;
			fd = nfd;
			continue;
		}
		if (n == 0)
			nanosleep(&nap, NULL);		/* EINTR is fine: *stop is checked next */
	}
out:
	if (oldfd >= 0)
		close(oldfd);
	close(fd);
	free(buf);
	return rc;
}
