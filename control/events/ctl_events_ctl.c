/*
 * The event log's lines of the control side: a policy put in force or rejected, a fleet
 * bundle, grants, the HA pair's roles and guard, budgets, approvals. Each says who did it
 * when a client did. See ctl_events.h.
 */
#include <errno.h>
#include <stdint.h>

#include "ctl_events.h"
#include "ctl_events_int.h"
#include "ctl_jsonl.h"

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
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "policy_rejected");
	ctl_jsonl_printf(&ev->line, ",\"generation\":%llu,\"file\":", (unsigned long long)generation);
	ctl_jsonl_str(&ev->line, file);
	ctl_jsonl_printf(&ev->line, ",\"line\":%u,\"col\":%u,\"message\":", line, col);
	ctl_jsonl_str(&ev->line, message);
	ctl_jsonl_printf(&ev->line, ",\"errors\":%zu", errors);
	buf_who(&ev->line, who);
	return ctl_ev_end(ev);
}

int
ctl_events_log_policy(struct ctl_events *ev, const struct timespec *now, uint64_t generation,
    uint32_t vms, const char *file, const struct ctl_ev_who *who)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "policy");
	ctl_jsonl_printf(&ev->line, ",\"generation\":%llu,\"vms\":%u", (unsigned long long)generation,
	    vms);
	if (file != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"file\":");
		ctl_jsonl_str(&ev->line, file);
	}
	buf_who(&ev->line, who);
	return ctl_ev_end(ev);
}

int
ctl_events_log_fleet(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_fleet *f)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, f->event);
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
	return ctl_ev_end(ev);
}

int
ctl_events_log_grant(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_grant *g)
{
	struct timespec until = { .tv_sec = (time_t)g->expires };
	size_t at;

	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, g->vm, g->event);
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
	return ctl_ev_end(ev);
}

int
ctl_events_log_grants_damaged(struct ctl_events *ev, const struct timespec *now,
    const char *file, const char *error)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "grants_damaged");
	ctl_jsonl_puts(&ev->line, ",\"file\":");
	ctl_jsonl_str(&ev->line, file);
	ctl_jsonl_puts(&ev->line, ",\"error\":");
	ctl_jsonl_str(&ev->line, error);
	return ctl_ev_end(ev);
}

int
ctl_events_log_ha(struct ctl_events *ev, const struct timespec *now, const char *role,
    const char *from, const char *instance)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "ha_role");
	ctl_jsonl_puts(&ev->line, ",\"role\":");
	ctl_jsonl_str(&ev->line, role);
	ctl_jsonl_puts(&ev->line, ",\"from\":");
	ctl_jsonl_str(&ev->line, from);
	if (instance != NULL) {
		ctl_jsonl_puts(&ev->line, ",\"instance\":");
		ctl_jsonl_str(&ev->line, instance);
	}
	return ctl_ev_end(ev);
}

int
ctl_events_log_ha_guard(struct ctl_events *ev, const struct timespec *now, const char *state,
    const char *from, const char *reason)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, NULL, "ha_guard");
	ctl_jsonl_puts(&ev->line, ",\"state\":");
	ctl_jsonl_str(&ev->line, state);
	ctl_jsonl_puts(&ev->line, ",\"from\":");
	ctl_jsonl_str(&ev->line, from);
	ctl_jsonl_puts(&ev->line, ",\"reason\":");
	ctl_jsonl_str(&ev->line, reason);
	return ctl_ev_end(ev);
}

int
ctl_events_log_budget(struct ctl_events *ev, const struct timespec *now,
    const struct ctl_ev_budget *b)
{
	if (b->vm == NULL || b->rule == NULL || b->state == NULL)
		return -EINVAL;
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, b->vm, "budget");
	ctl_jsonl_puts(&ev->line, ",\"state\":");
	ctl_jsonl_str(&ev->line, b->state);
	ctl_jsonl_puts(&ev->line, ",\"rule\":");
	ctl_jsonl_str(&ev->line, b->rule);
	ctl_jsonl_printf(&ev->line, ",\"used\":%llu,\"limit\":%llu,\"per\":%u",
	    (unsigned long long)b->used, (unsigned long long)b->limit, b->per);
	return ctl_ev_end(ev);
}

int
ctl_events_log_approval(struct ctl_events *ev, const struct timespec *now, const char *event,
    const char *vm, uint64_t id, const char *name, uint16_t qtype, uint64_t grant,
    const struct ctl_ev_who *who)
{
	(void)ctl_ev_rotate(ev, now);
	ctl_ev_begin(ev, now, vm, event);
	ctl_jsonl_printf(&ev->line, ",\"id\":%llu,\"name\":", (unsigned long long)id);
	ctl_jsonl_str(&ev->line, name);
	ctl_jsonl_printf(&ev->line, ",\"type\":%u", (unsigned int)qtype);
	if (grant != 0)
		ctl_jsonl_printf(&ev->line, ",\"grant\":%llu", (unsigned long long)grant);
	buf_who(&ev->line, who);
	return ctl_ev_end(ev);
}
