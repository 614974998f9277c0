/*
 * Live reload (SIGHUP, namegatectl reload): parse and validate the file again, put its
 * policies with the live grants on top in force through the plane (any failure keeps the
 * running generation), then the events, systemd's RELOADING/READY and the metrics
 * namegate_config_last_reload_successful and _success_timestamp_seconds. The control
 * loop's thread only, except ctl_reload_render().
 */
#ifndef CTL_RELOAD_H
#define CTL_RELOAD_H

#include <stdio.h>
#include <time.h>

struct ctl_events;
struct ctl_grants_live;
struct ctl_names;
struct ctl_reload;
struct ctl_sock;
struct dp_plane;
struct pol_config;

/*
 * *cfgp is the configuration in force, replaced by each reload that takes (the one before
 * freed); grants may be NULL, names is where the VMs' resolved names are kept (for what a
 * reload says of them). All are kept. loaded: when the file in force was loaded (start).
 * NULL when out of memory.
 */
struct ctl_reload *ctl_reload_new(struct pol_config **cfgp, struct ctl_events *events,
    const struct dp_plane *plane, struct ctl_grants_live *grants,
    const struct ctl_names *names, const struct timespec *loaded);
void ctl_reload_free(struct ctl_reload *r);

struct ctl_ev_who;

/*
 * Reload now, asked for by who (NULL: nobody known); progress and errors
 * (FILE:LINE:COL: message) to err. 0 or -errno.
 */
int ctl_reload_run(struct ctl_reload *r, FILE *err, const struct ctl_ev_who *who);

/*
 * A fleet bundle's policy (text, len bytes, named name in messages; already judged by
 * control/fleet) in force over the file's: the file is loaded again for this box's own
 * keys (pol_config_take_policy()), and so is every later reload, until the next bundle.
 * On failure the running generation and the policy before stay: -errno, why on err.
 */
int ctl_reload_policy(struct ctl_reload *r, const char *text, size_t len, const char *name,
    FILE *err);

/* The reload metrics, with # HELP and # TYPE: any thread (the scrape). */
void ctl_reload_render(struct ctl_reload *r, FILE *out);

/* Serve reload on s. 0 or -errno (ctl_sock_serve()). */
int ctl_reload_serve(struct ctl_reload *r, struct ctl_sock *s);

#endif
