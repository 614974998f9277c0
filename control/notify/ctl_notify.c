/*
 * sd_notify(3) messages: see ctl_notify.h. sd_notify() returns 0 when there is no
 * supervisor to tell and a negative errno when the message cannot be sent; neither stops
 * the daemon, which serves whether or not anyone listens.
 */
#include <time.h>

#include <systemd/sd-daemon.h>

#include "ctl_notify.h"

/* RELOADING=1 carries the monotonic time, which systemd 253's notify-reload wants. */
static unsigned long long
ctl_notify_monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

void
ctl_notify_ready(uint64_t generation, uint32_t vms)
{
	sd_notifyf(0, "READY=1\nSTATUS=serving: generation %llu, %u VM%s",
	    (unsigned long long)generation, vms, vms == 1 ? "" : "s");
}

void
ctl_notify_reloading(void)
{
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
	    ctl_notify_monotonic_usec());
}

void
ctl_notify_reloaded(bool accepted, uint64_t generation, uint32_t vms)
{
	sd_notifyf(0, "READY=1\nSTATUS=serving: generation %llu, %u VM%s%s",
	    (unsigned long long)generation, vms, vms == 1 ? "" : "s",
	    accepted ? "" : " (the last reload was rejected)");
}

void
ctl_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}
