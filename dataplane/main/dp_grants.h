/*
 * Grants in the daemon (control/grants/include/ctl_grants.h has the table and the model): the
 * state file read at start, a new generation published on every grant, revoke and
 * expiry, exactly as a reload publishes one, so flows and bindings a grant admitted are
 * judged again, and cut, when it ends; the events, the namegate_vm_grants gauge and the
 * control socket's grant, grants and revoke. Main lcore only, except dp_grants_render().
 */
#ifndef DP_GRANTS_H
#define DP_GRANTS_H

#include <stdint.h>
#include <stdio.h>

#include "ctl_sock.h"

struct ctl_grant;
struct ctl_overlay;
struct dp_control;
struct dp_grants;
struct pol_config;

/*
 * Reads (*c->cfgp)->grants_state and puts its live grants in force. A damaged file is
 * reported on log and grants nothing: the daemon goes on without (fail closed). Sets
 * c->grants; returns 0, or -ENOMEM (then the daemon must not start).
 */
int dp_grants_start(struct dp_control *c, FILE *log);

/* Frees c->grants; the state file stays as last written. */
void dp_grants_stop(struct dp_control *c);

/* Call from the main loop at least once a second: grants whose time is up end here. */
void dp_grants_tick(struct dp_control *c);

/* Seconds (UTC) of the next grant's end, INT64_MAX without any: for a loop that sleeps. */
int64_t dp_grants_next_expiry(const struct dp_control *c);

/*
 * Make a grant (the checks of ctl_grants_add()), save the state file, publish the
 * generation that allows it, and log the event; approval can call this too. Returns 0
 * with the grant in *out, or -errno with a one-line reason in why and nothing changed.
 */
int dp_grants_make(struct dp_control *c, const char *vm, const char *host, const char *dur,
    const char *reason, struct ctl_grant *out, char *why, size_t whylen);

/* For dp_reload(): *ov for next with the live grants (gr may be NULL: none). 0 or -errno. */
int dp_grants_overlay(struct dp_grants *gr, const struct pol_config *next,
    struct ctl_overlay *ov);

/*
 * After dp_reload() published *ov's view: keep *ov (the one before is freed: no worker
 * uses it any more) and end grants of VMs the new file no longer has. gr NULL: frees *ov.
 */
void dp_grants_adopt(struct dp_grants *gr, struct ctl_overlay *ov);

/* The configuration as the running generation sees it, grants included: for check. */
const struct pol_config *dp_grants_view(const struct dp_control *c);

/* namegate_vm_grants{vm}: called by the metrics render with c->gen_lock held. */
void dp_grants_render(const struct dp_control *c, FILE *out);

struct json_object;

/*
 * A control socket callback's reply: value to out on one line, or {key: value} when key
 * is not NULL; value is freed either way (NULL: -ENOMEM). 0 or -ENOMEM.
 */
int dp_json_reply(FILE *out, const char *key, struct json_object *value);

/* Serve grant, grants and revoke on s. 0 or -errno (ctl_sock_serve()). */
int dp_grants_serve(struct ctl_sock *s, struct dp_control *c);

#endif
