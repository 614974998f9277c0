/*
 * The event log: JSON lines built in one reusable buffer and handed whole to ctl_logfile,
 * which writes a line whole or not at all. Per-VM token buckets live in an insertion-ordered
 * array indexed by a small open-addressing hash. The control side's events are
 * ctl_events_ctl.c's; namegatectl events (--follow) reads the log with ctl_events_follow.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_events_int.h"
#include "ctl_jsonl.h"
#include "ctl_logfile.h"

#define EV_NS			1000000000LL

static int64_t
ev_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * EV_NS + ts->tv_nsec;
}

/* Starts a line: {"ts":...,"vm":...,"event":... (vm may be NULL). */
void
ctl_ev_begin(struct ctl_events *ev, const struct timespec *now, const char *vm, const char *event)
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
int
ctl_ev_end(struct ctl_events *ev)
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
int
ctl_ev_rotate(struct ctl_events *ev, const struct timespec *now)
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
	(void)ctl_ev_rotate(ev, now);	/* on failure the old file still takes the line */
	ctl_ev_begin(ev, now, b->vm, "block");
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
	if ((rc = ctl_ev_end(ev)) == 0 && v != NULL)
		v->suppressed = 0;	/* reported; on failure the count waits for the next line */
	return rc;
}

int
ctl_events_log_start(struct ctl_events *ev, const struct timespec *now, const char *version)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "start");
	if (version != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"version\":");
		ctl_jsonl_str(&ev->line, version);
	}
	ctl_jsonl_printf(&ev->line, ",\"pid\":%ld", (long)getpid());
	return ctl_ev_end(ev);
}

int
ctl_events_flush(struct ctl_events *ev, const struct timespec *now)
{
	int rc, first = ctl_ev_rotate(ev, now);

	for (size_t i = 0; i < ev->nvms; i++) {
		struct ev_vm *v = &ev->vms[i];

		if (v->suppressed == 0)
			continue;
		ctl_ev_begin(ev, now, v->name, "suppressed");
		ctl_jsonl_printf(&ev->line, ",\"suppressed\":%llu", (unsigned long long)v->suppressed);
		if ((rc = ctl_ev_end(ev)) == 0)
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

	ctl_ev_begin(ev, now, NULL, "stop");
	rc2 = ctl_ev_end(ev);
	return rc != 0 ? rc : rc2;
}
