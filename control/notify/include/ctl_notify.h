/*
 * systemd's service notifications (sd_notify(3)) for namegate.service (Type=notify): READY
 * once the ports and the nft table are up, RELOADING and READY around a reload, STATUS
 * with the generation in force, STOPPING at exit. Outside systemd ($NOTIFY_SOCKET unset)
 * each is a no-op, so the daemon calls them unconditionally.
 */
#ifndef CTL_NOTIFY_H
#define CTL_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Serving: the supervisor may order units after namegate now. */
void ctl_notify_ready(uint64_t generation, uint32_t vms);

/* A reload begins (SIGHUP or namegatectl reload). */
void ctl_notify_reloading(void);

/* A reload ended: accepted (the new generation serves) or rejected (the old one stays). */
void ctl_notify_reloaded(bool accepted, uint64_t generation, uint32_t vms);

void ctl_notify_stopping(void);

#endif
