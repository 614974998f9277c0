/*
 * The grants in force (ctl_grants.h has the table and the model): the state file read at
 * start, a new generation put out through the plane (dataplane/api/dp_plane.h) on every
 * grant, revoke and expiry, exactly as a reload puts one out, so flows and bindings a
 * grant admitted are judged again, and cut, when it ends; the events, the
 * namegate_vm_grants gauge and the control socket's grant, grants and revoke. The control
 * loop's thread only, except ctl_grants_live_render().
 */
#ifndef CTL_GRANTS_LIVE_H
#define CTL_GRANTS_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_events;
struct ctl_grant;
struct ctl_overlay;
struct ctl_grants_live;
struct ctl_peer;
struct ctl_sock;
struct dp_plane;
struct pol_config;

/*
 * Reads (*cfgp)->grants_state and puts its live grants in force. A damaged file is
 * reported on log (and as an event, events may be NULL) and grants nothing: the daemon
 * goes on without (fail closed). cfgp is where the daemon keeps the configuration in
 * force (a reload replaces *cfgp); it and plane are kept. NULL when out of memory (then
 * the daemon must not start).
 */
struct ctl_grants_live *ctl_grants_live_start(struct pol_config *const *cfgp,
    struct ctl_events *events, const struct dp_plane *plane, FILE *log);

/* Frees gl (NULL: nothing); the state file stays as last written. */
void ctl_grants_live_stop(struct ctl_grants_live *gl);

/* Call from the control loop at least once a second: grants whose time is up end here. */
void ctl_grants_live_tick(struct ctl_grants_live *gl);

/*
 * Make a grant (the checks of ctl_grants_add()), save the state file, put out the
 * generation that allows it, and log the event; approval calls this too. by is the
 * control socket's client that asked, recorded as the grant's maker and in the event.
 * Returns 0 with the grant in *out, or -errno with a one-line reason in why and nothing
 * changed.
 */
int ctl_grants_live_make(struct ctl_grants_live *gl, const char *vm, const char *host,
    const char *dur, const char *reason, const struct ctl_peer *by, struct ctl_grant *out,
    char *why, size_t whylen);

/*
 * Revokes grant id (the socket's revoke; by: who asked), in force at once: its event,
 * and the fleet's store or the HA peer told. With a peer and no store, the revoke is
 * kept against the peer's resync (ctl_grants_live_peer()). 0 with the grant in *out;
 * -ENOENT (no such live grant); -EAGAIN (revoked, its generation retried each second).
 */
int ctl_grants_live_revoke(struct ctl_grants_live *gl, uint64_t id, const struct ctl_peer *by,
    struct ctl_grant *out);

/*
 * A revoke of a grant from the fleet's store, made on this gateway's socket by by: the
 * fleet agent writes it to the store so that every gateway ends the grant.
 */
typedef void ctl_grants_revoked_fn(void *arg, const struct ctl_grant *g,
    const struct ctl_peer *by);

/*
 * Store mode (fleet: with endpoints): grants come from the store of fleet (kept, not
 * copied) through ctl_grants_live_store_sync(); a grant asked of the control socket is
 * refused with a message that says where grants are made; a revoke of a store grant there
 * is also handed to fn.
 */
void ctl_grants_live_set_store(struct ctl_grants_live *gl, const char *fleet,
    ctl_grants_revoked_fn *fn, void *arg);

/*
 * The store's grants are want (n of them, ids their records' create revisions): the
 * table's store grants become those of want that are live and for VMs of this box's
 * configuration, each change an event (a grant made with its maker, an ended one
 * revoked), all in one generation. Grants made here (approvals) stay. Returns how many
 * changed, errors to err.
 */
int ctl_grants_live_store_sync(struct ctl_grants_live *gl, const struct ctl_grant *want,
    size_t n, FILE *err);

/*
 * The HA pair without a fleet store (namegate(8), HA PAIR): fn hears each grant made on
 * this box (the socket, an approval) with its seconds left, and each revoke made here
 * (left 0); NULL stops it. A fleet's gateway (ctl_grants_live_set_store()) takes its
 * grants from the store on both boxes: fn then hears nothing.
 */
typedef void ctl_grants_pair_fn(void *arg, const char *vm, const char *host, uint32_t left);
void ctl_grants_live_set_pair(struct ctl_grants_live *gl, ctl_grants_pair_fn *fn, void *arg);

/*
 * A resync: fn for each revoke the peer must not undo (left 0), then each live grant
 * (none for a fleet's gateway).
 */
void ctl_grants_live_each(const struct ctl_grants_live *gl, ctl_grants_pair_fn *fn, void *arg);

/*
 * The peer's grant of vm for host with left seconds, made here as one made on the socket
 * is (checked, saved, put in force in a new generation, its event; the maker unknown);
 * one already live for vm and host stays as it is. left 0: the peer's revoke, which ends
 * every grant of vm for host. Not heard by the pair's fn (nothing echoes back), but for
 * one: a grant in the peer's resync (resync true) of what this box revoked (tomb) is
 * refused, -ECANCELED, and the revoke goes back to the peer. A grant not in a resync was
 * made since, and clears the tomb. 0, or -errno with a one-line reason in why (-EPERM for
 * a fleet's gateway).
 */
int ctl_grants_live_peer(struct ctl_grants_live *gl, const char *vm, const char *host,
    uint32_t left, bool resync, char *why, size_t whylen);

/* For a reload: *ov for next with the live grants (gl may be NULL: none). 0 or -errno. */
int ctl_grants_live_overlay(const struct ctl_grants_live *gl, const struct pol_config *next,
    struct ctl_overlay *ov);

/*
 * After a reload put *ov's view in force: keep *ov (the one before is freed: no worker
 * uses it any more) and end grants of VMs the new file no longer has. gl NULL: frees *ov.
 */
void ctl_grants_live_adopt(struct ctl_grants_live *gl, struct ctl_overlay *ov);

/* The configuration as the running generation sees it, grants included: for check. */
const struct pol_config *ctl_grants_live_view(const struct ctl_grants_live *gl);

/* namegate_vm_grants{vm}, with # HELP and # TYPE: any thread (the metrics scrape). */
void ctl_grants_live_render(struct ctl_grants_live *gl, FILE *out);

/* Serve grant, grants and revoke on s. 0 or -errno (ctl_sock_serve()). */
int ctl_grants_live_serve(struct ctl_grants_live *gl, struct ctl_sock *s);

#endif
